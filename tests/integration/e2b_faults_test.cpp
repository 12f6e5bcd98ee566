// One test per fault directive of the local E2B server (tests/servers/e2b/README.md): the exact result fields for
// execute and command faults, the exact exception for create and terminate faults, and output received before a
// fault kept. No sandbox may be left alive. Then a hostile service (raw bytes from a scripted local server) and
// careless use.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../unit/local_http_server.hpp"
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

TEST_CASE("create: a connection refused on arrival is retried, all three refused is transient", "[e2b][faults]") {
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

TEST_CASE("create: the cleanup of a lost create kills only listed sandboxes whose metadata carries its token",
          "[e2b][faults]") {
  E2BServer server;
  auto other = E2BSandbox::create(server.options());  // someone else's sandbox, without the create's token
  const std::string other_id = *other->sandbox_id();
  server.fault({{"surface", "api"}, {"method", "POST"}, {"path", "/v2/sandboxes"},
                {"action", "close_after_request"}});
  // A listing that ignored the metadata filter: it names the other sandbox, whose metadata has no token.
  server.fault({{"surface", "api"}, {"method", "GET"}, {"path", "/v2/sandboxes"}, {"action", "status"},
                {"status", 200},
                {"body", json::array({{{"sandboxID", other_id}, {"templateID", "code-interpreter-v1"},
                                       {"metadata", json::object()}, {"state", "running"}}}).dump()}});
  auto sandbox = E2BSandbox::create(server.options());
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 3);  // other's, the lost one, the retry
  CHECK(server.requests("DELETE", "/sandboxes/").empty());
  const auto alive = server.alive();
  CHECK(std::find(alive.begin(), alive.end(), other_id) != alive.end());
  REQUIRE(alive.size() == 3);  // the other, the one whose answer was lost (not found), the new one
  for (const auto& id : alive) E2BSandbox::connect(id, server.options())->terminate();
  CHECK(server.alive().empty());
}

TEST_CASE("create: the cleanup of a lost create has a budget of its own, 20 s, not three request timeouts",
          "[e2b][faults]") {
  E2BServer server;
  server.fault({{"surface", "api"}, {"method", "POST"}, {"path", "/v2/sandboxes"},
                {"action", "close_after_request"}});
  server.fault({{"surface", "api"}, {"method", "GET"}, {"path", "/v2/sandboxes"}, {"action", "stall"}, {"count", -1}});
  auto options = server.options();
  options.request_timeout = 30s;  // three stalled listings would take 90 s
  const auto started = std::chrono::steady_clock::now();
  try {
    (void)E2BSandbox::create(options);
    FAIL("create must throw when the lost sandbox cannot be looked up");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
  }
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(took >= 19s);
  CHECK(took < 27s);
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 1);  // not retried: what it made could not be found
  // The sandbox the lost create made is still there (the create logged its token); kill it for the next check.
  server.clear_faults();
  const auto left = server.alive();
  REQUIRE(left.size() == 1);
  auto found = E2BSandbox::connect(left[0], server.options());
  found->terminate();
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

TEST_CASE("execute: a 429 is ERROR, retry_safe, a bare 5xx is UNKNOWN (a proxy may answer after the code ran), "
          "neither is retried", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "status"}, {"status", 429},
                {"retry_after", 1}});
  const auto throttled = sandbox->execute_code("print(1)");
  check_refused(throttled, "http.429");
  CHECK(throttled.error.rfind("execute refused: HTTP 429", 0) == 0);
  for (const int status : {500, 502, 503}) {
    server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "status"}, {"status", status}});
    const auto r = sandbox->execute_code("print(1)");
    check_unknown(r, "http." + std::to_string(status));
    CHECK(r.error.rfind("execute: HTTP " + std::to_string(status), 0) == 0);
    CHECK(r.error.find("the code may have run") != std::string::npos);
  }
  CHECK(server.requests("POST", "/execute").size() == 4);
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

TEST_CASE("command: a stream cut mid-envelope whose command then ended is UNKNOWN, output before it kept",
          "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "cut_mid_line"}, {"after", 2}});
  // Unit 2, cut half-way, is the end event, sent once the process is gone: the re-attach by pid finds no process
  // (tests/processes covers the re-attach itself).
  const auto r = sandbox->execute_command("echo first; sleep 0.2");
  check_unknown(r, "connect.not_found");
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

TEST_CASE("command: a gone sandbox and a 4xx are ERROR, retry_safe, a bare 5xx is UNKNOWN", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "gone"}});
  const auto gone = sandbox->execute_command("echo hi");
  check_refused(gone, "http.502", true);
  CHECK(gone.error == "the sandbox is gone (it expired or was killed)");
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "status"}, {"status", 400}});
  check_refused(sandbox->execute_command("echo hi"), "http.400");
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "status"}, {"status", 503}});
  check_unknown(sandbox->execute_command("echo hi"), "http.503");
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
  // The caller's budget, not libcurl's backstop timer ("Operation timed out after 10501 milliseconds").
  CHECK(r.error == "command: timed out after 500 ms; envd did not end it in time, so the command may still be running");
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

// ---- a hostile service: raw bytes from a scripted local server (tests/unit/local_http_server.hpp) ----


namespace {

using test::LocalHttpServer;
using test::ReceivedRequest;
using test::ServerConnection;

// A control plane and sandbox on one port that answers like E2B, except where `on_execute` / `on_create` say.
// A scripted handler's return ends its connection: a complete answer says so, or the client may reuse the closed
// connection for its next request and (rightly) refuse to re-send a non-idempotent one.
constexpr std::string_view kClose = "Connection: close\r\n";

class HostileE2B {
 public:
  using Script = std::function<void(ServerConnection&, const ReceivedRequest&)>;
  Script on_execute;
  Script on_create;
  Script on_other;  ///< any other request, before the default 404

  HostileE2B()
      : server_([this](ServerConnection& c, int) {
          while (auto request = c.read_request()) {
            server_.record(*request);
            const auto& t = request->target;
            if (request->method == "POST" && t == "/v2/sandboxes") {
              if (on_create) return on_create(c, *request);
              c.respond(201,
                        R"({"sandboxID":"hostile0000000000000a","envdAccessToken":"envd-secret-token",)"
                        R"("envdVersion":"0.6.13"})",
                        "Content-Type: application/json\r\n");
            } else if (request->method == "DELETE") {
              c.respond(204, "");
            } else if (t == "/execute" && on_execute) {
              return on_execute(c, *request);
            } else if (t.rfind("/v2/sandboxes?", 0) == 0) {
              c.respond(200, "[]", "Content-Type: application/json\r\n");
            } else if (on_other) {
              on_other(c, *request);
            } else {
              c.respond(404, R"({"code":404,"message":"nope"})", "Content-Type: application/json\r\n");
            }
          }
        }) {}

  [[nodiscard]] E2BOptions options() const {
    E2BOptions o;
    o.api_key = test::kTestApiKey;
    o.api_url = server_.url("");
    o.sandbox_url = server_.url("");
    return o;
  }
  LocalHttpServer& server() { return server_; }

 private:
  LocalHttpServer server_;
};

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}
constexpr std::string_view kStreamHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

}  // namespace

TEST_CASE("hostile execute: endless result events stay within the output cap", "[e2b][hostile]") {
  HostileE2B e2b;
  std::atomic<std::size_t> sent{0};
  e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) {
    c.write(kStreamHead);
    const std::string line = R"({"type": "result", "png": ")" + std::string(1 << 20, 'A') + "\"}\n";
    // 64 MiB of results in total, far beyond the 1 MiB output cap set below.
    for (int i = 0; i < 64; ++i) {
      c.write(chunk(line));
      sent += line.size();
    }
    c.write(chunk(R"({"type": "end_of_execution"})" "\n"));
    c.write("0\r\n\r\n");
  };
  auto options = e2b.options();
  options.max_output_bytes = 1 << 20;
  auto sandbox = E2BSandbox::create(options);
  const auto r = sandbox->execute_code("x");
  std::size_t kept = 0;
  for (const auto& result : r.results)
    for (const auto& [mime, data] : result.data) kept += data.size();
  CHECK(sent.load() > std::size_t{60} << 20);
  CHECK(kept <= std::size_t{2} << 20);
  CHECK(r.truncated);
  sandbox->terminate();
}

TEST_CASE("hostile execute: a 2xx or 3xx other than 200 is UNKNOWN, never a retry-safe ERROR", "[e2b][hostile]") {
  for (const int status : {201, 204, 302}) {
    HostileE2B e2b;
    e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) {
      c.respond(status, R"({"type": "stdout", "text": "ran\n"})" "\n",
                "Location: http://127.0.0.1:1/elsewhere\r\nConnection: close\r\n");
    };
    auto sandbox = E2BSandbox::create(e2b.options());
    const auto r = sandbox->execute_code("x");
    INFO("status " << status);
    check_unknown(r, "http." + std::to_string(status));
    sandbox->terminate();
  }
}

TEST_CASE("hostile create: Retry-After and retries cannot stretch create past create_timeout", "[e2b][hostile]") {
  HostileE2B e2b;
  std::atomic<int> creates{0};
  e2b.on_create = [&](ServerConnection& c, const ReceivedRequest&) {
    if (creates++ == 0) {
      c.respond(429, R"({"code":429,"message":"slow down"})", "Retry-After: 2\r\n");
      return;
    }
    c.wait_for_close(30s);  // then stall
  };
  auto options = e2b.options();
  options.create_timeout = 3s;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(E2BSandbox::create(options), SandboxStartError);
  CHECK(std::chrono::steady_clock::now() - start < 3500ms);
}

TEST_CASE("hostile create: Retry-After 999999 does not outlast create_timeout", "[e2b][hostile]") {
  HostileE2B e2b;
  e2b.on_create = [&](ServerConnection& c, const ReceivedRequest&) {
    c.respond(429, R"({"code":429,"message":"slow down"})", "Retry-After: 999999\r\n");
  };
  auto options = e2b.options();
  options.create_timeout = 2s;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(E2BSandbox::create(options), SandboxStartError);
  CHECK(std::chrono::steady_clock::now() - start < 2500ms);
}

TEST_CASE("hostile create: an error body that echoes the API key does not leak it", "[e2b][hostile]") {
  HostileE2B e2b;
  e2b.on_create = [&](ServerConnection& c, const ReceivedRequest& request) {
    const auto key = request.headers.at("x-api-key");
    c.respond(401, R"({"code":401,"message":"Invalid API key )" + key + R"("})", "Content-Type: application/json\r\n");
  };
  try {
    (void)E2BSandbox::create(e2b.options());
    FAIL("create must throw");
  } catch (const SandboxStartError& e) {
    CHECK(std::string(e.what()).find(test::kTestApiKey) == std::string::npos);
    const auto* cause = test::nested_transport(e);
    REQUIRE(cause);
    CHECK(std::string(cause->what()).find(test::kTestApiKey) == std::string::npos);
  }
}

TEST_CASE("hostile execute: an error body that echoes the envd token does not leak it", "[e2b][hostile]") {
  HostileE2B e2b;
  e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest& request) {
    c.respond(401, "bad token " + request.headers.at("x-access-token"));
  };
  auto sandbox = E2BSandbox::create(e2b.options());
  const auto r = sandbox->execute_code("x");
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.error.find("envd-secret-token") == std::string::npos);
  sandbox->terminate();
}

TEST_CASE("hostile execute: endless response headers are bounded", "[e2b][hostile]") {
  HostileE2B e2b;
  e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) {
    c.write("HTTP/1.1 200 OK\r\n");
    const std::string many = [] {
      std::string s;
      for (int i = 0; i < 1000; ++i) s += "X-Junk: " + std::string(100, 'j') + "\r\n";
      return s;
    }();
    for (int i = 0; i < 2000; ++i) c.write(many);  // ~200 MB of headers
  };
  auto sandbox = E2BSandbox::create(e2b.options());
  ExecuteOptions o;
  o.timeout = 20s;
  const auto r = sandbox->execute_code("x", o);
  CHECK(r.status == ExecutionStatus::kUnknown);
  sandbox->terminate();
}

TEST_CASE("hostile execute: a line over the cap, a lying Content-Length or gzip is UNKNOWN, output kept",
          "[e2b][hostile]") {
  const std::string first = R"({"type": "stdout", "text": "kept\n"})" "\n";
  std::string body;
  std::string expected_type;
  std::function<void(ServerConnection&)> answer;
  SECTION("a 20 MiB line") {
    expected_type = "protocol.oversize";
    answer = [&](ServerConnection& c) {
      c.write(kStreamHead);
      c.write(chunk(first));
      const std::string piece(1 << 20, 'x');
      c.write(chunk(R"({"type": "stdout", "text": ")"));
      for (int i = 0; i < 20; ++i) c.write(chunk(piece));
      c.write("0\r\n\r\n");
    };
  }
  SECTION("a Content-Length that promises more than comes") {
    expected_type = "curl.PARTIAL_FILE";
    answer = [&](ServerConnection& c) {
      c.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + first);
    };
  }
  SECTION("a gzip body that was never asked for") {
    expected_type = "protocol.malformed";
    answer = [&](ServerConnection& c) {
      // An empty gzip member: bytes that are not NDJSON unless the client inflates them (it must not).
      const std::string gz("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00", 20);
      c.write("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " +
              std::to_string(first.size() + gz.size()) + "\r\n\r\n" + first + gz);
    };
  }
  HostileE2B e2b;
  e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) { answer(c); };
  auto sandbox = E2BSandbox::create(e2b.options());
  const auto r = sandbox->execute_code("x");
  check_unknown(r, expected_type);
  CHECK(r.stdout_text == "kept\n");
  sandbox->terminate();
}

TEST_CASE("hostile execute: keepalives forever still time out at the budget", "[e2b][hostile]") {
  HostileE2B e2b;
  e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) {
    c.write(kStreamHead);
    c.write(chunk(R"({"type": "stdout", "text": "before\n"})" "\n"));
    for (int i = 0; i < 100 && !c.wait_for_close(100ms); ++i) c.write(chunk(R"({"type": "keepalive"})" "\n"));
  };
  auto sandbox = E2BSandbox::create(e2b.options());
  ExecuteOptions o;
  o.timeout = 1s;
  const auto start = std::chrono::steady_clock::now();
  const auto r = sandbox->execute_code("x", o);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK_FALSE(r.failure);
  CHECK(r.stdout_text == "before\n");
  sandbox->terminate();
}

TEST_CASE("hostile command: an envelope claiming 4 GiB is UNKNOWN protocol.oversize", "[e2b][hostile]") {
  HostileE2B e2b;
  auto options = e2b.options();
  // Reuses on_execute's slot through the catch-all: the Start path is served here.
  e2b.on_execute = nullptr;
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (auto request = c.read_request()) {
      if (request->target == "/v2/sandboxes") {
        c.respond(201, R"({"sandboxID":"hostile0000000000000a","envdVersion":"0.6.13"})");
      } else if (request->target == "/process.Process/Start") {
        c.write(kStreamHead);
        const std::string start = R"({"event":{"start":{"pid":1}}})";
        c.write(chunk(std::string(4, '\0') + static_cast<char>(start.size()) + start));
        c.write(chunk(std::string("\0\xff\xff\xff\xff", 5) + "{"));
        c.wait_for_close(5s);
        return;
      } else {
        c.respond(204, "");
      }
    }
  });
  options.api_url = server.url("");
  options.sandbox_url = server.url("");
  auto sandbox = E2BSandbox::create(options);
  const auto r = sandbox->execute_command("true");
  check_unknown(r, "protocol.oversize");
  sandbox->terminate();
}

TEST_CASE("hostile create: a bad sandboxID is refused, a token with CRLF is never sent as a header",
          "[e2b][hostile]") {
  SECTION("sandboxID with a path in it") {
    HostileE2B e2b;
    e2b.on_create = [](ServerConnection& c, const ReceivedRequest&) {
      c.respond(201, R"({"sandboxID":"../../x","envdVersion":"0.6.13"})", kClose);
    };
    CHECK_THROWS_AS(E2BSandbox::create(e2b.options()), SandboxStartError);
  }
  SECTION("sandboxID with CRLF") {
    HostileE2B e2b;
    e2b.on_create = [](ServerConnection& c, const ReceivedRequest&) {
      c.respond(201, R"({"sandboxID":"abc\r\nX-Injected: 1","envdVersion":"0.6.13"})", kClose);
    };
    CHECK_THROWS_AS(E2BSandbox::create(e2b.options()), SandboxStartError);
  }
  SECTION("envdAccessToken with CRLF") {
    HostileE2B e2b;
    e2b.on_create = [](ServerConnection& c, const ReceivedRequest&) {
      c.respond(201, R"({"sandboxID":"abc123","envdAccessToken":"t\r\nX-Injected: 1","envdVersion":"0.6.13"})",
                kClose);
    };
    e2b.on_execute = [](ServerConnection& c, const ReceivedRequest&) {
      c.respond(200, R"({"type": "end_of_execution"})" "\n", kClose);
    };
    auto sandbox = E2BSandbox::create(e2b.options());
    const auto r = sandbox->execute_code("x");
    INFO(r.error);
    CHECK(r.status == ExecutionStatus::kSuccess);
    sandbox->terminate();
    for (const auto& request : e2b.server().requests()) CHECK(request.headers.count("x-injected") == 0);
  }
}

TEST_CASE("careless use: an API key with a line break or NUL is refused as configuration", "[e2b][hostile]") {
  HostileE2B e2b;
  for (const std::string key : {test::kTestApiKey + "\n", std::string("e2b_\0abc", 8)}) {
    auto options = e2b.options();
    options.api_key = key;
    try {
      (void)E2BSandbox::create(options);
      FAIL("create must throw");
    } catch (const SandboxStartError& e) {
      CHECK(e.stage() == Stage::kConfigure);
    }
  }
  CHECK(e2b.server().connections() == 0);
}

TEST_CASE("hostile create: a redirect is not followed, so the API key goes nowhere else", "[e2b][hostile]") {
  LocalHttpServer elsewhere([&](ServerConnection& c, int) {
    while (auto request = c.read_request()) {
      elsewhere.record(*request);
      c.respond(201, R"({"sandboxID":"abc123"})");
    }
  });
  HostileE2B e2b;
  e2b.on_create = [&](ServerConnection& c, const ReceivedRequest&) {
    c.respond(307, "", "Location: " + elsewhere.url("/v2/sandboxes") + "\r\n");
  };
  CHECK_THROWS_AS(E2BSandbox::create(e2b.options()), SandboxStartError);
  CHECK(elsewhere.requests().empty());
}

TEST_CASE("hostile execute: terminate from another thread ends a stalled execute at once", "[e2b][hostile]") {
  HostileE2B e2b;
  e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) {
    c.write(kStreamHead);
    c.write(chunk(R"({"type": "stdout", "text": "started\n"})" "\n"));
    c.wait_for_close(30s);
  };
  auto sandbox = E2BSandbox::create(e2b.options());
  std::jthread terminator([&] {
    std::this_thread::sleep_for(500ms);
    sandbox->terminate();
  });
  const auto start = std::chrono::steady_clock::now();
  const auto r = sandbox->execute_code("x");
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(r.status == ExecutionStatus::kUnknown);
  CHECK(r.stdout_text == "started\n");
  terminator.join();
  CHECK_THROWS_AS(sandbox->execute_code("x"), SandboxNotInitializedError);
  sandbox->terminate();  // twice is fine
}

TEST_CASE("hostile use: eight threads executing at once each get their own output", "[e2b][hostile]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  std::vector<ExecutionResult> results(8);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&, i] {
        results[i] = sandbox->execute_command("for k in 1 2 3 4 5; do echo t" + std::to_string(i) +
                                              "-$k; sleep 0.05; done");
      });
  }
  for (int i = 0; i < 8; ++i) {
    INFO("thread " << i);
    CHECK(results[i].status == ExecutionStatus::kSuccess);
    std::string expected;
    for (int k = 1; k <= 5; ++k) expected += "t" + std::to_string(i) + "-" + std::to_string(k) + "\n";
    CHECK(results[i].stdout_text == expected);
  }
  sandbox->terminate();
}

TEST_CASE("hostile use: download_file_to over a symlink replaces the link, never writes through it",
          "[e2b][hostile]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  sandbox->write_file("/files/payload.txt", "payload");
  const auto dir = std::filesystem::temp_directory_path() / ("e2b_symlink_" + *sandbox->sandbox_id());
  std::filesystem::create_directories(dir);
  const auto victim = dir / "victim.txt";
  const auto link = dir / "dest.txt";
  std::ofstream(victim) << "precious";
  std::filesystem::create_symlink(victim, link);
  CHECK(sandbox->download_file_to("/files/payload.txt", link));
  CHECK_FALSE(std::filesystem::is_symlink(link));
  std::ifstream victim_in(victim), link_in(link);
  CHECK(std::string(std::istreambuf_iterator<char>(victim_in), {}) == "precious");
  CHECK(std::string(std::istreambuf_iterator<char>(link_in), {}) == "payload");
  // A failed download leaves nothing behind, not even its partial file.
  CHECK_FALSE(sandbox->download_file_to("/files/missing.txt", dir / "other.txt"));
  CHECK(std::distance(std::filesystem::directory_iterator(dir), {}) == 2);
  std::filesystem::remove_all(dir);
  sandbox->terminate();
}

TEST_CASE("careless use: code, a command, a cwd, a context id or a path that is not UTF-8 is std::invalid_argument, "
          "never sent", "[e2b][hostile]") {
  HostileE2B e2b;
  auto sandbox = E2BSandbox::create(e2b.options());
  const std::size_t before = e2b.server().requests().size();
  const std::string bad = "print('\xff')";
  CHECK_THROWS_MATCHES(sandbox->execute_code(bad), std::invalid_argument,
                       Catch::Message("code is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox->execute_in_context("ctx\xc3", "1"), std::invalid_argument,
                       Catch::Message("execute: the context id is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox->execute_command("echo \xfe"), std::invalid_argument,
                       Catch::Message("command is not valid UTF-8"));
  CommandOptions in_bad_dir;
  in_bad_dir.cwd = "/tmp/\xff";
  CHECK_THROWS_MATCHES(sandbox->execute_command("ls", in_bad_dir), std::invalid_argument,
                       Catch::Message("cwd is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox->list_files("/home/\xff"), std::invalid_argument,
                       Catch::Message("dir is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox->remove_file("/home/\xff"), std::invalid_argument,
                       Catch::Message("path is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox->make_dir("/home/\xff"), std::invalid_argument,
                       Catch::Message("path is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox->create_context(Language::kPython, std::string("/home/\xff")), std::invalid_argument,
                       Catch::Message("create_context: the cwd is not valid UTF-8"));
  CHECK(e2b.server().requests().size() == before);
  sandbox->terminate();
}

TEST_CASE("careless use: metadata, env_vars, a template or a package name that is not UTF-8 is a configure error, "
          "never sent", "[e2b][hostile]") {
  HostileE2B e2b;
  for (int which = 0; which < 4; ++which) {
    auto options = e2b.options();
    if (which == 0) options.metadata = {{"job", "\xff"}};
    if (which == 1) options.env_vars = {{"A\xff", "1"}};
    if (which == 2) options.template_id = "base\xff";
    if (which == 3) options.additional_packages = {"numpy\xff"};
    CAPTURE(which);
    try {
      (void)E2BSandbox::create(options);
      FAIL("create must throw");
    } catch (const SandboxStartError& e) {
      CHECK(e.stage() == Stage::kConfigure);
      CHECK(e.kind() == ErrorKind::kInvalidArgument);
    }
  }
  CHECK(e2b.server().connections() == 0);
}

TEST_CASE("download_file: its timeout bounds the whole call, retries included", "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  sandbox->write_file("/home/user/a.txt", "x");
  server.fault({{"surface", "envd"}, {"method", "GET"}, {"path", "/files"}, {"action", "stall"}, {"count", -1}});
  const auto started = std::chrono::steady_clock::now();
  CHECK(sandbox->download_file("/home/user/a.txt", 1500ms) == std::nullopt);
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(took >= 1400ms);
  CHECK(took < 2500ms);
  CHECK(server.requests("GET", "/files").size() == 1);
  server.clear_faults();
  sandbox->terminate();
}

TEST_CASE("careless use: the largest timeouts mean 'no limit', never an overflow into 'already expired'",
          "[e2b][hostile]") {
  constexpr auto kForever = std::chrono::milliseconds::max();
  HostileE2B e2b;
  e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) {
    c.respond(200, R"({"type": "stdout", "text": "ran\n"})" "\n", kClose);
  };
  auto options = e2b.options();
  options.create_timeout = kForever;
  auto sandbox = E2BSandbox::create(options);
  ExecuteOptions forever;
  forever.timeout = kForever;
  const auto r = sandbox->execute_code("x", forever);
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "ran\n");
  sandbox->terminate(kForever);
  CHECK(e2b.server().requests().back().method == "DELETE");
}

TEST_CASE("command: a timeout beyond the Connect header's 10 digits is no limit, not a garbled deadline",
          "[e2b][faults]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  CommandOptions forever;
  forever.timeout = std::chrono::milliseconds::max();
  const auto r = sandbox->execute_command("echo hi", forever);
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "hi\n");
  const auto starts = server.requests("POST", "/process.Process/Start");
  REQUIRE(starts.size() == 1);
  CHECK_FALSE(starts[0].at("headers").contains("connect-timeout-ms"));
  sandbox->terminate();
}

TEST_CASE("hostile execute: a 200 without a single event is UNKNOWN, never SUCCESS", "[e2b][hostile]") {
  for (const std::string body : {std::string(), std::string("\n\n")}) {
    HostileE2B e2b;
    e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) { c.respond(200, body, kClose); };
    auto sandbox = E2BSandbox::create(e2b.options());
    const auto r = sandbox->execute_code("x");
    CAPTURE(body.size());
    check_unknown(r, "protocol.malformed");
    CHECK(r.error == "the sandbox's answer was not the protocol: a 200 answer without any event");
    CHECK(r.stdout_text.empty());
    sandbox->terminate();
  }
}

TEST_CASE("careless use: restart_context and remove_context with an empty id are std::invalid_argument, never sent",
          "[e2b][hostile]") {
  HostileE2B e2b;
  auto sandbox = E2BSandbox::create(e2b.options());
  const std::size_t before = e2b.server().requests().size();
  CHECK_THROWS_MATCHES(sandbox->restart_context(""), std::invalid_argument, Catch::Message("context_id is empty"));
  CHECK_THROWS_MATCHES(sandbox->remove_context(""), std::invalid_argument, Catch::Message("context_id is empty"));
  CHECK(e2b.server().requests().size() == before);
  sandbox->terminate();
}

TEST_CASE("hostile answers: a file size that is not plain digits is 0, never wrapped", "[e2b][hostile]") {
  HostileE2B e2b;
  e2b.on_other = [](ServerConnection& c, const ReceivedRequest&) {
    c.respond(200,
              R"({"entries":[{"name":"a","path":"/files/a","type":"FILE_TYPE_FILE","size":"-1"},)"
              R"({"name":"b","path":"/files/b","type":"FILE_TYPE_FILE","size":" 7"},)"
              R"({"name":"c","path":"/files/c","type":"FILE_TYPE_FILE","size":"+7"},)"
              R"({"name":"d","path":"/files/d","type":"FILE_TYPE_FILE","size":"18446744073709551616"},)"
              R"({"name":"e","path":"/files/e","type":"FILE_TYPE_FILE","size":"42"}]})",
              "Content-Type: application/json\r\n");
  };
  auto sandbox = E2BSandbox::create(e2b.options());
  const auto files = sandbox->list_files("/files");
  REQUIRE(files.size() == 5);
  for (int i = 0; i < 4; ++i) CHECK(files[i].size == 0);
  CHECK(files[4] == FileInfo{"e", "/files/e", false, 42});
  sandbox->terminate();
}

TEST_CASE("hostile answers: a SystemExit value that only a str code prints (' 3', '+3') exits 1", "[e2b][hostile]") {
  HostileE2B e2b;
  std::string value;
  e2b.on_execute = [&](ServerConnection& c, const ReceivedRequest&) {
    // This script ends the connection after answering: say so, or the next call would find it closed.
    c.respond(200, R"({"type": "error", "name": "SystemExit", "value": ")" + value + R"(", "traceback": ""})" "\n"
                   R"({"type": "end_of_execution"})" "\n",
              kClose);
  };
  auto sandbox = E2BSandbox::create(e2b.options());
  for (const auto& [sent, expected] : std::vector<std::pair<std::string, int>>{
           {" 3", 1}, {"+3", 1}, {"3 ", 1}, {"-3", -3}, {"3", 3}, {"99999999999", 1}}) {
    value = sent;
    INFO("'" << sent << "'");
    const auto r = sandbox->execute_code("raise SystemExit");
    INFO(r.error);
    CHECK(r.status == ExecutionStatus::kError);
    CHECK(r.exit_code == expected);
  }
  sandbox->terminate();
}

TEST_CASE("careless use: an output or line cap of 0 is refused as configuration", "[e2b][hostile]") {
  HostileE2B e2b;
  for (int which = 0; which < 2; ++which) {
    auto options = e2b.options();
    (which == 0 ? options.max_line_bytes : options.max_output_bytes) = 0;
    try {
      (void)E2BSandbox::create(options);
      FAIL("create must throw");
    } catch (const SandboxStartError& e) {
      CHECK(e.stage() == Stage::kConfigure);
      CHECK(e.kind() == ErrorKind::kInvalidArgument);
      CHECK(std::string(e.what()) == "max_line_bytes and max_output_bytes must be positive");
    }
  }
  CHECK(e2b.server().connections() == 0);
}

TEST_CASE("create: additional_packages cut short by create_timeout is kTimeout (transient), by a cancel kUnknown, "
          "and the sandbox is killed",
          "[e2b][faults]") {
  E2BServer server;
  server.fault({{"surface", "interpreter"}, {"path", "/execute"}, {"action", "stall"}, {"count", -1}});
  auto options = server.options();
  options.additional_packages = {"anything"};
  options.create_timeout = 2s;
  try {
    (void)E2BSandbox::create(options);
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
    (void)E2BSandbox::create(options);
    FAIL("create must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kInstallPackages);
    CHECK(e.kind() == ErrorKind::kUnknown);
    CHECK_FALSE(e.transient());
    CHECK(std::string(e.what()) == "creating the sandbox was cancelled while additional_packages were installed");
  }
  CHECK(server.alive().empty());
}

namespace {

// exists throws SandboxExecutionError (stage download, `kind`) and returns nothing.
std::string check_exists_throws(E2BSandbox& sandbox, const std::string& path, ErrorKind kind) {
  try {
    const bool answer = sandbox.exists(path);
    FAIL("exists answered " << answer);
  } catch (const SandboxExecutionError& e) {
    CHECK(e.stage() == Stage::kDownload);
    CHECK(e.kind() == kind);
    return e.what();
  }
  return {};
}

json on_stat(json directive) {
  directive.update({{"surface", "envd"}, {"path", "/filesystem.Filesystem/Stat"}, {"method", "POST"}});
  return directive;
}

}  // namespace

TEST_CASE("exists: only envd's 404 not_found is absent: a 500 whose body says not_found throws unavailable",
          "[e2b][faults][files]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  CHECK_FALSE(sandbox->exists("missing.txt"));  // the real answer: 404 not_found
  server.fault(on_stat({{"action", "status"}, {"status", 500}, {"count", -1},
                        {"body", {{"code", "not_found"}, {"message", "file not found"}}}}));
  CHECK(check_exists_throws(*sandbox, "missing.txt", ErrorKind::kUnavailable) ==
        "exists failed: HTTP 500 with a not_found body (file not found), which is not envd's answer for a missing path");
  server.clear_faults();
  // A proxy's 502 that says "not found" is the sandbox being gone, not the file.
  server.fault(on_stat({{"action", "gone"}, {"count", -1}}));
  CHECK(check_exists_throws(*sandbox, "missing.txt", ErrorKind::kUnavailable) == "exists failed: the sandbox is gone");
  server.clear_faults();
  sandbox->terminate();
}

TEST_CASE("exists: a Stat that is never answered throws timeout, a connection cut throws unavailable",
          "[e2b][faults][files]") {
  E2BServer server;
  auto options = server.options();
  options.request_timeout = 1s;
  auto sandbox = E2BSandbox::create(options);
  server.fault(on_stat({{"action", "stall"}, {"count", -1}}));
  const auto began = std::chrono::steady_clock::now();
  (void)check_exists_throws(*sandbox, "missing.txt", ErrorKind::kTimeout);
  CHECK(std::chrono::steady_clock::now() - began < 15s);
  server.clear_faults();
  server.fault(on_stat({{"action", "refuse"}, {"count", -1}}));
  (void)check_exists_throws(*sandbox, "missing.txt", ErrorKind::kUnavailable);
  server.clear_faults();
  CHECK_FALSE(sandbox->exists("missing.txt"));
  sandbox->terminate();
}
