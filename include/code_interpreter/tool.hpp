// The sandbox as a tool any agent loop can offer a model: its name, the description written from the sandbox's
// Capabilities, the JSON Schema of its arguments, and a call that takes the model's JSON arguments and renders the
// result. SandboxCodeInterpreter and the MCP server (code-interpreter mcp) both use it. Guide: docs/agents.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/execution.hpp"
#include "code_interpreter/export.hpp"
#include "code_interpreter/interpreter.hpp"
#include "code_interpreter/sandbox.hpp"

namespace code_interpreter {

/// What a tool's description is written from: what the sandbox can do, its language and its installed packages.
/// A sandbox gives them (profile_of); a backend declares them before any sandbox exists (declared_capabilities in
/// factory.hpp), so a tool can be described before its sandbox starts.
struct SandboxProfile {
  Capabilities capabilities;
  Language language = Language::kPython;
  std::vector<std::string> packages;  ///< additional_packages installed at creation
  friend bool operator==(const SandboxProfile&, const SandboxProfile&) = default;
};

/// The profile of a live sandbox: its capabilities(), language() and additional_packages().
[[nodiscard]] CODE_INTERPRETER_EXPORT SandboxProfile profile_of(const CodeInterpreterSandbox& sandbox);

/// How the tool is offered and how much of the model's input and the sandbox's output it takes.
struct SandboxToolOptions {
  std::string name = "execute_code";  ///< [a-zA-Z0-9_-]{1,64}
  /// Budget of a call that gives no `timeout`: nullopt is the backend's default (300 s); <= 0 is unbounded.
  Timeout execution_timeout;
  /// The most a model may ask for with the `timeout` argument (in seconds, greater than 0). nullopt: the argument
  /// is not offered (and refused as unknown).
  std::optional<std::chrono::seconds> max_timeout;
  /// Offer the `files` argument: names of files already in the sandbox's upload directory, checked to be there
  /// before the code runs. Never a host path: a name with '/', '\\', "..", NUL or nothing in it is refused.
  bool file_arguments = false;
  /// Names of input files the host put in the upload directory, listed in the description.
  std::vector<std::string> input_files;
  /// The host returns files the final answer links as [name](sandbox:<upload_dir>/name), as SandboxCodeInterpreter
  /// does; the description tells the model so when the backend can download files. false (the MCP server, whose
  /// client cannot follow such a link): the description says files stay in the sandbox.
  bool returns_linked_files = true;
  /// Sentences appended to the description (e.g. how to get a fresh sandbox).
  std::string description_note;
  std::size_t max_result_bytes = 16 * 1024;      ///< the rendered text's bound (>= 1024); see ToolResult::text
  std::size_t max_images = 4;                    ///< images sent with one result; more are dropped with a note
  std::size_t max_image_bytes = std::size_t{5} << 20;  ///< one image's base64 size; a larger one is dropped
  std::size_t max_arguments_bytes = std::size_t{2} << 20;  ///< the arguments' JSON text
  std::size_t max_code_bytes = std::size_t{1} << 20;       ///< the `code` string, in UTF-8 bytes
  std::size_t max_files = 64;                              ///< entries of `files`
};

/// What a host gives one call besides the model's arguments.
struct ToolCallOptions {
  std::stop_token cancel;           ///< cancels the execution (ExecuteOptions::cancel)
  std::vector<Attachment> files;    ///< host files uploaded with this call (ExecuteOptions::files)
  /// The most this call may take (the rest of the host's own budget): the execution's budget is bounded by it.
  std::optional<std::chrono::milliseconds> max_budget;
};

/// One rendered tool result.
struct ToolResult {
  /// The model's text: the execution's text() bounded to max_result_bytes with the TIMEOUT / UNKNOWN / state-lost
  /// notes (never cut), or a one-line "[error: ... Nothing was run.]" for refused arguments, or
  /// "[error: the sandbox failed: ...]" when the sandbox threw.
  std::string text;
  bool is_error = false;          ///< anything but an execution that ended kSuccess
  std::vector<ChatImage> images;  ///< the result's image/png and image/jpeg, in order, within the caps
  std::string code;               ///< the code that ran; empty when the arguments were refused
  std::optional<ExecutionResult> execution;  ///< what the sandbox answered; nullopt when nothing was run
  /// The sandbox threw (SandboxNotInitializedError after terminate, say; or std::invalid_argument for a bad host
  /// attachment in ToolCallOptions::files). Null otherwise.
  std::exception_ptr error;
};

/// The sandbox as one tool. Holds a reference: the sandbox must outlive it. Thread safety: `call` keeps no state in
/// the object, so calls from several threads are as safe as the sandbox is (the library's are).
class CODE_INTERPRETER_EXPORT SandboxTool {
 public:
  /// @throws std::invalid_argument for a name outside [a-zA-Z0-9_-]{1,64}, max_result_bytes < 1024, a
  ///         max_timeout that is not positive or an execution_timeout greater than max_timeout.
  explicit SandboxTool(CodeInterpreterSandbox& sandbox, SandboxToolOptions options = {});

  [[nodiscard]] const std::string& name() const noexcept { return options_.name; }
  /// What the model is told, written from the sandbox's profile (see describe).
  [[nodiscard]] std::string description() const;
  /// The JSON Schema (text) of the arguments object (see describe).
  [[nodiscard]] std::string parameters() const;
  [[nodiscard]] ToolDefinition definition() const;

  /// The definition of the tool over a sandbox with `profile`, without a sandbox: the description says what the
  /// language is, whether state persists, whether the last expression's value comes back, where files are, whether
  /// files can be returned, whether the network is reached, the packages and the time limit; the schema has
  /// `code` (string, required), `timeout` (number of seconds, 0 < t <= max_timeout) when max_timeout is set, and
  /// `files` (array of file names) when file_arguments is set. additionalProperties is false.
  /// @throws std::invalid_argument as the constructor.
  [[nodiscard]] static ToolDefinition describe(const SandboxProfile& profile, const SandboxToolOptions& options);

  /// Runs the model's `arguments` (JSON text, untrusted). Never throws: arguments that are not a JSON object with a
  /// string `code`, unknown or oversize arguments, a timeout out of range, a file name that is not a plain name, is
  /// given twice or is not in the upload directory are answered with is_error and nothing runs; a sandbox that
  /// throws is answered with is_error and `error` set.
  [[nodiscard]] ToolResult call(std::string_view arguments, const ToolCallOptions& call_options = {}) const;

  /// The checks of `call` that need no sandbox (shape, unknown or oversize arguments, timeout range, file names that
  /// are not plain or are given twice): the refusal `call` would answer, or nullopt when the arguments pass them, so a
  /// host can refuse before it pays for a sandbox. Never throws.
  [[nodiscard]] static std::optional<ToolResult> check_arguments(std::string_view arguments,
                                                                  const SandboxToolOptions& options);

 private:
  CodeInterpreterSandbox& sandbox_;
  SandboxToolOptions options_;
};

}  // namespace code_interpreter
