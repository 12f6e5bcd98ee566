#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/stream_decoders.hpp"
#include "../support/bytes.hpp"

using code_interpreter::test_support::bytes;
using code_interpreter::http::DecodeStatus;
using code_interpreter::http::encode_envelope;
using code_interpreter::http::EnvelopeDecoder;
using code_interpreter::http::LineDecoder;

namespace {

constexpr std::size_t kCap = 1024;

// Collects what a LineDecoder hands out.
struct Lines {
  std::vector<std::string> got;
  LineDecoder decoder;
  explicit Lines(std::size_t max_line = kCap)
      : decoder([this](std::string_view line) {
          got.emplace_back(line);
          return true;
        }, max_line) {}
};

using Envelope = std::pair<std::uint8_t, std::string>;

// Collects what an EnvelopeDecoder hands out.
struct Envelopes {
  std::vector<Envelope> got;
  EnvelopeDecoder decoder;
  explicit Envelopes(std::size_t max_payload = kCap)
      : decoder([this](std::uint8_t flags, std::string_view payload) {
          got.emplace_back(flags, std::string(payload));
          return true;
        }, max_payload) {}
};

}  // namespace

// ---- LineDecoder ----

TEST_CASE("LineDecoder yields the same lines wherever the body is cut, even inside a UTF-8 character", "[decoders]") {
  // "é" is 2 bytes and "€" 3, so some cuts fall inside a character; one line ends in CRLF; one is empty.
  const std::string body = "alpha\n{\"t\": \"h\xc3\xa9\"}\r\n\nlast \xe2\x82\xac\n";
  const std::vector<std::string> expected = {"alpha", "{\"t\": \"h\xc3\xa9\"}", "", "last \xe2\x82\xac"};
  for (std::size_t i = 0; i <= body.size(); ++i) {
    for (std::size_t j = i; j <= body.size(); ++j) {
      Lines lines;
      CHECK(lines.decoder.feed(std::string_view(body).substr(0, i)) == DecodeStatus::kOk);
      CHECK(lines.decoder.feed(std::string_view(body).substr(i, j - i)) == DecodeStatus::kOk);
      CHECK(lines.decoder.feed(std::string_view(body).substr(j)) == DecodeStatus::kOk);
      CHECK(lines.decoder.finish() == DecodeStatus::kOk);
      CAPTURE(i, j);
      REQUIRE(lines.got == expected);
    }
  }
}

TEST_CASE("LineDecoder fed one byte at a time yields the same lines", "[decoders]") {
  const std::string body = "one\r\ntwo\nthree\n";
  Lines lines;
  for (const char c : body) REQUIRE(lines.decoder.feed(std::string_view(&c, 1)) == DecodeStatus::kOk);
  CHECK(lines.got == std::vector<std::string>{"one", "two", "three"});
  CHECK_FALSE(lines.decoder.has_partial());
}

TEST_CASE("LineDecoder removes a CR only when it directly precedes the LF", "[decoders]") {
  Lines lines;
  CHECK(lines.decoder.feed("a\r\nb\rc\nd\r\r\n") == DecodeStatus::kOk);
  CHECK(lines.got == std::vector<std::string>{"a", "b\rc", "d\r"});
}

TEST_CASE("LineDecoder removes the CR of a CRLF cut between the CR and the LF", "[decoders]") {
  Lines lines;
  CHECK(lines.decoder.feed("a\r") == DecodeStatus::kOk);
  CHECK(lines.got.empty());
  CHECK(lines.decoder.feed("\n") == DecodeStatus::kOk);
  CHECK(lines.got == std::vector<std::string>{"a"});
}

TEST_CASE("LineDecoder holds a partial line until its LF arrives", "[decoders]") {
  Lines lines;
  CHECK(lines.decoder.feed("x\npar") == DecodeStatus::kOk);
  CHECK(lines.got == std::vector<std::string>{"x"});
  CHECK(lines.decoder.has_partial());
  CHECK(lines.decoder.feed("tial\n") == DecodeStatus::kOk);
  CHECK(lines.got == std::vector<std::string>{"x", "partial"});
  CHECK_FALSE(lines.decoder.has_partial());
}

TEST_CASE("LineDecoder::finish yields a final line that has no LF, without a trailing CR", "[decoders]") {
  Lines lines;
  CHECK(lines.decoder.feed("x\ntail\r") == DecodeStatus::kOk);
  CHECK(lines.decoder.finish() == DecodeStatus::kOk);
  CHECK(lines.got == std::vector<std::string>{"x", "tail"});
  CHECK_FALSE(lines.decoder.has_partial());
}

TEST_CASE("LineDecoder::finish with nothing held yields no line", "[decoders]") {
  Lines lines;
  CHECK(lines.decoder.feed("x\n") == DecodeStatus::kOk);
  CHECK(lines.decoder.finish() == DecodeStatus::kOk);
  CHECK(lines.got == std::vector<std::string>{"x"});
}

TEST_CASE("LineDecoder accepts a line of exactly max_line bytes", "[decoders]") {
  Lines lines(8);
  CHECK(lines.decoder.feed("12345678\n") == DecodeStatus::kOk);
  CHECK(lines.got == std::vector<std::string>{"12345678"});
}

TEST_CASE("LineDecoder refuses a complete line of max_line + 1 bytes without handing it out", "[decoders]") {
  Lines lines(8);
  CHECK(lines.decoder.feed("ok\n123456789\nnext\n") == DecodeStatus::kOversize);
  CHECK(lines.got == std::vector<std::string>{"ok"});
}

TEST_CASE("LineDecoder refuses an unfinished line as soon as it passes max_line bytes", "[decoders]") {
  // The LF may never come: the decoder must not keep buffering while it waits.
  Lines lines(8);
  CHECK(lines.decoder.feed("1234") == DecodeStatus::kOk);
  CHECK(lines.decoder.feed("5678") == DecodeStatus::kOk);
  CHECK(lines.decoder.feed("9") == DecodeStatus::kOversize);
  CHECK(lines.got.empty());
}

TEST_CASE("LineDecoder stops with kStopped when the sink returns false, handing out nothing after", "[decoders]") {
  std::vector<std::string> got;
  LineDecoder decoder([&](std::string_view line) {
    got.emplace_back(line);
    return line != "b";
  }, kCap);
  CHECK(decoder.feed("a\nb\nc\n") == DecodeStatus::kStopped);
  CHECK(got == std::vector<std::string>{"a", "b"});
}

TEST_CASE("LineDecoder::finish reports kStopped when the sink refuses the final line", "[decoders]") {
  LineDecoder decoder([](std::string_view) { return false; }, kCap);
  CHECK(decoder.feed("tail") == DecodeStatus::kOk);
  CHECK(decoder.finish() == DecodeStatus::kStopped);
}

// ---- EnvelopeDecoder ----

TEST_CASE("encode_envelope writes the flags, a 4-byte big-endian length and the payload", "[decoders]") {
  CHECK(encode_envelope(0x02, "{}") == bytes("\x02\x00\x00\x00\x02{}"));
  CHECK(encode_envelope(0x00, "") == bytes("\x00\x00\x00\x00\x00"));
  const std::string payload(0x010203, 'p');
  const std::string encoded = encode_envelope(0x00, payload);
  CHECK(encoded.size() == 5 + payload.size());
  CHECK(encoded.substr(0, 5) == bytes("\x00\x00\x01\x02\x03"));
  CHECK(encoded.substr(5) == payload);
  CHECK(encode_envelope(0x00, std::string(300, 'q')).substr(0, 5) == bytes("\x00\x00\x00\x01\x2c"));
}

TEST_CASE("EnvelopeDecoder yields the same envelopes wherever the body is cut, even inside a length prefix",
          "[decoders]") {
  const std::string body = encode_envelope(0x00, "{\"event\":{\"start\":{\"pid\":812}}}") + encode_envelope(0x00, "") +
                           encode_envelope(0x00, std::string(300, 'z')) + encode_envelope(0x02, "{}");
  const std::vector<Envelope> expected = {
      {0x00, "{\"event\":{\"start\":{\"pid\":812}}}"}, {0x00, ""}, {0x00, std::string(300, 'z')}, {0x02, "{}"}};
  for (std::size_t i = 0; i <= body.size(); ++i) {
    for (std::size_t j = i; j <= body.size(); j += (j < 60 || j + 60 > body.size()) ? 1 : 7) {
      Envelopes envelopes;
      CHECK(envelopes.decoder.feed(std::string_view(body).substr(0, i)) == DecodeStatus::kOk);
      CHECK(envelopes.decoder.feed(std::string_view(body).substr(i, j - i)) == DecodeStatus::kOk);
      CHECK(envelopes.decoder.feed(std::string_view(body).substr(j)) == DecodeStatus::kOk);
      CAPTURE(i, j);
      REQUIRE(envelopes.got == expected);
      REQUIRE_FALSE(envelopes.decoder.has_partial());
    }
  }
}

TEST_CASE("EnvelopeDecoder hands out the end-of-stream flag 0x02 with its payload", "[decoders]") {
  Envelopes envelopes;
  const std::string error = R"({"error":{"code":"deadline_exceeded","message":"context deadline exceeded"}})";
  CHECK(envelopes.decoder.feed(encode_envelope(0x02, error)) == DecodeStatus::kOk);
  CHECK(envelopes.got == std::vector<Envelope>{{EnvelopeDecoder::kEndStream, error}});
}

TEST_CASE("EnvelopeDecoder refuses the compressed flag 0x01 as malformed", "[decoders]") {
  Envelopes envelopes;
  CHECK(envelopes.decoder.feed(encode_envelope(0x01, "{}")) == DecodeStatus::kMalformed);
  CHECK(envelopes.got.empty());
}

TEST_CASE("EnvelopeDecoder refuses any flag bit other than end-of-stream as malformed", "[decoders]") {
  for (const std::uint8_t flags : {0x03, 0x04, 0x08, 0x10, 0x40, 0x80, 0xff}) {
    Envelopes envelopes;
    CAPTURE(int(flags));
    CHECK(envelopes.decoder.feed(encode_envelope(flags, "{}")) == DecodeStatus::kMalformed);
    CHECK(envelopes.got.empty());
  }
}

TEST_CASE("EnvelopeDecoder delivers the envelopes before a malformed one", "[decoders]") {
  Envelopes envelopes;
  CHECK(envelopes.decoder.feed(encode_envelope(0x00, "a") + encode_envelope(0x01, "b")) == DecodeStatus::kMalformed);
  CHECK(envelopes.got == std::vector<Envelope>{{0x00, "a"}});
}

TEST_CASE("EnvelopeDecoder refuses a length over the cap from its 5-byte prefix, before any payload arrives",
          "[decoders]") {
  Envelopes envelopes(16);
  CHECK(envelopes.decoder.feed(bytes("\x00\x00\x00\x00\x11")) == DecodeStatus::kOversize);
  CHECK(envelopes.got.empty());
  Envelopes huge(16);
  CHECK(huge.decoder.feed(bytes("\x00\xff\xff\xff\xff")) == DecodeStatus::kOversize);
}

TEST_CASE("EnvelopeDecoder accepts a payload of exactly the cap", "[decoders]") {
  Envelopes envelopes(16);
  CHECK(envelopes.decoder.feed(bytes("\x00\x00\x00\x00\x10")) == DecodeStatus::kOk);
  CHECK(envelopes.decoder.feed(std::string(16, 'x')) == DecodeStatus::kOk);
  CHECK(envelopes.got == std::vector<Envelope>{{0x00, std::string(16, 'x')}});
}

TEST_CASE("EnvelopeDecoder::has_partial is true while an envelope is cut, inside the prefix or the payload",
          "[decoders]") {
  const std::string envelope = encode_envelope(0x00, "{\"a\":1}");
  Envelopes envelopes;
  CHECK_FALSE(envelopes.decoder.has_partial());
  CHECK(envelopes.decoder.feed(envelope.substr(0, 3)) == DecodeStatus::kOk);
  CHECK(envelopes.decoder.has_partial());
  CHECK(envelopes.decoder.feed(envelope.substr(3, 4)) == DecodeStatus::kOk);
  CHECK(envelopes.decoder.has_partial());
  CHECK(envelopes.got.empty());
  CHECK(envelopes.decoder.feed(envelope.substr(7)) == DecodeStatus::kOk);
  CHECK_FALSE(envelopes.decoder.has_partial());
  CHECK(envelopes.got == std::vector<Envelope>{{0x00, "{\"a\":1}"}});
}

TEST_CASE("EnvelopeDecoder stops with kStopped when the sink returns false, handing out nothing after",
          "[decoders]") {
  std::vector<std::string> got;
  EnvelopeDecoder decoder([&](std::uint8_t, std::string_view payload) {
    got.emplace_back(payload);
    return payload != "b";
  }, kCap);
  CHECK(decoder.feed(encode_envelope(0, "a") + encode_envelope(0, "b") + encode_envelope(0, "c")) ==
        DecodeStatus::kStopped);
  CHECK(got == std::vector<std::string>{"a", "b"});
}
