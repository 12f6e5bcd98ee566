#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "code_interpreter/json.hpp"

using code_interpreter::CodeError;
using code_interpreter::ExecutionResult;
using code_interpreter::ExecutionStatus;
using code_interpreter::FailureDetail;
using code_interpreter::FileInfo;
using code_interpreter::RichResult;
using code_interpreter::TimeoutKind;
using nlohmann::json;

namespace {

ExecutionResult populated_result() {
  ExecutionResult r;
  r.status = ExecutionStatus::kError;
  r.code = "import math\nprint(math.pi)\n1/0";
  r.stdout_text = "3.141592653589793\n\xE2\x82\xAC\n";
  r.stderr_text = "warning\n";
  r.error = "ZeroDivisionError: division by zero";
  r.exit_code = 1;
  r.duration = std::chrono::milliseconds(1234);
  r.failure = FailureDetail{"curl.RECV_ERROR", true};
  r.code_error = CodeError{"ZeroDivisionError", "division by zero",
                           "Traceback (most recent call last):\nZeroDivisionError: division by zero\n"};
  r.results.push_back(RichResult{{{"text/plain", "42"}, {"text/html", "<b>42</b>"}}, true});
  r.results.push_back(RichResult{{{"image/png", "iVBORw0KGgo="}}, false});
  r.timeout_kind = TimeoutKind::kRequest;
  r.state_lost = true;
  r.truncated = true;
  return r;
}

ExecutionResult round_trip(const ExecutionResult& r) {
  const json j = r;
  return json::parse(j.dump()).get<ExecutionResult>();
}

}  // namespace

TEST_CASE("a fully populated ExecutionResult survives a JSON round trip", "[json]") {
  const ExecutionResult r = populated_result();
  CHECK(round_trip(r) == r);
}

TEST_CASE("a default ExecutionResult survives a JSON round trip", "[json]") {
  const ExecutionResult r;
  CHECK(round_trip(r) == r);
}

TEST_CASE("every status and timeout kind survives a JSON round trip", "[json]") {
  const auto status = GENERATE(ExecutionStatus::kSuccess, ExecutionStatus::kError, ExecutionStatus::kTimeout,
                               ExecutionStatus::kUnknown);
  const auto kind = GENERATE(TimeoutKind::kExecution, TimeoutKind::kRequest, TimeoutKind::kSandboxLost);
  ExecutionResult r;
  r.status = status;
  r.timeout_kind = kind;
  const ExecutionResult back = round_trip(r);
  CHECK(back.status == status);
  REQUIRE(back.timeout_kind.has_value());
  CHECK(*back.timeout_kind == kind);
}

TEST_CASE("an ExecutionResult's JSON has exactly the documented keys and values", "[json]") {
  ExecutionResult r;
  r.status = ExecutionStatus::kTimeout;
  r.code = "while True: pass";
  r.stdout_text = "tick\n";
  r.stderr_text = "oops\n";
  r.error = "the sandbox was lost";
  r.exit_code = -1;
  r.duration = std::chrono::milliseconds(30001);
  r.failure = FailureDetail{"curl.RECV_ERROR", false};
  r.results.push_back(RichResult{{{"text/plain", "1"}}, true});
  r.timeout_kind = TimeoutKind::kSandboxLost;
  r.state_lost = true;
  r.truncated = false;

  const json expected = json::parse(R"({
    "status": "TIMEOUT",
    "code": "while True: pass",
    "stdout": "tick\n",
    "stderr": "oops\n",
    "error": "the sandbox was lost",
    "exit_code": -1,
    "duration_ms": 30001,
    "failure": {"exception_type": "curl.RECV_ERROR", "retry_safe": false},
    "code_error": null,
    "results": [{"data": {"text/plain": "1"}, "is_main_result": true}],
    "timeout_kind": "sandbox_lost",
    "state_lost": true,
    "truncated": false
  })");
  CHECK(json(r) == expected);
}

TEST_CASE("absent optionals of an ExecutionResult are JSON null", "[json]") {
  const json j = ExecutionResult{};
  const json expected = json::parse(R"({
    "status": "UNKNOWN",
    "code": "",
    "stdout": "",
    "stderr": "",
    "error": "",
    "exit_code": -1,
    "duration_ms": null,
    "failure": null,
    "code_error": null,
    "results": [],
    "timeout_kind": null,
    "state_lost": false,
    "truncated": false
  })");
  CHECK(j == expected);
}

TEST_CASE("a code error is JSON {name, value, traceback}", "[json]") {
  const json j = CodeError{"KeyError", "'x'", "Traceback\nKeyError: 'x'"};
  CHECK(j == json::parse(R"({"name": "KeyError", "value": "'x'", "traceback": "Traceback\nKeyError: 'x'"})"));
}

TEST_CASE("a FileInfo's modified_ms past what system_clock holds is clamped, never wrapped", "[json]") {
  using namespace std::chrono;
  const auto latest = system_clock::time_point(
      duration_cast<system_clock::duration>(duration_cast<milliseconds>(system_clock::duration::max())));
  for (const char* text : {R"({"name": "f", "path": "f", "is_directory": false, "size": 1, "modified_ms": 20000000000000})",
                           R"({"name": "f", "path": "f", "is_directory": false, "size": 1, "modified_ms": 18446744073709551615})"}) {
    INFO(text);
    CHECK(nlohmann::json::parse(text).get<FileInfo>().modified == std::optional(latest));
  }
  CHECK(nlohmann::json::parse(R"({"name": "f", "path": "f", "is_directory": false, "size": 1, "modified_ms": 5})")
            .get<FileInfo>()
            .modified == std::optional(system_clock::time_point(milliseconds(5))));
}

TEST_CASE("a FileInfo is JSON {name, path, is_directory, size} and round trips", "[json]") {
  const FileInfo info{"out.png", "/files/out.png", false, 123456789012ULL};
  const json j = info;
  CHECK(j == json::parse(R"({"name": "out.png", "path": "/files/out.png", "is_directory": false,
                             "size": 123456789012})"));
  CHECK(j.get<FileInfo>() == info);
}

TEST_CASE("from_json of an unknown status throws nlohmann::json::exception", "[json]") {
  json j = ExecutionResult{};
  j["status"] = "DONE";
  CHECK_THROWS_AS(j.get<ExecutionResult>(), json::exception);
}

TEST_CASE("from_json of a lower-case status throws nlohmann::json::exception", "[json]") {
  json j = ExecutionResult{};
  j["status"] = "success";
  CHECK_THROWS_AS(j.get<ExecutionResult>(), json::exception);
}

TEST_CASE("from_json of a status that is not a string throws nlohmann::json::exception", "[json]") {
  json j = ExecutionResult{};
  j["status"] = 0;
  CHECK_THROWS_AS(j.get<ExecutionResult>(), json::exception);
}

TEST_CASE("from_json of an unknown timeout kind throws nlohmann::json::exception", "[json]") {
  json j = ExecutionResult{};
  j["timeout_kind"] = "forever";
  CHECK_THROWS_AS(j.get<ExecutionResult>(), json::exception);
}

TEST_CASE("from_json of an object missing a key throws nlohmann::json::exception", "[json]") {
  json j = ExecutionResult{};
  j.erase("stdout");
  CHECK_THROWS_AS(j.get<ExecutionResult>(), json::exception);
}

TEST_CASE("from_json of a failure without retry_safe throws nlohmann::json::exception", "[json]") {
  json j = ExecutionResult{};
  j["failure"] = json::parse(R"({"exception_type": "http.502"})");
  CHECK_THROWS_AS(j.get<ExecutionResult>(), json::exception);
}
