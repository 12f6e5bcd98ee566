#include "bedrock/event_stream.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>

#include <zlib.h>

namespace code_interpreter::bedrock {

namespace {

constexpr std::size_t kPreludeSize = 12;  // total length, headers length, prelude CRC
constexpr std::size_t kTrailerSize = 4;   // message CRC
constexpr std::size_t kMinMessage = kPreludeSize + kTrailerSize;

std::uint64_t read_be(const char* p, std::size_t n) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::uint32_t read_u32(const char* p) noexcept { return static_cast<std::uint32_t>(read_be(p, 4)); }

void write_be(std::string& out, std::uint64_t v, std::size_t n) {
  for (std::size_t i = n; i-- > 0;) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::uint32_t crc(std::uint32_t running, const char* p, std::size_t n) noexcept {
  return static_cast<std::uint32_t>(crc32_z(running, reinterpret_cast<const Bytef*>(p), n));
}

// Reads the header section (docs/protocols/bedrock.md "The event stream"); false when any header is malformed.
bool parse_headers(std::string_view section, EventMessage& message) {
  std::size_t at = 0;
  const auto take = [&](std::size_t n) -> const char* {
    if (section.size() - at < n) return nullptr;
    const char* p = section.data() + at;
    at += n;
    return p;
  };
  while (at < section.size()) {
    const char* p = take(1);
    const std::size_t name_len = static_cast<unsigned char>(*p);
    if (name_len == 0) return false;
    const char* name = take(name_len);
    if (name == nullptr) return false;
    const char* type = take(1);
    if (type == nullptr) return false;
    HeaderValue value;
    switch (static_cast<unsigned char>(*type)) {
      case 0: value.type = HeaderValue::Type::kBoolTrue; value.integer = 1; break;
      case 1: value.type = HeaderValue::Type::kBoolFalse; value.integer = 0; break;
      case 2:
        if ((p = take(1)) == nullptr) return false;
        value.type = HeaderValue::Type::kByte;
        value.integer = static_cast<std::int8_t>(read_be(p, 1));
        break;
      case 3:
        if ((p = take(2)) == nullptr) return false;
        value.type = HeaderValue::Type::kShort;
        value.integer = static_cast<std::int16_t>(read_be(p, 2));
        break;
      case 4:
        if ((p = take(4)) == nullptr) return false;
        value.type = HeaderValue::Type::kInteger;
        value.integer = static_cast<std::int32_t>(read_be(p, 4));
        break;
      case 5:
      case 8:
        if ((p = take(8)) == nullptr) return false;
        value.type = *type == 5 ? HeaderValue::Type::kLong : HeaderValue::Type::kTimestamp;
        value.integer = static_cast<std::int64_t>(read_be(p, 8));
        break;
      case 6:
      case 7: {
        if ((p = take(2)) == nullptr) return false;
        const std::size_t len = read_be(p, 2);
        if ((p = take(len)) == nullptr) return false;
        value.type = *type == 6 ? HeaderValue::Type::kBytes : HeaderValue::Type::kString;
        value.bytes.assign(p, len);
        break;
      }
      case 9:
        if ((p = take(16)) == nullptr) return false;
        value.type = HeaderValue::Type::kUuid;
        value.bytes.assign(p, 16);
        break;
      default:
        return false;
    }
    std::string key(name, name_len);
    const auto [it, inserted] = message.headers.try_emplace(key, std::move(value));
    if (!inserted) return false;
    message.header_order.push_back(std::move(key));
  }
  return true;
}

void encode_header(std::string& out, const std::string& name, const HeaderValue& value) {
  if (name.empty() || name.size() > 255) throw std::invalid_argument("event stream header name must be 1 to 255 bytes");
  out.push_back(static_cast<char>(name.size()));
  out += name;
  out.push_back(static_cast<char>(value.type));
  const auto u = static_cast<std::uint64_t>(value.integer);
  switch (value.type) {
    case HeaderValue::Type::kBoolTrue:
    case HeaderValue::Type::kBoolFalse: break;
    case HeaderValue::Type::kByte: write_be(out, u, 1); break;
    case HeaderValue::Type::kShort: write_be(out, u, 2); break;
    case HeaderValue::Type::kInteger: write_be(out, u, 4); break;
    case HeaderValue::Type::kLong:
    case HeaderValue::Type::kTimestamp: write_be(out, u, 8); break;
    case HeaderValue::Type::kBytes:
    case HeaderValue::Type::kString:
      if (value.bytes.size() > 0xFFFF) throw std::invalid_argument("event stream header value over 65535 bytes");
      write_be(out, value.bytes.size(), 2);
      out += value.bytes;
      break;
    case HeaderValue::Type::kUuid:
      if (value.bytes.size() != 16) throw std::invalid_argument("event stream uuid header must be 16 bytes");
      out += value.bytes;
      break;
    default: throw std::invalid_argument("unknown event stream header type");
  }
}

}  // namespace

std::optional<std::string_view> EventMessage::string_header(std::string_view name) const {
  const auto it = headers.find(std::string(name));
  if (it == headers.end() || it->second.type != HeaderValue::Type::kString) return std::nullopt;
  return std::string_view(it->second.bytes);
}

std::string_view to_string(EventStreamError error) noexcept {
  switch (error) {
    case EventStreamError::kNone: return "none";
    case EventStreamError::kPreludeCrc: return "prelude_crc";
    case EventStreamError::kMessageCrc: return "message_crc";
    case EventStreamError::kTooLarge: return "too_large";
    case EventStreamError::kBadLengths: return "bad_lengths";
    case EventStreamError::kBadHeader: return "bad_header";
  }
  return "unknown";
}

EventStreamDecoder::EventStreamDecoder(Sink sink, std::size_t max_message)
    : sink_(std::move(sink)), max_message_(max_message) {}

namespace {

// Checks a prelude before anything past it is held, so a hostile length costs nothing. Returns the total length,
// or sets `error` and returns 0.
std::uint32_t check_prelude(const char* p, std::size_t max_message, EventStreamError& error) noexcept {
  if (crc(0, p, 8) != read_u32(p + 8)) {
    error = EventStreamError::kPreludeCrc;
    return 0;
  }
  const std::uint32_t total = read_u32(p);
  const std::uint32_t headers = read_u32(p + 4);
  if (total < kMinMessage || headers > total - kMinMessage) {
    error = EventStreamError::kBadLengths;
    return 0;
  }
  if (total > max_message) {
    error = EventStreamError::kTooLarge;
    return 0;
  }
  return total;
}

// Verifies and decodes one whole message (its prelude already checked).
EventStreamError decode_message(std::string_view bytes, EventMessage& message) {
  const char* p = bytes.data();
  const std::size_t total = bytes.size();
  // The prelude CRC is the CRC of the first 8 bytes, so the message CRC continues from it.
  if (crc(read_u32(p + 8), p + 8, total - kTrailerSize - 8) != read_u32(p + total - kTrailerSize)) {
    return EventStreamError::kMessageCrc;
  }
  const std::size_t headers = read_u32(p + 4);
  if (!parse_headers(bytes.substr(kPreludeSize, headers), message)) return EventStreamError::kBadHeader;
  message.payload.assign(bytes.substr(kPreludeSize + headers, total - headers - kMinMessage));
  return EventStreamError::kNone;
}

}  // namespace

bool EventStreamDecoder::feed(std::string_view bytes) {
  if (error_ != EventStreamError::kNone || stopped_) return false;

  // Hands one whole message to the sink; false when decoding must end.
  const auto deliver = [this](std::string_view raw) {
    EventMessage message;
    const EventStreamError error = decode_message(raw, message);
    if (error != EventStreamError::kNone) {
      error_ = error;
      return false;
    }
    ++messages_;
    bool go_on = false;
    try {
      go_on = sink_(std::move(message));
    } catch (...) {
      // What the caller did with the stream is unknown, so nothing more is decoded.
      stopped_ = true;
      throw;
    }
    if (!go_on) stopped_ = true;
    return go_on;
  };
  const auto fail = [this] {
    std::string().swap(buffer_);  // nothing more will be read: release the memory
    buffer_total_ = 0;
    return false;
  };

  while (!bytes.empty()) {
    if (!buffer_.empty()) {
      // An unfinished message is held: top it up with only what it still needs, so the buffer never grows past
      // one message.
      if (buffer_.size() < kPreludeSize) {
        const std::size_t n = std::min(kPreludeSize - buffer_.size(), bytes.size());
        buffer_.append(bytes.substr(0, n));
        bytes.remove_prefix(n);
        if (buffer_.size() < kPreludeSize) return true;
        buffer_total_ = check_prelude(buffer_.data(), max_message_, error_);
        if (buffer_total_ == 0) return fail();
      }
      const std::size_t n = std::min(buffer_total_ - buffer_.size(), bytes.size());
      if (buffer_.size() + n > buffer_.capacity()) {
        // Grow geometrically (linear time over many small reads) but never past this message's own length.
        buffer_.reserve(std::min<std::size_t>(buffer_total_, std::max(buffer_.capacity() * 2, buffer_.size() + n)));
      }
      buffer_.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
      if (buffer_.size() < buffer_total_) return true;
      const std::string raw = std::exchange(buffer_, std::string());
      buffer_total_ = 0;
      if (!deliver(raw)) return fail();
      continue;
    }
    // Nothing held: whole messages are decoded straight from the input, and only a cut tail is copied.
    if (bytes.size() < kPreludeSize) {
      buffer_.assign(bytes);
      return true;
    }
    const std::uint32_t total = check_prelude(bytes.data(), max_message_, error_);
    if (total == 0) return fail();
    if (bytes.size() < total) {
      buffer_.assign(bytes);
      buffer_total_ = total;
      return true;
    }
    if (!deliver(bytes.substr(0, total))) return fail();
    bytes.remove_prefix(total);
  }
  return true;
}

std::string encode_event_message(const EventMessage& message) {
  std::string headers;
  std::set<std::string_view> written;
  for (const auto& name : message.header_order) {
    const auto it = message.headers.find(name);
    if (it == message.headers.end() || !written.insert(it->first).second) continue;
    encode_header(headers, it->first, it->second);
  }
  for (const auto& [name, value] : message.headers) {
    if (written.count(name) == 0) encode_header(headers, name, value);
  }
  const std::uint64_t total = kMinMessage + headers.size() + message.payload.size();
  if (total > 0xFFFFFFFFu) throw std::invalid_argument("event stream message over 4 GiB");
  std::string out;
  out.reserve(total);
  write_be(out, total, 4);
  write_be(out, headers.size(), 4);
  write_be(out, crc(0, out.data(), 8), 4);
  out += headers;
  out += message.payload;
  write_be(out, crc(0, out.data(), out.size()), 4);
  return out;
}

}  // namespace code_interpreter::bedrock
