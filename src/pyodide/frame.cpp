#include "pyodide/frame.hpp"

#include "core/untrusted.hpp"

namespace code_interpreter::detail {

namespace {
void put_u32(std::string& out, std::uint32_t v) {
  out += static_cast<char>((v >> 24) & 0xFF);
  out += static_cast<char>((v >> 16) & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
  out += static_cast<char>(v & 0xFF);
}

std::uint32_t get_u32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) | u[3];
}
}  // namespace

std::string encode_frame(const nlohmann::json& header, std::string_view body) {
  const std::string h = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(8 + h.size() + body.size());
  put_u32(out, static_cast<std::uint32_t>(h.size()));
  put_u32(out, static_cast<std::uint32_t>(body.size()));
  out += h;
  out.append(body.data(), body.size());
  return out;
}

std::optional<Frame> FrameDecoder::next() {
  if (buffered() < 8) return std::nullopt;
  const char* p = buffer_.data() + offset_;
  const std::size_t hlen = get_u32(p);
  const std::size_t blen = get_u32(p + 4);
  if (hlen > kMaxHeaderBytes) {
    throw FrameError("frame header of " + std::to_string(hlen) + " bytes exceeds the header limit of " +
                     std::to_string(kMaxHeaderBytes));
  }
  if (hlen + blen > max_frame_bytes_) {
    throw FrameError("frame of " + std::to_string(hlen + blen) + " bytes exceeds max_frame_bytes (" +
                     std::to_string(max_frame_bytes_) + ")");
  }
  if (buffered() < 8 + hlen + blen) return std::nullopt;
  Frame frame;
  // The sandbox's JSON: a lone surrogate's escape (JavaScript writes one for a string Python sent) is kept as text.
  frame.header = parse_untrusted_json(std::string_view(p + 8, hlen));
  if (frame.header.is_discarded() || !frame.header.is_object()) throw FrameError("frame header is not a JSON object");
  const auto t = frame.header.find("t");
  if (t == frame.header.end() || !t->is_string()) throw FrameError("frame header has no type");
  frame.body.assign(p + 8 + hlen, blen);
  offset_ += 8 + hlen + blen;
  // Compact once the consumed prefix dominates, so a long stream of frames stays O(n).
  if (offset_ > (1u << 16) && offset_ * 2 > buffer_.size()) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  return frame;
}

}  // namespace code_interpreter::detail
