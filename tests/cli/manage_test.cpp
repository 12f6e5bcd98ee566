// code-interpreter list, kill and sweep against the local E2B and AgentCore servers, configured only through the
// E2B_* and AWS_* environment as a user configures them; output and exit statuses checked exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>
#include <sstream>

#include "bedrock_test_support.hpp"
#include "cli_process.hpp"
#include "code_interpreter/code_interpreter.hpp"
#include "code_interpreter/management.hpp"
#include "e2b_test_support.hpp"

using namespace code_interpreter;
using cli_test::run_cli;
using code_interpreter::test::BedrockServer;
using code_interpreter::test::E2BServer;
using code_interpreter::test::kTestCredentials;

namespace {

std::vector<std::string> e2b_env(const E2BServer& server) {
  return {"E2B_API_KEY=" + test::kTestApiKey, "E2B_API_URL=" + server.api_url(),
          "E2B_SANDBOX_URL=" + server.sandbox_url()};
}

std::vector<std::string> bedrock_env(const BedrockServer& server) {
  return {"AWS_ACCESS_KEY_ID=" + kTestCredentials.access_key_id,
          "AWS_SECRET_ACCESS_KEY=" + kTestCredentials.secret_access_key, "AWS_REGION=us-east-1",
          "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE=" + server.url()};
}

std::unique_ptr<E2BSandbox> e2b_tagged(const E2BServer& server, const std::string& tag) {
  auto o = server.options();
  o.tag = tag;
  return E2BSandbox::create(o);
}

std::unique_ptr<BedrockAgentCoreSandbox> bedrock_tagged(const BedrockServer& server, const std::string& tag) {
  auto o = server.options();
  o.tag = tag;
  return BedrockAgentCoreSandbox::create(o);
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string utc(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The line list prints for a sandbox, from what the library's own manager reports.
std::string listed(SandboxManager& manager, const std::string& id) {
  const auto info = manager.get(id);
  REQUIRE(info.has_value());
  REQUIRE(info->created_at.has_value());
  return id + "\trunning\t" + info->tag.value_or("-") + "\t" + utc(*info->created_at);
}

}  // namespace

TEST_CASE("list --tag prints each live E2B sandbox of the tag: id, state, tag, start time", "[cli][management][e2b]") {
  E2BServer server;
  auto a = e2b_tagged(server, "cli_a");
  auto b = e2b_tagged(server, "cli_a");
  auto other = e2b_tagged(server, "cli_b");
  SandboxConfig config;
  config.backend = "e2b";
  config.e2b = server.options();
  auto manager = create_manager(config);

  const auto run = run_cli({"list", "--backend", "e2b", "--tag", "cli_a"}, e2b_env(server));
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 0);
  std::vector<std::string> expected{listed(*manager, *a->sandbox_id()), listed(*manager, *b->sandbox_id())};
  std::sort(expected.begin(), expected.end());
  CHECK(sorted_lines(run.out) == expected);
  CHECK(run.err.empty());
  CHECK(run.out.find(test::kTestApiKey) == std::string::npos);
  for (auto* s : {a.get(), b.get(), other.get()}) s->terminate();
}

TEST_CASE("kill prints killed for a live E2B sandbox, then not found with exit 1", "[cli][management][e2b]") {
  E2BServer server;
  auto sandbox = e2b_tagged(server, "cli_kill");
  const auto id = *sandbox->sandbox_id();
  const auto first = run_cli({"kill", "--backend", "e2b", id}, e2b_env(server));
  INFO("stderr:\n" << first.err);
  CHECK(first.exit_code == 0);
  CHECK(first.out == "killed " + id + "\n");
  CHECK(server.alive().empty());
  const auto again = run_cli({"kill", "--backend", "e2b", id}, e2b_env(server));
  CHECK(again.exit_code == 1);
  CHECK(again.out == "not found " + id + "\n");
  CHECK(again.err.empty());
  sandbox->terminate();  // already gone: what terminate wants
}

TEST_CASE("sweep kills exactly the E2B sandboxes of its tag, and another tag's live on", "[cli][management][e2b]") {
  E2BServer server;
  auto a = e2b_tagged(server, "cli_sweep");
  auto b = e2b_tagged(server, "cli_sweep");
  auto longer = e2b_tagged(server, "cli_sweep2");
  const auto run = run_cli({"sweep", "--backend", "e2b", "cli_sweep"}, e2b_env(server));
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 0);
  std::vector<std::string> expected{"killed " + *a->sandbox_id(), "killed " + *b->sandbox_id()};
  std::sort(expected.begin(), expected.end());
  CHECK(sorted_lines(run.out) == expected);
  CHECK(server.alive() == std::vector<std::string>{*longer->sandbox_id()});
  for (auto* s : {a.get(), b.get(), longer.get()}) s->terminate();
}

TEST_CASE("list, kill and sweep on AgentCore: a session of the tag is listed, killed, swept", "[cli][management][bedrock]") {
  BedrockServer server;
  auto kept = bedrock_tagged(server, "cli_ac");
  auto swept = bedrock_tagged(server, "cli_ac");
  SandboxConfig config;
  config.backend = "bedrock";
  config.bedrock = server.options();
  auto manager = create_manager(config);

  const auto list = run_cli({"list", "--backend", "bedrock", "--tag", "cli_ac"}, bedrock_env(server));
  INFO("stderr:\n" << list.err);
  CHECK(list.exit_code == 0);
  std::vector<std::string> expected{listed(*manager, *kept->sandbox_id()), listed(*manager, *swept->sandbox_id())};
  std::sort(expected.begin(), expected.end());
  CHECK(sorted_lines(list.out) == expected);

  const auto kill = run_cli({"kill", "--backend", "bedrock", *kept->sandbox_id()}, bedrock_env(server));
  CHECK(kill.exit_code == 0);
  CHECK(kill.out == "killed " + *kept->sandbox_id() + "\n");
  const auto sweep = run_cli({"sweep", "--backend", "bedrock", "cli_ac"}, bedrock_env(server));
  CHECK(sweep.exit_code == 0);
  CHECK(sweep.out == "killed " + *swept->sandbox_id() + "\n");
  CHECK(server.alive().empty());
  for (const auto& r : {list, kill, sweep}) {
    CHECK(r.out.find(kTestCredentials.secret_access_key) == std::string::npos);
    CHECK(r.err.find(kTestCredentials.secret_access_key) == std::string::npos);
  }
  kept->terminate();
  swept->terminate();
}

TEST_CASE("list, kill and sweep: bad usage exits 64, no manager 4, a verb the backend lacks 5", "[cli][management]") {
  const auto bad_tag = run_cli({"sweep", "--backend", "e2b", "not a tag"}, {});
  CHECK(bad_tag.exit_code == 64);
  CHECK(bad_tag.err.rfind("code-interpreter: a tag is 1 to 32 of A-Z a-z 0-9 _\nusage: code-interpreter sweep ", 0) == 0);
  const auto no_ids = run_cli({"kill", "--backend", "e2b"}, {});
  CHECK(no_ids.exit_code == 64);
  CHECK(no_ids.err.rfind("code-interpreter: kill needs one or more sandbox ids\n", 0) == 0);
  const auto operand = run_cli({"list", "extra"}, {});
  CHECK(operand.exit_code == 64);
  CHECK(operand.err.rfind("code-interpreter: list takes no operand\n", 0) == 0);

  const auto no_key = run_cli({"list", "--backend", "e2b"}, {});
  CHECK(no_key.exit_code == 4);
  CHECK(no_key.out.empty());
  CHECK(no_key.err.rfind("code-interpreter: no manager for the backend e2b (configure): ", 0) == 0);

  const auto pyodide = run_cli({"list"}, {});
  CHECK(pyodide.exit_code == 5);
  CHECK(pyodide.out.empty());
  CHECK(pyodide.err ==
        "code-interpreter: the pyodide backend cannot list sandboxes (Pyodide sandboxes are child processes of the "
        "program that created them and end with it: there is nothing to list or govern from outside) (unsupported)\n");
}
