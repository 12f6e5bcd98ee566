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
  if (path.find('\0') != std::string::npos || path.find('\\') != std::string::npos) return std::nullopt;
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
  static constexpr std::string_view kPlain = "](sandbox:";
  static constexpr std::string_view kAngle = "](<sandbox:";
  std::size_t at = 0;
  while (true) {
    const std::size_t plain = text.find(kPlain, at);
    const std::size_t angle = text.find(kAngle, at);
    if (plain == std::string_view::npos && angle == std::string_view::npos) break;
    const bool is_angle = angle < plain;
    const std::size_t start = is_angle ? angle + kAngle.size() : plain + kPlain.size();
    const std::string_view target = read_target(text, start, is_angle);
    at = start + target.size();
    if (!seen.insert(std::string(target)).second) continue;
    links.push_back({std::string(target), resolve_link_target(target, upload_dir)});
  }
  return links;
}

}  // namespace code_interpreter::interpreter
