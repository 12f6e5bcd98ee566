// Where processes are not supported the calls refuse with ErrorKind::kUnsupported and Capabilities says so: the
// default of the abstract interface (FakeSandbox, users' subclasses) and Pyodide (no processes in WebAssembly).
#include <catch2/catch.hpp>

#include "code_interpreter/pyodide_sandbox.hpp"
#include "code_interpreter/testing/fake_sandbox.hpp"

using namespace code_interpreter;

namespace {

void check_unsupported(const std::function<void()>& call, const std::string& message) {
  try {
    call();
    FAIL("no error");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.kind() == ErrorKind::kUnsupported);
    CHECK(e.stage() == Stage::kCommand);
    CHECK(std::string(e.what()) == message);
  }
}

void check_refuses_processes(CodeInterpreterSandbox& sandbox) {
  const auto c = sandbox.capabilities();
  CHECK_FALSE(c.processes);
  CHECK_FALSE(c.process_stdin);
  CHECK_FALSE(c.process_connect);
  CHECK_FALSE(c.process_signals);
  check_unsupported([&] { (void)sandbox.spawn("echo hi"); }, "spawn is not supported by this sandbox");
  check_unsupported([&] { (void)sandbox.list_processes(); }, "list_processes is not supported by this sandbox");
  check_unsupported([&] { (void)sandbox.connect_process("12"); }, "connect_process is not supported by this sandbox");
}

}  // namespace

TEST_CASE("refusal: FakeSandbox, as any subclass that does not override them, refuses processes with kUnsupported",
          "[processes]") {
  testing::FakeSandbox sandbox;
  check_refuses_processes(sandbox);
}

TEST_CASE("refusal: the argument checks come before the refusal", "[processes]") {
  testing::FakeSandbox sandbox;
  CHECK_THROWS_AS(sandbox.spawn(""), std::invalid_argument);
  CHECK_THROWS_AS(sandbox.connect_process(""), std::invalid_argument);
  CHECK_THROWS_AS(sandbox.connect_process("\xff"), std::invalid_argument);
}

TEST_CASE("refusal: Pyodide has no processes: declared false, and each call is kUnsupported", "[processes][pyodide]") {
  auto sandbox = PyodideSandbox::create();
  check_refuses_processes(*sandbox);
  sandbox->terminate();
}
