// Fuzzes the AWS event-stream decoder (src/bedrock/event_stream.hpp), which reads hostile Bedrock AgentCore
// answers. Properties: nothing throws out of it; the messages, the error, the count and the held tail are the same
// whether the body is fed whole, in two pieces cut at a point the input chooses, or in small pieces; every decoded
// message re-encodes to exactly the bytes it came from, so the decoded messages re-encoded are a prefix of the body.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bedrock/event_stream.hpp"
#include "fuzz_target.hpp"

using code_interpreter::bedrock::encode_event_message;
using code_interpreter::bedrock::EventMessage;
using code_interpreter::bedrock::EventStreamDecoder;
using code_interpreter::bedrock::EventStreamError;
using code_interpreter::bedrock::HeaderValue;

namespace {

struct Outcome {
  std::vector<std::string> encoded;  // each decoded message, re-encoded
  EventStreamError error = EventStreamError::kNone;
  std::size_t messages = 0;
  bool partial = false;
  bool stopped = false;
};

// Feeds `pieces` in order; the sink stops after `stop_after` messages when that is not 0.
Outcome decode(const std::vector<std::string_view>& pieces, std::size_t max_message, std::size_t stop_after) {
  Outcome o;
  try {
    EventStreamDecoder decoder(
        [&](EventMessage&& message) {
          FUZZ_CHECK(message.header_order.size() == message.headers.size());
          for (const auto& name : message.header_order) FUZZ_CHECK(message.headers.count(name) == 1);
          for (const auto& [name, value] : message.headers) {
            FUZZ_CHECK(!name.empty() && name.size() <= 255);
            if (value.type == HeaderValue::Type::kUuid) FUZZ_CHECK(value.bytes.size() == 16);
          }
          o.encoded.push_back(encode_event_message(message));
          FUZZ_CHECK(o.encoded.back().size() <= max_message);
          return stop_after == 0 || o.encoded.size() < stop_after;
        },
        max_message);
    bool go_on = true;
    for (const auto piece : pieces) {
      if (!go_on) {
        FUZZ_CHECK(!decoder.feed(piece));  // false forever after an error or a stop
        continue;
      }
      go_on = decoder.feed(piece);
    }
    o.error = decoder.error();
    o.messages = decoder.messages();
    o.partial = decoder.has_partial();
    o.stopped = !go_on;
    FUZZ_CHECK(go_on == (o.error == EventStreamError::kNone && (stop_after == 0 || o.messages < stop_after)));
    FUZZ_CHECK(o.messages == o.encoded.size());
  } catch (...) {
    FUZZ_CHECK(!"an exception escaped EventStreamDecoder");
  }
  return o;
}

void check_same(const Outcome& a, const Outcome& b) {
  FUZZ_CHECK(a.encoded == b.encoded);
  FUZZ_CHECK(a.error == b.error);
  FUZZ_CHECK(a.messages == b.messages);
  FUZZ_CHECK(a.stopped == b.stopped);
  // Only a decoder still reading holds the cut tail; its size does not depend on how the body was split.
  if (!a.stopped) FUZZ_CHECK(a.partial == b.partial);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // Byte 0 chooses the cap, whether the sink stops early, and (with the size) where the body is cut.
  const std::uint8_t options = data[0];
  const std::size_t max_message = options & 1 ? 16 + options : EventStreamDecoder::kDefaultMaxMessage;
  const std::size_t stop_after = (options >> 1) % 4;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t cut = body.empty() ? 0 : (options * 131u + body.size() * 7u) % (body.size() + 1);
  const std::size_t step = 1 + (options >> 3) % 17;

  const Outcome whole = decode({body}, max_message, stop_after);
  const Outcome two = decode({body.substr(0, cut), body.substr(cut)}, max_message, stop_after);
  std::vector<std::string_view> small;
  for (std::size_t at = 0; at < body.size(); at += step) small.push_back(body.substr(at, step));
  const Outcome pieces = decode(small, max_message, stop_after);
  check_same(whole, two);
  check_same(whole, pieces);

  // The messages were decoded from consecutive bytes at the start of the body.
  std::string prefix;
  for (const auto& m : whole.encoded) prefix += m;
  FUZZ_CHECK(body.substr(0, prefix.size()) == prefix);
  // A clean run that holds nothing consumed exactly the whole body.
  if (!whole.stopped && !whole.partial) FUZZ_CHECK(prefix.size() == body.size());
  return 0;
}

std::vector<std::string> fuzz_seeds() {
  const auto header = [](HeaderValue::Type type, std::int64_t integer = 0, std::string bytes = {}) {
    HeaderValue v;
    v.type = type;
    v.integer = integer;
    v.bytes = std::move(bytes);
    return v;
  };
  EventMessage result;
  result.headers[":message-type"] = header(HeaderValue::Type::kString, 0, "event");
  result.headers[":event-type"] = header(HeaderValue::Type::kString, 0, "result");
  result.headers[":content-type"] = header(HeaderValue::Type::kString, 0, "application/json");
  result.header_order = {":message-type", ":event-type", ":content-type"};
  result.payload = R"({"content":[]})";
  const std::string vector = encode_event_message(result);  // the 106-byte vector of docs/protocols/bedrock.md "The event stream"

  EventMessage exception;
  exception.headers[":message-type"] = header(HeaderValue::Type::kString, 0, "exception");
  exception.headers[":exception-type"] = header(HeaderValue::Type::kString, 0, "throttlingException");
  exception.payload = R"({"message":"slow down"})";

  EventMessage typed;
  typed.headers["t"] = header(HeaderValue::Type::kBoolTrue);
  typed.headers["f"] = header(HeaderValue::Type::kBoolFalse);
  typed.headers["b"] = header(HeaderValue::Type::kByte, -1);
  typed.headers["s"] = header(HeaderValue::Type::kShort, -300);
  typed.headers["i"] = header(HeaderValue::Type::kInteger, 70000);
  typed.headers["l"] = header(HeaderValue::Type::kLong, INT64_MIN);
  typed.headers["a"] = header(HeaderValue::Type::kBytes, 0, std::string("\x00\xff\x00", 3));
  typed.headers["x"] = header(HeaderValue::Type::kString, 0, "text");
  typed.headers["m"] = header(HeaderValue::Type::kTimestamp, 1767225600123);
  typed.headers["u"] = header(HeaderValue::Type::kUuid, 0, std::string(16, '\x5a'));
  typed.payload = std::string("\x00\x01payload", 9);

  const EventMessage empty;
  const std::string stream = vector + encode_event_message(exception) + encode_event_message(typed) +
                             encode_event_message(empty);

  std::string prelude_crc = vector;
  prelude_crc[9] ^= 0x10;
  std::string message_crc = vector;
  message_crc[104] ^= 0x01;
  std::string payload = vector;
  payload[100] ^= 0x20;
  std::string unknown_type = encode_event_message(typed);
  unknown_type[14] = '\x0a';  // the first header's type byte (name "a" of 1 byte)

  return {std::string(1, '\0') + vector,
          std::string(1, '\x08') + stream,
          std::string(1, '\x19') + stream,
          std::string(1, '\x02') + stream,
          std::string(1, '\x10') + encode_event_message(typed),
          std::string(1, '\x20') + stream.substr(0, stream.size() - 5),
          std::string(1, '\0') + vector + prelude_crc,
          std::string(1, '\0') + message_crc,
          std::string(1, '\x03') + payload,
          std::string(1, '\0') + unknown_type,
          std::string(1, '\0') + vector.substr(0, 12),
          std::string(1, '\x7f') + vector};
}
