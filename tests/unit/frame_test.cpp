#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pyodide/frame.hpp"
#include "../support/bytes.hpp"

using code_interpreter::test_support::all_byte_values;
using code_interpreter::test_support::u32;
using code_interpreter::detail::encode_frame;
using code_interpreter::detail::Frame;
using code_interpreter::detail::FrameDecoder;
using code_interpreter::detail::FrameError;
using nlohmann::json;

namespace {

constexpr std::size_t kLimit = 16u * 1024 * 1024;

// A frame with the given raw header bytes and body, correctly length-prefixed.
std::string raw_frame(std::string_view header, std::string_view body = {}) {
  return u32(static_cast<std::uint32_t>(header.size())) + u32(static_cast<std::uint32_t>(body.size())) +
         std::string(header) + std::string(body);
}

}  // namespace

TEST_CASE("encode_frame writes big-endian header and body lengths, the JSON header, then the body", "[frame]") {
  const std::string encoded = encode_frame(json{{"t", "x"}}, "ab");
  CHECK(encoded == std::string("\0\0\0\x09\0\0\0\x02", 8) + "{\"t\":\"x\"}ab");
}

TEST_CASE("a frame with a binary body of all 256 byte values survives encode and decode", "[frame]") {
  const json header = {{"t", "file"}, {"id", 7}, {"path", "/files/blob.bin"}};
  const std::string body = all_byte_values() + all_byte_values();
  FrameDecoder decoder(kLimit);
  decoder.push(encode_frame(header, body));
  const std::optional<Frame> frame = decoder.next();
  REQUIRE(frame.has_value());
  CHECK(frame->header == header);
  CHECK(frame->body == body);
  CHECK_FALSE(decoder.next().has_value());
  CHECK(decoder.buffered() == 0);
}

TEST_CASE("a frame with an empty body decodes with an empty body", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(encode_frame(json{{"t", "ready"}}));
  const auto frame = decoder.next();
  REQUIRE(frame.has_value());
  CHECK(frame->header == json{{"t", "ready"}});
  CHECK(frame->body.empty());
}

TEST_CASE("fewer than the eight length bytes give no frame yet", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(std::string("\0\0\0", 3));
  CHECK_FALSE(decoder.next().has_value());
  CHECK(decoder.buffered() == 3);
}

TEST_CASE("a frame split at every byte position decodes only once complete, identically", "[frame]") {
  const json header = {{"t", "stdout"}, {"text", "h\xC3\xA9llo"}};
  const std::string body = all_byte_values();
  const std::string encoded = encode_frame(header, body);
  for (std::size_t i = 0; i <= encoded.size(); ++i) {
    CAPTURE(i);
    FrameDecoder decoder(kLimit);
    decoder.push(std::string_view(encoded).substr(0, i));
    if (i < encoded.size()) {
      REQUIRE_FALSE(decoder.next().has_value());
      decoder.push(std::string_view(encoded).substr(i));
    }
    const auto frame = decoder.next();
    REQUIRE(frame.has_value());
    REQUIRE(frame->header == header);
    REQUIRE(frame->body == body);
    REQUIRE_FALSE(decoder.next().has_value());
  }
}

TEST_CASE("a frame pushed one byte at a time appears only with its last byte", "[frame]") {
  const std::string encoded = encode_frame(json{{"t", "result"}, {"ok", true}}, "payload bytes");
  FrameDecoder decoder(kLimit);
  for (std::size_t i = 0; i + 1 < encoded.size(); ++i) {
    decoder.push(std::string_view(encoded).substr(i, 1));
    REQUIRE_FALSE(decoder.next().has_value());
  }
  decoder.push(std::string_view(encoded).substr(encoded.size() - 1));
  const auto frame = decoder.next();
  REQUIRE(frame.has_value());
  CHECK(frame->header == json{{"t", "result"}, {"ok", true}});
  CHECK(frame->body == "payload bytes");
}

TEST_CASE("several frames in one push come out in order", "[frame]") {
  const std::string stream = encode_frame(json{{"t", "a"}}, "1") + encode_frame(json{{"t", "b"}}, "") +
                             encode_frame(json{{"t", "c"}, {"n", 3}}, std::string("\0\xFF", 2));
  FrameDecoder decoder(kLimit);
  decoder.push(stream);
  const auto first = decoder.next();
  const auto second = decoder.next();
  const auto third = decoder.next();
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  REQUIRE(third.has_value());
  CHECK(first->header == json{{"t", "a"}});
  CHECK(first->body == "1");
  CHECK(second->header == json{{"t", "b"}});
  CHECK(second->body == "");
  CHECK(third->header == json{{"t", "c"}, {"n", 3}});
  CHECK(third->body == std::string("\0\xFF", 2));
  CHECK_FALSE(decoder.next().has_value());
}

TEST_CASE("a long stream of frames pushed in odd-sized chunks decodes every frame in order", "[frame]") {
  std::string stream;
  const int count = 5000;
  for (int i = 0; i < count; ++i) {
    stream += encode_frame(json{{"t", "stdout"}, {"seq", i}}, std::string(static_cast<std::size_t>(i % 97), 'z'));
  }
  FrameDecoder decoder(kLimit);
  std::vector<Frame> frames;
  for (std::size_t i = 0; i < stream.size(); i += 1237) {
    decoder.push(std::string_view(stream).substr(i, 1237));
    while (auto frame = decoder.next()) frames.push_back(std::move(*frame));
  }
  REQUIRE(frames.size() == static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    CAPTURE(i);
    REQUIRE(frames[static_cast<std::size_t>(i)].header.at("seq") == i);
    REQUIRE(frames[static_cast<std::size_t>(i)].body.size() == static_cast<std::size_t>(i % 97));
  }
  CHECK(decoder.buffered() == 0);
}

TEST_CASE("a header length over the header limit throws FrameError before the body arrives", "[frame]") {
  FrameDecoder decoder(std::size_t{64} * 1024 * 1024);
  decoder.push(u32(static_cast<std::uint32_t>(FrameDecoder::kMaxHeaderBytes + 1)) + u32(0));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("header plus body over max_frame_bytes throws FrameError before the body arrives", "[frame]") {
  FrameDecoder decoder(100);
  decoder.push(u32(9) + u32(92));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("header plus body of exactly max_frame_bytes is accepted", "[frame]") {
  FrameDecoder decoder(100);
  decoder.push(encode_frame(json{{"t", "x"}}, std::string(91, 'b')));
  const auto frame = decoder.next();
  REQUIRE(frame.has_value());
  CHECK(frame->body == std::string(91, 'b'));
}

TEST_CASE("lengths whose sum overflows 32 bits still throw FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(u32(16) + u32(0xFFFFFFF8u));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("a header that is not JSON throws FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(raw_frame("{t: stdout"));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("an empty header throws FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(raw_frame("", "body"));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("a JSON header followed by trailing bytes throws FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(raw_frame(R"({"t":"a"} x)"));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("a JSON array header throws FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(raw_frame(R"(["t","stdout"])"));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("a JSON string header throws FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(raw_frame(R"("t")"));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("a header without a \"t\" member throws FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(raw_frame(R"({"type":"stdout"})"));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("a header whose \"t\" is not a string throws FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(raw_frame(R"({"t":1})"));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}

TEST_CASE("a header with invalid UTF-8 in a string throws FrameError", "[frame]") {
  FrameDecoder decoder(kLimit);
  decoder.push(raw_frame("{\"t\":\"\xFF\"}"));
  CHECK_THROWS_AS(decoder.next(), FrameError);
}
