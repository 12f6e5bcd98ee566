#include "http/stream_decoders.hpp"

namespace code_interpreter::http {

DecodeStatus LineDecoder::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    const std::string_view part = bytes.substr(0, newline);
    if (pending_.size() + part.size() > max_line_) return DecodeStatus::kOversize;
    if (newline == std::string_view::npos) {
      pending_.append(part);
      return DecodeStatus::kOk;
    }
    std::string_view line = part;
    if (!pending_.empty()) {
      pending_.append(part);
      line = pending_;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool go_on = sink_(line);
    pending_.clear();
    if (!go_on) return DecodeStatus::kStopped;
    bytes.remove_prefix(newline + 1);
  }
  return DecodeStatus::kOk;
}

DecodeStatus LineDecoder::finish() {
  if (pending_.empty()) return DecodeStatus::kOk;
  std::string line = std::move(pending_);
  pending_.clear();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return sink_(line) ? DecodeStatus::kOk : DecodeStatus::kStopped;
}

DecodeStatus EnvelopeDecoder::feed(std::string_view bytes) {
  pending_.append(bytes);
  std::size_t offset = 0;
  DecodeStatus status = DecodeStatus::kOk;
  while (pending_.size() - offset >= 5) {
    const auto* p = reinterpret_cast<const unsigned char*>(pending_.data() + offset);
    const std::uint8_t flags = p[0];
    const std::uint32_t length = (std::uint32_t(p[1]) << 24) | (std::uint32_t(p[2]) << 16) |
                                 (std::uint32_t(p[3]) << 8) | std::uint32_t(p[4]);
    if ((flags & ~kEndStream) != 0) {
      status = DecodeStatus::kMalformed;
      break;
    }
    if (length > max_payload_) {
      status = DecodeStatus::kOversize;
      break;
    }
    if (pending_.size() - offset - 5 < length) break;
    const bool go_on = sink_(flags, std::string_view(pending_).substr(offset + 5, length));
    offset += 5 + length;
    if (!go_on) {
      status = DecodeStatus::kStopped;
      break;
    }
  }
  pending_.erase(0, offset);
  return status;
}

std::string encode_envelope(std::uint8_t flags, std::string_view payload) {
  std::string out;
  out.reserve(5 + payload.size());
  const auto n = static_cast<std::uint32_t>(payload.size());
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>((n >> 24) & 0xFF));
  out.push_back(static_cast<char>((n >> 16) & 0xFF));
  out.push_back(static_cast<char>((n >> 8) & 0xFF));
  out.push_back(static_cast<char>(n & 0xFF));
  out.append(payload);
  return out;
}

}  // namespace code_interpreter::http
