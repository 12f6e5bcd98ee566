#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <zlib.h>

#include "bedrock/event_stream.hpp"
#include "../support/bytes.hpp"

using code_interpreter::test_support::u32;
using code_interpreter::bedrock::encode_event_message;
using code_interpreter::bedrock::EventMessage;
using code_interpreter::bedrock::EventStreamDecoder;
using code_interpreter::bedrock::EventStreamError;
using code_interpreter::bedrock::HeaderValue;
using Type = code_interpreter::bedrock::HeaderValue::Type;

namespace {

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// docs/protocols/bedrock.md "The event stream": a `result` event with payload {"content":[]}, produced by the official codec.
const std::string kVector = from_hex(
    "0000006a0000004cc9cabd3e"
    "0d3a6d6573736167652d74797065" "07" "0005" "6576656e74"
    "0b3a6576656e742d74797065" "07" "0006" "726573756c74"
    "0d3a636f6e74656e742d74797065" "07" "0010" "6170706c69636174696f6e2f6a736f6e"
    "7b22636f6e74656e74223a5b5d7d"
    "4716bd4f");

std::uint32_t crc_of(std::string_view bytes) {
  return static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(bytes.data()),
                                          static_cast<uInt>(bytes.size())));
}

void put_u32(std::string& out, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
}

// A 12-byte prelude with a correct CRC, for whatever lengths it claims.
std::string prelude(std::uint32_t total, std::uint32_t headers) {
  std::string out = u32(total) + u32(headers);
  return out + u32(crc_of(out));
}

// A whole message around a raw header section, with both CRCs correct, so only the headers are at fault.
std::string frame(std::string_view headers, std::string_view payload) {
  std::string out = prelude(static_cast<std::uint32_t>(16 + headers.size() + payload.size()),
                            static_cast<std::uint32_t>(headers.size()));
  out.append(headers);
  out.append(payload);
  return out + u32(crc_of(out));
}

HeaderValue value_of(Type type, std::int64_t integer = 0, std::string bytes = {}) {
  HeaderValue v;
  v.type = type;
  v.integer = integer;
  v.bytes = std::move(bytes);
  return v;
}

// Collects what an EventStreamDecoder hands out.
struct Collector {
  std::vector<EventMessage> got;
  EventStreamDecoder decoder;
  explicit Collector(std::size_t max_message = EventStreamDecoder::kDefaultMaxMessage)
      : decoder([this](EventMessage&& message) {
          got.push_back(std::move(message));
          return true;
        }, max_message) {}
};

void check_vector_message(const EventMessage& m) {
  REQUIRE(m.headers.size() == 3);
  CHECK(m.header_order == std::vector<std::string>{":message-type", ":event-type", ":content-type"});
  CHECK(m.string_header(":message-type") == std::optional<std::string_view>("event"));
  CHECK(m.string_header(":event-type") == std::optional<std::string_view>("result"));
  CHECK(m.string_header(":content-type") == std::optional<std::string_view>("application/json"));
  CHECK(m.payload == R"({"content":[]})");
}

EventMessage sample(std::string payload) {
  EventMessage m;
  m.headers[":message-type"] = value_of(Type::kString, 0, "event");
  m.headers[":event-type"] = value_of(Type::kString, 0, "result");
  m.payload = std::move(payload);
  return m;
}

// Decodes a single header of a message built by the encoder.
HeaderValue round_trip(const HeaderValue& value) {
  EventMessage m;
  m.headers["h"] = value;
  Collector c;
  REQUIRE(c.decoder.feed(encode_event_message(m)));
  REQUIRE(c.got.size() == 1);
  REQUIRE(c.got[0].headers.count("h") == 1);
  return c.got[0].headers.at("h");
}

// Feeds bytes to a fresh decoder and returns the error it stopped with.
EventStreamError error_of(std::string_view bytes) {
  Collector c;
  CHECK_FALSE(c.decoder.feed(bytes));
  CHECK(c.got.empty());
  return c.decoder.error();
}

}  // namespace

TEST_CASE("zlib's crc32 is the IEEE CRC-32 the framing uses", "[event_stream]") {
  CHECK(crc_of("123456789") == 0xcbf43926u);
}

TEST_CASE("The 106-byte vector from the official codec decodes to its three headers and payload", "[event_stream]") {
  REQUIRE(kVector.size() == 106);
  Collector c;
  CHECK(c.decoder.feed(kVector));
  REQUIRE(c.got.size() == 1);
  check_vector_message(c.got[0]);
  for (const auto& [name, value] : c.got[0].headers) CHECK(value.type == Type::kString);
  CHECK(c.decoder.error() == EventStreamError::kNone);
  CHECK(c.decoder.messages() == 1);
  CHECK_FALSE(c.decoder.has_partial());
}

TEST_CASE("encode_event_message reproduces the 106-byte vector byte for byte", "[event_stream]") {
  EventMessage m;
  m.headers[":message-type"] = value_of(Type::kString, 0, "event");
  m.headers[":event-type"] = value_of(Type::kString, 0, "result");
  m.headers[":content-type"] = value_of(Type::kString, 0, "application/json");
  m.header_order = {":message-type", ":event-type", ":content-type"};
  m.payload = R"({"content":[]})";
  CHECK(encode_event_message(m) == kVector);
}

TEST_CASE("A decoded message re-encodes to the bytes it came from", "[event_stream]") {
  Collector c;
  REQUIRE(c.decoder.feed(kVector));
  REQUIRE(c.got.size() == 1);
  CHECK(encode_event_message(c.got[0]) == kVector);
}

TEST_CASE("Without a header order the encoder writes headers in map order", "[event_stream]") {
  EventMessage m;
  m.headers["b"] = value_of(Type::kBoolTrue);
  m.headers["a"] = value_of(Type::kBoolFalse);
  m.header_order = {"b", "missing", "b"};  // unknown and repeated names are skipped
  const std::string headers_b_a = std::string("\x01" "b" "\x00" "\x01" "a" "\x01", 6);
  CHECK(encode_event_message(m) == frame(headers_b_a, ""));
  m.header_order.clear();
  const std::string headers_a_b = std::string("\x01" "a" "\x01" "\x01" "b" "\x00", 6);
  CHECK(encode_event_message(m) == frame(headers_a_b, ""));
}

TEST_CASE("The vector cut at any point decodes to the same message", "[event_stream]") {
  for (std::size_t cut = 1; cut < kVector.size(); ++cut) {
    CAPTURE(cut);
    Collector c;
    REQUIRE(c.decoder.feed(std::string_view(kVector).substr(0, cut)));
    CHECK(c.got.empty());
    CHECK(c.decoder.has_partial());
    REQUIRE(c.decoder.feed(std::string_view(kVector).substr(cut)));
    REQUIRE(c.got.size() == 1);
    check_vector_message(c.got[0]);
    CHECK_FALSE(c.decoder.has_partial());
  }
}

TEST_CASE("The vector fed one byte at a time decodes to the same message", "[event_stream]") {
  Collector c;
  for (std::size_t i = 0; i < kVector.size(); ++i) {
    REQUIRE(c.decoder.feed(std::string_view(kVector).substr(i, 1)));
    CHECK(c.got.size() == (i + 1 == kVector.size() ? 1u : 0u));
  }
  REQUIRE(c.got.size() == 1);
  check_vector_message(c.got[0]);
  CHECK_FALSE(c.decoder.has_partial());
}

TEST_CASE("Two messages back to back decode in order wherever the stream is cut", "[event_stream]") {
  const std::string stream = kVector + encode_event_message(sample("second"));
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    CAPTURE(cut);
    Collector c;
    REQUIRE(c.decoder.feed(std::string_view(stream).substr(0, cut)));
    REQUIRE(c.decoder.feed(std::string_view(stream).substr(cut)));
    REQUIRE(c.got.size() == 2);
    check_vector_message(c.got[0]);
    CHECK(c.got[1].payload == "second");
    CHECK(c.decoder.messages() == 2);
    CHECK_FALSE(c.decoder.has_partial());
  }
}

TEST_CASE("Three messages back to back decode in order wherever the stream is cut twice", "[event_stream]") {
  const std::string stream = encode_event_message(sample("one")) + kVector + encode_event_message(sample(""));
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    for (std::size_t j = i; j <= stream.size(); ++j) {
      CAPTURE(i, j);
      Collector c;
      REQUIRE(c.decoder.feed(std::string_view(stream).substr(0, i)));
      REQUIRE(c.decoder.feed(std::string_view(stream).substr(i, j - i)));
      REQUIRE(c.decoder.feed(std::string_view(stream).substr(j)));
      REQUIRE(c.got.size() == 3);
      CHECK(c.got[0].payload == "one");
      check_vector_message(c.got[1]);
      CHECK(c.got[2].payload.empty());
      CHECK(c.got[2].string_header(":event-type") == std::optional<std::string_view>("result"));
      CHECK_FALSE(c.decoder.has_partial());
    }
  }
}

TEST_CASE("Bool headers round trip as true and false with no value bytes", "[event_stream]") {
  const HeaderValue t = round_trip(value_of(Type::kBoolTrue));
  CHECK(t.type == Type::kBoolTrue);
  CHECK(t.integer == 1);
  const HeaderValue f = round_trip(value_of(Type::kBoolFalse));
  CHECK(f.type == Type::kBoolFalse);
  CHECK(f.integer == 0);
  EventMessage m;
  m.headers["h"] = value_of(Type::kBoolTrue);
  CHECK(encode_event_message(m).size() == 16 + 1 + 1 + 1);
}

TEST_CASE("Byte, short and integer headers round trip as signed values", "[event_stream]") {
  const HeaderValue b = round_trip(value_of(Type::kByte, -1));
  CHECK(b.type == Type::kByte);
  CHECK(b.integer == -1);
  const HeaderValue s = round_trip(value_of(Type::kShort, -300));
  CHECK(s.type == Type::kShort);
  CHECK(s.integer == -300);
  const HeaderValue i = round_trip(value_of(Type::kInteger, std::numeric_limits<std::int32_t>::min()));
  CHECK(i.type == Type::kInteger);
  CHECK(i.integer == std::numeric_limits<std::int32_t>::min());
  CHECK(round_trip(value_of(Type::kInteger, 123456789)).integer == 123456789);
}

TEST_CASE("Long headers round trip at both ends of the int64 range", "[event_stream]") {
  for (const std::int64_t v : {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()}) {
    const HeaderValue l = round_trip(value_of(Type::kLong, v));
    CHECK(l.type == Type::kLong);
    CHECK(l.integer == v);
  }
}

TEST_CASE("Byte array headers round trip with embedded NULs", "[event_stream]") {
  const std::string raw("\x00\x01\x00\xff", 4);
  const HeaderValue v = round_trip(value_of(Type::kBytes, 0, raw));
  CHECK(v.type == Type::kBytes);
  CHECK(v.bytes == raw);
}

TEST_CASE("String headers round trip as sent", "[event_stream]") {
  const HeaderValue v = round_trip(value_of(Type::kString, 0, "h\xc3\xa9llo"));
  CHECK(v.type == Type::kString);
  CHECK(v.bytes == "h\xc3\xa9llo");
}

TEST_CASE("Timestamp headers round trip as signed milliseconds", "[event_stream]") {
  const HeaderValue v = round_trip(value_of(Type::kTimestamp, 1767225600123));
  CHECK(v.type == Type::kTimestamp);
  CHECK(v.integer == 1767225600123);
  CHECK(round_trip(value_of(Type::kTimestamp, -5)).integer == -5);
}

TEST_CASE("Uuid headers round trip as 16 raw bytes", "[event_stream]") {
  const std::string uuid("\x12\x34\x00\x78\x9a\xbc\xde\xf0\x01\x02\x03\x04\x05\x06\x07\x08", 16);
  const HeaderValue v = round_trip(value_of(Type::kUuid, 0, uuid));
  CHECK(v.type == Type::kUuid);
  CHECK(v.bytes == uuid);
}

TEST_CASE("string_header is empty for an absent header and for one that is not a string", "[event_stream]") {
  EventMessage m;
  m.headers["n"] = value_of(Type::kInteger, 7);
  m.headers["b"] = value_of(Type::kBytes, 0, "raw");
  m.headers["s"] = value_of(Type::kString, 0, "");
  CHECK_FALSE(m.string_header("absent").has_value());
  CHECK_FALSE(m.string_header("n").has_value());
  CHECK_FALSE(m.string_header("b").has_value());
  CHECK(m.string_header("s") == std::optional<std::string_view>(""));
}

TEST_CASE("A flipped prelude CRC is kPreludeCrc", "[event_stream]") {
  std::string bad = kVector;
  bad[11] ^= 0x01;
  CHECK(error_of(bad) == EventStreamError::kPreludeCrc);
}

TEST_CASE("A flipped length in the prelude is kPreludeCrc, checked before the length is used", "[event_stream]") {
  std::string bad = kVector;
  bad[0] ^= 0x40;  // total would be over 1 GiB
  CHECK(error_of(bad) == EventStreamError::kPreludeCrc);
}

TEST_CASE("A flipped message CRC is kMessageCrc", "[event_stream]") {
  std::string bad = kVector;
  bad[105] ^= 0x80;
  CHECK(error_of(bad) == EventStreamError::kMessageCrc);
}

TEST_CASE("A flipped payload byte is kMessageCrc", "[event_stream]") {
  std::string bad = kVector;
  bad[95] ^= 0x01;
  CHECK(error_of(bad) == EventStreamError::kMessageCrc);
}

TEST_CASE("A total length under 16 is kBadLengths", "[event_stream]") {
  CHECK(error_of(prelude(15, 0) + std::string(3, '\0')) == EventStreamError::kBadLengths);
}

TEST_CASE("A headers length over total - 16 is kBadLengths", "[event_stream]") {
  CHECK(error_of(prelude(20, 5) + std::string(8, '\0')) == EventStreamError::kBadLengths);
}

TEST_CASE("A total over the cap fails as soon as the 12-byte prelude is in", "[event_stream]") {
  const auto over = static_cast<std::uint32_t>(EventStreamDecoder::kDefaultMaxMessage + 1);
  const std::string head = prelude(over, 0);
  Collector c;
  REQUIRE(c.decoder.feed(std::string_view(head).substr(0, 11)));
  CHECK(c.decoder.has_partial());
  CHECK_FALSE(c.decoder.feed(std::string_view(head).substr(11)));
  CHECK(c.decoder.error() == EventStreamError::kTooLarge);
  CHECK_FALSE(c.decoder.has_partial());  // nothing held past the prelude, and the prelude released
  CHECK(c.got.empty());
}

TEST_CASE("The cap is configurable and a message exactly at it is accepted", "[event_stream]") {
  Collector at(kVector.size());
  CHECK(at.decoder.feed(kVector));
  CHECK(at.got.size() == 1);
  Collector under(kVector.size() - 1);
  CHECK_FALSE(under.decoder.feed(kVector));
  CHECK(under.decoder.error() == EventStreamError::kTooLarge);
  CHECK(under.got.empty());
}

TEST_CASE("An unknown header type is kBadHeader", "[event_stream]") {
  CHECK(error_of(frame(std::string("\x01" "h" "\x0a", 3), "")) == EventStreamError::kBadHeader);
}

TEST_CASE("A header name running past the header section is kBadHeader", "[event_stream]") {
  // The name claims 5 bytes and the section ends after 2; read on into the payload, it would be a valid header.
  const std::string section("\x05" "ab", 3);
  CHECK(error_of(frame(section, std::string("cde" "\x00", 4))) == EventStreamError::kBadHeader);
}

TEST_CASE("A string value running past the header section is kBadHeader", "[event_stream]") {
  // Read on into the payload, the value would be a valid "abcde".
  const std::string section("\x01" "h" "\x07" "\x00\x05" "abc", 8);
  CHECK(error_of(frame(section, "de")) == EventStreamError::kBadHeader);
}

TEST_CASE("A header missing its type byte is kBadHeader", "[event_stream]") {
  CHECK(error_of(frame(std::string("\x01" "h", 2), "")) == EventStreamError::kBadHeader);
}

TEST_CASE("An empty header name is kBadHeader", "[event_stream]") {
  CHECK(error_of(frame(std::string("\x00" "\x00", 2), "")) == EventStreamError::kBadHeader);
}

TEST_CASE("A duplicate header name is kBadHeader", "[event_stream]") {
  const std::string section("\x01" "h" "\x00" "\x01" "h" "\x01", 6);
  CHECK(error_of(frame(section, "")) == EventStreamError::kBadHeader);
}

TEST_CASE("Messages before a bad one are delivered, after an error feed returns false forever", "[event_stream]") {
  std::string bad = kVector;
  bad[105] ^= 0x01;
  Collector c;
  CHECK_FALSE(c.decoder.feed(kVector + bad + kVector));
  CHECK(c.got.size() == 1);
  CHECK(c.decoder.messages() == 1);
  CHECK(c.decoder.error() == EventStreamError::kMessageCrc);
  CHECK_FALSE(c.decoder.feed(kVector));
  CHECK_FALSE(c.decoder.feed(""));
  CHECK(c.got.size() == 1);
  CHECK(c.decoder.error() == EventStreamError::kMessageCrc);
}

TEST_CASE("A sink returning false stops decoding without an error", "[event_stream]") {
  int calls = 0;
  EventStreamDecoder decoder([&](EventMessage&&) {
    ++calls;
    return false;
  });
  CHECK_FALSE(decoder.feed(kVector + kVector));
  CHECK(calls == 1);
  CHECK(decoder.messages() == 1);
  CHECK(decoder.error() == EventStreamError::kNone);
  CHECK_FALSE(decoder.feed(kVector));
  CHECK(calls == 1);
}

TEST_CASE("has_partial is true only while a message is cut", "[event_stream]") {
  Collector c;
  CHECK_FALSE(c.decoder.has_partial());
  REQUIRE(c.decoder.feed(kVector + kVector.substr(0, 3)));
  CHECK(c.got.size() == 1);
  CHECK(c.decoder.has_partial());
  REQUIRE(c.decoder.feed(kVector.substr(3)));
  CHECK(c.got.size() == 2);
  CHECK_FALSE(c.decoder.has_partial());
}

TEST_CASE("Each error has a stable name", "[event_stream]") {
  using code_interpreter::bedrock::to_string;
  CHECK(to_string(EventStreamError::kNone) == "none");
  CHECK(to_string(EventStreamError::kPreludeCrc) == "prelude_crc");
  CHECK(to_string(EventStreamError::kMessageCrc) == "message_crc");
  CHECK(to_string(EventStreamError::kTooLarge) == "too_large");
  CHECK(to_string(EventStreamError::kBadLengths) == "bad_lengths");
  CHECK(to_string(EventStreamError::kBadHeader) == "bad_header");
}

TEST_CASE("encode_event_message refuses what the framing cannot carry", "[event_stream]") {
  EventMessage empty_name;
  empty_name.headers[""] = value_of(Type::kBoolTrue);
  CHECK_THROWS_AS(encode_event_message(empty_name), std::invalid_argument);
  EventMessage long_value;
  long_value.headers["h"] = value_of(Type::kString, 0, std::string(65536, 'x'));
  CHECK_THROWS_AS(encode_event_message(long_value), std::invalid_argument);
  EventMessage short_uuid;
  short_uuid.headers["h"] = value_of(Type::kUuid, 0, "0123");
  CHECK_THROWS_AS(encode_event_message(short_uuid), std::invalid_argument);
}
