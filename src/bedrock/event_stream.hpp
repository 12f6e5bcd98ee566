// The AWS event stream (application/vnd.amazon.eventstream) decoder for InvokeCodeInterpreter answers
// (docs/protocols/bedrock.md "The event stream"): prelude (total length, headers length, prelude CRC-32), typed headers, payload, message CRC-32
// (zlib's crc32). Bytes arrive in pieces split anywhere; a message is decoded once all of it is in. Everything
// is untrusted: size caps, CRC checks and header bounds are enforced before any use. Fuzzed (tests/fuzz).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace code_interpreter::bedrock {

/// A header value by its wire type (docs/protocols/bedrock.md "The event stream"): 0/1 bool, 2 byte, 3 short, 4 integer, 5 long,
/// 6 byte array, 7 string, 8 timestamp (ms since the epoch), 9 uuid (16 raw bytes).
struct HeaderValue {
  enum class Type : std::uint8_t { kBoolTrue = 0, kBoolFalse, kByte, kShort, kInteger, kLong, kBytes, kString, kTimestamp, kUuid };
  Type type = Type::kString;
  std::int64_t integer = 0;  ///< bool (0/1), byte, short, integer, long, timestamp
  std::string bytes;         ///< byte array, string (UTF-8 as sent), uuid (16 bytes)
};

struct EventMessage {
  std::map<std::string, HeaderValue> headers;  ///< a duplicate name is an error
  std::string payload;
  /// Header names in wire order, as the decoder read them. The map loses that order, and the message CRC covers
  /// it, so a decoded message re-encodes to its exact bytes only with it. May be left empty when building one.
  std::vector<std::string> header_order;

  /// The string value of a header, or nullopt when absent or not a string.
  [[nodiscard]] std::optional<std::string_view> string_header(std::string_view name) const;
};

enum class EventStreamError {
  kNone,
  kPreludeCrc,     ///< the prelude's CRC-32 does not match
  kMessageCrc,     ///< the message's CRC-32 does not match
  kTooLarge,       ///< total length over the cap
  kBadLengths,     ///< total < 16, or headers longer than the message allows
  kBadHeader,      ///< a header runs past its section, has an unknown type, an empty or duplicate name
};

std::string_view to_string(EventStreamError error) noexcept;

class EventStreamDecoder {
 public:
  /// Receives each complete, verified message; returns false to stop decoding.
  using Sink = std::function<bool(EventMessage&& message)>;
  static constexpr std::size_t kDefaultMaxMessage = std::size_t{16} << 20;  // aws-c-event-stream's cap (docs/protocols/bedrock.md "The event stream")

  explicit EventStreamDecoder(Sink sink, std::size_t max_message = kDefaultMaxMessage);

  /// Feeds bytes. Returns false once an error occurred (error() tells which) or the sink asked to stop; after an
  /// error every further call returns false.
  bool feed(std::string_view bytes);

  [[nodiscard]] EventStreamError error() const noexcept { return error_; }
  /// Bytes of an unfinished message are held (a body that ends now was cut inside a message).
  [[nodiscard]] bool has_partial() const noexcept { return !buffer_.empty(); }
  [[nodiscard]] std::size_t messages() const noexcept { return messages_; }

 private:
  Sink sink_;
  std::size_t max_message_;
  std::string buffer_;          ///< the unfinished message, never more than one message and never over the cap
  std::uint32_t buffer_total_ = 0;  ///< its total length, once its prelude (first 12 bytes) is in and verified
  EventStreamError error_ = EventStreamError::kNone;
  bool stopped_ = false;
  std::size_t messages_ = 0;
};

/// Encodes one message (for tests and benchmarks; the library only decodes). Headers go in `header_order` first
/// (names absent from the map or repeated are skipped), then any others in map order. Bool headers take their
/// value from the type; byte/short/integer keep the low bits of `integer`.
/// @throws std::invalid_argument for a name empty or over 255 bytes, a byte array or string over 65535 bytes, a
///         uuid not of 16 bytes, or a message over 4 GiB.
std::string encode_event_message(const EventMessage& message);

}  // namespace code_interpreter::bedrock
