// The frame protocol between the library and the Deno host (src/pyodide/host/frames.mjs):
// u32 header length (big-endian) | u32 body length (big-endian) | header: a UTF-8 JSON object with a string "t" |
// body: raw bytes. Everything the host sends is treated as hostile: sizes are capped before anything is buffered
// and any malformed frame is an error that ends the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace code_interpreter::detail {

struct Frame {
  nlohmann::json header;  // an object with a string member "t"
  std::string body;
};

/// A frame that breaks the protocol: oversize, not JSON, not an object, or without a string "t".
class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Encodes one frame.
std::string encode_frame(const nlohmann::json& header, std::string_view body = {});

/// Incremental decoder for frames arriving in pieces of any size.
class FrameDecoder {
 public:
  /// Headers are bounded on their own: the runtime caps what it puts in them (reprs and tracebacks at 256 Ki
  /// characters, a listing by the directory), so 8 MiB of JSON is never legitimate.
  static constexpr std::size_t kMaxHeaderBytes = 8u << 20;

  /// @param max_frame_bytes the largest header + body accepted.
  explicit FrameDecoder(std::size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  void push(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }

  /// The next complete frame, or nullopt if more bytes are needed. @throws FrameError on a malformed frame; the
  /// decoder is unusable afterwards.
  std::optional<Frame> next();

  [[nodiscard]] std::size_t buffered() const noexcept { return buffer_.size() - offset_; }

 private:
  std::size_t max_frame_bytes_;
  std::string buffer_;
  std::size_t offset_ = 0;
};

// Fields of a frame header. The header comes from the runtime and is hostile: a missing field or one of the wrong
// type reads as the fallback, never as an exception (docs/architecture.md "What the library accepts").
inline std::string field_string(const nlohmann::json& h, const char* key, std::string fallback = {}) {
  const auto it = h.find(key);
  return it != h.end() && it->is_string() ? it->get<std::string>() : fallback;
}
inline std::int64_t field_int(const nlohmann::json& h, const char* key, std::int64_t fallback = -1) {
  const auto it = h.find(key);
  return it != h.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}
inline bool field_bool(const nlohmann::json& h, const char* key) {
  const auto it = h.find(key);
  return it != h.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace code_interpreter::detail
