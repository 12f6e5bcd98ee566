#include "bedrock/python_error.hpp"

#include <string>

namespace code_interpreter::bedrock {
namespace {

constexpr std::string_view kHeader = "Traceback (most recent call last):";
constexpr std::string_view kGroupHeader = "Exception Group Traceback (most recent call last):";
constexpr std::string_view kFrame = "  File \"";

bool at_line_start(std::string_view text, std::size_t at) { return at == 0 || text[at - 1] == '\n'; }

// The last occurrence of `needle` that starts a line, or npos.
std::size_t last_line_starting_with(std::string_view text, std::string_view needle) {
  for (auto at = text.rfind(needle); at != std::string_view::npos; at = at == 0 ? std::string_view::npos : text.rfind(needle, at - 1))
    if (at_line_start(text, at)) return at;
  return std::string_view::npos;
}

bool name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '.'; }

CodeError system_exit(int exit_code) { return CodeError{"SystemExit", std::to_string(exit_code), ""}; }

}  // namespace

std::optional<CodeError> parse_python_error(std::string_view text, int exit_code) {
  // CPython exits 1 for an uncaught exception, so any other status is sys.exit(n), whatever stderr holds (a
  // traceback logged or printed before it, say).
  if (exit_code != 1) return system_exit(exit_code);
  // An exception group prints its traceback indented; it is not read, and never taken for a SystemExit.
  if (text.find(kGroupHeader) != std::string_view::npos) return std::nullopt;
  std::size_t block = last_line_starting_with(text, kHeader);
  std::size_t line = block;
  if (block != std::string_view::npos) {
    line = text.find('\n', block);  // past the header
    line = line == std::string_view::npos ? text.size() : line + 1;
  } else if (text.substr(0, kFrame.size()) == kFrame) {
    block = line = 0;  // a SyntaxError from compiling: nothing ran, so stderr is its block alone, frames first
  } else {
    return system_exit(exit_code);  // no traceback: sys.exit(1), sys.exit("message") or sys.exit(True)
  }
  // The frames: every line that starts with white space (a frame, its source line, the caret line).
  while (line < text.size() && (text[line] == ' ' || text[line] == '\t')) {
    const auto next = text.find('\n', line);
    line = next == std::string_view::npos ? text.size() : next + 1;
  }
  if (line >= text.size() || !name_start(text[line])) return std::nullopt;
  std::size_t n = line + 1;
  while (n < text.size() && name_char(text[n])) ++n;
  const std::string_view name = text.substr(line, n - line);
  std::string_view value;
  if (n < text.size() && text[n] == ':') {
    value = text.substr(n + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  } else if (n < text.size() && text[n] != '\n' && text[n] != '\r') {
    return std::nullopt;  // not "Name" or "Name: value"
  }
  if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
  if (!value.empty() && value.back() == '\r') value.remove_suffix(1);
  return CodeError{std::string(name), std::string(value), std::string(text.substr(block))};
}

}  // namespace code_interpreter::bedrock
