// The contract suite's backend fixtures. Each harness creates one sandbox (and the local server it talks to, where
// there is one) and offers the same facilities to a scenario:
//
//   h.sb()                    the CodeInterpreterSandbox under test
//   h.exec(code, options)     execute_code (the fake harness queues the scripted answer of `code` first)
//   h.command(cmd, options)   execute_command
//   H::kTransportFaults       true when h.inject(Fault) can make the next execute_code meet a transport fault
//   kOutputCap                every harness creates its sandbox with this max_output_bytes
//
// A scenario never asks which backend it runs on: what a backend cannot do is read from capabilities(), and a
// fault only a transport can have is registered only for the harnesses whose kTransportFaults is true.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "bedrock_test_support.hpp"
#include "code_interpreter/code_interpreter.hpp"
#include "code_interpreter/testing/fake_sandbox.hpp"
#include "e2b_test_support.hpp"

namespace contract {

namespace ci = code_interpreter;
using namespace std::chrono_literals;

/// max_output_bytes of every sandbox the suite creates (small, so the cap is cheap to reach).
inline constexpr std::size_t kOutputCap = 100000;

/// Transport faults the local servers can inject into the next execute_code (tests/servers/*/README.md).
enum class Fault {
  kGateway502,         ///< a proxy's bare 502 after the request was sent
  kThrottled429,       ///< the service refuses with 429 before running anything
  kResetAfterHeaders,  ///< 200 and headers, then the connection is cut
  kResetBeforeAnswer,  ///< the request is read, then the connection is cut with no answer
  kStall,              ///< the request is never answered
  kSandboxGone,        ///< the sandbox (session) is gone before the call
  kStatus201,          ///< a 2xx other than the 200 the stream comes with
  kUploadRefused,      ///< attachment uploads are refused with 507 (until clear_faults)
  kReadUnavailable,    ///< every file read answers 503 (until clear_faults)
  kReadStall,          ///< every file read is never answered (until clear_faults)
  // exists (E2B: every filesystem Stat until clear_faults; AgentCore: the next executeCode, which runs it):
  kExistsUnavailable,  ///< answered 503
  kExistsGone,         ///< the sandbox (session) is gone
  kExistsMalformed,    ///< an answer that is not the protocol's (E2B: a body that is not JSON; AgentCore: no framed answer)
};

class PyodideHarness {
 public:
  static constexpr bool kTransportFaults = false;

  PyodideHarness() {
    ci::PyodideOptions options;
    options.runtime_dir = CI_TEST_RUNTIME_DIR;
    options.max_output_bytes = kOutputCap;
    options.interrupt_grace = 1000ms;
    sandbox_ = ci::PyodideSandbox::create(std::move(options));
  }

  ci::CodeInterpreterSandbox& sb() { return *sandbox_; }
  ci::ExecutionResult exec(std::string_view code, const ci::ExecuteOptions& options = {}) {
    return sandbox_->execute_code(code, options);
  }
  ci::ExecutionResult command(std::string_view command, const ci::CommandOptions& options = {}) {
    return sandbox_->execute_command(command, options);
  }

 private:
  std::unique_ptr<ci::PyodideSandbox> sandbox_;
};

/// A backend behind a local protocol server: the server first (destroyed after the sandbox, it then checks that
/// nothing is left alive), the sandbox created with the suite's output cap.
template <class Server, class Sandbox>
class ServerHarness {
 public:
  static constexpr bool kTransportFaults = true;

  ServerHarness() {
    auto options = server_.options();
    options.max_output_bytes = kOutputCap;
    sandbox_ = Sandbox::create(options);
  }

  ci::CodeInterpreterSandbox& sb() { return *sandbox_; }
  ci::ExecutionResult exec(std::string_view code, const ci::ExecuteOptions& options = {}) {
    return sandbox_->execute_code(code, options);
  }
  ci::ExecutionResult command(std::string_view command, const ci::CommandOptions& options = {}) {
    return sandbox_->execute_command(command, options);
  }
  void clear_faults() { server_.clear_faults(); }

 protected:
  Server server_;
  std::unique_ptr<Sandbox> sandbox_;
};

class E2BHarness : public ServerHarness<ci::test::E2BServer, ci::E2BSandbox> {
 public:
  void inject(Fault fault) {
    using nlohmann::json;
    auto on_execute = [&](json directive) {
      directive["surface"] = "interpreter";
      directive["path"] = "/execute";
      server_.fault(directive);
    };
    auto on_files = [&](const char* method, json directive) {
      directive.update({{"surface", "envd"}, {"path", "/files"}, {"method", method}, {"count", -1}});
      server_.fault(directive);
    };
    auto on_stat = [&](json directive) {
      // Every attempt: a Stat is a read, which the client retries.
      directive.update(
          {{"surface", "envd"}, {"path", "/filesystem.Filesystem/Stat"}, {"method", "POST"}, {"count", -1}});
      server_.fault(directive);
    };
    switch (fault) {
      case Fault::kGateway502: on_execute({{"action", "status"}, {"status", 502}}); break;
      case Fault::kThrottled429: on_execute({{"action", "status"}, {"status", 429}}); break;
      case Fault::kResetAfterHeaders: on_execute({{"action", "reset_after_headers"}}); break;
      case Fault::kResetBeforeAnswer: on_execute({{"action", "refuse"}}); break;
      case Fault::kStall: on_execute({{"action", "stall"}}); break;
      case Fault::kSandboxGone: on_execute({{"action", "gone"}}); break;
      case Fault::kStatus201: on_execute({{"action", "status"}, {"status", 201}}); break;
      case Fault::kUploadRefused: on_files("POST", {{"action", "status"}, {"status", 507}}); break;
      case Fault::kReadUnavailable: on_files("GET", {{"action", "status"}, {"status", 503}}); break;
      case Fault::kReadStall: on_files("GET", {{"action", "stall"}}); break;
      case Fault::kExistsUnavailable: on_stat({{"action", "status"}, {"status", 503}}); break;
      case Fault::kExistsGone: on_stat({{"action", "gone"}}); break;
      case Fault::kExistsMalformed: on_stat({{"action", "malformed_line"}}); break;
    }
  }
};

class BedrockHarness : public ServerHarness<ci::test::BedrockServer, ci::BedrockAgentCoreSandbox> {
 public:
  // Every request of the scenario carried a signature the official signer verified.
  ~BedrockHarness() {
    if (std::uncaught_exceptions() == 0) CHECK(server_.all_signatures_valid());
  }

  void inject(Fault fault) {
    using nlohmann::json;
    auto on_tool = [&](const char* tool, json directive) {
      directive["operation"] = "invoke";
      directive["tool"] = tool;
      server_.fault(directive);
    };
    auto on_execute = [&](json directive) { on_tool("executeCode", std::move(directive)); };
    switch (fault) {
      case Fault::kGateway502: on_execute({{"action", "gateway_after_run"}, {"status", 502}}); break;
      case Fault::kThrottled429: on_execute({{"action", "status"}, {"status", 429}}); break;
      case Fault::kResetAfterHeaders: on_execute({{"action", "reset"}, {"when", "after_headers"}}); break;
      case Fault::kResetBeforeAnswer: on_execute({{"action", "reset"}, {"when", "before"}}); break;
      case Fault::kStall: on_execute({{"action", "stall"}}); break;
      case Fault::kSandboxGone: on_execute({{"action", "expire_session"}}); break;
      case Fault::kStatus201: on_execute({{"action", "status"}, {"status", 201}}); break;
      case Fault::kUploadRefused: on_tool("writeFiles", {{"action", "status"}, {"status", 507}, {"count", -1}}); break;
      case Fault::kReadUnavailable:
        on_tool("readFiles", {{"action", "status"}, {"status", 503}, {"count", -1}});
        break;
      case Fault::kReadStall: on_tool("readFiles", {{"action", "stall"}, {"count", -1}}); break;
      case Fault::kExistsUnavailable: on_execute({{"action", "status"}, {"status", 503}}); break;
      case Fault::kExistsGone: on_execute({{"action", "expire_session"}}); break;
      case Fault::kExistsMalformed:  // a run that printed something, but not the framed answer
        on_execute({{"action", "result"},
                    {"result", {{"content", json::array({{{"type", "text"}, {"text", "{\"exists\": false}"}}})},
                                {"structuredContent", {{"stdout", "{\"exists\": false}\n"}, {"stderr", ""},
                                                       {"exitCode", 0}}},
                                {"isError", false}}}});
        break;
    }
  }
};

/// FakeSandbox with a script: every program a scenario runs has its scripted answer in the catalogue
/// (fake_catalogue.hpp), looked up by the exact code. The fake proves little alone: the point of the suite is that
/// the three real backends agree with docs/errors.md; the fake is held to the same scenarios so that agent code
/// tested against it sees the contract's answers.
class FakeHarness {
 public:
  static constexpr bool kTransportFaults = true;
  using Handler = ci::testing::FakeSandbox::Handler;

  FakeHarness();

  ci::CodeInterpreterSandbox& sb() { return fake_; }
  ci::testing::FakeSandbox& fake() { return fake_; }

  ci::ExecutionResult exec(std::string_view code, const ci::ExecuteOptions& options = {}) {
    fake_.push_handler([this](std::string_view c, const ci::ExecuteOptions& o) { return dispatch(c, o); });
    return fake_.execute_code(code, options);
  }
  ci::ExecutionResult command(std::string_view command, const ci::CommandOptions& options = {}) {
    if (fake_.capabilities().shell_commands)
      fake_.push_handler([this](std::string_view c, const ci::ExecuteOptions& o) { return dispatch(c, o); });
    return fake_.execute_command(command, options);
  }

  void inject(Fault fault) {
    std::lock_guard lock(mutex_);
    fault_ = fault;
  }
  void clear_faults() {
    std::lock_guard lock(mutex_);
    fault_.reset();
  }

 private:
  ci::ExecutionResult dispatch(std::string_view code, const ci::ExecuteOptions& options);

  ci::testing::FakeSandbox fake_{ci::testing::FakeSandbox::pyodide_like_capabilities(), ci::Language::kPython, {},
                                 kOutputCap};
  std::map<std::string, Handler, std::less<>> catalogue_;
  std::mutex mutex_;
  std::optional<Fault> fault_;
};

}  // namespace contract

using contract::BedrockHarness;
using contract::E2BHarness;
using contract::FakeHarness;
using contract::PyodideHarness;

/// A scenario run against every backend. A new harness is also named in tests/CMakeLists.txt, which registers the
/// cases harness by harness in the AddressSanitizer tree (CODE_INTERPRETER_TEST_PER_FILE).
#define CONTRACT_SCENARIO(name, tags) \
  TEMPLATE_TEST_CASE(name, "[contract]" tags, PyodideHarness, E2BHarness, BedrockHarness, FakeHarness)
/// A fault on a file read: FakeSandbox's reads cannot be scripted, so only the harnesses with a local server.
#define CONTRACT_SERVER_SCENARIO(name, tags) \
  TEMPLATE_TEST_CASE(name, "[contract][faults]" tags, E2BHarness, BedrockHarness)
/// A scenario about a fault only a transport can have: run against the harnesses that can inject it.
#define CONTRACT_TRANSPORT_SCENARIO(name, tags) \
  TEMPLATE_TEST_CASE(name, "[contract][faults]" tags, E2BHarness, BedrockHarness, FakeHarness)
