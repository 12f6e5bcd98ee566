#include "repl_input.hpp"

#include <string_view>

namespace cli {
namespace {

bool blank(std::string_view line) { return line.find_first_not_of(" \t\r\f\v") == std::string_view::npos; }

}  // namespace

bool needs_more_input(const std::vector<std::string>& lines) {
  int depth = 0;            // open (, [ and {
  char quote = 0;           // the quote character of the open string, 0 outside one
  bool triple = false;      // the open string is triple-quoted
  bool block = false;       // some line opened a block
  bool continued = false;   // the last line ends in a backslash outside a string
  for (const std::string& line : lines) {
    continued = false;
    char last = 0;  // the last character of code on this line (outside strings and comments)
    if (quote == 0 && depth == 0) {
      const auto first = line.find_first_not_of(" \t");
      if (first != std::string::npos && line[first] == '@') block = true;
    }
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quote != 0) {
        if (c == '\\') {
          ++i;  // an escaped character, the quote included
          if (i >= line.size() && !triple) continued = true;  // a backslash-newline inside a '...' string
        } else if (c == quote && (!triple || line.compare(i, 3, std::string(3, quote)) == 0)) {
          if (triple) i += 2;
          quote = 0;
          triple = false;
          last = c;
        }
        continue;
      }
      if (c == '#') break;
      if (c == '"' || c == '\'') {
        quote = c;
        triple = line.compare(i, 3, std::string(3, c)) == 0;
        if (triple) i += 2;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      if (c == '\\' && i + 1 == line.size()) {
        continued = true;
        continue;
      }
      if (c != ' ' && c != '\t' && c != '\r') last = c;
    }
    // A one-quote string cannot span lines without a backslash: the line ends it (Python reports the error).
    if (quote != 0 && !triple && !continued) quote = 0;
    if (quote == 0 && depth == 0 && last == ':') block = true;
  }
  if (quote != 0 || depth > 0 || continued) return true;
  return block && !blank(lines.back());
}

}  // namespace cli
