// docs/errors.md "Output": UTF-8 repair, lines to the callbacks, the cap and `truncated`, callback exceptions.
#include <thread>

#include "checks.hpp"
#include "harness.hpp"
#include "programs.hpp"
#include "../support/bytes.hpp"

using code_interpreter::test_support::repeat;
using namespace contract;
namespace ci = code_interpreter;

namespace {

// The pieces each callback received during one call.
struct Collected {
  std::vector<std::string> out;
  std::vector<std::string> err;
  ci::ExecuteOptions options() {
    ci::ExecuteOptions o;
    o.on_stdout = [this](std::string_view piece) { out.emplace_back(piece); };
    o.on_stderr = [this](std::string_view piece) { err.emplace_back(piece); };
    return o;
  }
  static std::string joined(const std::vector<std::string>& pieces) {
    std::string all;
    for (const auto& p : pieces) all += p;
    return all;
  }
};

constexpr std::string_view kFffd = "\xef\xbf\xbd";

}  // namespace

CONTRACT_SCENARIO("each maximal ill-formed byte sequence becomes one U+FFFD as Python's replace does",
                  "[output][utf8]") {
  TestType h;
  Collected c;
  const auto r = h.exec(prog::kIllFormed, c.options());
  const std::string f(kFffd);
  const std::string expected = "a" + f + "b" + f + "c" + f + "d" + f + f + f + "e\n";
  check_success(r, prog::kIllFormed, expected);
  CHECK(Collected::joined(c.out) == expected);
}

CONTRACT_SCENARIO("ill-formed bytes on stderr are repaired the same way", "[output][utf8]") {
  TestType h;
  check_success(h.exec(prog::kIllFormedStderr), prog::kIllFormedStderr, "", "x" + std::string(kFffd) + "(y\n");
}

CONTRACT_SCENARIO("valid multi-byte UTF-8 passes through unchanged", "[output][utf8]") {
  TestType h;
  check_success(h.exec(prog::kUnicode), prog::kUnicode, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\n");
}

CONTRACT_SCENARIO("the stdout callback receives one line at a time and the last partial line without newline",
                  "[output][callbacks]") {
  TestType h;
  Collected c;
  const auto r = h.exec(prog::kLines, c.options());
  check_success(r, prog::kLines, "line 0\nline 1\nline 2\ntail");
  CHECK(c.out == std::vector<std::string>{"line 0\n", "line 1\n", "line 2\n", "tail"});
  CHECK(c.err.empty());
}

CONTRACT_SCENARIO("the stderr callback receives one line at a time", "[output][callbacks]") {
  TestType h;
  Collected c;
  const auto r = h.exec(prog::kStderrLines, c.options());
  check_success(r, prog::kStderrLines, "", "e1\ne2\ne3");
  CHECK(c.err == std::vector<std::string>{"e1\n", "e2\n", "e3"});
  CHECK(c.out.empty());
}

CONTRACT_SCENARIO("empty lines reach the callback as lone newlines", "[output][callbacks]") {
  TestType h;
  Collected c;
  check_success(h.exec(prog::kBlankLines, c.options()), prog::kBlankLines, "\n\nz\n");
  CHECK(c.out == std::vector<std::string>{"\n", "\n", "z\n"});
}

CONTRACT_SCENARIO("output without any newline comes as one piece at the end of the call", "[output][callbacks]") {
  TestType h;
  Collected c;
  check_success(h.exec(prog::kNoNewline, c.options()), prog::kNoNewline, "no newline");
  CHECK(c.out == std::vector<std::string>{"no newline"});
}

CONTRACT_SCENARIO("both streams reach their own callback in order within each stream", "[output][callbacks]") {
  TestType h;
  Collected c;
  check_success(h.exec(prog::kMixed, c.options()), prog::kMixed, "o1\no2\n", "e1\n");
  CHECK(c.out == std::vector<std::string>{"o1\n", "o2\n"});
  CHECK(c.err == std::vector<std::string>{"e1\n"});
}

CONTRACT_SCENARIO("a line over 64 KiB comes in pieces of at most 64 KiB cut at character boundaries",
                  "[output][callbacks]") {
  TestType h;
  Collected c;
  const auto r = h.exec(prog::kLongLine, c.options());
  const std::string line = repeat("\xe2\x82\xac", 30000) + "\n";  // 90,001 bytes
  check_success(r, prog::kLongLine, line);
  std::vector<std::size_t> sizes;
  for (const auto& p : c.out) sizes.push_back(p.size());
  CHECK(sizes == std::vector<std::size_t>{65535, 24466});  // 65,536 would split a 3-byte character
  CHECK(Collected::joined(c.out) == line);
}

CONTRACT_SCENARIO("a partial line never leaks into the next call", "[output][callbacks]") {
  TestType h;
  Collected first;
  check_success(h.exec(prog::kPartial, first.options()), prog::kPartial, "x");
  CHECK(first.out == std::vector<std::string>{"x"});
  Collected second;
  check_success(h.exec(prog::kAfterPartial, second.options()), prog::kAfterPartial, "y\n");
  CHECK(second.out == std::vector<std::string>{"y\n"});
}

CONTRACT_SCENARIO("callbacks run on the thread that called execute_code", "[output][callbacks]") {
  TestType h;
  std::vector<std::thread::id> threads;
  ci::ExecuteOptions options;
  options.on_stdout = [&](std::string_view) { threads.push_back(std::this_thread::get_id()); };
  options.on_stderr = [&](std::string_view) { threads.push_back(std::this_thread::get_id()); };
  check_success(h.exec(prog::kMixed, options), prog::kMixed, "o1\no2\n", "e1\n");
  CHECK(threads == std::vector<std::thread::id>(3, std::this_thread::get_id()));
}

CONTRACT_SCENARIO("stdout over the cap is cut to the cap and truncated", "[output][cap]") {
  TestType h;
  const auto r = h.exec(prog::kOverCap);
  CHECK(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.exit_code == 0);
  CHECK(r.truncated);
  CHECK(r.stdout_text == std::string(kOutputCap, 'a'));
  CHECK_FALSE(r.failure);
}

CONTRACT_SCENARIO("past the stdout cap the callback still gets everything", "[output][cap][callbacks]") {
  TestType h;
  Collected c;
  const auto r = h.exec(prog::kOverCap, c.options());
  CHECK(r.truncated);
  CHECK(Collected::joined(c.out) == std::string(150000, 'a') + "\n");
}

CONTRACT_SCENARIO("the cap cuts at a character boundary", "[output][cap][utf8]") {
  TestType h;
  const auto r = h.exec(prog::kOverCapWide);
  CHECK(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.truncated);
  CHECK(r.stdout_text == repeat("\xe2\x82\xac", kOutputCap / 3));  // 99,999 bytes
}

CONTRACT_SCENARIO("stderr has a cap of its own", "[output][cap]") {
  TestType h;
  const auto r = h.exec(prog::kOverCapStderr);
  CHECK(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.truncated);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text == std::string(kOutputCap, 'b'));
}

CONTRACT_SCENARIO("past the stderr cap the callback still gets everything", "[output][cap][callbacks]") {
  TestType h;
  Collected c;
  const auto r = h.exec(prog::kOverCapStderr, c.options());
  CHECK(r.truncated);
  CHECK(Collected::joined(c.err) == std::string(150000, 'b'));
}

CONTRACT_SCENARIO("output of exactly the cap is whole and not truncated", "[output][cap]") {
  TestType h;
  Collected c;
  const auto r = h.exec(prog::kAtCap, c.options());
  check_success(r, prog::kAtCap, std::string(kOutputCap, 'c'));
  CHECK(Collected::joined(c.out) == r.stdout_text);
}

CONTRACT_SCENARIO("text of a truncated result ends with the truncation marker", "[output][cap][text]") {
  TestType h;
  const auto r = h.exec(prog::kOverCap);
  REQUIRE(r.truncated);
  CHECK(r.text() == std::string(kOutputCap, 'a') + "\n[output truncated]");
}

CONTRACT_SCENARIO("a throwing stdout callback gives UNKNOWN callback.exception and is not called again",
                  "[output][callbacks]") {
  TestType h;
  int calls = 0;
  ci::ExecuteOptions options;
  options.on_stdout = [&](std::string_view) {
    ++calls;
    throw std::runtime_error("boom");
  };
  const auto r = h.exec(prog::kThreeLines, options);
  check_unknown(r, "callback.exception");
  CHECK(r.error == "an output callback threw: boom");
  CHECK(calls == 1);
  CHECK(r.stdout_text.rfind("one\n", 0) == 0);
  check_success(h.exec(prog::kHi), prog::kHi, "hi\n");  // the sandbox goes on
}

CONTRACT_SCENARIO("a throwing stderr callback stops both callbacks", "[output][callbacks]") {
  TestType h;
  int out_calls = 0;
  int err_calls = 0;
  ci::ExecuteOptions options;
  options.on_stdout = [&](std::string_view) { ++out_calls; };
  options.on_stderr = [&](std::string_view) {
    ++err_calls;
    throw std::runtime_error("stderr boom");
  };
  const auto r = h.exec(prog::kThreeErrLines, options);
  check_unknown(r, "callback.exception");
  CHECK(r.error == "an output callback threw: stderr boom");
  CHECK(err_calls == 1);
  CHECK(out_calls == 0);
}

CONTRACT_SCENARIO("NUL and tab characters in the output are kept", "[output]") {
  TestType h;
  check_success(h.exec(prog::kNulInOutput), prog::kNulInOutput, std::string("a\0b\tc\n", 6));
}

CONTRACT_SCENARIO("a thousand lines reach the callback one by one", "[output][callbacks]") {
  TestType h;
  Collected c;
  std::string expected;
  for (int i = 0; i < 1000; ++i) expected += std::to_string(i) + "\n";
  check_success(h.exec(prog::kThousandLines, c.options()), prog::kThousandLines, expected);
  REQUIRE(c.out.size() == 1000);
  CHECK(c.out.front() == "0\n");
  CHECK(c.out.back() == "999\n");
  CHECK(Collected::joined(c.out) == expected);
}

CONTRACT_SCENARIO("a line reaches the callback while the code runs where the backend streams, else with the answer",
                  "[output][callbacks][streaming]") {
  TestType h;
  using Clock = std::chrono::steady_clock;
  std::vector<std::string> lines;
  std::optional<Clock::time_point> first;
  ci::ExecuteOptions options;
  options.timeout = std::chrono::seconds(30);
  options.on_stdout = [&](std::string_view line) {
    if (!first) first = Clock::now();
    lines.emplace_back(line);
  };
  const auto r = h.exec(prog::kLineThenSleep, options);
  const auto returned = Clock::now();
  check_success(r, prog::kLineThenSleep, "early\nlate\n");
  CHECK(lines == std::vector<std::string>{"early\n", "late\n"});
  REQUIRE(first);
  // The code sleeps 1.5 s between its two lines: a streamed first line arrives at least that long before the
  // answer; one that comes with the answer arrives just before the call returns.
  if (h.sb().capabilities().streaming_output)
    CHECK(returned - *first >= std::chrono::seconds(1));
  else
    CHECK(returned - *first < std::chrono::seconds(1));
}
