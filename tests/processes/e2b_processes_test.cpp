// Background processes on E2B against the local E2B-protocol server (tests/servers/e2b: real bash children, real
// stdin pipes): spawn, stdin, signals, wait with a timeout, poll, list, re-attach by pid, streams cut mid-run, and
// handles that outlive their sandbox. Every test ends with no sandbox left alive.
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

namespace {

// Polls until the process's stdout is `text` (the process wrote it and waits); fails after 10 s.
void await_stdout(ProcessHandle& handle, const std::string& text) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (handle.poll().stdout_text != text && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  REQUIRE(handle.poll().stdout_text == text);
}

using test::command_error_kind;

}  // namespace

// ---- spawn, wait, poll ----

TEST_CASE("spawn: the handle's id is the process's pid in decimal", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("exit 0");
  REQUIRE(p.pid());
  CHECK(*p.pid() > 0);
  CHECK(p.id() == std::to_string(*p.pid()));
  CHECK(p.wait().state == ProcessState::kExited);
  sandbox->terminate();
}

TEST_CASE("spawn: a process that exits with a status is kExited with that status and its output", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("echo out; echo err >&2; exit 7");
  const auto r = p.wait();
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 7);
  CHECK(r.stdout_text == "out\n");
  CHECK(r.stderr_text == "err\n");
  CHECK(r.signal.empty());
  CHECK_FALSE(r.truncated);
  CHECK_FALSE(r.output_lost);
  CHECK_FALSE(r.failure);
  sandbox->terminate();
}

TEST_CASE("spawn: env and cwd apply to the process", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  sandbox->write_file("/home/user/proj/marker.txt", "in proj\n");
  SpawnOptions o;
  o.env = {{"GREETING", "hello"}};
  o.cwd = "/home/user/proj";
  const auto r = sandbox->spawn("echo $GREETING; cat marker.txt", o).wait();
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "hello\nin proj\n");
  sandbox->terminate();
}

TEST_CASE("wait: a timeout does not kill the process: it says running, and a later wait sees the exit",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("echo started; sleep 0.8; echo done");
  await_stdout(p, "started\n");
  const auto early = p.wait(100ms);
  CHECK(early.state == ProcessState::kRunning);
  CHECK(early.exit_code == -1);
  CHECK(early.stdout_text == "started\n");
  const auto late = p.wait(20s);
  CHECK(late.state == ProcessState::kExited);
  CHECK(late.exit_code == 0);
  CHECK(late.stdout_text == "started\ndone\n");
  sandbox->terminate();
}

TEST_CASE("poll: running while the process runs, its end once it ended, without waiting", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("echo ready; read line; echo got $line");
  await_stdout(p, "ready\n");
  CHECK(p.poll().state == ProcessState::kRunning);
  p.send_stdin("x\n");
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(p.poll() == r);
  CHECK(r.stdout_text == "ready\ngot x\n");
  sandbox->terminate();
}

TEST_CASE("spawn: a lifetime timeout makes envd kill the process: kSignaled SIGKILL", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  SpawnOptions o;
  o.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  const auto r = sandbox->spawn("sleep 20", o).wait(20s);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(r.state == ProcessState::kSignaled);
  CHECK(r.signal == "SIGKILL");
  CHECK(r.exit_code == -1);
  CHECK(r.error == "the process's timeout ran out: envd killed it");
  sandbox->terminate();
}

// ---- stdin ----

TEST_CASE("stdin: bytes sent reach the process, and its answer comes back", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("head -n 1");
  p.send_stdin("hello over stdin\n");
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "hello over stdin\n");
  sandbox->terminate();
}

TEST_CASE("stdin: close_stdin gives the process end-of-file", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("cat; echo EOF");
  p.send_stdin("a\n");
  p.send_stdin("b");
  p.close_stdin();
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.stdout_text == "a\nbEOF\n");
  sandbox->terminate();
}

TEST_CASE("stdin: arbitrary bytes arrive whole (NUL and 0xFF included)", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("wc -c");
  const std::string bytes("\x00\xff\x01 binary\n", 10);
  p.send_stdin(bytes);
  p.close_stdin();
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.stdout_text == "10\n");
  sandbox->terminate();
}

TEST_CASE("stdin: a process spawned without a stdin pipe refuses send_stdin with kInvalidArgument",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  SpawnOptions o;
  o.stdin_pipe = false;
  auto p = sandbox->spawn("cat; echo done", o);  // stdin is empty: cat ends at once
  CHECK(command_error_kind([&] { p.send_stdin("x"); }) == ErrorKind::kInvalidArgument);
  CHECK(command_error_kind([&] { p.close_stdin(); }) == ErrorKind::kInvalidArgument);
  CHECK(p.wait(20s).stdout_text == "done\n");
  CHECK(count_requests(server, "/process.Process/SendInput") == 0);
  sandbox->terminate();
}

TEST_CASE("stdin: send_stdin to a process that ended is kNotFound", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("true");
  REQUIRE(p.wait(20s).state == ProcessState::kExited);
  CHECK(command_error_kind([&] { p.send_stdin("late\n"); }) == ErrorKind::kNotFound);
  sandbox->terminate();
}

// ---- signals ----

TEST_CASE("kill: the process ends by SIGKILL, reported exactly", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("echo ready; sleep 30");
  await_stdout(p, "ready\n");
  p.kill();
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kSignaled);
  CHECK(r.signal == "SIGKILL");
  CHECK(r.exit_code == -1);
  CHECK(r.error == "signal: killed");
  CHECK(r.stdout_text == "ready\n");
  sandbox->terminate();
}

TEST_CASE("terminate: the process ends by SIGTERM, reported exactly", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("echo ready; sleep 30");
  await_stdout(p, "ready\n");
  p.terminate();
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kSignaled);
  CHECK(r.signal == "SIGTERM");
  CHECK(r.error == "signal: terminated");
  sandbox->terminate();
}

TEST_CASE("terminate: a process that handles SIGTERM exits by its own status", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("trap 'echo cleaning up; exit 3' TERM; echo ready; while true; do sleep 0.05; done");
  await_stdout(p, "ready\n");
  p.terminate();
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 3);
  CHECK(r.stdout_text == "ready\ncleaning up\n");
  sandbox->terminate();
}

TEST_CASE("kill: a process that already ended is left alone, without an error", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("exit 4");
  REQUIRE(p.wait(20s).exit_code == 4);
  CHECK_NOTHROW(p.kill());
  CHECK_NOTHROW(p.terminate());
  CHECK(p.poll().exit_code == 4);
  sandbox->terminate();
}

// ---- list and connect ----

TEST_CASE("list_processes: a running process is listed by its id and command, and gone once it ended",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  const auto listed = sandbox->list_processes();
  const auto it = std::find_if(listed.begin(), listed.end(), [&](const ProcessInfo& i) { return i.id == p.id(); });
  REQUIRE(it != listed.end());
  CHECK(it->pid == p.pid());
  CHECK(it->command == "/bin/bash -l -c sleep 30");
  p.kill();
  REQUIRE(p.wait(20s).state == ProcessState::kSignaled);
  const auto after = sandbox->list_processes();
  CHECK(std::none_of(after.begin(), after.end(), [&](const ProcessInfo& i) { return i.id == p.id(); }));
  sandbox->terminate();
}

TEST_CASE("connect_process: a second handle attaches by id and gets the later output, saying earlier output is lost",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto first = sandbox->spawn("echo one; read go; echo two");
  await_stdout(first, "one\n");
  std::vector<std::string> lines;
  ProcessConnectOptions o;
  o.on_stdout = [&](std::string_view line) { lines.emplace_back(line); };
  auto second = sandbox->connect_process(first.id(), o);
  CHECK(second.pid() == first.pid());
  second.send_stdin("\n");
  const auto r = second.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "two\n");
  CHECK(r.output_lost);
  CHECK(lines == std::vector<std::string>{"two\n"});
  const auto whole = first.wait(20s);
  CHECK(whole.stdout_text == "one\ntwo\n");
  CHECK_FALSE(whole.output_lost);
  sandbox->terminate();
}

TEST_CASE("connect_process: a dropped handle leaves the process running, and connect finds it again",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  std::string id;
  {
    auto p = sandbox->spawn("read go; echo after $go");
    id = p.id();
  }  // detached, not killed
  auto again = sandbox->connect_process(id);
  again.send_stdin("reattach\n");
  const auto r = again.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.stdout_text == "after reattach\n");
  sandbox->terminate();
}

TEST_CASE("connect_process: an id that is not running is kNotFound", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  CHECK(command_error_kind([&] { (void)sandbox->connect_process("4000000000"); }) == ErrorKind::kNotFound);
  sandbox->terminate();
}

TEST_CASE("connect_process: an id that is not a decimal pid is std::invalid_argument, nothing sent",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  for (const char* id : {"", "abc", "0", "-1", "+5", "01", "4294967296", "12 "})
    CHECK_THROWS_AS(sandbox->connect_process(id), std::invalid_argument);
  CHECK(count_requests(server, "/process.Process/Connect") == 0);
  sandbox->terminate();
}

// ---- streams cut mid-run ----

TEST_CASE("cut stream: a spawned process's stream cut mid-run is re-attached by pid, later output arrives",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  // Units of the Start stream: 0 start, 1 "first", 2 "lost" (cut half-way), then the stream is gone.
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "cut_mid_line"}, {"after", 2}});
  auto p = sandbox->spawn("echo first; sleep 0.3; echo lost; sleep 1; echo third");
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "first\nthird\n");
  CHECK(r.output_lost);
  CHECK(count_requests(server, "/process.Process/Connect") == 1);
  sandbox->terminate();
}

TEST_CASE("cut stream: execute_command re-attaches within its budget and returns the command's own exit",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "cut_mid_line"}, {"after", 2}});
  const auto r = sandbox->execute_command("echo first; sleep 0.3; echo lost; sleep 1; echo third; exit 5");
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.exit_code == 5);
  CHECK(r.stdout_text == "first\nthird\n");
  CHECK(r.truncated);  // what was written while cut off is missing
  CHECK_FALSE(r.failure);
  CHECK(count_requests(server, "/process.Process/Connect") == 1);
  sandbox->terminate();
}

TEST_CASE("cut stream: a command that ended while cut off has a fate that cannot be learned: kUnknown",
          "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "cut_mid_line"}, {"after", 2}});
  // Unit 2 is the end event, sent once the process is gone: the re-attach finds no process.
  const auto r = sandbox->execute_command("echo first; sleep 0.2");
  CHECK(r.status == ExecutionStatus::kUnknown);
  CHECK(r.exit_code == -1);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "connect.not_found");
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.stdout_text == "first\n");
  CHECK(r.truncated);
  CHECK(r.error == "command: the stream was cut and envd no longer knows the process: it ended meanwhile, and its exit "
                   "status cannot be learned");
  sandbox->terminate();
}

TEST_CASE("cut stream: a spawned process that ended while cut off is kUnknown connect.not_found", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "cut_mid_line"}, {"after", 2}});
  auto p = sandbox->spawn("echo first; sleep 0.2");  // unit 2, cut, is the end event
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kUnknown);
  CHECK(r.exit_code == -1);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "connect.not_found");
  CHECK(r.stdout_text == "first\n");
  CHECK(r.output_lost);
  sandbox->terminate();
}

TEST_CASE("cut stream: a stream silent for twice the keep-alive interval is dead, and is re-attached",
          "[processes][e2b]") {
  E2BServer server;
  auto options = server.options();
  options.process_keepalive = 1s;
  auto sandbox = E2BSandbox::create(options);
  // Units 0 start, 1 "first"; from unit 2 (the first keep-alive) nothing more is sent, the connection stays open.
  server.fault({{"surface", "envd"}, {"path", "/process.Process/Start"}, {"action", "stall"}, {"after", 2}});
  CommandOptions o;
  o.timeout = 30s;
  const auto start = std::chrono::steady_clock::now();
  const auto r = sandbox->execute_command("echo first; sleep 5; echo second", o);
  CHECK(std::chrono::steady_clock::now() - start < 15s);
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "first\nsecond\n");
  CHECK(count_requests(server, "/process.Process/Connect") == 1);
  sandbox->terminate();
}

// ---- output rules ----

TEST_CASE("output: lines reach the callbacks in order, each with its newline", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  std::vector<std::string> out, err;
  SpawnOptions o;
  o.on_stdout = [&](std::string_view line) { out.emplace_back(line); };
  o.on_stderr = [&](std::string_view line) { err.emplace_back(line); };
  const auto r = sandbox->spawn("echo a; echo b; echo c >&2; printf tail", o).wait(20s);
  CHECK(out == std::vector<std::string>{"a\n", "b\n", "tail"});
  CHECK(err == std::vector<std::string>{"c\n"});
  CHECK(r.stdout_text == "a\nb\ntail");
  sandbox->terminate();
}

TEST_CASE("output: past the cap the text stops and truncated is set, the callback still gets everything",
          "[processes][e2b]") {
  E2BServer server;
  auto options = server.options();
  options.max_output_bytes = 1000;
  auto sandbox = E2BSandbox::create(options);
  std::size_t seen = 0;
  SpawnOptions o;
  o.on_stdout = [&](std::string_view line) { seen += line.size(); };
  const auto r = sandbox->spawn("for i in $(seq 1 100); do echo 0123456789012345678; done", o).wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.truncated);
  CHECK(r.stdout_text.size() == 1000);
  CHECK(seen == 2000);
  sandbox->terminate();
}

TEST_CASE("output: bytes that are not UTF-8 become U+FFFD", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const auto r = sandbox->spawn("printf 'a\\377b\\n'").wait(20s);
  CHECK(r.stdout_text == "a\xEF\xBF\xBD" "b\n");
  sandbox->terminate();
}

TEST_CASE("output: a throwing callback ends the handle's reading: kUnknown callback.exception", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  SpawnOptions o;
  o.on_stdout = [](std::string_view) { throw std::runtime_error("boom"); };
  auto p = sandbox->spawn("echo a; sleep 0.2; echo b", o);
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "callback.exception");
  sandbox->terminate();
}

// ---- arguments ----

TEST_CASE("spawn: bad arguments are std::invalid_argument, nothing sent", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  CHECK_THROWS_AS(sandbox->spawn(""), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->spawn(std::string_view("echo\0x", 6)), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->spawn("echo \xff"), std::invalid_argument);
  SpawnOptions bad_env;
  bad_env.env = {{"A=B", "1"}};
  CHECK_THROWS_AS(sandbox->spawn("true", bad_env), std::invalid_argument);
  SpawnOptions bad_cwd;
  bad_cwd.cwd = "";
  CHECK_THROWS_AS(sandbox->spawn("true", bad_cwd), std::invalid_argument);
  CHECK(count_requests(server, "/process.Process/Start") == 0);
  sandbox->terminate();
}

TEST_CASE("spawn: a working directory that does not exist is refused by envd: kInvalidArgument", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  SpawnOptions o;
  o.cwd = "/no/such/dir";
  CHECK(command_error_kind([&] { (void)sandbox->spawn("true", o); }) == ErrorKind::kInvalidArgument);
  sandbox->terminate();
}

// ---- handles and their sandbox ----

TEST_CASE("handle: after the sandbox's terminate every call throws SandboxNotInitializedError", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  sandbox->terminate();
  CHECK_THROWS_AS(p.id(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.pid(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.send_stdin("x"), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.close_stdin(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.wait(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.poll(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.kill(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.terminate(), SandboxNotInitializedError);
  CHECK_THROWS_AS(sandbox->spawn("true"), SandboxNotInitializedError);
  CHECK_THROWS_AS(sandbox->list_processes(), SandboxNotInitializedError);
  CHECK_THROWS_AS(sandbox->connect_process("1"), SandboxNotInitializedError);
}

TEST_CASE("handle: after the sandbox is destroyed every call throws SandboxNotInitializedError", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  sandbox.reset();  // the destructor kills the sandbox
  CHECK_THROWS_AS(p.poll(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.wait(1s), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.kill(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.id(), SandboxNotInitializedError);
}

TEST_CASE("handle: a wait in progress ends with SandboxNotInitializedError when another thread terminates the sandbox",
          "[processes][e2b][concurrency]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  std::atomic<bool> threw{false};
  std::thread waiter([&] {
    try {
      (void)p.wait();
    } catch (const SandboxNotInitializedError&) {
      threw = true;
    }
  });
  std::this_thread::sleep_for(200ms);
  sandbox->terminate();
  waiter.join();
  CHECK(threw);
}

TEST_CASE("handle: a moved-from handle throws SandboxNotInitializedError, the moved-to one works", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto p = sandbox->spawn("echo moved");
  ProcessHandle q = std::move(p);
  CHECK_THROWS_AS(p.poll(), SandboxNotInitializedError);  // NOLINT(bugprone-use-after-move): the rule under test
  CHECK(q.wait(20s).stdout_text == "moved\n");
  sandbox->terminate();
}

TEST_CASE("capabilities: E2B declares processes, stdin, connect and signals", "[processes][e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const auto c = sandbox->capabilities();
  CHECK(c.processes);
  CHECK(c.process_stdin);
  CHECK(c.process_connect);
  CHECK(c.process_signals);
  sandbox->terminate();
}
