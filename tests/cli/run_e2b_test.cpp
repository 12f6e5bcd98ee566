// code-interpreter run --backend e2b run as a user runs it: the E2B_* environment points it at the local E2B-protocol
// server (tests/servers/e2b), and its exit status, stdout and stderr are checked exactly. Every run must leave no
// sandbox alive, whatever its outcome.
#include <catch2/catch.hpp>

#include "cli_process.hpp"
#include "e2b_test_support.hpp"

using cli_test::Run;
using code_interpreter::test::E2BServer;

namespace {

// `code-interpreter run ARGS` with exactly the environment `env` (plus PATH), stdin from /dev/null.
Run cli_run(std::vector<std::string> args, std::vector<std::string> env) {
  args.insert(args.begin(), "run");
  return cli_test::run_cli(args, std::move(env));
}

// The environment a user sets to point the E2B backend at this server.
std::vector<std::string> e2b_env(const E2BServer& server) {
  return {"E2B_API_KEY=" + code_interpreter::test::kTestApiKey, "E2B_API_URL=" + server.api_url(),
          "E2B_SANDBOX_URL=" + server.sandbox_url()};
}

}  // namespace

TEST_CASE("code-interpreter run --backend e2b prints the program's output and exits 0", "[e2b][cli]") {
  E2BServer server;
  const auto run = cli_run({"--backend", "e2b", "-c", "print(6*7)"}, e2b_env(server));
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "42\n");
  CHECK(run.err.empty());
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 1);
  CHECK(server.requests("DELETE", "/sandboxes/").size() == 1);
  CHECK(server.alive().empty());
}

TEST_CASE("code-interpreter run --backend e2b: an exception exits 1 with the traceback on stderr", "[e2b][cli]") {
  E2BServer server;
  const auto run = cli_run({"--backend", "e2b", "-c", "print('partial output')\n1/0"}, e2b_env(server));
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 1);
  CHECK(run.out == "partial output\n");
  CHECK(run.err.find("Traceback") != std::string::npos);
  CHECK(run.err.find("ZeroDivisionError: division by zero") != std::string::npos);
  CHECK(run.err.find(code_interpreter::test::kTestApiKey) == std::string::npos);
  CHECK(server.alive().empty());
}

TEST_CASE("code-interpreter run --backend e2b: a timeout exits 2 and the sandbox is still terminated", "[e2b][cli]") {
  E2BServer server;
  const auto run = cli_run({"--backend", "e2b", "--timeout", "1", "-c", "import time\ntime.sleep(30)"},
                            e2b_env(server));
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 2);
  CHECK(run.out.empty());
  CHECK(run.err.find("code-interpreter: TIMEOUT (execution): ") != std::string::npos);
  CHECK(server.alive().empty());
}

TEST_CASE("code-interpreter run --backend e2b: --template picks the template, an unknown one cannot start (exit 4)",
          "[e2b][cli]") {
  E2BServer server;
  const auto base = cli_run({"--backend", "e2b", "--template", "base", "-c", "print('ok')"}, e2b_env(server));
  INFO("stderr:\n" << base.err);
  CHECK(base.exit_code == 0);
  CHECK(base.out == "ok\n");
  const auto creates = server.requests("POST", "/v2/sandboxes");
  REQUIRE(creates.size() == 1);

  const auto missing = cli_run({"--backend", "e2b", "--template", "no-such-template", "-c", "1"}, e2b_env(server));
  INFO("stderr:\n" << missing.err);
  CHECK(missing.exit_code == 4);
  CHECK(missing.out.empty());
  CHECK(missing.err.find("code-interpreter: the sandbox could not start (template_build): ") == 0);
  CHECK(server.alive().empty());
}

TEST_CASE("code-interpreter run --backend e2b without E2B_API_KEY cannot start (exit 4) and sends nothing", "[e2b][cli]") {
  E2BServer server;
  const auto run = cli_run({"--backend", "e2b", "-c", "1"},
                            {"E2B_API_URL=" + server.api_url(), "E2B_SANDBOX_URL=" + server.sandbox_url()});
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 4);
  CHECK(run.out.empty());
  CHECK(run.err.find("code-interpreter: the sandbox could not start (configure): no E2B API key") == 0);
  CHECK(server.requests().empty());
}

TEST_CASE("code-interpreter: --template without --backend e2b is bad usage", "[cli]") {
  const auto run = cli_run({"--template", "base", "-c", "1"}, {});
  CHECK(run.exit_code == 64);
  CHECK(run.out.empty());
  CHECK(run.err.find("--template applies only to --backend e2b") != std::string::npos);
}
