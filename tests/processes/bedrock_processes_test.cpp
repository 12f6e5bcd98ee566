// Background processes on Bedrock AgentCore against the local AgentCore-protocol server (tests/servers/bedrock: real
// bash children): tasks started by startCommandExecution, read by getTask, stopped by stopTask; stdin, listing and
// signals refused as the Capabilities declare.
#include <catch2/catch.hpp>

#include <thread>

#include "../integration/bedrock_test_support.hpp"
#include "code_interpreter/process.hpp"
#include "process_test_support.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::BedrockServer;

namespace {

using test::command_error_kind;

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
