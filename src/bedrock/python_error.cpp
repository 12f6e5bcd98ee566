#include "bedrock/python_error.hpp"

#include <string>

namespace code_interpreter::bedrock {
namespace {

constexpr std::string_view kHeader = "Traceback (most recent call last):";
constexpr std::string_view kFrame = "  File \"";

bool at_line_start(std::string_view text, std::size_t at) { return at == 0 || text[at - 1] == '\n'; }

// The last occurrence of `needle` that starts a line, or npos.
std::size_t last_line_starting_with(std::string_view text, std::string_view needle) {
  for (auto at = text.rfind(needle); at != std::string_view::npos; at = at == 0 ? std::string_view::npos : text.rfind(needle, at - 1))
    if (at_line_start(text, at)) return at;
  return std::string_view::npos;
}

// The first occurrence of `needle` that starts a line, or npos.
std::size_t first_line_starting_with(std::string_view text, std::string_view needle) {
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1))
    if (at_line_start(text, at)) return at;
  return std::string_view::npos;
}

bool name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '.'; }

}  // namespace

std::optional<CodeError> parse_python_error(std::string_view text, int exit_code) {
  std::size_t block = last_line_starting_with(text, kHeader);
  std::size_t line = block;
  if (block != std::string_view::npos) {
    line = text.find('\n', block);  // past the header
    line = line == std::string_view::npos ? text.size() : line + 1;
  } else if (text.find(kHeader) == std::string_view::npos) {
    block = first_line_starting_with(text, kFrame);  // a SyntaxError from compiling: no header, frames first
    line = block;
    if (block == std::string_view::npos) return CodeError{"SystemExit", std::to_string(exit_code), ""};
  } else {
    return std::nullopt;  // a traceback, but indented (an exception group): not guessed at
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
  } else if (n < text.size() && text[n] != '\n') {
    return std::nullopt;  // not "Name" or "Name: value"
  }
  if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
  return CodeError{std::string(name), std::string(value), std::string(text.substr(block))};
}

}  // namespace code_interpreter::bedrock
