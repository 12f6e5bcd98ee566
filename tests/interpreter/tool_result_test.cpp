// The text the model reads back from an execution, and how it is bounded.
#include <catch2/catch.hpp>

#include "interpreter/tool_result.hpp"

namespace ci = code_interpreter;
using ci::interpreter::bound_text;
using ci::interpreter::format_tool_result;

TEST_CASE("text within the bound is unchanged", "[interpreter][tool_result]") {
  CHECK(bound_text("hello", 200) == "hello");
  CHECK(bound_text(std::string(200, 'a'), 200) == std::string(200, 'a'));
}

TEST_CASE("longer text keeps its head and tail and says what was cut", "[interpreter][tool_result]") {
  const std::string text = std::string(300, 'a') + std::string(300, 'z');
  const std::string out = bound_text(text, 200);
  // The worst-case note for a 600-byte text is 96 bytes, leaving 104: 52 for the head, 52 for the tail.
  CHECK(out == std::string(52, 'a') +
                   "\n[... 496 bytes cut from the middle of 600; the first 52 and the last 52 bytes are shown ...]\n" +
                   std::string(52, 'z'));
  CHECK(out.size() <= 200);
}

TEST_CASE("the cut never splits a UTF-8 character", "[interpreter][tool_result]") {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "\xc3\xa9";  // é, 2 bytes each
  const std::string out = bound_text(text, 200);
  // Head and tail round to whole characters: 52 bytes each, 26 é.
  std::string e26;
  for (int i = 0; i < 26; ++i) e26 += "\xc3\xa9";
  CHECK(out == e26 + "\n[... 296 bytes cut from the middle of 400; the first 52 and the last 52 bytes are shown ...]\n" +
                   e26);
}

TEST_CASE("an odd budget still splits on character boundaries", "[interpreter][tool_result]") {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "\xc3\xa9";
  const std::string out = bound_text(text, 201);  // budget 105: head 52 (not 52.5), tail 52 (not 53 mid-character)
  CHECK(out.size() == 198);
  CHECK(out.substr(0, 52) == text.substr(0, 52));
  CHECK(out.substr(out.size() - 52) == text.substr(text.size() - 52));
}

TEST_CASE("a successful execution with no output says so", "[interpreter][tool_result]") {
  ci::ExecutionResult r;
  r.status = ci::ExecutionStatus::kSuccess;
  r.exit_code = 0;
  const auto out = format_tool_result(r, 1024);
  CHECK(out.content == "[no output]");
  CHECK_FALSE(out.is_error);
}

TEST_CASE("the value of the last expression is part of the result", "[interpreter][tool_result]") {
  ci::ExecutionResult r;
  r.status = ci::ExecutionStatus::kSuccess;
  r.stdout_text = "hi\n";
  r.results = {ci::RichResult{{{"text/plain", "42"}}, true}};
  CHECK(format_tool_result(r, 1024).content == "hi\n42");
}

TEST_CASE("notes on TIMEOUT and lost state are never cut", "[interpreter][tool_result]") {
  ci::ExecutionResult r;
  r.status = ci::ExecutionStatus::kTimeout;
  r.timeout_kind = ci::TimeoutKind::kSandboxLost;
  r.state_lost = true;
  r.stdout_text = std::string(5000, 'o');
  const auto out = format_tool_result(r, 1024);
  const std::string notes =
      "\n[TIMEOUT (sandbox_lost): the code did not finish in time. It was not run again; it may have partly run.]\n"
      "[The sandbox's state was lost: variables, imports and files are gone.]";
  CHECK(out.content.size() <= 1024);
  CHECK(out.content.substr(out.content.size() - notes.size()) == notes);
  CHECK(out.content.find("bytes cut from the middle of 5000") != std::string::npos);
  CHECK(out.is_error);
}

TEST_CASE("an execution that never ran is an error result with its reason", "[interpreter][tool_result]") {
  ci::ExecutionResult r;
  r.status = ci::ExecutionStatus::kError;
  r.failure = ci::FailureDetail{"curl.COULDNT_CONNECT", true};
  r.error = "execute: the request was not sent";
  const auto out = format_tool_result(r, 1024);
  CHECK(out.content == "execute: the request was not sent");
  CHECK(out.is_error);
}

TEST_CASE("a long exception type is cut in the UNKNOWN note, so the result keeps its bound", "[interpreter][tool_result]") {
  // The note is never cut, so an unbounded name in it would push the tool result past max_tool_result_bytes.
  ci::ExecutionResult r;
  r.status = ci::ExecutionStatus::kUnknown;
  r.failure = ci::FailureDetail{std::string(127, 'x') + "\xc3\xa9" + std::string(20000, 'y'), false};
  r.stdout_text = "partial";
  const auto out = format_tool_result(r, 1024);
  CHECK(out.content == "partial\n[UNKNOWN (" + std::string(127, 'x') +
                           "...): the outcome cannot be known; the code may or may not have run. It was not run again.]");
  CHECK(out.is_error);
  r.failure->exception_type = "curl.RECV_ERROR";
  CHECK(format_tool_result(r, 1024).content ==
        "partial\n[UNKNOWN (curl.RECV_ERROR): the outcome cannot be known; the code may or may not have run. It was not "
        "run again.]");
}
