// One test per fault directive of the local AgentCore server (tests/servers/bedrock/README.md): the exact result
// fields for invoke faults, the exact exception for session start / stop faults. No session may be left alive.
#include <catch2/catch.hpp>

#include <stop_token>
#include <thread>

#include "bedrock_test_support.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::BedrockServer;
using nlohmann::json;

namespace {

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
}

json invoke_fault(json directive) {
  directive["operation"] = "invoke";
  directive["tool"] = "executeCode";
  return directive;
}

}  // namespace

// ---- start / stop ----

TEST_CASE("bedrock start: 429 throttling is retried with the same clientToken and succeeds", "[bedrock][faults]") {
  BedrockServer server;
  server.fault({{"operation", "start"}, {"action", "status"}, {"status", 429}, {"retry_after", 1}});
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const auto starts = server.requests("start");
  REQUIRE(starts.size() == 2);
  CHECK(server.alive().size() == 1);
  sandbox->terminate();
}

TEST_CASE("bedrock start: 5xx on every attempt is a transient SandboxStartError", "[bedrock][faults]") {
  BedrockServer server;
  server.fault({{"operation", "start"}, {"action", "status"}, {"status", 500}, {"count", -1}});
  try {
    (void)BedrockAgentCoreSandbox::create(server.options());
    FAIL("start must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.kind() == ErrorKind::kUnavailable);
    CHECK(e.transient());
  }
  CHECK(server.requests("start").size() == 3);
  CHECK(server.alive().empty());
}

TEST_CASE("bedrock start: a lost answer is retried with the same clientToken: one session", "[bedrock][faults]") {
  BedrockServer server;
  server.fault({{"operation", "start"}, {"action", "reset"}, {"when", "before"}});
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  CHECK(server.requests("start").size() == 2);
  CHECK(server.alive() == std::vector<std::string>{*sandbox->sandbox_id()});  // the same session both times
  sandbox->terminate();
  CHECK(server.alive().empty());
}

TEST_CASE("bedrock start: 402 quota exceeded is not transient", "[bedrock][faults]") {
  BedrockServer server;
  server.fault({{"operation", "start"}, {"action", "status"}, {"status", 402}});
  try {
    (void)BedrockAgentCoreSandbox::create(server.options());
    FAIL("start must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.kind() == ErrorKind::kQuotaExceeded);
    CHECK_FALSE(e.transient());
  }
  CHECK(server.requests("start").size() == 1);
}

TEST_CASE("bedrock stop: failure after retries throws SandboxTerminateError and keeps the handle",
          "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault({{"operation", "stop"}, {"action", "status"}, {"status", 503}, {"count", -1}});
  try {
    sandbox->terminate();
    FAIL("terminate must throw");
  } catch (const SandboxTerminateError& e) {
    CHECK(e.stage() == Stage::kTerminate);
    CHECK(e.kind() == ErrorKind::kUnavailable);
    CHECK(e.transient());
  }
  CHECK(server.requests("stop").size() == 3);
  CHECK(sandbox->execute_code("print(1)").stdout_text == "1\n");
  server.clear_faults();
  sandbox->terminate();
  CHECK(server.alive().empty());
}

// ---- invoke ----

TEST_CASE("bedrock invoke: 429 before the stream is ERROR retry_safe aws.ThrottlingException, not retried",
          "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "status"}, {"status", 429}}));
  check_refused(sandbox->execute_code("print(1)"), "aws.ThrottlingException");
  CHECK(server.requests("invoke", "executeCode").size() == 1);
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: a bare 502 from a proxy after executeCode ran is UNKNOWN, not retry_safe",
          "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "gateway_after_run"}, {"status", 502}}));
  const auto r = sandbox->execute_code("open('ran.txt', 'w').write('x')");
  check_unknown(r, "http.502");
  CHECK(r.error == "execute: HTTP 502; the request had been sent, so the code may have run");
  CHECK(sandbox->download_file("ran.txt") == std::optional<std::string>("x"));  // it did run
  CHECK(server.requests("invoke", "executeCode").size() == 1);
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: a 5xx in the service's own error shape is its refusal: ERROR, retry_safe",
          "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "status"}, {"status", 500}, {"message", "try later"}}));
  const auto r = sandbox->execute_code("open('ran.txt', 'w').write('x')");
  check_refused(r, "aws.InternalServerException");
  CHECK(r.error == "execute refused: HTTP 500: InternalServerException: try later");
  CHECK(sandbox->download_file("ran.txt") == std::nullopt);
  CHECK(server.requests("invoke", "executeCode").size() == 1);
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: a throttlingException as the first frame: the code never ran", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "exception_first"}}));
  check_refused(sandbox->execute_code("open('ran.txt', 'w').write('x')"), "aws.ThrottlingException");
  CHECK(sandbox->download_file("ran.txt") == std::nullopt);
  CHECK(server.requests("invoke", "executeCode").size() == 1);
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: exception names are matched case-insensitively", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "exception_first"}, {"exception_type", "ResourceNotFoundException"}}));
  check_refused(sandbox->execute_code("1"), "aws.ResourceNotFoundException", true);
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: an exception after a result is UNKNOWN", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "exception_after"}}));
  const auto r = sandbox->execute_code("print('ran')");
  check_unknown(r, "aws.InternalServerException");
  CHECK(r.stdout_text == "ran\n");
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: error frames: first → ERROR never ran, after a result → UNKNOWN", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "error_frame"}, {"after", 0}}));
  check_refused(sandbox->execute_code("1"), "aws.InternalFailure");
  server.fault(invoke_fault({{"action", "error_frame"}, {"after", 1}}));
  check_unknown(sandbox->execute_code("1"), "aws.InternalFailure");
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: corrupted CRCs are UNKNOWN eventstream errors", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "bad_crc"}, {"crc", "message"}}));
  check_unknown(sandbox->execute_code("1"), "eventstream.message_crc");
  server.fault(invoke_fault({{"action", "bad_crc"}, {"crc", "prelude"}}));
  check_unknown(sandbox->execute_code("1"), "eventstream.prelude_crc");
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: a frame cut short inside a complete body is UNKNOWN eventstream.truncated",
          "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "truncated"}}));
  check_unknown(sandbox->execute_code("1"), "eventstream.truncated");
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: resets: before an answer or after headers the request was sent: UNKNOWN",
          "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "reset"}, {"when", "before"}}));
  const auto before = sandbox->execute_code("1");
  CHECK(before.status == ExecutionStatus::kUnknown);
  REQUIRE(before.failure);
  CHECK_FALSE(before.failure->retry_safe);
  server.fault(invoke_fault({{"action", "reset"}, {"when", "after_headers"}}));
  check_unknown(sandbox->execute_code("1"), "curl.PARTIAL_FILE");
  server.fault(invoke_fault({{"action", "reset"}, {"when", "after_first_frame"}}));
  const auto after = sandbox->execute_code("print('kept')");
  check_unknown(after, "curl.PARTIAL_FILE");
  CHECK(after.stdout_text == "kept\n");
  CHECK(server.requests("invoke", "executeCode").size() == 3);  // never re-sent
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: a stall is TIMEOUT/execution at the budget", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  ExecuteOptions options;
  options.timeout = 1s;
  server.fault(invoke_fault({{"action", "stall"}, {"when", "after_headers"}}));
  const auto r = sandbox->execute_code("1", options);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK_FALSE(r.failure);
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: frames split byte by byte and unknown events still give the result", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "split"}, {"mode", "bytes"}}));
  CHECK(sandbox->execute_code("print('split')").stdout_text == "split\n");
  server.fault(invoke_fault({{"action", "unknown_event"}}));
  const auto r = sandbox->execute_code("print('after unknown')");
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "after unknown\n");
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: a session that expired before the call: ERROR, retry_safe, state_lost",
          "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "expire_session"}}));
  check_refused(sandbox->execute_code("1"), "aws.ResourceNotFoundException", true);
  sandbox->terminate();
  CHECK(server.alive().empty());
}

TEST_CASE("bedrock command: a throttled task start never ran: ERROR retry_safe", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault({{"operation", "invoke"}, {"tool", "startCommandExecution"}, {"action", "exception_first"}});
  check_refused(sandbox->execute_command("echo hi"), "aws.ThrottlingException");
  sandbox->terminate();
}

// ---- hostile service answers ----

TEST_CASE("bedrock invoke: a redirect is UNKNOWN http.307 and is never followed", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "status"}, {"status", 307}}));
  const auto r = sandbox->execute_code("1");
  check_unknown(r, "http.307");
  CHECK(r.error == "execute: unexpected HTTP 307; the call may have run");
  CHECK(server.requests("invoke", "executeCode").size() == 1);
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: result events beyond the output budget are UNKNOWN eventstream.too_large, output kept",
          "[bedrock][faults]") {
  BedrockServer server;
  auto options = server.options();
  options.max_message_bytes = 4096;
  options.max_output_bytes = 1000;  // budget for all result payloads: 4096 + 2 * 1000 bytes
  auto sandbox = BedrockAgentCoreSandbox::create(options);
  // A first result event of 4000 payload bytes, then the real result of about 3 KB: 7 KB in all.
  const json padding = {{"structuredContent", {{"stdout", std::string(3950, 'p')}}}};
  server.fault(invoke_fault({{"action", "unknown_event"}, {"event_type", "result"}, {"payload", padding}}));
  const auto r = sandbox->execute_code("print('y' * 3000)");
  check_unknown(r, "eventstream.too_large");
  CHECK(r.error == "execute: the answer was not a valid event stream (too_large)");
  CHECK(r.stdout_text == std::string(1000, 'p'));  // what came within the budget is kept, up to the stream's cap
  CHECK(r.truncated);
  sandbox->terminate();
}

TEST_CASE("bedrock invoke: exception names the service chose are made safe dotted names", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault(invoke_fault({{"action", "exception_first"},
                             {"exception_type", "evil name\n<script>/" + std::string(200, 'x')},
                             {"message", "line one\nline two"}}));
  const auto r = sandbox->execute_code("1");
  REQUIRE(r.failure);
  // Only [A-Za-z0-9._-] kept, the rest '_', cut at 100 characters, first letter upper-cased.
  CHECK(r.failure->exception_type == "aws.Evil_name__script__" + std::string(100 - 19, 'x'));
  CHECK(r.failure->retry_safe);
  CHECK(r.status == ExecutionStatus::kError);
  sandbox->terminate();
}

TEST_CASE("bedrock: a service error that echoes the secret key or session token has them redacted",
          "[bedrock][faults]") {
  BedrockServer server({"--session-token", "FwoGZXIvYXdzEXAMPLETOKEN"});
  AwsCredentials temporary = test::kTestCredentials;
  temporary.session_token = "FwoGZXIvYXdzEXAMPLETOKEN";
  const std::string echoed =
      "bad request from " + temporary.secret_access_key + " with " + temporary.session_token + " attached";
  server.fault({{"operation", "start"}, {"action", "status"}, {"status", 400}, {"message", echoed}});
  try {
    (void)BedrockAgentCoreSandbox::create(server.options(temporary));
    FAIL("start must throw");
  } catch (const SandboxStartError& e) {
    const std::string what = e.what();
    CHECK(what.find("bad request from [redacted] with [redacted] attached") != std::string::npos);
    CHECK(what.find(temporary.secret_access_key) == std::string::npos);
    CHECK(what.find(temporary.session_token) == std::string::npos);
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
  }

  auto sandbox = BedrockAgentCoreSandbox::create(server.options(temporary));
  server.fault(invoke_fault({{"action", "exception_first"},
                             {"exception_type", "X" + temporary.session_token},
                             {"message", "leaked " + temporary.secret_access_key}}));
  const auto r = sandbox->execute_code("1");
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "aws.X_redacted_");
  CHECK(r.error.find(temporary.secret_access_key) == std::string::npos);
  CHECK(r.error.find("leaked [redacted]") != std::string::npos);
  sandbox->terminate();
}

TEST_CASE("bedrock command: a stalled poll cannot stretch the command past its budget", "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault({{"operation", "invoke"}, {"tool", "getTask"}, {"action", "stall"}, {"count", -1}});
  CommandOptions options;
  options.timeout = std::chrono::seconds(2);
  const auto started = std::chrono::steady_clock::now();
  const auto r = sandbox->execute_command("sleep 30", options);
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK(took < std::chrono::seconds(15));  // request_timeout is 60 s; the budget and the stop's own 10 s bound it
  server.clear_faults();
  sandbox->terminate();
  CHECK(server.alive().empty());
}

// ---- reads go through the one retry loop ----

TEST_CASE("bedrock reads: a 503 and a throttling first frame are retried within the budget, a read refused every "
          "time gives up after three attempts",
          "[bedrock][faults]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  sandbox->write_file("note.txt", "kept");
  server.fault({{"operation", "invoke"}, {"tool", "readFiles"}, {"action", "status"}, {"status", 503}});
  CHECK(sandbox->read_file("note.txt") == "kept");
  CHECK(server.requests("invoke", "readFiles").size() == 2);
  server.fault({{"operation", "invoke"}, {"tool", "readFiles"}, {"action", "exception_first"}});
  CHECK(sandbox->read_file("note.txt") == "kept");
  CHECK(server.requests("invoke", "readFiles").size() == 4);
  server.fault({{"operation", "invoke"}, {"tool", "readFiles"}, {"action", "status"}, {"status", 503}, {"count", -1}});
  try {
    (void)sandbox->read_file("note.txt");
    FAIL("read_file must throw");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.stage() == Stage::kDownload);
    CHECK(e.kind() == ErrorKind::kUnavailable);
  }
  CHECK(server.requests("invoke", "readFiles").size() == 7);
  server.clear_faults();
  // A validation refusal is final: one attempt.
  server.fault({{"operation", "invoke"}, {"tool", "readFiles"}, {"action", "status"}, {"status", 400}});
  CHECK_THROWS_AS(sandbox->read_file("note.txt"), SandboxExecutionError);
  CHECK(server.requests("invoke", "readFiles").size() == 8);
  sandbox->terminate();
}

// ---- create ----

TEST_CASE("bedrock create: additional_packages cut short by create_timeout is kTimeout (transient), by a cancel "
          "kUnknown, and the session is stopped",
          "[bedrock][faults]") {
  BedrockServer server;
  server.fault({{"operation", "invoke"}, {"tool", "getTask"}, {"action", "stall"}, {"count", -1}});
  auto options = server.options();
  options.additional_packages = {"anything"};
  options.create_timeout = 2s;
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("create must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kInstallPackages);
    CHECK(e.kind() == ErrorKind::kTimeout);
    CHECK(e.transient());
    CHECK(std::string(e.what()) == "installing additional_packages did not finish within create_timeout (2000 ms)");
  }
  CHECK(server.alive().empty());

  std::stop_source stop;
  options.create_timeout = 60s;
  options.cancel = stop.get_token();
  std::jthread canceller([&stop] {
    std::this_thread::sleep_for(1500ms);
    stop.request_stop();
  });
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("create must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kInstallPackages);
    CHECK(e.kind() == ErrorKind::kUnknown);
    CHECK_FALSE(e.transient());
    CHECK(std::string(e.what()) == "creating the sandbox was cancelled while additional_packages were installed");
  }
  CHECK(server.alive().empty());
}
