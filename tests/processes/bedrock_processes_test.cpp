// Background processes on Bedrock AgentCore against the local AgentCore-protocol server (tests/servers/bedrock: real
// bash children): tasks started by startCommandExecution, read by getTask, stopped by stopTask; stdin, listing and
// signals refused as the Capabilities declare.
#include <catch2/catch.hpp>

#include <mutex>
#include <thread>

#include "../integration/bedrock_test_support.hpp"
#include "code_interpreter/process.hpp"
#include "process_test_support.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::BedrockServer;

namespace {

using test::command_error_kind;

// The next getTask is answered, once, about task 11111111-2222-3333-4444-555555555555, completed with exit 0.
void answer_next_get_task_about_another_task(BedrockServer& server) {
  const nlohmann::json other = {{"taskId", "11111111-2222-3333-4444-555555555555"}, {"taskStatus", "completed"},
                                {"stdout", "output of another task\n"}, {"stderr", ""}, {"exitCode", 0}};
  server.fault({{"operation", "invoke"}, {"tool", "getTask"}, {"action", "result"}, {"count", 1},
                {"result", {{"content", nlohmann::json::array({{{"type", "text"}, {"text", "x"}}})},
                            {"isError", false}, {"structuredContent", other}}}});
}

}  // namespace

TEST_CASE("bedrock task: spawn runs a task whose exit status and output the handle reports", "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  std::vector<std::string> lines;
  SpawnOptions o;
  o.env = {{"WHO", "task"}};
  o.on_stdout = [&](std::string_view line) { lines.emplace_back(line); };
  auto p = sandbox->spawn("echo hello $WHO; echo err >&2; exit 3", o);
  CHECK_FALSE(p.id().empty());
  CHECK_FALSE(p.pid());
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 3);
  CHECK(r.stdout_text == "hello task\n");
  CHECK(r.stderr_text == "err\n");
  CHECK(lines == std::vector<std::string>{"hello task\n"});
  sandbox->terminate();
}

TEST_CASE("bedrock task: wait with a timeout leaves it running, a later wait gets the exit", "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 1; echo done");
  CHECK(p.wait(100ms).state == ProcessState::kRunning);
  CHECK(p.poll().state == ProcessState::kRunning);
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "done\n");
  sandbox->terminate();
}

TEST_CASE("bedrock task: kill stops the task by stopTask, reported as such", "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  p.kill();
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kSignaled);
  CHECK(r.signal == "stopTask");
  CHECK(r.error == "the task was canceled (stopTask)");
  CHECK(r.exit_code == -1);
  sandbox->terminate();
}

TEST_CASE("bedrock task: connect_process by task id gets the whole output (getTask replays it)", "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  std::string id;
  {
    auto p = sandbox->spawn("echo early; sleep 0.5; echo late");
    id = p.id();
  }
  auto again = sandbox->connect_process(id);
  const auto r = again.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.stdout_text == "early\nlate\n");
  CHECK_FALSE(r.output_lost);
  CHECK(command_error_kind([&] { (void)sandbox->connect_process("no-such-task"); }) == ErrorKind::kNotFound);
  sandbox->terminate();
}

TEST_CASE("bedrock task: stdin, listing and a lifetime timeout are refused with kUnsupported, as declared",
          "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const auto c = sandbox->capabilities();
  CHECK(c.processes);
  CHECK(c.process_connect);
  CHECK_FALSE(c.process_stdin);
  CHECK_FALSE(c.process_list);
  CHECK_FALSE(c.process_signals);
  auto p = sandbox->spawn("sleep 30");
  CHECK(command_error_kind([&] { p.send_stdin("x"); }) == ErrorKind::kUnsupported);
  CHECK(command_error_kind([&] { p.close_stdin(); }) == ErrorKind::kUnsupported);
  CHECK(command_error_kind([&] { (void)sandbox->list_processes(); }) == ErrorKind::kUnsupported);
  SpawnOptions o;
  o.timeout = 1s;
  CHECK(command_error_kind([&] { (void)sandbox->spawn("true", o); }) == ErrorKind::kUnsupported);
  p.terminate();
  CHECK(p.wait(20s).state == ProcessState::kSignaled);
  sandbox->terminate();
}

TEST_CASE("bedrock task: a handle after the sandbox's terminate throws SandboxNotInitializedError",
          "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  sandbox->terminate();
  CHECK_THROWS_AS(p.poll(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.wait(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.kill(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.send_stdin("x"), SandboxNotInitializedError);
}

TEST_CASE("bedrock task: a handle after the sandbox is destroyed throws SandboxNotInitializedError",
          "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  auto p = sandbox->spawn("sleep 30");
  sandbox.reset();
  CHECK_THROWS_AS(p.poll(), SandboxNotInitializedError);
  CHECK_THROWS_AS(p.id(), SandboxNotInitializedError);
}

// ---- polls that fail, kill after the end, partial lines ----

TEST_CASE("bedrock task: a spawn whose first getTask fails keeps its task id, and later polls carry on",
          "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  // Three 500s: the first poll's every attempt (the retry loop tries a getTask three times).
  server.fault({{"operation", "invoke"}, {"tool", "getTask"}, {"action", "status"}, {"status", 500}, {"count", 3}});
  auto p = sandbox->spawn("echo made it");
  CHECK_FALSE(p.id().empty());
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kExited);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "made it\n");
  sandbox->terminate();
}

TEST_CASE("bedrock task: getTask failing for good makes the state kUnknown, and the id still reaches the task",
          "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault({{"operation", "invoke"}, {"tool", "getTask"}, {"action", "status"}, {"status", 500}, {"count", -1}});
  auto p = sandbox->spawn("sleep 30");
  const auto id = p.id();
  CHECK_FALSE(id.empty());
  const auto r = p.wait(60s);
  CHECK(r.state == ProcessState::kUnknown);
  REQUIRE(r.failure);
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.error.rfind("getTask failed 5 times in a row (last: ", 0) == 0);
  CHECK(r.error.find("the task " + id + " may still be running") != std::string::npos);
  CHECK(p.id() == id);
  server.clear_faults();
  auto again = sandbox->connect_process(id);  // the task is still there, by the id the handle kept
  again.kill();
  CHECK(again.wait(20s).state == ProcessState::kSignaled);
  sandbox->terminate();
}

TEST_CASE("bedrock task: kill of a task known to have ended sends no stopTask", "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  auto p = sandbox->spawn("exit 2");
  REQUIRE(p.wait(20s).exit_code == 2);
  p.kill();
  p.terminate();
  CHECK(server.requests("invoke", "stopTask").empty());
  CHECK(p.poll().state == ProcessState::kExited);
  sandbox->terminate();
}

TEST_CASE("bedrock task: kill runs no output callback on the caller's thread", "[processes][bedrock][concurrency]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  std::mutex m;
  std::vector<std::thread::id> threads;
  std::vector<std::string> lines;
  SpawnOptions o;
  o.on_stdout = [&](std::string_view line) {
    std::lock_guard lock(m);
    threads.push_back(std::this_thread::get_id());
    lines.emplace_back(line);
  };
  auto p = sandbox->spawn("echo one; sleep 0.4; printf two; sleep 30", o);
  std::this_thread::sleep_for(1s);
  p.kill();
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kSignaled);
  CHECK(r.stdout_text == "one\ntwo");
  std::lock_guard lock(m);
  CHECK(lines == std::vector<std::string>{"one\n", "two"});
  for (const auto& t : threads) CHECK(t != std::this_thread::get_id());
}

TEST_CASE("bedrock task: a partial line that a poll interval did not complete reaches the callback",
          "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  test::LineLog log;
  SpawnOptions o;
  o.on_stdout = log.callback();
  auto p = sandbox->spawn("printf 'name? '; sleep 3; echo done", o);
  log.wait_for_any(2500ms);
  CHECK(p.poll().state == ProcessState::kRunning);
  CHECK(log.lines() == std::vector<std::string>{"name? "});
  const auto r = p.wait(20s);
  CHECK(r.stdout_text == "name? done\n");
  CHECK(log.lines() == std::vector<std::string>{"name? ", "done\n"});
  sandbox->terminate();
}

TEST_CASE("bedrock task: a getTask answer about another task is not taken: kUnknown protocol.malformed",
          "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  answer_next_get_task_about_another_task(server);
  auto p = sandbox->spawn("echo mine; sleep 30");
  const auto r = p.wait(20s);
  CHECK(r.state == ProcessState::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "protocol.malformed");
  CHECK(r.error == "the sandbox's answer was not the protocol: a getTask answer about task "
                   "11111111-2222-3333-4444-555555555555 on a poll of task " + p.id() +
                   "; the task may still be running");
  CHECK(r.stdout_text.empty());
  p.kill();  // its fate is unknown: the handle can still stop it
  sandbox->terminate();
}

TEST_CASE("bedrock command: a getTask answer about another task is not taken: kUnknown, the task stopped",
          "[processes][bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  answer_next_get_task_about_another_task(server);
  const auto r = sandbox->execute_command("echo mine; sleep 30");
  CHECK(r.status == ExecutionStatus::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "protocol.malformed");
  CHECK(r.error.rfind("command: the sandbox's answer was not the protocol: a getTask answer about task "
                      "11111111-2222-3333-4444-555555555555 on a poll of task ", 0) == 0);
  CHECK(r.error.substr(r.error.size() - 22) == "; the task was stopped");
  CHECK(r.stdout_text.empty());
  sandbox->terminate();
}

TEST_CASE("bedrock task: output past what one getTask answer may carry ends kUnknown at once, its output kept",
          "[processes][bedrock]") {
  BedrockServer server;
  auto options = server.options();
  options.max_message_bytes = 64 * 1024;
  options.max_output_bytes = 1000;
  auto sandbox = BedrockAgentCoreSandbox::create(options);
  auto p = sandbox->spawn("echo early; sleep 1; head -c 200000 /dev/zero | tr '\\0' x; sleep 30");
  const auto r = p.wait(30s);
  CHECK(r.state == ProcessState::kUnknown);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "eventstream.too_large");
  CHECK(r.truncated);
  CHECK(r.stdout_text.rfind("early\n", 0) == 0);
  CHECK(r.error.find("grew past what one getTask answer may carry") != std::string::npos);
  sandbox->terminate();
}
