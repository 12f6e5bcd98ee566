// One test per fault directive of the local E2B server (tests/servers/e2b/README.md): the exact result fields for
// execute and command faults, the exact exception for create and terminate faults, and output received before a
// fault kept. No sandbox may be left alive.
#include <catch2/catch.hpp>

#include "e2b_test_support.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::E2BServer;
using nlohmann::json;

namespace {

// Code that prints one line, then (after the fault's unit count) more.
constexpr std::string_view kTwoLines = "print('first', flush=True)\nprint('second')";

void check_unknown(const ExecutionResult& r, std::string_view type) {
  CHECK(r.status == ExecutionStatus::kUnknown);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.timeout_kind);
  CHECK_FALSE(r.state_lost);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == type);
  CHECK_FALSE(r.failure->retry_safe);
}

void check_refused(const ExecutionResult& r, std::string_view type, bool state_lost = false) {
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.timeout_kind);
  CHECK(r.state_lost == state_lost);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == type);
  CHECK(r.failure->retry_safe);
  CHECK_FALSE(r.code_error);
}

}  // namespace

// ---- create ----

TEST_CASE("create: 429 with Retry-After is retried after the delay and succeeds", "[e2b][faults]") {
  E2BServer server;
  server.fault({{"surface", "api"}, {"method", "POST"}, {"path", "/v2/sandboxes"}, {"action", "status"},
                {"status", 429}, {"retry_after", 1}});
  const auto start = std::chrono::steady_clock::now();
  auto sandbox = E2BSandbox::create(server.options());
  CHECK(std::chrono::steady_clock::now() - start >= 1s);
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 2);
  CHECK(server.alive().size() == 1);
  sandbox->terminate();
}

TEST_CASE("create: 5xx on every attempt is a transient SandboxStartError, nothing left alive", "[e2b][faults]") {
  E2BServer server;
  server.fault({{"surface", "api"}, {"method", "POST"}, {"path", "/v2/sandboxes"}, {"action", "status"},
                {"status", 503}, {"count", -1}});
  try {
    (void)E2BSandbox::create(server.options());
    FAIL("create must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.kind() == ErrorKind::kUnavailable);
    CHECK(e.transient());
    const auto* cause = test::nested_transport(e);
    REQUIRE(cause);
    CHECK(cause->kind() == TransportError::Kind::kHttpStatus);
    CHECK(cause->http_status() == 503);
  }
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 3);
  CHECK(server.alive().empty());
}

TEST_CASE("create: a connection refused on arrival is retried; all three refused is transient", "[e2b][faults]") {
  E2BServer server;
  server.fault({{"surface", "api"}, {"method", "POST"}, {"path", "/v2/sandboxes"}, {"action", "refuse"},
                {"count", -1}});
  try {
    (void)E2BSandbox::create(server.options());
    FAIL("create must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.kind() == ErrorKind::kUnavailable);
    CHECK(e.transient());
  }
  CHECK(server.alive().empty());
}

TEST_CASE("create: an answer lost after the sandbox was made is cleaned up by its token, then retried",
          "[e2b][faults]") {
  E2BServer server;
  server.fault({{"surface", "api"}, {"method", "POST"}, {"path", "/v2/sandboxes"},
                {"action", "close_after_request"}});
  auto sandbox = E2BSandbox::create(server.options());
  // The first create made a sandbox whose answer never arrived: it was found by its token and killed.
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 2);
  CHECK(server.requests("GET", "/v2/sandboxes").size() == 1);
  CHECK(server.requests("DELETE", "/sandboxes/").size() == 1);
  CHECK(server.alive() == std::vector<std::string>{*sandbox->sandbox_id()});
  sandbox->terminate();
  CHECK(server.alive().empty());
}

TEST_CASE("create: headers then a reset is retried after cleanup", "[e2b][faults]") {
  E2BServer server;
  server.fault({{"surface", "api"}, {"method", "POST"}, {"path", "/v2/sandboxes"},
                {"action", "reset_after_headers"}});
  auto sandbox = E2BSandbox::create(server.options());
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 2);
  CHECK(server.alive() == std::vector<std::string>{*sandbox->sandbox_id()});
  sandbox->terminate();
}

TEST_CASE("create: a stalled answer times out per request and is retried", "[e2b][faults]") {
  E2BServer server;
  server.fault({{"surface", "api"}, {"method", "POST"}, {"path", "/v2/sandboxes"}, {"action", "stall"}});
  auto options = server.options();
  options.request_timeout = 1s;
  auto sandbox = E2BSandbox::create(options);
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 2);
  CHECK(server.alive() == std::vector<std::string>{*sandbox->sandbox_id()});
  sandbox->terminate();
}

// ---- terminate ----

TEST_CASE("terminate: a failure after retries throws SandboxTerminateError and keeps the handle", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "api"}, {"method", "DELETE"}, {"path_prefix", "/sandboxes/"}, {"action", "status"},
                {"status", 500}, {"count", -1}});
  try {
    sandbox->terminate();
    FAIL("terminate must throw");
  } catch (const SandboxTerminateError& e) {
    CHECK(e.stage() == Stage::kTerminate);
    CHECK(e.kind() == ErrorKind::kUnavailable);
    CHECK(e.transient());
  }
  CHECK(server.requests("DELETE", "/sandboxes/").size() == 3);
  // The handle is kept: the sandbox still works, and a later terminate succeeds.
  CHECK(sandbox->execute_code("print(1)").stdout_text == "1\n");
  server.clear_faults();
  sandbox->terminate();
  CHECK(server.alive().empty());
}

TEST_CASE("terminate: a sandbox that is already gone (404) is terminated", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "api"}, {"method", "DELETE"}, {"path_prefix", "/sandboxes/"}, {"action", "status"},
                {"status", 404}, {"count", -1}});
  sandbox->terminate();
  CHECK_THROWS_AS(sandbox->execute_code("1"), SandboxNotInitializedError);
  server.clear_faults();
  // The server still had it (the 404 was a directive): clean up for the no-leak rule.
  auto again = E2BSandbox::connect(*sandbox->sandbox_id(), server.options());
  again->terminate();
  CHECK(server.alive().empty());
}

// ---- execute ----

TEST_CASE("execute: refused on arrival after the request was sent is UNKNOWN", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "refuse"}});
  const auto r = sandbox->execute_code("print(1)");
  CHECK(r.status == ExecutionStatus::kUnknown);
  REQUIRE(r.failure);
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.failure->exception_type.rfind("curl.", 0) == 0);
  CHECK(server.requests("POST", "/execute").size() == 1);  // never sent twice
  sandbox->terminate();
}

TEST_CASE("execute: headers then a reset is UNKNOWN (the body ended inside its framing)", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "reset_after_headers"}});
  check_unknown(sandbox->execute_code("print(1)"), "curl.PARTIAL_FILE");
  sandbox->terminate();
}

TEST_CASE("execute: a stream cut mid-line is UNKNOWN, never SUCCESS, and the output before it is kept",
          "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "cut_mid_line"}, {"after", 2}});
  const auto r = sandbox->execute_code(kTwoLines);
  check_unknown(r, "curl.PARTIAL_FILE");
  CHECK(r.stdout_text == "first\n");
  sandbox->terminate();
}

TEST_CASE("execute: a stalled stream is TIMEOUT/execution at the budget, output kept", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  REQUIRE(sandbox->execute_code("pass").status == ExecutionStatus::kSuccess);  // the kernel is up
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "stall"}, {"after", 2}});
  ExecuteOptions options;
  options.timeout = 1500ms;
  const auto r = sandbox->execute_code(kTwoLines, options);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK_FALSE(r.failure);
  CHECK(r.stdout_text == "first\n");
  sandbox->terminate();
}

TEST_CASE("execute: 429 and 5xx answers are ERROR, retry_safe, and are not retried", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "status"}, {"status", 429},
                {"retry_after", 1}});
  check_refused(sandbox->execute_code("print(1)"), "http.429");
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "status"}, {"status", 500}});
  check_refused(sandbox->execute_code("print(1)"), "http.500");
  CHECK(server.requests("POST", "/execute").size() == 2);
  sandbox->terminate();
}

TEST_CASE("execute: a sandbox gone before the call is ERROR, retry_safe, state_lost", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "gone"}});
  check_refused(sandbox->execute_code("print(1)"), "http.502", true);
  sandbox->terminate();
}

TEST_CASE("execute: a malformed line is UNKNOWN protocol.malformed, output before it kept", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "malformed_line"}, {"after", 2}});
  const auto r = sandbox->execute_code(kTwoLines);
  check_unknown(r, "protocol.malformed");
  CHECK(r.stdout_text == "first\n");
  sandbox->terminate();
}

TEST_CASE("execute: a cleanly finished body without end_of_execution is complete", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "no_end_of_execution"}});
  const auto r = sandbox->execute_code(kTwoLines);
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "first\nsecond\n");
  sandbox->terminate();
}

TEST_CASE("execute: a sandbox lost during the call is TIMEOUT/sandbox_lost with state_lost", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "kill_during"}, {"after", 2}});
  const auto r = sandbox->execute_code(kTwoLines);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kSandboxLost);
  CHECK(r.state_lost);
  CHECK_FALSE(r.failure);
  CHECK(r.stdout_text == "first\n");
  CHECK(server.alive().empty());
  sandbox->terminate();  // 404: already gone
}

// ---- commands ----

TEST_CASE("command: a stream cut mid-envelope is UNKNOWN, output before it kept", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "cut_mid_line"}, {"after", 2}});
  const auto r = sandbox->execute_command("echo first; sleep 0.2; echo second");
  check_unknown(r, "curl.PARTIAL_FILE");
  CHECK(r.stdout_text == "first\n");
  sandbox->terminate();
}

TEST_CASE("command: a malformed envelope is UNKNOWN protocol.malformed", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "malformed_line"}, {"after", 1}});
  check_unknown(sandbox->execute_command("echo hi"), "protocol.malformed");
  sandbox->terminate();
}

TEST_CASE("command: a stream without its end-of-stream envelope is UNKNOWN", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "no_end_of_execution"}});
  const auto r = sandbox->execute_command("echo hi");
  check_unknown(r, "connect.missing_end_stream");
  CHECK(r.stdout_text == "hi\n");
  sandbox->terminate();
}

TEST_CASE("command: a gone sandbox and answered errors are ERROR, retry_safe", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "gone"}});
  check_refused(sandbox->execute_command("echo hi"), "http.502", true);
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "status"}, {"status", 503}});
  check_refused(sandbox->execute_command("echo hi"), "http.503");
  sandbox->terminate();
}

TEST_CASE("command: a sandbox lost mid-command is TIMEOUT/sandbox_lost", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "kill_during"}, {"after", 2}});
  const auto r = sandbox->execute_command("echo first; sleep 0.2; echo second");
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kSandboxLost);
  CHECK(r.state_lost);
  CHECK(r.stdout_text == "first\n");
  sandbox->terminate();
}

TEST_CASE("command: a stalled stream hits the client's backstop: TIMEOUT/execution", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "stall"}});
  CommandOptions options;
  options.timeout = 500ms;  // the server ignores it while stalled; our backstop is timeout + 10 s
  const auto start = std::chrono::steady_clock::now();
  const auto r = sandbox->execute_command("echo hi", options);
  CHECK(std::chrono::steady_clock::now() - start < 15s);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  sandbox->terminate();
}

// ---- files ----

TEST_CASE("files: a failed upload means the code never ran: ERROR, retry_safe", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"method", "POST"}, {"path", "/files"}, {"action", "status"}, {"status", 507},
                {"count", -1}});
  ExecuteOptions options;
  options.files.push_back(Attachment::from_bytes("x", "a.txt"));
  check_refused(sandbox->execute_code("print(1)", options), "http.507");
  CHECK(server.requests("POST", "/execute").empty());
  try {
    sandbox->write_file("/home/user/a.txt", "x");
    FAIL("write_file must throw");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.stage() == Stage::kUpload);
    CHECK(e.kind() == ErrorKind::kQuotaExceeded);
  }
  server.clear_faults();
  server.fault({{"surface", "envd"}, {"method", "GET"}, {"path", "/files"}, {"action", "cut_mid_line"}, {"count", -1}});
  sandbox->write_file("/home/user/big.bin", std::string(100000, 'z'));
  CHECK(sandbox->download_file("/home/user/big.bin") == std::nullopt);
  sandbox->terminate();
}
