// code-interpreter run --backend bedrock run as a user runs it: the AWS_* environment points it at the local
// AgentCore-protocol server (tests/servers/bedrock), and its exit status, stdout and stderr are checked exactly.
// Every run must leave no session alive, whatever its outcome, and no output may contain the secret.
#include <catch2/catch.hpp>

#include "bedrock_test_support.hpp"
#include "cli_process.hpp"

using cli_test::Run;
using code_interpreter::test::BedrockServer;
using code_interpreter::test::kTestCredentials;

namespace {

// `code-interpreter run ARGS` with exactly the environment `env` (plus PATH), stdin from /dev/null.
Run cli_run(std::vector<std::string> args, std::vector<std::string> env) {
  args.insert(args.begin(), "run");
  return cli_test::run_cli(args, std::move(env));
}

// The environment a user sets to point the Bedrock backend at this server (no HOME: no shared AWS files).
std::vector<std::string> bedrock_env(const BedrockServer& server) {
  return {"AWS_ACCESS_KEY_ID=" + kTestCredentials.access_key_id,
          "AWS_SECRET_ACCESS_KEY=" + kTestCredentials.secret_access_key, "AWS_REGION=us-east-1",
          "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE=" + server.url()};
}

void check_no_secret(const Run& run) {
  CHECK(run.out.find(kTestCredentials.secret_access_key) == std::string::npos);
  CHECK(run.err.find(kTestCredentials.secret_access_key) == std::string::npos);
}

}  // namespace

TEST_CASE("code-interpreter run --backend bedrock prints the program's output and exits 0", "[bedrock][cli]") {
  BedrockServer server;
  const auto run = cli_run({"--backend", "bedrock", "-c", "print(6*7)"}, bedrock_env(server));
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "42\n");
  CHECK(run.err.empty());
  check_no_secret(run);
  CHECK(server.requests("start").size() == 1);
  CHECK(server.requests("invoke", "executeCode").size() == 1);
  CHECK(server.requests("stop").size() == 1);
  CHECK(server.all_signatures_valid());
  CHECK(server.alive().empty());
}

TEST_CASE("code-interpreter run --backend bedrock: an exception exits 1 with the traceback on stderr", "[bedrock][cli]") {
  BedrockServer server;
  const auto run = cli_run({"--backend", "bedrock", "-c", "print('partial output')\n1/0"}, bedrock_env(server));
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 1);
  CHECK(run.out == "partial output\n");
  CHECK(run.err.find("Traceback") != std::string::npos);
  CHECK(run.err.find("ZeroDivisionError: division by zero") != std::string::npos);
  check_no_secret(run);
  CHECK(server.alive().empty());
}

TEST_CASE("code-interpreter run --backend bedrock: a timeout exits 2 and the session is still stopped", "[bedrock][cli]") {
  BedrockServer server;
  const auto run = cli_run({"--backend", "bedrock", "--timeout", "1", "-c", "import time\ntime.sleep(30)"},
                            bedrock_env(server));
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 2);
  CHECK(run.out.empty());
  CHECK(run.err.find("code-interpreter: TIMEOUT (execution): ") != std::string::npos);
  CHECK(run.err.find("may still be running") != std::string::npos);
  check_no_secret(run);
  CHECK(server.alive().empty());
}

TEST_CASE("code-interpreter run --backend bedrock: --interpreter picks the code interpreter, an unknown one or an ARN cannot "
          "start (exit 4)",
          "[bedrock][cli]") {
  BedrockServer server({"--interpreter", "myInterp-abc1234567"});
  const auto custom = cli_run({"--backend", "bedrock", "--interpreter", "myInterp-abc1234567", "-c", "print('ok')"},
                               bedrock_env(server));
  INFO("stderr:\n" << custom.err);
  CHECK(custom.exit_code == 0);
  CHECK(custom.out == "ok\n");
  const auto starts = server.requests("start");
  REQUIRE(starts.size() == 1);
  CHECK(starts[0].value("interpreter", "") == "myInterp-abc1234567");

  const auto unknown = cli_run({"--backend", "bedrock", "--interpreter", "noSuchInterp-0000000000", "-c", "1"},
                                bedrock_env(server));
  INFO("stderr:\n" << unknown.err);
  CHECK(unknown.exit_code == 4);
  CHECK(unknown.out.empty());
  CHECK(unknown.err.find("code-interpreter: the sandbox could not start (create): ") == 0);
  check_no_secret(unknown);

  const auto requests = server.requests().size();
  const std::string arn_id = "arn:aws:bedrock-agentcore:us-east-1:aws:code-interpreter/aws.codeinterpreter.v1";
  const auto arn = cli_run({"--backend", "bedrock", "--interpreter", arn_id, "-c", "1"}, bedrock_env(server));
  INFO("stderr:\n" << arn.err);
  CHECK(arn.exit_code == 4);
  CHECK(arn.err.find("code-interpreter: the sandbox could not start (configure): ") == 0);
  CHECK(arn.err.find("pass the interpreter id") != std::string::npos);
  CHECK(server.requests().size() == requests);
  CHECK(server.alive().empty());
}

TEST_CASE("code-interpreter run --backend bedrock without AWS credentials cannot start (exit 4) and sends nothing",
          "[bedrock][cli]") {
  BedrockServer server;
  const auto run = cli_run({"--backend", "bedrock", "-c", "1"},
                            {"AWS_REGION=us-east-1", "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE=" + server.url()});
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 4);
  CHECK(run.out.empty());
  CHECK(run.err.find("code-interpreter: the sandbox could not start (configure): no AWS credentials") == 0);
  CHECK(server.requests().empty());
}

TEST_CASE("code-interpreter: --interpreter without --backend bedrock is bad usage", "[bedrock][cli]") {
  const auto run = cli_run({"--interpreter", "aws.codeinterpreter.v1", "-c", "1"}, {});
  CHECK(run.exit_code == 64);
  CHECK(run.out.empty());
  CHECK(run.err.find("--interpreter applies only to --backend bedrock") != std::string::npos);
}
