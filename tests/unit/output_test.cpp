#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/output.hpp"
#include "core/utf8.hpp"
#include "../support/bytes.hpp"

using code_interpreter::test_support::Recorder;
using code_interpreter::test_support::bytes;
using code_interpreter::detail::OutputStream;
using code_interpreter::detail::utf8_replacing;

namespace {

constexpr std::size_t kBigCap = 10u * 1024 * 1024;

}  // namespace

TEST_CASE("the callback receives one complete line at a time, including its newline", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed("a\nbb\n\nccc\n");
  CHECK(rec.lines == std::vector<std::string>{"a\n", "bb\n", "\n", "ccc\n"});
  CHECK(out.text() == "a\nbb\n\nccc\n");
  CHECK_FALSE(out.truncated());
}

TEST_CASE("a partial line is held back until its newline arrives", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed("par");
  CHECK(rec.lines.empty());
  CHECK(out.text() == "");
  out.feed("tial\nnext");
  CHECK(rec.lines == std::vector<std::string>{"partial\n"});
  CHECK(out.text() == "partial\n");
}

TEST_CASE("the final partial line comes from finish() without a newline", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed("a\nrest");
  out.finish();
  CHECK(rec.lines == std::vector<std::string>{"a\n", "rest"});
  CHECK(out.text() == "a\nrest");
}

TEST_CASE("finish() with no partial line calls nothing", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed("a\n");
  out.finish();
  CHECK(rec.lines == std::vector<std::string>{"a\n"});
  CHECK(out.text() == "a\n");
}

TEST_CASE("feeding in two pieces split at every byte position gives identical callbacks and text", "[output]") {
  const std::string input = bytes("first\ns\xC3\xA9" "cond \xE2\x82\xAC\n\xF0\x9F\x98\x80 bad \xFF\xE2\x82\n\nlast");
  Recorder reference;
  {
    OutputStream out(&reference.callback, kBigCap);
    out.feed(input);
    out.finish();
    REQUIRE(out.text() == reference.joined());
  }
  for (std::size_t i = 0; i <= input.size(); ++i) {
    for (std::size_t j = i; j <= input.size(); ++j) {
      CAPTURE(i, j);
      Recorder rec;
      OutputStream out(&rec.callback, kBigCap);
      out.feed(std::string_view(input).substr(0, i));
      out.feed(std::string_view(input).substr(i, j - i));
      out.feed(std::string_view(input).substr(j));
      out.finish();
      REQUIRE(rec.lines == reference.lines);
      REQUIRE(out.text() == reference.joined());
    }
  }
}

TEST_CASE("feeding one byte at a time gives identical callbacks and text", "[output]") {
  const std::string input = bytes("\xE2\x82\xAC\n\xC3\n\xF0\x9F\x98\x80 x\ny");
  Recorder whole;
  OutputStream a(&whole.callback, kBigCap);
  a.feed(input);
  a.finish();
  Recorder bytewise;
  OutputStream b(&bytewise.callback, kBigCap);
  for (char c : input) b.feed(std::string_view(&c, 1));
  b.finish();
  CHECK(bytewise.lines == whole.lines);
  CHECK(b.text() == a.text());
  CHECK(whole.lines == std::vector<std::string>{bytes("\xE2\x82\xAC\n"), bytes("\xEF\xBF\xBD\n"),
                                                bytes("\xF0\x9F\x98\x80 x\n"), "y"});
}

TEST_CASE("a character split across feed() calls is not replaced", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed(bytes("\xE2\x82"));
  out.feed(bytes("\xAC\n"));
  CHECK(rec.lines == std::vector<std::string>{bytes("\xE2\x82\xAC\n")});
  CHECK(out.text() == bytes("\xE2\x82\xAC\n"));
}

TEST_CASE("invalid UTF-8 in a line is replaced by U+FFFD in the callback and the text", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed(bytes("a\xFF" "b\xC3\n"));
  CHECK(rec.lines == std::vector<std::string>{bytes("a\xEF\xBF\xBD" "b\xEF\xBF\xBD\n")});
  CHECK(out.text() == bytes("a\xEF\xBF\xBD" "b\xEF\xBF\xBD\n"));
}

TEST_CASE("a truncated character at the end of the stream becomes U+FFFD at finish()", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed(bytes("ok\xF0\x9F\x98"));
  out.finish();
  CHECK(rec.lines == std::vector<std::string>{bytes("ok\xEF\xBF\xBD")});
  CHECK(out.text() == bytes("ok\xEF\xBF\xBD"));
}

TEST_CASE("a line longer than 64 KiB arrives in pieces of at most 65536 bytes that concatenate to the line",
          "[output]") {
  std::string line;
  while (line.size() < 200000) line += bytes("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  line += "\n";
  const std::size_t chunk = GENERATE(std::size_t{1} << 20, std::size_t{4096}, std::size_t{7});
  CAPTURE(chunk);
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  for (std::size_t i = 0; i < line.size(); i += chunk) out.feed(std::string_view(line).substr(i, chunk));
  out.feed("next\n");
  out.finish();
  REQUIRE(rec.lines.size() >= 5);
  CHECK(rec.lines.back() == "next\n");
  rec.lines.pop_back();
  CHECK(rec.joined() == line);
  for (std::size_t i = 0; i < rec.lines.size(); ++i) {
    CAPTURE(i);
    CHECK(rec.lines[i].size() <= 65536);
    CHECK(utf8_replacing(rec.lines[i]) == rec.lines[i]);
    if (i + 1 < rec.lines.size()) {
      CHECK(rec.lines[i].size() >= 65536 - 3);
      CHECK(rec.lines[i].back() != '\n');
    }
  }
  CHECK(out.text() == line + "next\n");
}

TEST_CASE("a long line of invalid bytes also arrives in pieces of at most 65536 bytes after repair", "[output]") {
  const std::string line = std::string(100000, '\xFF') + "\n";
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed(line);
  out.finish();
  std::string expected;
  for (int i = 0; i < 100000; ++i) expected += bytes("\xEF\xBF\xBD");
  expected += "\n";
  REQUIRE(rec.lines.size() >= 5);
  CHECK(rec.joined() == expected);
  for (const auto& piece : rec.lines) {
    CHECK(piece.size() <= 65536);
    CHECK(utf8_replacing(piece) == piece);
  }
  CHECK(out.text() == expected);
}

TEST_CASE("a line of exactly 65536 bytes including its newline arrives whole", "[output]") {
  const std::string line = std::string(65535, 'x') + "\n";
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed(line.substr(0, 1000));
  out.feed(line.substr(1000));
  CHECK(rec.lines == std::vector<std::string>{line});
}

TEST_CASE("a long final line without newline arrives in pieces, the rest at finish()", "[output]") {
  const std::string line(65536 * 2 + 10, 'y');
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed(line);
  out.finish();
  REQUIRE(rec.lines.size() == 3);
  CHECK(rec.lines[0].size() == 65536);
  CHECK(rec.lines[1].size() == 65536);
  CHECK(rec.lines[2] == std::string(10, 'y'));
  CHECK(out.text() == line);
}

TEST_CASE("output that fits the cap exactly is not truncated", "[output][cap]") {
  Recorder rec;
  OutputStream out(&rec.callback, 8);
  out.feed("abc\nefg\n");
  CHECK(out.text() == "abc\nefg\n");
  CHECK_FALSE(out.truncated());
}

TEST_CASE("text() stops at the cap and truncated() becomes true", "[output][cap]") {
  Recorder rec;
  OutputStream out(&rec.callback, 6);
  out.feed("abcd\nefgh\n");
  CHECK(out.text() == "abcd\ne");
  CHECK(out.truncated());
}

TEST_CASE("text() is cut at the cap on a character boundary", "[output][cap]") {
  Recorder rec;
  OutputStream out(&rec.callback, 10);
  out.feed(bytes("12345678\xE2\x82\xAC\n"));
  CHECK(out.text() == "12345678");
  CHECK(out.truncated());
}

TEST_CASE("past the cap the callback still gets every line", "[output][cap]") {
  Recorder rec;
  OutputStream out(&rec.callback, 4);
  out.feed("first\nsecond\nthird");
  out.finish();
  CHECK(rec.lines == std::vector<std::string>{"first\n", "second\n", "third"});
  CHECK(out.text() == "firs");
  CHECK(out.truncated());
}

TEST_CASE("after truncation a later short line is not appended to the text", "[output][cap]") {
  Recorder rec;
  OutputStream out(&rec.callback, 6);
  out.feed(bytes("abcd\xE2\x82\xAC\n"));
  out.feed("x\n");
  CHECK(out.text() == "abcd");
  CHECK(out.truncated());
  CHECK(rec.lines == std::vector<std::string>{bytes("abcd\xE2\x82\xAC\n"), "x\n"});
}

TEST_CASE("a throwing callback propagates out of feed() and the text already holds that line", "[output]") {
  std::vector<std::string> seen;
  const std::function<void(std::string_view)> callback = [&](std::string_view line) {
    seen.emplace_back(line);
    if (line == "boom\n") throw std::runtime_error("callback failed");
  };
  OutputStream out(&callback, kBigCap);
  CHECK_THROWS_AS(out.feed("ok\nboom\nafter\n"), std::runtime_error);
  CHECK(seen == std::vector<std::string>{"ok\n", "boom\n"});
  CHECK(out.text() == "ok\nboom\n");
}

TEST_CASE("a throwing callback on a line completed across feed() calls propagates with the text updated",
          "[output]") {
  const std::function<void(std::string_view)> callback = [](std::string_view line) {
    if (line == "boom\n") throw std::runtime_error("callback failed");
  };
  OutputStream out(&callback, kBigCap);
  out.feed("bo");
  CHECK_THROWS_AS(out.feed("om\n"), std::runtime_error);
  CHECK(out.text() == "boom\n");
}

TEST_CASE("a throwing callback propagates out of finish() and the text already holds the last line", "[output]") {
  const std::function<void(std::string_view)> callback = [](std::string_view) {
    throw std::runtime_error("callback failed");
  };
  OutputStream out(&callback, kBigCap);
  out.feed("tail");
  CHECK_THROWS_AS(out.finish(), std::runtime_error);
  CHECK(out.text() == "tail");
}

TEST_CASE("silence() stops the callbacks while the text is still collected", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed("one\n");
  out.silence();
  out.feed("two\nthree");
  out.finish();
  CHECK(rec.lines == std::vector<std::string>{"one\n"});
  CHECK(out.text() == "one\ntwo\nthree");
}

TEST_CASE("after a callback threw, silence() lets the stream go on collecting text", "[output]") {
  int calls = 0;
  const std::function<void(std::string_view)> callback = [&](std::string_view) {
    ++calls;
    throw std::runtime_error("callback failed");
  };
  OutputStream out(&callback, kBigCap);
  CHECK_THROWS_AS(out.feed("a\n"), std::runtime_error);
  out.silence();
  out.feed("b\nc");
  out.finish();
  CHECK(calls == 1);
  CHECK(out.text() == "a\nb\nc");
}

TEST_CASE("a stream without a callback, or with an empty one, still collects the text", "[output]") {
  OutputStream without(nullptr, kBigCap);
  without.feed("x\ny");
  without.finish();
  CHECK(without.text() == "x\ny");

  const std::function<void(std::string_view)> empty;
  OutputStream with_empty(&empty, kBigCap);
  with_empty.feed("x\ny");
  with_empty.finish();
  CHECK(with_empty.text() == "x\ny");
}

TEST_CASE("take_text() moves the collected text out", "[output]") {
  OutputStream out(nullptr, kBigCap);
  out.feed("abc\n");
  CHECK(out.take_text() == "abc\n");
}

TEST_CASE("flush() delivers the partial line as a piece and the rest of the line follows as its own", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed("a\ntick");
  out.flush();
  CHECK(rec.lines == std::vector<std::string>{"a\n", "tick"});
  CHECK(out.text() == "a\ntick");
  out.flush();  // nothing held: nothing delivered
  out.feed("tock\nnext");
  CHECK(rec.lines == std::vector<std::string>{"a\n", "tick", "tock\n"});
  out.finish();
  CHECK(rec.lines == std::vector<std::string>{"a\n", "tick", "tock\n", "next"});
  CHECK(out.text() == "a\nticktock\nnext");
}

TEST_CASE("flush() holds back a character whose bytes have not all arrived", "[output]") {
  Recorder rec;
  OutputStream out(&rec.callback, kBigCap);
  out.feed("x\xE2\x82");  // the first two bytes of U+20AC
  out.flush();
  CHECK(rec.lines == std::vector<std::string>{"x"});
  out.feed("\xAC");
  out.flush();
  CHECK(rec.lines == std::vector<std::string>{"x", "\xE2\x82\xAC"});
  // Bytes that can never become a character are not held: they are replaced now.
  out.feed("\xE2\x28");
  out.flush();
  CHECK(rec.lines == std::vector<std::string>{"x", "\xE2\x82\xAC", "\xEF\xBF\xBD("});
  out.feed("\xFF");
  out.flush();
  CHECK(rec.lines.back() == "\xEF\xBF\xBD");
  CHECK(out.text() == "x\xE2\x82\xAC\xEF\xBF\xBD(\xEF\xBF\xBD");
}
