// The parsing under exists, get_info and the variables: E2B's EntryInfo (E2BStub::decode_entry), FileInfo's JSON,
// and the framed answer of generated Python (detail::run_python_for_json) read as hostile, against a FakeSandbox
// whose handler plays the interpreter.
#include <catch2/catch.hpp>

#include <regex>

#include "code_interpreter/json.hpp"
#include "code_interpreter/testing/fake_sandbox.hpp"
#include "core/base64.hpp"
#include "core/python_call.hpp"
#include "e2b/stub.hpp"

namespace ci = code_interpreter;
using nlohmann::json;

TEST_CASE("decode_entry reads every EntryInfo field envd sends", "[unit][fsvar]") {
  const auto info = ci::e2b::E2BStub::decode_entry(json::parse(R"({
    "name": "a.txt", "type": "FILE_TYPE_FILE", "path": "/home/user/a.txt", "size": "10", "mode": 420,
    "permissions": "-rw-r--r--", "owner": "user", "group": "user", "modifiedTime": "2026-01-02T03:04:05.678Z"})"));
  CHECK(info.name == "a.txt");
  CHECK(info.path == "/home/user/a.txt");
  CHECK(info.type == std::optional(ci::FileType::kFile));
  CHECK_FALSE(info.is_directory);
  CHECK(info.size == 10);
  CHECK(info.permissions == std::optional<std::uint32_t>(0644));
  REQUIRE(info.modified);
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(info.modified->time_since_epoch()).count() ==
        1767323045678);
}

TEST_CASE("decode_entry takes a symlinkTarget for a link whatever type envd gives", "[unit][fsvar]") {
  const auto info = ci::e2b::E2BStub::decode_entry(
      json::parse(R"({"name": "l", "type": "FILE_TYPE_DIRECTORY", "path": "/l", "symlinkTarget": "/tmp"})"));
  CHECK(info.type == std::optional(ci::FileType::kSymlink));
  CHECK_FALSE(info.is_directory);
}

TEST_CASE("decode_entry leaves malformed or hostile fields unset", "[unit][fsvar]") {
  const auto info = ci::e2b::E2BStub::decode_entry(json::parse(
      R"({"name": 5, "type": "FILE_TYPE_UNSPECIFIED", "size": "-1", "mode": -420, "modifiedTime": "yesterday"})"));
  CHECK(info.name.empty());
  CHECK_FALSE(info.type);
  CHECK(info.size == 0);
  CHECK_FALSE(info.permissions);
  CHECK_FALSE(info.modified);
  const auto huge = ci::e2b::E2BStub::decode_entry(json::parse(R"({"mode": 4294967296, "size": 7})"));
  CHECK_FALSE(huge.permissions);
  CHECK(huge.size == 7);
  CHECK(ci::e2b::E2BStub::decode_entry(json::array()) == ci::FileInfo{});
}

TEST_CASE("to_string names every FileType", "[unit][fsvar]") {
  CHECK(ci::to_string(ci::FileType::kFile) == "file");
  CHECK(ci::to_string(ci::FileType::kDirectory) == "directory");
  CHECK(ci::to_string(ci::FileType::kSymlink) == "symlink");
  CHECK(ci::to_string(ci::FileType::kOther) == "other");
}

namespace {

// The marker the generated code prints: its two spelled pieces joined.
std::string marker_of(std::string_view code) {
  static const std::regex piece(R"(mark = '([^']*)' \+ '([^']*)')");
  std::match_results<std::string_view::const_iterator> m;
  REQUIRE(std::regex_search(code.begin(), code.end(), m, piece));
  return m[1].str() + m[2].str();
}

// A sandbox whose next call prints `make(marker)` and succeeds.
template <class Make>
void answer_with(ci::testing::FakeSandbox& fake, Make make, bool truncated = false) {
  fake.push_handler([make, truncated](std::string_view code, const ci::ExecuteOptions&) {
    ci::ExecutionResult r;
    r.status = ci::ExecutionStatus::kSuccess;
    r.exit_code = 0;
    r.stdout_text = make(marker_of(code));
    r.truncated = truncated;
    return r;
  });
}

std::string call_error(ci::testing::FakeSandbox& fake) {
  try {
    (void)ci::detail::run_python_for_json(fake, "probe", json::object(), "    text = '{}'\n", ci::Stage::kExecute);
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.stage() == ci::Stage::kExecute);
    CHECK(e.kind() == ci::ErrorKind::kInternal);
    return e.what();
  }
  FAIL("no error");
  return {};
}

}  // namespace

TEST_CASE("run_python_for_json returns the framed object and ignores output around it", "[unit][fsvar]") {
  ci::testing::FakeSandbox fake;
  answer_with(fake, [](const std::string& m) {
    return "noise " + m + "fa!e" + m + "\n" + m + ci::detail::base64_encode(R"({"value": [1, "ü"]})") + m + "\n";
  });
  // The first framed piece is the answer: "fa!e" is not base64, and nothing after it is taken instead.
  CHECK(call_error(fake) == "probe: the framed answer is not base64");
  answer_with(fake, [](const std::string& m) {
    return "printed before\n" + m + ci::detail::base64_encode(R"({"value": [1, "ü"]})") + m + "\n";
  });
  CHECK(ci::detail::run_python_for_json(fake, "probe", json::object(), "    text = '{}'\n", ci::Stage::kExecute) ==
        json::parse(R"({"value": [1, "ü"]})"));
}

TEST_CASE("run_python_for_json refuses an answer without its nonce, not an object, or cut at the cap",
          "[unit][fsvar]") {
  ci::testing::FakeSandbox fake;
  answer_with(fake, [](const std::string&) {
    return "<code-interpreter-answer 00>" + ci::detail::base64_encode("{}") + "<code-interpreter-answer 00>";
  });
  CHECK(call_error(fake) == "probe: the sandbox's answer holds no framed value");
  answer_with(fake, [](const std::string& m) { return m + ci::detail::base64_encode("[1]") + m; });
  CHECK(call_error(fake) == "probe: the framed answer is not a JSON object");
  answer_with(fake, [](const std::string& m) { return m + ci::detail::base64_encode(std::string(300, '[')) + m; });
  CHECK(call_error(fake) == "probe: the framed answer is not a JSON object");
  answer_with(fake, [](const std::string& m) { return m + "eyJ2"; }, true);
  CHECK(call_error(fake) == "probe: the answer is over the output cap (max_output_bytes)");
}

TEST_CASE("run_python_for_json sends its arguments only as base64 and maps a failed call's status",
          "[unit][fsvar]") {
  ci::testing::FakeSandbox fake;
  std::string sent;
  fake.push_handler([&](std::string_view code, const ci::ExecuteOptions&) {
    sent = std::string(code);
    ci::ExecutionResult r;
    r.status = ci::ExecutionStatus::kTimeout;
    r.timeout_kind = ci::TimeoutKind::kExecution;
    r.error = "execution timed out";
    return r;
  });
  try {
    (void)ci::detail::run_python_for_json(fake, "probe", {{"path", "x'); import os; ('"}}, "    text = '{}'\n",
                                          ci::Stage::kDownload);
    FAIL("no error");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.stage() == ci::Stage::kDownload);
    CHECK(e.kind() == ci::ErrorKind::kTimeout);
    CHECK(std::string(e.what()) == "probe: the code did not succeed (TIMEOUT): execution timed out");
  }
  CHECK(sent.find("import os") == std::string::npos);
  CHECK(sent.find(ci::detail::base64_encode(R"({"path":"x'); import os; ('"})")) != std::string::npos);
}

TEST_CASE("FakeSandbox refuses interrupt with kUnsupported and keeps variables until restart", "[unit][fsvar]") {
  ci::testing::FakeSandbox fake;
  try {
    fake.interrupt();
    FAIL("no error");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.kind() == ci::ErrorKind::kUnsupported);
    CHECK(std::string(e.what()) == "interrupt is not supported by this sandbox");
  }
  fake.set_variable("v", json{{"a", 1}});
  CHECK(fake.get_variable("v") == json{{"a", 1}});
  fake.restart();
  try {
    (void)fake.get_variable("v");
    FAIL("no error");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.kind() == ci::ErrorKind::kNotFound);
  }
}

TEST_CASE("FileInfo JSON carries type, modified and permissions only when set, and reads them back",
          "[unit][fsvar]") {
  ci::FileInfo plain;
  plain.name = "a";
  plain.path = "/a";
  plain.size = 3;
  CHECK(json(plain) == json::parse(R"({"name": "a", "path": "/a", "is_directory": false, "size": 3})"));
  ci::FileInfo full = plain;
  full.type = ci::FileType::kSymlink;
  full.modified = std::chrono::system_clock::time_point(std::chrono::milliseconds(1767323045678));
  full.permissions = 0755;
  const json text = full;
  CHECK(text == json::parse(R"({"name": "a", "path": "/a", "is_directory": false, "size": 3, "type": "symlink",
                                "modified_ms": 1767323045678, "permissions": 493})"));
  CHECK(text.get<ci::FileInfo>() == full);
  CHECK(json(plain).get<ci::FileInfo>() == plain);
  CHECK_THROWS_AS(json::parse(R"({"name": "a", "path": "/a", "is_directory": false, "size": 3, "type": "pipe"})")
                      .get<ci::FileInfo>(),
                  json::exception);
}
