#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/utf8.hpp"
#include "../support/bytes.hpp"

using code_interpreter::test_support::bytes;
using code_interpreter::detail::append_utf8_replacing;
using code_interpreter::detail::utf8_char_boundary;
using code_interpreter::detail::utf8_replacing;
using code_interpreter::detail::utf8_safe_cut;

// Every expected string below is Python 3's bytes.decode("utf-8", "replace") of the input, re-encoded as UTF-8.

namespace {

std::string decode(std::string_view input) {
  std::string out;
  append_utf8_replacing(out, input);
  return out;
}

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Random byte strings built from valid characters, fragments of characters and stray bytes.
std::string random_bytes(std::mt19937& rng) {
  static const std::vector<std::string> kTokens = {
      bytes("a"),        bytes("\n"),           bytes("\x00"),         bytes("\x7F"),
      bytes("\xC3\xA9"), bytes("\xDF\xBF"),     bytes("\xE2\x82\xAC"), bytes("\xEF\xBF\xBF"),
      bytes("\xED\x9F\xBF"), bytes("\xF0\x9F\x98\x80"), bytes("\xF4\x8F\xBF\xBF"), bytes("\x80"),
      bytes("\xBF"),     bytes("\xC0"),         bytes("\xC1"),         bytes("\xC2"),
      bytes("\xE0"),     bytes("\xE0\x80"),     bytes("\xE0\xA0"),     bytes("\xED\xA0"),
      bytes("\xF0"),     bytes("\xF0\x8F"),     bytes("\xF0\x90\x80"), bytes("\xF4\x90"),
      bytes("\xF5"),     bytes("\xFF")};
  std::string s;
  const std::uint32_t tokens = rng() % 16;
  for (std::uint32_t i = 0; i < tokens; ++i) {
    if (rng() % 4 == 0) {
      s += static_cast<char>(rng() & 0xFF);
    } else {
      s += kTokens[rng() % kTokens.size()];
    }
  }
  return s;
}

}  // namespace

TEST_CASE("ASCII passes through unchanged", "[utf8]") {
  CHECK(decode(bytes("hello, world\n\t~")) == bytes("hello, world\n\t~"));
  CHECK(decode(bytes("a\x00" "b")) == bytes("a\x00" "b"));
}

TEST_CASE("the empty input decodes to the empty string", "[utf8]") {
  CHECK(decode("") == "");
}

TEST_CASE("valid 2-byte characters pass through unchanged", "[utf8]") {
  CHECK(decode(bytes("\xC3\xA9\xC2\xA0\xDF\xBF")) == bytes("\xC3\xA9\xC2\xA0\xDF\xBF"));
}

TEST_CASE("valid 3-byte characters pass through unchanged", "[utf8]") {
  CHECK(decode(bytes("\xE2\x82\xAC\xE0\xA0\x80\xEF\xBF\xBF\xED\x9F\xBF")) ==
        bytes("\xE2\x82\xAC\xE0\xA0\x80\xEF\xBF\xBF\xED\x9F\xBF"));
}

TEST_CASE("valid 4-byte characters pass through unchanged", "[utf8]") {
  CHECK(decode(bytes("\xF0\x9F\x98\x80\xF0\x90\x80\x80\xF4\x8F\xBF\xBF")) ==
        bytes("\xF0\x9F\x98\x80\xF0\x90\x80\x80\xF4\x8F\xBF\xBF"));
}

TEST_CASE("a lone continuation byte becomes one U+FFFD", "[utf8]") {
  CHECK(decode(bytes("a\x80" "b")) == bytes("a\xEF\xBF\xBD" "b"));
}

TEST_CASE("each of several stray continuation bytes becomes its own U+FFFD", "[utf8]") {
  CHECK(decode(bytes("\x80\xBF\x80")) == bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_CASE("a truncated UTF-8 sequence at the end becomes one U+FFFD", "[utf8]") {
  CHECK(decode(bytes("ab\xC3")) == bytes("ab\xEF\xBF\xBD"));
  CHECK(decode(bytes("ab\xE2\x82")) == bytes("ab\xEF\xBF\xBD"));
  CHECK(decode(bytes("ab\xF0\x9F\x98")) == bytes("ab\xEF\xBF\xBD"));
}

TEST_CASE("a truncated UTF-8 sequence in the middle becomes one U+FFFD", "[utf8]") {
  CHECK(decode(bytes("a\xE2\x82" "b")) == bytes("a\xEF\xBF\xBD" "b"));
  CHECK(decode(bytes("a\xF0\x9F\x98" "b")) == bytes("a\xEF\xBF\xBD" "b"));
  CHECK(decode(bytes("\xE2\x82" "A\xF0\x9F\x98\x80")) == bytes("\xEF\xBF\xBD" "A\xF0\x9F\x98\x80"));
}

TEST_CASE("a truncated sequence followed by a lead byte keeps the following character", "[utf8]") {
  CHECK(decode(bytes("\xE2\x82\xE2\x82\xAC")) == bytes("\xEF\xBF\xBD\xE2\x82\xAC"));
  CHECK(decode(bytes("\xC3\xC3\xA9")) == bytes("\xEF\xBF\xBD\xC3\xA9"));
}

TEST_CASE("an overlong 2-byte encoding (C0 80, C1 BF) becomes one U+FFFD per byte", "[utf8]") {
  CHECK(decode(bytes("\xC0\x80")) == bytes("\xEF\xBF\xBD\xEF\xBF\xBD"));
  CHECK(decode(bytes("\xC1\xBF")) == bytes("\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_CASE("an overlong 3-byte encoding (E0 80 80) becomes one U+FFFD per byte", "[utf8]") {
  CHECK(decode(bytes("\xE0\x80\x80")) == bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_CASE("an overlong 4-byte encoding (F0 80 80 80) becomes one U+FFFD per byte", "[utf8]") {
  CHECK(decode(bytes("\xF0\x80\x80\x80")) == bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_CASE("an encoded surrogate (ED A0 80) becomes one U+FFFD per byte", "[utf8]") {
  CHECK(decode(bytes("\xED\xA0\x80")) == bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
  CHECK(decode(bytes("\xED\xA0\xBD\xED\xB8\x80")) ==
        bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_CASE("a code point above U+10FFFF (F4 90 80 80) becomes one U+FFFD per byte", "[utf8]") {
  CHECK(decode(bytes("\xF4\x90\x80\x80")) == bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_CASE("each byte F5..FF becomes one U+FFFD", "[utf8]") {
  CHECK(decode(bytes("\xF5\xF6\xF7\xF8\xF9\xFA\xFB\xFC\xFD\xFE\xFF")) ==
        bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
              "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_CASE("mixed valid and ill-formed input is repaired exactly as Python does", "[utf8]") {
  CHECK(decode(bytes("x\xFF\xE2\x82\xACy\xC3\xF0\x9F\x98\x80\xED\xA0\x80z\xE0\xA0")) ==
        bytes("x\xEF\xBF\xBD\xE2\x82\xACy\xEF\xBF\xBD\xF0\x9F\x98\x80\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz"
              "\xEF\xBF\xBD"));
}

TEST_CASE("arbitrary byte soup is repaired exactly as Python does", "[utf8]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
    {bytes("\xE1\xE0"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xBF\xF0\xA0\xE0\xC1\x9F\xE0\xEF"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x7F\xC2\xE0\xC0\xF0\xEE\xC1"), bytes("\x7F\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x8F"), bytes("\xEF\xBF\xBD")},
    {bytes("\xBF\x8F\xEE\xC0\xF0\xF5\xEF\x7F\xF3\xF3"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\x7F\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xBF" "A\xE0\xF0\xF0\x9F"), bytes("\xEF\xBF\xBD" "A\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("A\xF0\xED\xBF\xC0\x9F\x7F\xBF"), bytes("A\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\x7F\xEF\xBF\xBD")},
    {bytes("\xA0\xF3\xF1"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xDF" "A\xE0\xF3\xC0\x8F"), bytes("\xEF\xBF\xBD" "A\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x80\xBF\xC1\xE0\x00"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\x00")},
    {bytes("\x9F\xA0"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xF1\xE0\xED\xF4\xEF\x9F\xC1"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xE0\xA0"), bytes("\xEF\xBF\xBD")},
    {bytes("\xF4\xA0\xBF\xF4\xF1\xDF\xE0\xED\xDF"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x8F\x7F\xC1"), bytes("\xEF\xBF\xBD\x7F\xEF\xBF\xBD")},
    {bytes("\xDF\xE0\xBF\xFF\xC1\x9F\x90\xDF\xEE"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x90\xF4\xA0\xDF\xF0"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x8F\xF1\xE1\xF1\xC1\xED\x7F\xC2\xDF"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\x7F\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x9F" "A\xDF\xBF\xC1\xE1\xC0\xE1\xF3"), bytes("\xEF\xBF\xBD" "A\xDF\xBF\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x00\xFF"), bytes("\x00\xEF\xBF\xBD")},
    {bytes("\xBF"), bytes("\xEF\xBF\xBD")},
    {bytes("\x8F" "A\x7F\x7F\xEE\xE1\xEF\xF3"), bytes("\xEF\xBF\xBD" "A\x7F\x7F\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\x9F\xF3"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xC2\xEE\xF3\xC2\xC2\xEF\x8F\x8F"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\x8F\x8F")},
  };
  for (const auto& [input, expected] : cases) {
    CAPTURE(input);
    CHECK(decode(input) == expected);
  }
}

TEST_CASE("characters and fragments of characters are repaired exactly as Python does", "[utf8]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
    {bytes("\xEF\xBF\xBF"), bytes("\xEF\xBF\xBF")},
    {bytes("\xF5\xDF\xBF\xE2\x82\xAC"), bytes("\xEF\xBF\xBD\xDF\xBF\xE2\x82\xAC")},
    {bytes("Z\xE2\x82\xAC\xF5\xED\xA0\x00"), bytes("Z\xE2\x82\xAC\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\x00")},
    {bytes("\xF0\x8F\xED\x9F\xBF\xF0\x8F\xBF\xF0\x90\xC2"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xED\x9F\xBF\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xF0\x9F\x98\x80"), bytes("\xF0\x9F\x98\x80")},
    {bytes("\xE0\xA0\xEF\xBF\xBF\x7F\x00\xF0\x9F\x98\x80"), bytes("\xEF\xBF\xBD\xEF\xBF\xBF\x7F\x00\xF0\x9F\x98\x80")},
    {bytes("a\xC3\xA9\xC3\xA9"), bytes("a\xC3\xA9\xC3\xA9")},
    {bytes("\xE2\x82\xAC"), bytes("\xE2\x82\xAC")},
    {bytes("\x7F"), bytes("\x7F")},
    {bytes("\xE0\xA0\xC1\xBF\xFF"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xC1\xF0\x90"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xE2\x82\xAC\xE2\x82\xACZ\xED\x9F\xBF\xE0\x80"), bytes("\xE2\x82\xAC\xE2\x82\xACZ\xED\x9F\xBF\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xE0\xC0\xC3\xA9"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xC3\xA9")},
    {bytes("\xE0\x80\xC0"), bytes("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xF0\x8FZ\xED\x9F\xBF\xFF\xE2\x82\xAC"), bytes("\xEF\xBF\xBD\xEF\xBF\xBDZ\xED\x9F\xBF\xEF\xBF\xBD\xE2\x82\xAC")},
    {bytes("\xC3\xA9Z\x80"), bytes("\xC3\xA9Z\xEF\xBF\xBD")},
    {bytes("\xEF\xBF\xBFZ\xEF\xBF\xBF\xF0\x90\xC1\xE0\xA0"), bytes("\xEF\xBF\xBFZ\xEF\xBF\xBF\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")},
    {bytes("\xF0\x90\xED\x9F\xBF\x00"), bytes("\xEF\xBF\xBD\xED\x9F\xBF\x00")},
    {bytes("a\xBF\xC1\xF0\x90\x80\x80\xE0\xED\x9F\xBF"), bytes("a\xEF\xBF\xBD\xEF\xBF\xBD\xF0\x90\x80\x80\xEF\xBF\xBD\xED\x9F\xBF")},
    {bytes("\xE0\xA0\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\xF0\x90\x80\xDF\xBF"), bytes("\xE0\xA0\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\xEF\xBF\xBD\xDF\xBF")},
    {bytes("\xED\x9F\xBF\xF0\x9F\x98\x80\x80\xC0\xDF\xBF"), bytes("\xED\x9F\xBF\xF0\x9F\x98\x80\xEF\xBF\xBD\xEF\xBF\xBD\xDF\xBF")},
    {bytes("\xED\x9F\xBF"), bytes("\xED\x9F\xBF")},
    {bytes("\xF4\x8F\xBF\xBF\xE2\x82\xAC"), bytes("\xF4\x8F\xBF\xBF\xE2\x82\xAC")},
    {bytes("\xF4\x8F\xBF\xBF\xC2\xE0\xC0" "a"), bytes("\xF4\x8F\xBF\xBF\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "a")},
  };
  for (const auto& [input, expected] : cases) {
    CAPTURE(input);
    CHECK(decode(input) == expected);
  }
}

TEST_CASE("append_utf8_replacing appends to what the string already holds", "[utf8]") {
  std::string out = "prefix:";
  append_utf8_replacing(out, bytes("\xE2\x82\xAC\xFF"));
  CHECK(out == bytes("prefix:\xE2\x82\xAC\xEF\xBF\xBD"));
}

TEST_CASE("utf8_replacing returns what append_utf8_replacing appends", "[utf8]") {
  CHECK(utf8_replacing(bytes("a\xC3\xA9\xC3")) == bytes("a\xC3\xA9\xEF\xBF\xBD"));
}

TEST_CASE("utf8_safe_cut at or past the end returns the length", "[utf8]") {
  CHECK(utf8_safe_cut("abc", 3) == 3);
  CHECK(utf8_safe_cut("abc", 10) == 3);
}

TEST_CASE("utf8_safe_cut moves back to the start of a character it would split", "[utf8]") {
  const std::string s = bytes("a\xE2\x82\xAC" "b");
  CHECK(utf8_safe_cut(s, 1) == 1);
  CHECK(utf8_safe_cut(s, 2) == 1);
  CHECK(utf8_safe_cut(s, 3) == 1);
  CHECK(utf8_safe_cut(s, 4) == 4);
}

TEST_CASE("utf8_safe_cut never splits a character that starts the input", "[utf8]") {
  const std::string s = bytes("\xF0\x9F\x98\x80" "a");
  CHECK(utf8_safe_cut(s, 1) == 0);
  CHECK(utf8_safe_cut(s, 2) == 0);
  CHECK(utf8_safe_cut(s, 3) == 0);
  CHECK(utf8_safe_cut(s, 4) == 4);
}

TEST_CASE("decoding the two sides of any utf8_safe_cut gives the same text as decoding the whole",
          "[utf8][property]") {
  std::mt19937 rng(12345);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    const std::string s = random_bytes(rng);
    const std::string whole = decode(s);
    for (std::size_t k = 0; k <= s.size() + 1; ++k) {
      const std::size_t c = utf8_safe_cut(s, k);
      CAPTURE(s, k, c);
      if (k >= s.size()) {
        REQUIRE(c == s.size());
      } else {
        REQUIRE(c <= k);
        REQUIRE(k - c <= 3);
      }
      REQUIRE(decode(std::string_view(s).substr(0, c)) + decode(std::string_view(s).substr(c)) == whole);
    }
  }
}

TEST_CASE("utf8_char_boundary returns the largest cut that does not split a character", "[utf8][property]") {
  std::mt19937 rng(67890);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    const std::string text = decode(random_bytes(rng));
    for (std::size_t limit = 0; limit <= text.size() + 1; ++limit) {
      const std::size_t b = utf8_char_boundary(text, limit);
      CAPTURE(text, limit, b);
      if (limit >= text.size()) {
        REQUIRE(b == text.size());
        continue;
      }
      REQUIRE(b <= limit);
      REQUIRE((b == text.size() || !is_continuation(text[b])));
      for (std::size_t p = b + 1; p <= limit; ++p) REQUIRE(is_continuation(text[p]));
      REQUIRE(decode(std::string_view(text).substr(0, b)) == text.substr(0, b));
    }
  }
}

TEST_CASE("utf8_char_boundary keeps a whole character or drops it", "[utf8]") {
  const std::string text = bytes("ab\xE2\x82\xAC");
  CHECK(utf8_char_boundary(text, 2) == 2);
  CHECK(utf8_char_boundary(text, 3) == 2);
  CHECK(utf8_char_boundary(text, 4) == 2);
  CHECK(utf8_char_boundary(text, 5) == 5);
}

TEST_CASE("utf8_complete_prefix leaves out only a well-formed character the input has not finished", "[utf8]") {
  using code_interpreter::detail::utf8_complete_prefix;
  CHECK(utf8_complete_prefix("") == 0);
  CHECK(utf8_complete_prefix("abc") == 3);
  CHECK(utf8_complete_prefix("a\xC3") == 1);                  // 1 of 2
  CHECK(utf8_complete_prefix("a\xC3\xA9") == 3);              // complete
  CHECK(utf8_complete_prefix("a\xE2\x82") == 1);              // 2 of 3
  CHECK(utf8_complete_prefix("a\xF0\x9F\x98") == 1);          // 3 of 4
  CHECK(utf8_complete_prefix("a\xF0\x9F\x98\x80") == 5);      // complete
  CHECK(utf8_complete_prefix("a\xE0\x80") == 3);              // E0 80 can never be completed
  CHECK(utf8_complete_prefix("a\xED\xA0") == 3);              // a surrogate's lead: ill-formed already
  CHECK(utf8_complete_prefix("a\xF5") == 2);                  // F5 starts no character
  CHECK(utf8_complete_prefix("a\xC0") == 2);                  // nor does C0
  CHECK(utf8_complete_prefix("a\x80\x80\x80") == 4);          // stray continuation bytes
}
