// When is an interactive input complete? The REPL's rule (docs/cli.md "Multi-line input"), kept apart from the
// terminal so it can be reasoned about alone.
#pragma once

#include <string>
#include <vector>

namespace cli {

/// Whether `lines` (what was typed so far, one entry per line, without newlines) needs another line before it is
/// run. It does while a bracket, a triple-quoted string or a final backslash is open; and, once any line opened a
/// block (its code ends in ':', or it starts with '@'), until the last line is empty or blank. Comments and string
/// contents are skipped. It does not parse Python: an input it calls complete may still be a SyntaxError, which
/// the sandbox reports.
[[nodiscard]] bool needs_more_input(const std::vector<std::string>& lines);

}  // namespace cli
