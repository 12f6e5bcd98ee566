#include "interpreter/tool_result.hpp"

#include <cctype>

#include <fmt/format.h>

#include "core/utf8.hpp"

namespace code_interpreter::interpreter {
namespace {

std::string cut_note(std::size_t cut, std::size_t total, std::size_t head, std::size_t tail) {
  return fmt::format("\n[... {} bytes cut from the middle of {}; the first {} and the last {} bytes are shown ...]\n",
                     cut, total, head, tail);
}

// The smallest index >= at that is not inside a UTF-8 sequence (never past the end).
std::size_t forward_to_boundary(std::string_view text, std::size_t at) {
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  return at;
}

// The cause named in the UNKNOWN note: a sandbox's own name for it, possibly long; the note must fit the bound.
constexpr std::size_t kMaxExceptionType = 128;
std::string exception_name(const ExecutionResult& result) {
  if (!result.failure) return "unknown";
  const std::string& type = result.failure->exception_type;
  if (type.size() <= kMaxExceptionType) return type;
  return type.substr(0, detail::utf8_char_boundary(type, kMaxExceptionType)) + "...";
}

}  // namespace

std::string quoted_name(std::string_view name) {
  std::string out(name.substr(0, 64));
  for (auto& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f || c == '\'') c = '?';
  }
  return out;
}

std::string bound_text(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  // Every number in the note is at most text.size(), so this note is the longest the real one can be.
  const std::size_t worst = cut_note(text.size(), text.size(), text.size(), text.size()).size();
  const std::size_t budget = max_bytes > worst ? max_bytes - worst : 0;
  const std::size_t head = detail::utf8_char_boundary(text, budget / 2);
  const std::size_t tail_start = forward_to_boundary(text, text.size() - (budget - budget / 2));
  const std::size_t tail = text.size() - tail_start;
  std::string out(text.substr(0, head));
  out += cut_note(tail_start - head, text.size(), head, tail);
  out += text.substr(tail_start);
  return out;
}

ToolResultText format_tool_result(const ExecutionResult& result, std::size_t max_bytes) {
  std::string note;
  switch (result.status) {
    case ExecutionStatus::kSuccess:
    case ExecutionStatus::kError:
      break;
    case ExecutionStatus::kTimeout:
      note = fmt::format("[TIMEOUT ({}): the code did not finish in time. It was not run again; it may have partly run.]",
                         result.timeout_kind ? to_string(*result.timeout_kind) : std::string_view("execution"));
      break;
    case ExecutionStatus::kUnknown:
      note = fmt::format(
          "[UNKNOWN ({}): the outcome cannot be known; the code may or may not have run. It was not run again.]",
          exception_name(result));
      break;
  }
  if (result.state_lost) {
    if (!note.empty()) note += "\n";
    note += "[The sandbox's state was lost: variables, imports and files are gone.]";
  }
  std::string text = result.text();
  if (text.empty() && note.empty()) text = "[no output]";
  ToolResultText out;
  out.is_error = result.status != ExecutionStatus::kSuccess;
  const std::size_t separator = text.empty() || note.empty() ? 0 : 1;
  const std::size_t room = max_bytes > note.size() + separator ? max_bytes - note.size() - separator : 0;
  out.content = bound_text(text, room);
  if (!note.empty()) {
    if (!out.content.empty()) out.content += "\n";
    out.content += note;
  }
  return out;
}

namespace {

bool is_base64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return false;
  std::size_t padding = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size()) return false;  // padding only in the last two places
      ++padding;
    } else if (padding > 0 || !(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/')) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<ChatImage> tool_result_images(const ExecutionResult& result, std::size_t max_images,
                                          std::size_t max_image_bytes, std::size_t& dropped) {
  std::vector<ChatImage> images;
  dropped = 0;
  for (const auto& rich : result.results) {
    for (const char* mime : {"image/png", "image/jpeg"}) {
      const auto it = rich.data.find(mime);
      if (it == rich.data.end()) continue;
      if (images.size() >= max_images || it->second.size() > max_image_bytes || !is_base64(it->second)) {
        ++dropped;
      } else {
        images.push_back({mime, it->second});
      }
      break;  // one image per rich result
    }
  }
  return images;
}

}  // namespace code_interpreter::interpreter
