#include "interpreter/links.hpp"

#include <algorithm>
#include <set>

namespace code_interpreter::interpreter {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The target of the link destination starting at `from` (just after "sandbox:"), CommonMark-style: up to the
// matching ')' (balanced parentheses allowed inside) or whitespace; or, in the angle-bracket form, up to '>'.
std::string_view read_target(std::string_view text, std::size_t from, bool angle) {
  std::size_t end = from;
  if (angle) {
    while (end < text.size() && text[end] != '>' && text[end] != '\n') ++end;
    return text.substr(from, end - from);
  }
  int depth = 0;
  for (; end < text.size(); ++end) {
    const char c = text[end];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') break;
    if (c == '(') ++depth;
    if (c == ')') {
      if (depth == 0) break;
      --depth;
    }
  }
  return text.substr(from, end - from);
}

}  // namespace

std::string percent_decode(std::string_view target) {
  std::string out;
  out.reserve(target.size());
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '%' && i + 2 < target.size()) {
      const int hi = hex_value(target[i + 1]);
      const int lo = hex_value(target[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += target[i];
  }
  return out;
}

std::optional<std::string> resolve_link_target(std::string_view target, std::string_view upload_dir) {
  std::string dir(upload_dir);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) return std::nullopt;
  const std::string path = percent_decode(target);
  // A backslash is a separator somewhere; a control character (NUL included) is never part of a link destination
  // in CommonMark, and would reach file names and terminals downstream.
  for (const char c : path) {
    if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == '\x7f') return std::nullopt;
  }
  const std::string prefix = dir == "/" ? dir : dir + "/";
  if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  // Every component below the upload directory must be a plain name: no way up, no way sideways.
  std::string_view rest = std::string_view(path).substr(prefix.size());
  while (true) {
    const auto slash = rest.find('/');
    const std::string_view component = rest.substr(0, slash);
    if (component.empty() || component == "." || component == "..") return std::nullopt;
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return path;
}

std::string base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::vector<SandboxLink> find_sandbox_links(std::string_view text, std::string_view upload_dir) {
  std::vector<SandboxLink> links;
  std::set<std::string, std::less<>> seen;
  static constexpr std::string_view kScheme = "sandbox:";
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  for (std::size_t found = text.find(kScheme); found != std::string_view::npos;
       found = text.find(kScheme, found + kScheme.size())) {
    // A link destination: "](" of an inline link or "]:" of a reference definition ("[id]: sandbox:..."), then
    // optional whitespace with at most one line ending (CommonMark), then an optional '<'.
    std::size_t before = found;
    const bool is_angle = before > 0 && text[before - 1] == '<';
    if (is_angle) --before;
    int line_endings = 0;
    while (before > 0 && is_space(text[before - 1])) {
      if (text[before - 1] == '\n') ++line_endings;
      --before;
    }
    if (line_endings > 1 || before < 2 || text[before - 2] != ']') continue;
    if (text[before - 1] != '(' && text[before - 1] != ':') continue;
    const std::size_t start = found + kScheme.size();
    const std::string_view target = read_target(text, start, is_angle);
    if (!seen.insert(std::string(target)).second) continue;
    links.push_back({std::string(target), resolve_link_target(target, upload_dir)});
  }
  return links;
}

}  // namespace code_interpreter::interpreter
