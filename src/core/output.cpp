#include "core/output.hpp"

#include "core/utf8.hpp"

namespace code_interpreter::detail {

void OutputStream::emit(std::string_view raw) {
  const std::string line = utf8_replacing(raw);
  if (!truncated_) {
    const std::size_t room = cap_ - text_.size();
    if (line.size() <= room) {
      text_ += line;
    } else {
      text_.append(line, 0, utf8_char_boundary(line, room));
      truncated_ = true;
    }
  }
  if (callback_ == nullptr || !*callback_) return;
  // Repair can triple the size of ill-formed bytes: cut the decoded line again so no piece exceeds kMaxPiece.
  std::string_view rest = line;
  while (rest.size() > kMaxPiece) {
    const std::size_t cut = utf8_char_boundary(rest, kMaxPiece);
    (*callback_)(rest.substr(0, cut));
    rest.remove_prefix(cut);
  }
  (*callback_)(rest);
}

void OutputStream::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    if (nl != std::string_view::npos && pending_.size() + nl + 1 <= kMaxPiece) {
      if (pending_.empty()) {
        emit(bytes.substr(0, nl + 1));
      } else {
        pending_.append(bytes.data(), nl + 1);
        std::string line = std::move(pending_);
        pending_.clear();
        emit(line);
      }
      bytes.remove_prefix(nl + 1);
      continue;
    }
    // No newline within reach: buffer, and deliver 64 KiB pieces of an overlong line.
    const std::size_t take = nl == std::string_view::npos ? bytes.size() : nl + 1;
    pending_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    while (pending_.size() > kMaxPiece || (!pending_.empty() && pending_.back() == '\n')) {
      if (pending_.back() == '\n' && pending_.size() <= kMaxPiece) {
        std::string line = std::move(pending_);
        pending_.clear();
        emit(line);
        break;
      }
      std::size_t cut = utf8_safe_cut(pending_, kMaxPiece);
      if (cut == 0) cut = kMaxPiece;
      std::string piece = pending_.substr(0, cut);
      pending_.erase(0, cut);
      emit(piece);
    }
  }
}

void OutputStream::flush() {
  const std::size_t cut = utf8_complete_prefix(pending_);
  if (cut == 0) return;
  std::string piece = pending_.substr(0, cut);
  pending_.erase(0, cut);
  emit(piece);
}

void OutputStream::finish() {
  if (pending_.empty()) return;
  std::string rest = std::move(pending_);
  pending_.clear();
  emit(rest);
}

}  // namespace code_interpreter::detail
