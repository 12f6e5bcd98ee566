// BedrockAgentCoreSandbox against the local AgentCore-protocol server (real python3, node and bash; every
// request's SigV4 signature verified by the official @smithy/signature-v4): the scenarios the official AWS
// client runs in tests/conformance/bedrock, from C++.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "bedrock_test_support.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::BedrockServer;

namespace {

std::string all_bytes() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  return s;
}

}  // namespace

TEST_CASE("bedrock: create starts a signed session, terminate stops it and ends the handle", "[bedrock]") {
  BedrockServer server;
  auto options = server.options();
  options.session_name = "cpp-session";
  auto sandbox = BedrockAgentCoreSandbox::create(options);
  const auto id = sandbox->sandbox_id();
  REQUIRE(id);
  CHECK(server.alive() == std::vector<std::string>{*id});
  CHECK(sandbox->session_status() == "READY");
  CHECK(sandbox->capabilities().upload_dir == "files");
  CHECK_FALSE(sandbox->capabilities().interrupt);

  sandbox->terminate();
  CHECK(server.alive().empty());
  sandbox->terminate();
  CHECK_THROWS_AS(sandbox->execute_code("1"), SandboxNotInitializedError);
  CHECK(server.all_signatures_valid());
  CHECK(server.requests("start").size() == 1);
  CHECK(server.requests("stop").size() == 1);
}

TEST_CASE("bedrock: env applies to one Python execution only, other languages refuse it before sending",
          "[bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  ExecuteOptions with_env;
  with_env.env = {{"GREETING", "hello"}};
  CHECK(sandbox->execute_code("import os\nprint(os.environ.get('GREETING'))", with_env).stdout_text == "hello\n");
  CHECK(sandbox->execute_code("import os\nprint(os.environ.get('GREETING'))").stdout_text == "None\n");
  // The wrapper leaves nothing behind in the session's variables.
  CHECK(sandbox->execute_code("print(sorted(k for k in globals() if k.startswith('_ci')))").stdout_text == "[]\n");
  sandbox->terminate();

  auto options = server.options();
  options.language = Language::kJavaScript;
  auto js = BedrockAgentCoreSandbox::create(options);
  CHECK(js->execute_code("console.log(6 * 7)").stdout_text == "42\n");
  const auto invokes = server.requests("invoke").size();
  const auto refused = js->execute_code("console.log(1)", with_env);
  CHECK(refused.status == ExecutionStatus::kError);
  CHECK(refused.exit_code == -1);
  CHECK_FALSE(refused.failure);
  CHECK(refused.error.find("env") != std::string::npos);
  CHECK(server.requests("invoke").size() == invokes);
  js->terminate();
}

TEST_CASE("bedrock: files round trip text and binary bytes exactly, list, remove, make_dir", "[bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const std::string bytes = all_bytes();
  sandbox->write_file("data/all.bin", bytes);
  sandbox->write_file("data/note.txt", "h\xc3\xa9llo\n");
  CHECK(sandbox->read_file("data/all.bin") == bytes);
  CHECK(sandbox->read_file("data/note.txt") == "h\xc3\xa9llo\n");
  CHECK(sandbox->download_file("data/all.bin") == std::optional<std::string>(bytes));

  const auto listing = sandbox->list_files("data");
  REQUIRE(listing.size() == 2);
  CHECK(listing[0].name == "all.bin");
  CHECK(listing[0].path == "data/all.bin");
  CHECK(listing[0].size == 256);
  CHECK_FALSE(listing[0].is_directory);

  sandbox->make_dir("data/sub/deeper");
  const auto with_dir = sandbox->list_files("data");
  REQUIRE(with_dir.size() == 3);
  CHECK(with_dir[2].name == "sub");
  CHECK(with_dir[2].is_directory);

  sandbox->remove_file("data/all.bin");
  CHECK(sandbox->download_file("data/all.bin") == std::nullopt);
  try {
    (void)sandbox->read_file("data/all.bin");
    FAIL("read_file of a missing file must throw");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.kind() == ErrorKind::kNotFound);
    CHECK(e.stage() == Stage::kDownload);
  }
  // Absolute paths are refused by the service before anything runs.
  CHECK_THROWS_AS(sandbox->write_file("/etc/x", "y"), SandboxExecutionError);

  const auto destination = std::filesystem::temp_directory_path() / ("bedrock_out_" + *sandbox->sandbox_id());
  CHECK(sandbox->download_file_to("data/note.txt", destination));
  std::ifstream in(destination, std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "h\xc3\xa9llo\n");
  std::filesystem::remove(destination);
  CHECK(server.all_signatures_valid());
  sandbox->terminate();
}

TEST_CASE("bedrock: attachments go to files/ before the code runs", "[bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  ExecuteOptions options;
  options.files.push_back(Attachment::from_bytes("a,b\n1,2\n", "in.csv"));
  const auto r = sandbox->execute_code(
      "rows = open('files/in.csv').read().splitlines()\nopen('files/out.txt', 'w').write(str(len(rows)))\n"
      "print(rows[1])",
      options);
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "1,2\n");
  CHECK(sandbox->read_file("files/out.txt") == "2");
  sandbox->terminate();
}

TEST_CASE("bedrock: commands run as tasks: exit code, both streams, env and cwd", "[bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const auto failed = sandbox->execute_command("echo hi; echo oops >&2; exit 3");
  CHECK(failed.status == ExecutionStatus::kError);
  CHECK(failed.exit_code == 3);
  CHECK(failed.stdout_text == "hi\n");
  CHECK(failed.stderr_text == "oops\n");

  sandbox->make_dir("work");
  CommandOptions options;
  options.env = {{"NAME", "it's me"}};
  options.cwd = "work";
  const auto ok = sandbox->execute_command("echo \"hello $NAME\"; basename \"$PWD\"", options);
  CHECK(ok.status == ExecutionStatus::kSuccess);
  CHECK(ok.exit_code == 0);
  CHECK(ok.stdout_text == "hello it's me\nwork\n");
  CHECK(server.requests("invoke", "startCommandExecution").size() == 2);
  sandbox->terminate();
}

TEST_CASE("bedrock: a command over its timeout is stopped: TIMEOUT/execution", "[bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  CommandOptions options;
  options.timeout = 800ms;
  // A duration of this process's own ("sleep 30.<pid>1"): other tests running at the same time start their own
  // "sleep 30" on this machine, which a plain pattern would find.
  const std::string sleeper = "sleep 30." + std::to_string(::getpid()) + "1";
  const auto r = sandbox->execute_command("echo started; " + sleeper + "; echo never", options);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK(r.stdout_text == "started\n");
  CHECK(server.requests("invoke", "stopTask").size() == 1);
  const auto ps =
      sandbox->execute_command("pgrep -f '[s]" + sleeper.substr(1) + "' >/dev/null && echo running || echo gone");
  CHECK(ps.stdout_text == "gone\n");
  sandbox->terminate();
}

TEST_CASE("bedrock: an executeCode over its timeout is TIMEOUT/execution and says the code may still run",
          "[bedrock]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  ExecuteOptions options;
  options.timeout = 800ms;
  const auto r = sandbox->execute_code("import time\ntime.sleep(3)", options);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK_FALSE(r.failure);
  CHECK(r.error.find("may still be running") != std::string::npos);
  sandbox->terminate();
}

TEST_CASE("bedrock: set_timeout is a no-op, an expired session is gone: ERROR, retry_safe, state_lost",
          "[bedrock]") {
  BedrockServer server;
  auto options = server.options();
  options.session_timeout = 3s;
  auto sandbox = BedrockAgentCoreSandbox::create(options);
  sandbox->set_timeout(600s);
  std::this_thread::sleep_for(3500ms);
  CHECK(server.alive().empty());
  const auto r = sandbox->execute_code("1");
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  CHECK(r.state_lost);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "aws.ResourceNotFoundException");
  CHECK(r.failure->retry_safe);
  sandbox->terminate();  // already stopped: success
  CHECK_THROWS_AS(sandbox->execute_code("1"), SandboxNotInitializedError);
}

TEST_CASE("bedrock: configuration errors are SandboxStartError(configure) before any request", "[bedrock]") {
  BedrockServer server;
  // No credentials anywhere.
  auto options = server.options();
  options.credentials.reset();
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"}) ::unsetenv(name);
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
  ::setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("no credentials must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kUnauthenticated);
    CHECK_FALSE(e.transient());
  }
  // No region.
  options = server.options();
  options.region.reset();
  ::unsetenv("AWS_REGION");
  ::unsetenv("AWS_DEFAULT_REGION");
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("no region must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
  }
  // An identifier that needs percent-encoding (libcurl would sign it differently from AWS).
  options = server.options();
  options.code_interpreter_identifier = "arn:aws:bedrock-agentcore:us-east-1:aws:code-interpreter/aws.codeinterpreter.v1";
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("an ARN must be refused");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()).find("pass the interpreter id") != std::string::npos);
  }
  CHECK(server.requests().empty());
}

TEST_CASE("bedrock: credentials come from the environment and from a profile in the shared files", "[bedrock]") {
  BedrockServer server;
  const auto dir = std::filesystem::temp_directory_path() / ("bedrock_profile_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream credentials(dir / "credentials");
    credentials << "[default]\naws_access_key_id = WRONG\naws_secret_access_key = wrong\n\n[ci]\n"
                << "aws_access_key_id = " << test::kTestCredentials.access_key_id << "\n"
                << "aws_secret_access_key = " << test::kTestCredentials.secret_access_key << "\n";
    std::ofstream config(dir / "config");
    config << "[profile ci]\nregion = us-east-1\n";
  }
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                           "AWS_DEFAULT_REGION"})
    ::unsetenv(name);
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir / "credentials").c_str(), 1);
  ::setenv("AWS_CONFIG_FILE", (dir / "config").c_str(), 1);
  ::setenv("AWS_PROFILE", "ci", 1);
  ::setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", server.url().c_str(), 1);
  auto from_profile = BedrockAgentCoreSandbox::create({});
  CHECK(from_profile->execute_code("print('profile')").stdout_text == "profile\n");
  from_profile->terminate();

  ::unsetenv("AWS_PROFILE");
  ::setenv("AWS_ACCESS_KEY_ID", test::kTestCredentials.access_key_id.c_str(), 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", test::kTestCredentials.secret_access_key.c_str(), 1);
  ::setenv("AWS_REGION", "us-east-1", 1);
  auto from_env = BedrockAgentCoreSandbox::create({});
  CHECK(from_env->execute_code("print('env')").stdout_text == "env\n");
  from_env->terminate();
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_SHARED_CREDENTIALS_FILE",
                           "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE"})
    ::unsetenv(name);
  std::filesystem::remove_all(dir);
  CHECK(server.all_signatures_valid());
  CHECK(server.alive().empty());
}

TEST_CASE("bedrock: temporary credentials sign the session token, a wrong secret is UNAUTHENTICATED", "[bedrock]") {
  BedrockServer server({"--session-token", "FwoGZXIvYXdzEXAMPLETOKEN"});
  AwsCredentials temporary = test::kTestCredentials;
  temporary.session_token = "FwoGZXIvYXdzEXAMPLETOKEN";
  auto sandbox = BedrockAgentCoreSandbox::create(server.options(temporary));
  CHECK(sandbox->execute_code("print(1)").stdout_text == "1\n");
  sandbox->terminate();
  CHECK(server.all_signatures_valid());

  AwsCredentials wrong = temporary;
  wrong.secret_access_key = "not-the-secret";
  try {
    (void)BedrockAgentCoreSandbox::create(server.options(wrong));
    FAIL("a wrong secret must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.kind() == ErrorKind::kUnauthenticated);
    CHECK_FALSE(e.transient());
    CHECK(std::string(e.what()).find("not-the-secret") == std::string::npos);
    CHECK(std::string(e.what()).find("FwoGZXIvYXdzEXAMPLETOKEN") == std::string::npos);
  }
}

TEST_CASE("bedrock: an unknown interpreter is NOT_FOUND", "[bedrock]") {
  BedrockServer server;
  auto options = server.options();
  options.code_interpreter_identifier = "myInterp-abc1234567";
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("an unknown interpreter must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.kind() == ErrorKind::kNotFound);
    CHECK_FALSE(e.transient());
  }
}

