// What the model reads back from one execution: the execution's text(), bounded in size (head and tail kept
// around a note of what was cut), with a note for outcomes the text alone does not make plain.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <vector>

#include "code_interpreter/execution.hpp"
#include "code_interpreter/interpreter.hpp"

namespace code_interpreter::interpreter {

/// `text` if it fits in `max_bytes`; otherwise its head, the note
/// "\n[... N bytes cut from the middle of M; the first H and the last T bytes are shown ...]\n" and its tail, in at
/// most `max_bytes` bytes in all. Head and tail are split at UTF-8 character boundaries, the head taking half.
/// `max_bytes` must leave room for the note (at least 128 bytes).
std::string bound_text(std::string_view text, std::size_t max_bytes);

struct ToolResultText {
  std::string content;
  bool is_error = false;  ///< anything but kSuccess
};

/// The images of `result` to send with its tool result: each rich result's image/png or image/jpeg (PNG first), in
/// order, at most `max_images`, each at most `max_image_bytes` of base64. The data came from the sandbox: one that is
/// not base64 is dropped like one over the cap. `dropped` counts what was left out.
std::vector<ChatImage> tool_result_images(const ExecutionResult& result, std::size_t max_images,
                                          std::size_t max_image_bytes, std::size_t& dropped);

/// A name the model wrote (a tool's, an argument's, a file's), made safe to quote back to it: at most 64 bytes,
/// control bytes, non-ASCII bytes and "'" as '?'.
std::string quoted_name(std::string_view name);

/// The tool result for `result`, at most `max_bytes` long:
///  - kSuccess: text(), or "[no output]" when it is empty;
///  - kError: text() (the traceback or the reason the code did not run);
///  - kTimeout: text(), then "[TIMEOUT (<kind>): the code did not finish in time. It was not run again; it may
///    have partly run.]";
///  - kUnknown: text(), then "[UNKNOWN (<exception_type>): the outcome cannot be known; the code may or may not
///    have run. It was not run again.]";
///  - then, when state_lost: "[The sandbox's state was lost: variables, imports and files are gone.]".
/// The notes are never cut; the text before them is bounded to what is left.
ToolResultText format_tool_result(const ExecutionResult& result, std::size_t max_bytes);

}  // namespace code_interpreter::interpreter
