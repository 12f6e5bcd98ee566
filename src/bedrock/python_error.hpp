// The user's exception read back from the text AgentCore returns: the service reports a Python failure only as
// stderr and an exit code (docs/protocols/bedrock.md "Tools"), so the exception's name and value are read from
// the traceback CPython printed. The text is hostile input: a linear scan, bounded by its length, no recursion.
#pragma once

#include <optional>
#include <string_view>

#include "code_interpreter/execution.hpp"

namespace code_interpreter::bedrock {

/// The exception that ended Python code whose stderr is `stderr_text` and whose exit code is `exit_code` (non-zero).
///
/// - An exit code other than 1 is `sys.exit(n)` (CPython exits 1 for an uncaught exception), whatever stderr holds:
///   {"SystemExit", n in decimal, ""}.
/// - Exit code 1: the last traceback CPython printed ("Traceback (most recent call last):" at the start of a line,
///   or, for a SyntaxError raised while compiling, a block at the very start of stderr that starts with a `  File "`
///   line): its indented lines are the frames; the first line that is not indented is `Name` or `Name: value`, and
///   the value runs to the end of the text (an exception's str() may span lines), without the one newline CPython
///   ends it with. `traceback` is the text from the block's first line on. A value that itself holds a formatted
///   traceback is read from that inner traceback: the text cannot tell them apart.
/// - Exit code 1 and no traceback: `sys.exit(1)`, `sys.exit("message")` or `sys.exit(True)`: {"SystemExit", "1",
///   ""}; a message passed to `sys.exit` is in stderr, where CPython printed it.
/// - An exception group's traceback, or a traceback whose exception line is not `Name` or `Name: value`, gives no
///   exception: nothing is guessed.
std::optional<CodeError> parse_python_error(std::string_view stderr_text, int exit_code);

}  // namespace code_interpreter::bedrock
