// E2B processes against streams that break or lie (the local E2B server's fault directives): timeouts after a
// re-attach, cuts in a row and their bound, re-attaches that fail, hostile `start` events and listings, a stream that
// never starts, partial lines, and signals to processes that ended.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "../integration/e2b_test_support.hpp"
#include "code_interpreter/process.hpp"
#include "process_test_support.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::E2BServer;
using code_interpreter::test::count_requests;
using nlohmann::json;

namespace {

// The Start stream of the next spawn or command: `start`, one unit, then cut half-way through the next.
void cut_start_after_first_line(E2BServer& server) {
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "cut_mid_line"}, {"after", 2}});
}

// Every re-attach (process.Process/Connect) carries `start`, then is cut half-way through the next unit.
void cut_every_reattach_after_start(E2BServer& server) {
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Connect"}, {"action", "cut_mid_line"}, {"after", 1},
                {"count", -1}});
}

// The message of the SandboxExecutionError (stage command) `call` throws, checking its kind.
std::string command_error(const std::function<void()>& call, ErrorKind kind) {
  try {
    call();
  } catch (const SandboxExecutionError& e) {
    CHECK(e.stage() == Stage::kCommand);
    CHECK(e.kind() == kind);
    return e.what();
  }
  FAIL("no SandboxExecutionError");
  return {};
}

// An `envelopes` directive's message carrying a start event with `pid` (null: a start without one).
json start_event(json pid) {
  const json start = pid.is_null() ? json::object() : json{{"pid", pid}};
  return {{"payload", {{"event", {{"start", start}}}}}};
}

}  // namespace

// ---- a timeout after a re-attach ----

TEST_CASE("cut stream: execute_command whose budget runs out after a re-attach is kTimeout, not a kill",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  cut_start_after_first_line(server);
  CommandOptions o;
  o.timeout = 1500ms;
  const auto r = sandbox->execute_command("echo first; sleep 0.3; echo lost; sleep 30", o);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK(r.exit_code == -1);
  CHECK(r.error == "command: timed out after 1500 ms; the command was killed");
  CHECK(r.stdout_text == "first\n");
  CHECK(r.truncated);
  CHECK(count_requests(server, "/process.Process/Connect") == 1);
  sandbox->terminate();
}

TEST_CASE("cut stream: a budget that runs out while the stream is silent is kTimeout that does not claim a kill",
          "[processes][e2b]") {
  E2BServer server;
  auto options = server.options();
  options.process_keepalive = 1s;
  auto sandbox = E2BSandbox::create(options);
  // Units 0 start, 1 "first"; then nothing: the stream is dead only after 2 s, past the 1.5 s budget, while the
  // command itself ended at 0.8 s. The call cannot know which of the two ended it.
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "stall"}, {"after", 2}});
  CommandOptions o;
  o.timeout = 1500ms;
  const auto r = sandbox->execute_command("echo first; sleep 0.8; echo done", o);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK(r.exit_code == -1);
  CHECK(r.error == "command: timed out after 1500 ms while its stream was cut off; envd kills the command at that "
                   "deadline if it still runs, so it was killed or had ended unseen");
  CHECK(r.stdout_text == "first\n");
  CHECK(r.truncated);
  CHECK(count_requests(server, "/process.Process/Connect") == 0);
  sandbox->terminate();
}

TEST_CASE("cut stream: a spawned process whose lifetime runs out after a re-attach reads as its timeout",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  cut_start_after_first_line(server);
  SpawnOptions o;
  o.timeout = 1500ms;
  auto p = sandbox->spawn("echo first; sleep 0.3; echo lost; sleep 30", o);
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kSignaled);
  CHECK(r.signal == "SIGKILL");
  CHECK(r.error == "the process's timeout ran out: envd killed it");
  CHECK(r.stdout_text == "first\n");
  CHECK(r.output_lost);
  CHECK(count_requests(server, "/process.Process/Connect") == 1);
  sandbox->terminate();
}

// ---- cuts in a row ----

TEST_CASE("cut stream: more cuts than the bound over a process's life, each after its stream carried output, "
          "do not end the command",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  cut_start_after_first_line(server);
  // Sixty re-attached streams each carry `start` and one line, then are cut; the sixty-first is left alone.
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Connect"}, {"action", "cut_mid_line"}, {"after", 2},
                {"count", 60}});
  CommandOptions o;
  o.timeout = 60s;
  const auto r = sandbox->execute_command("for i in $(seq 1 400); do echo $i; sleep 0.02; done; echo end", o);
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.exit_code == 0);
  CHECK(r.truncated);
  CHECK(r.stdout_text.substr(0, 2) == "1\n");
  REQUIRE(r.stdout_text.size() >= 12);
  CHECK(r.stdout_text.substr(r.stdout_text.size() - 12) == "399\n400\nend\n");
  CHECK(count_requests(server, "/process.Process/Connect") == 61);
  sandbox->terminate();
}

TEST_CASE("cut stream: a server that cuts every re-attached stream right after its start is given up on: kUnknown",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  cut_start_after_first_line(server);
  cut_every_reattach_after_start(server);
  CommandOptions o;
  o.timeout = 60s;
  const auto start = std::chrono::steady_clock::now();
  const auto r = sandbox->execute_command("echo first; sleep 0.3; while true; do echo x; sleep 0.01; done", o);
  CHECK(std::chrono::steady_clock::now() - start < 30s);
  CHECK(r.status == ExecutionStatus::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "connect.reattach_limit");
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.error == "command: the stream was cut 50 times in a row right after re-attaching to the process; "
                   "re-attaching was given up, and the command may still be running");
  CHECK(r.stdout_text == "first\n");
  CHECK(count_requests(server, "/process.Process/Connect") == 50);
  sandbox->terminate();
}

TEST_CASE("cut stream: re-attached streams that carry only a keep-alive or empty output are given up on, paced",
          "[processes][e2b]") {
  for (const json& filler : {json{{"keepalive", json::object()}}, json{{"data", json::object()}},
                             json{{"data", {{"stdout", ""}, {"stderr", ""}}}}}) {
    INFO("each stream: start, then " << filler.dump());
    E2BServer server;
    auto sandbox = E2BSandbox::create(server.options());
    auto p = sandbox->spawn("sleep 30");
    // Every Connect: the process's own start, the filler, then the body ends as if cut (no end event).
    server.fault({{"surface", "envd"}, {"path", "/process.Process/Connect"}, {"action", "envelopes"},
                  {"envelopes", {start_event(std::stoul(p.id())), json{{"payload", {{"event", filler}}}}}},
                  {"count", -1}});
    const auto start = std::chrono::steady_clock::now();
    auto q = sandbox->connect_process(p.id());
    const auto r = q.wait(30s);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(r.state == ProcessState::kUnknown);
    REQUIRE(r.failure);
    CHECK(r.failure->exception_type == "connect.reattach_limit");
    // The Connect of connect_process, then 50 re-attaches, each at least 100 ms after the one before: 5 s at least.
    CHECK(count_requests(server, "/process.Process/Connect") == 51);
    CHECK(took >= 5000ms);
    CHECK(took < 30s);
    p.kill();
    sandbox->terminate();
  }
}

TEST_CASE("cut stream: re-attaches start at least 100 ms apart even when every stream carries output",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  // Every Connect: start, one byte of output, then cut. Output resets the count, so only the spacing bounds it.
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Connect"}, {"action", "envelopes"},
                {"envelopes", {start_event(std::stoul(p.id())),
                               json{{"payload", {{"event", {{"data", {{"stdout", "eAo="}}}}}}}}}},
                {"count", -1}});
  auto q = sandbox->connect_process(p.id());
  const auto r = q.wait(2s);
  CHECK(r.state == ProcessState::kRunning);
  // At most one Connect per 100 ms in those 2 s (plus the first): never the thousands a second of a loop.
  const auto connects = count_requests(server, "/process.Process/Connect");
  CHECK(connects >= 2);
  CHECK(connects <= 22);
  CHECK(r.stdout_text.substr(0, 4) == "x\nx\n");
  q.kill();
  sandbox->terminate();
}

TEST_CASE("cut stream: a handle whose re-attached streams are all cut right after their start is kUnknown",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  cut_start_after_first_line(server);
  cut_every_reattach_after_start(server);
  auto p = sandbox->spawn("echo first; sleep 0.3; while true; do echo x; sleep 0.01; done");
  const auto r = p.wait(30s);
  CHECK(r.state == ProcessState::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "connect.reattach_limit");
  CHECK(r.error == "the stream was cut 50 times in a row right after re-attaching to the process; re-attaching was "
                   "given up, and the process may still be running");
  CHECK(r.stdout_text == "first\n");
  CHECK(r.output_lost);
  p.kill();  // its fate is unknown, not ended: the handle can still stop it
  CHECK(count_requests(server, "/process.Process/SendSignal") == 1);
  sandbox->terminate();
}

// ---- re-attaches that fail ----

TEST_CASE("cut stream: re-attaches answered 503 are tried three times, then the process's fate is unknown",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  cut_start_after_first_line(server);
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Connect"}, {"action", "status"}, {"status", 503},
                {"count", -1}});
  auto p = sandbox->spawn("echo first; sleep 0.3; echo lost; sleep 30");
  const auto r = p.wait(30s);
  CHECK(r.state == ProcessState::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type.rfind("curl.", 0) == 0);
  CHECK(r.error.find("the stream broke and could not be re-attached: ") == 0);
  CHECK(r.stdout_text == "first\n");
  CHECK(r.output_lost);
  CHECK(count_requests(server, "/process.Process/Connect") == 3);
  p.kill();
  CHECK(count_requests(server, "/process.Process/SendSignal") == 1);
  sandbox->terminate();
}

TEST_CASE("cut stream: a re-attach answered not_found makes execute_command kUnknown connect.not_found",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  cut_start_after_first_line(server);
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Connect"}, {"action", "status"}, {"status", 404},
                {"body", {{"code", "not_found"}, {"message", "process with pid 1 not found"}}}});
  const auto r = sandbox->execute_command("echo first; sleep 0.3; echo lost; sleep 2");
  CHECK(r.status == ExecutionStatus::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "connect.not_found");
  CHECK(r.stdout_text == "first\n");
  CHECK(count_requests(server, "/process.Process/Connect") == 1);
  sandbox->terminate();
}

// ---- hostile start events ----

TEST_CASE("hostile stream: a start event without a usable pid fails spawn with kInternal, no hang",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  for (const json& pid : {json(), json(0), json(4294967296ULL), json(-1), json("12"), json(1.5)}) {
    INFO("pid " << pid.dump());
    server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "envelopes"},
                  {"envelopes", {start_event(pid), {{"payload", {{"event", {{"data", {{"stdout", "aGkK"}}}}}}}}}}});
    const auto message = command_error([&] { (void)sandbox->spawn("echo never run"); }, ErrorKind::kInternal);
    CHECK(message == "spawn failed: the sandbox's answer was not the protocol: a start event without a pid of 1 to "
                     "4294967295; the process may have started");
  }
  CHECK(sandbox->list_processes().empty());
  sandbox->terminate();
}

TEST_CASE("hostile stream: a second start event in one stream is not the protocol", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "envelopes"},
                {"envelopes", {start_event(7), start_event(8)}}});
  auto p = sandbox->spawn("echo never run");
  CHECK(p.id() == "7");
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "protocol.malformed");
  CHECK(r.error == "the sandbox's answer was not the protocol: a second start event; the process may still be running");
  sandbox->terminate();
}

TEST_CASE("hostile stream: connect_process answered with another pid's start is refused with kInternal",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  const auto other = *p.pid() + 1;
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Connect"}, {"action", "envelopes"},
                {"envelopes", {start_event(other)}}, {"then", "stall"}});
  const auto message = command_error([&] { (void)sandbox->connect_process(p.id()); }, ErrorKind::kInternal);
  CHECK(message == "connect_process failed: the sandbox's answer was not the protocol: a start event of pid " +
                       std::to_string(other) + " on a stream of pid " + p.id());
  p.kill();
  CHECK(p.wait(20s).state == ProcessState::kSignaled);
  sandbox->terminate();
}

TEST_CASE("hostile stream: a re-attach answered with another pid's start ends the handle kUnknown, output kept",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  cut_start_after_first_line(server);
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Connect"}, {"action", "envelopes"},
                {"envelopes", {start_event(1)}}, {"then", "stall"}});
  auto p = sandbox->spawn("echo first; sleep 0.3; echo lost; sleep 30");
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "protocol.malformed");
  CHECK(r.error == "the sandbox's answer was not the protocol: a start event of pid 1 on a stream of pid " + p.id() +
                       "; the process may still be running");
  CHECK(r.stdout_text == "first\n");
  p.kill();
  sandbox->terminate();
}

TEST_CASE("hostile stream: a Start stream that never sends start fails spawn with kTimeout within request_timeout",
          "[processes][e2b]") {
  E2BServer server;
  auto options = server.options();
  options.request_timeout = 1s;
  auto sandbox = E2BSandbox::create(options);
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "envelopes"},
                {"envelopes", json::array()}, {"then", "stall"}});
  const auto start = std::chrono::steady_clock::now();
  const auto message = command_error([&] { (void)sandbox->spawn("echo never run"); }, ErrorKind::kTimeout);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(message == "spawn: envd did not report the process's start within 1000 ms; the process may have started");
  sandbox->terminate();
}

// ---- hostile listings ----

TEST_CASE("hostile list: entries without a usable pid are dropped, the rest kept as sent", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const json processes = json::array(
      {{{"pid", "12"}}, {{"pid", -1}}, {{"pid", 0}}, {{"pid", 4294967296ULL}}, {{"pid", 1.5}}, "not an object",
       {{"config", {{"cmd", "lost"}}}},
       {{"pid", 7}, {"config", {{"cmd", "/bin/x"}, {"args", {"a", 1, "b"}}, {"cwd", "/w"}}}, {"tag", "t"}}});
  server.fault({{"surface", "envd"}, {"path", "/process.Process/List"}, {"action", "status"}, {"status", 200},
                {"body", {{"processes", processes}}}});
  const auto listed = sandbox->list_processes();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].id == "7");
  CHECK(listed[0].pid == std::optional<std::uint32_t>(7));
  CHECK(listed[0].command == "/bin/x a b");
  CHECK(listed[0].cwd == std::optional<std::string>("/w"));
  CHECK(listed[0].tag == std::optional<std::string>("t"));
  sandbox->terminate();
}

TEST_CASE("hostile list: a long listing is read whole, and a listing that is not JSON is kInternal",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  json processes = json::array();
  for (std::uint32_t pid = 1; pid <= 20000; ++pid) processes.push_back({{"pid", pid}});
  server.fault({{"surface", "envd"}, {"path", "/process.Process/List"}, {"action", "status"}, {"status", 200},
                {"body", {{"processes", processes}}}});
  const auto listed = sandbox->list_processes();
  REQUIRE(listed.size() == 20000);
  CHECK(listed.back().id == "20000");
  server.fault({{"surface", "envd"}, {"path", "/process.Process/List"}, {"action", "status"}, {"status", 200},
                {"body", {{"processes", "many"}}}});
  CHECK(test::command_error_kind([&] { (void)sandbox->list_processes(); }) == ErrorKind::kInternal);
  sandbox->terminate();
}

// ---- partial lines ----

TEST_CASE("output: a prompt without a newline reaches a handle's callback while the process waits for stdin",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  test::LineLog log;
  SpawnOptions o;
  o.on_stdout = log.callback();
  auto p = sandbox->spawn("printf 'name? '; read n; echo hi $n", o);
  log.wait_for_any(10s);
  REQUIRE(log.lines() == std::vector<std::string>{"name? "});
  p.send_stdin("bob\n");
  const auto r = p.wait(20s);
  CHECK(r.stdout_text == "name? hi bob\n");
  CHECK(log.lines() == std::vector<std::string>{"name? ", "hi bob\n"});
  sandbox->terminate();
}

TEST_CASE("output: execute_command delivers a partial line that no byte completed within 50 ms as a piece",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  std::vector<std::string> lines;
  CommandOptions o;
  o.on_stdout = [&](std::string_view line) { lines.emplace_back(line); };
  const auto r = sandbox->execute_command("printf tick; sleep 1; echo done", o);
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "tickdone\n");
  CHECK(lines == std::vector<std::string>{"tick", "done\n"});
  sandbox->terminate();
}

// ---- signals to a process that ended ----

TEST_CASE("kill: a process known to have ended gets no signal at all", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("exit 4");
  REQUIRE(p.wait(20s).exit_code == 4);
  p.kill();
  p.terminate();
  CHECK(count_requests(server, "/process.Process/SendSignal") == 0);
  CHECK(p.poll().state == ProcessState::kExited);
  sandbox->terminate();
}
