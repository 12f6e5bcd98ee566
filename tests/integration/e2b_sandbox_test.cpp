// E2BSandbox against the local E2B-protocol server (real python3, bash and files): the scenarios the official
// clients run in tests/conformance/e2b, from C++.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "e2b_test_support.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::E2BServer;

namespace {

std::string all_bytes() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  return s;
}

}  // namespace

TEST_CASE("create gives a running sandbox, terminate kills it and ends the handle", "[e2b]") {
  E2BServer server;
  auto options = server.options();
  options.metadata = {{"job", "42"}};
  auto sandbox = E2BSandbox::create(options);
  const auto id = sandbox->sandbox_id();
  REQUIRE(id);
  CHECK(id->size() == 20);
  CHECK(server.alive() == std::vector<std::string>{*id});
  const auto creates = server.requests("POST", "/v2/sandboxes");
  REQUIRE(creates.size() == 1);

  sandbox->terminate();
  CHECK(server.alive().empty());
  CHECK(sandbox->sandbox_id() == id);
  sandbox->terminate();  // twice is fine
  CHECK_THROWS_AS(sandbox->execute_code("1"), SandboxNotInitializedError);
  CHECK_THROWS_AS(sandbox->read_file("/x"), SandboxNotInitializedError);
  CHECK(sandbox->capabilities().upload_dir == "/files");
}

TEST_CASE("execute_code returns stdout, the main result, and keeps state between calls", "[e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const auto printed = sandbox->execute_code("print('hi')");
  CHECK(printed.status == ExecutionStatus::kSuccess);
  CHECK(printed.exit_code == 0);
  CHECK(printed.stdout_text == "hi\n");
  CHECK(printed.stderr_text.empty());
  CHECK(printed.duration.has_value());

  REQUIRE(sandbox->execute_code("x = 41").status == ExecutionStatus::kSuccess);
  const auto sum = sandbox->execute_code("x + 1");
  CHECK(sum.status == ExecutionStatus::kSuccess);
  REQUIRE(sum.results.size() == 1);
  CHECK(sum.results[0].is_main_result);
  CHECK(sum.results[0].data.at("text/plain") == "42");
  CHECK(sum.text() == "42");
  sandbox->terminate();
}

TEST_CASE("sys.exit(False) is success and sys.exit(True) exit code 1, as CPython exits", "[e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const auto no = sandbox->execute_code("import sys\nsys.exit(False)");
  CHECK(no.status == ExecutionStatus::kSuccess);
  CHECK(no.exit_code == 0);
  CHECK_FALSE(no.code_error);
  const auto yes = sandbox->execute_code("import sys\nsys.exit(True)");
  CHECK(yes.status == ExecutionStatus::kError);
  CHECK(yes.exit_code == 1);
  REQUIRE(yes.code_error);
  CHECK(yes.code_error->name == "SystemExit");
  sandbox->terminate();
}

TEST_CASE("files: binary bytes round trip, listing, removal and missing files", "[e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const std::string bytes = all_bytes();
  sandbox->write_file("/home/user/data/all.bin", bytes);
  CHECK(sandbox->read_file("/home/user/data/all.bin") == bytes);
  CHECK(sandbox->download_file("/home/user/data/all.bin") == std::optional<std::string>(bytes));

  const auto listing = sandbox->list_files("/home/user/data");
  REQUIRE(listing.size() == 1);
  CHECK(listing[0].name == "all.bin");
  CHECK(listing[0].path == "/home/user/data/all.bin");
  CHECK(listing[0].size == 256);
  CHECK_FALSE(listing[0].is_directory);

  sandbox->make_dir("/home/user/a/b");
  sandbox->make_dir("/home/user/a/b");  // already there: fine
  const auto dirs = sandbox->list_files("/home/user/a");
  REQUIRE(dirs.size() == 1);
  CHECK(dirs[0].is_directory);
  sandbox->write_file("/home/user/a/file", "x");
  try {
    sandbox->make_dir("/home/user/a/file");  // a file in the way is an error
    FAIL("make_dir over a file must throw");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
  }

  sandbox->remove_file("/home/user/data/all.bin");
  CHECK(sandbox->download_file("/home/user/data/all.bin") == std::nullopt);
  try {
    (void)sandbox->read_file("/home/user/data/all.bin");
    FAIL("read_file of a missing file must throw");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.kind() == ErrorKind::kNotFound);
    CHECK(e.stage() == Stage::kDownload);
  }
  sandbox->terminate();
}

TEST_CASE("attachments are uploaded to /files before the code runs, and output files come back", "[e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  ExecuteOptions options;
  options.files.push_back(Attachment::from_bytes("a,b\n1,2\n", "in.csv"));
  const auto r = sandbox->execute_code(
      "rows = open('/files/in.csv').read().splitlines()\n"
      "open('/files/out.txt', 'w').write(str(len(rows)))\n"
      "print(rows[1])",
      options);
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "1,2\n");
  CHECK(sandbox->download_file("/files/out.txt") == std::optional<std::string>("2"));

  const auto destination = std::filesystem::temp_directory_path() / ("e2b_out_" + *sandbox->sandbox_id());
  CHECK(sandbox->download_file_to("/files/out.txt", destination));
  std::ifstream in(destination, std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "2");
  std::filesystem::remove(destination);
  CHECK_FALSE(sandbox->download_file_to("/files/missing.txt", destination));
  CHECK_FALSE(std::filesystem::exists(destination));
  sandbox->terminate();
}

TEST_CASE("a command over its timeout is killed: TIMEOUT/execution", "[e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  CommandOptions options;
  options.timeout = 700ms;
  const auto start = std::chrono::steady_clock::now();
  // A duration of this process's own ("sleep 30.<pid>2"): other tests running at the same time start their own
  // "sleep 30" on this machine, which a plain pattern would find.
  const std::string sleeper = "sleep 30." + std::to_string(::getpid()) + "2";
  const auto r = sandbox->execute_command("echo started; " + sleeper + "; echo never", options);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK(r.stdout_text == "started\n");
  CHECK_FALSE(r.failure);
  // The process is gone: nothing named sleep runs in this sandbox any more.
  const auto ps =
      sandbox->execute_command("pgrep -f '[s]" + sleeper.substr(1) + "' >/dev/null && echo running || echo gone");
  CHECK(ps.stdout_text == "gone\n");
  sandbox->terminate();
}

TEST_CASE("an execution over its timeout closes the request and the kernel is interrupted", "[e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  REQUIRE(sandbox->execute_code("pass").status == ExecutionStatus::kSuccess);  // the kernel is up
  ExecuteOptions options;
  options.timeout = 700ms;
  const auto r = sandbox->execute_code("import time\nprint('started', flush=True)\ntime.sleep(30)", options);
  CHECK(r.status == ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == TimeoutKind::kExecution);
  CHECK(r.stdout_text == "started\n");
  CHECK_FALSE(r.failure);
  // The next execution in the same context is not stuck behind the interrupted one.
  ExecuteOptions quick;
  quick.timeout = 10s;
  const auto next = sandbox->execute_code("print('next')", quick);
  CHECK(next.status == ExecutionStatus::kSuccess);
  CHECK(next.stdout_text == "next\n");
  sandbox->terminate();
}

TEST_CASE("contexts: separate state, restart clears it, removal", "[e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const auto context = sandbox->create_context(Language::kPython);
  CHECK_FALSE(context.id.empty());
  CHECK(context.language == "python");
  REQUIRE(sandbox->execute_in_context(context.id, "v = 'mine'").status == ExecutionStatus::kSuccess);
  CHECK(sandbox->execute_in_context(context.id, "print(v)").stdout_text == "mine\n");
  const auto default_context = sandbox->execute_code("print('v' in globals())");
  CHECK(default_context.stdout_text == "False\n");

  const auto contexts = sandbox->list_contexts();
  CHECK(std::count_if(contexts.begin(), contexts.end(), [&](const E2BContext& c) { return c.id == context.id; }) == 1);

  sandbox->restart_context(context.id);
  CHECK(sandbox->execute_in_context(context.id, "print('v' in globals())").stdout_text == "False\n");
  sandbox->remove_context(context.id);
  const auto gone = sandbox->execute_in_context(context.id, "1");
  CHECK(gone.status == ExecutionStatus::kError);
  REQUIRE(gone.failure);
  CHECK(gone.failure->exception_type == "http.404");
  CHECK(gone.failure->retry_safe);
  sandbox->terminate();
}

namespace {

// GET /contexts answers `contexts` in this order (once): the protocol lists every context without promising one.
void list_contexts_as(E2BServer& server, const std::vector<E2BContext>& contexts) {
  nlohmann::json body = nlohmann::json::array();
  for (const auto& c : contexts) body.push_back({{"id", c.id}, {"language", c.language}, {"cwd", c.cwd}});
  server.fault({{"surface", "interpreter"}, {"method", "GET"}, {"path", "/contexts"}, {"action", "status"},
                {"status", 200}, {"body", body}});
}

}  // namespace

TEST_CASE("restart restarts the context execute_code runs in, wherever GET /contexts lists it", "[e2b][restart]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const auto other = sandbox->create_context(Language::kPython);
  REQUIRE(sandbox->execute_in_context(other.id, "kept = 'other'").status == ExecutionStatus::kSuccess);
  REQUIRE(sandbox->execute_code("dropped = 'default'").status == ExecutionStatus::kSuccess);
  const auto contexts = sandbox->list_contexts();
  REQUIRE(contexts.size() == 2);
  REQUIRE(contexts[1] == other);  // the local server lists the default first; the answer below does not
  list_contexts_as(server, {contexts[1], contexts[0]});
  sandbox->restart();
  CHECK(sandbox->execute_code("print('dropped' in globals())").stdout_text == "False\n");
  CHECK(sandbox->execute_in_context(other.id, "print(kept)").stdout_text == "other\n");
  sandbox->terminate();
}

TEST_CASE("restart with no listed context holding execute_code's state throws not_found and restarts nothing",
          "[e2b][restart]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const auto other = sandbox->create_context(Language::kPython);
  REQUIRE(sandbox->execute_in_context(other.id, "kept = 'other'").status == ExecutionStatus::kSuccess);
  REQUIRE(sandbox->execute_code("also_kept = 'default'").status == ExecutionStatus::kSuccess);
  list_contexts_as(server, {other});
  try {
    sandbox->restart();
    FAIL("restart did not throw");
  } catch (const SandboxExecutionError& e) {
    CHECK(std::string(e.what()) == "restart: no python context the code interpreter lists is the one execute_code runs in");
    CHECK(e.stage() == Stage::kExecute);
    CHECK(e.kind() == ErrorKind::kNotFound);
  }
  CHECK(sandbox->execute_in_context(other.id, "print(kept)").stdout_text == "other\n");
  CHECK(sandbox->execute_code("print(also_kept)").stdout_text == "default\n");
  sandbox->terminate();
}

TEST_CASE("a failed copy quotes cp's stderr with the API key redacted", "[e2b][files]") {
  E2BServer server;
  const auto options = server.options();
  REQUIRE(options.api_key);
  const std::string key = *options.api_key;
  auto sandbox = E2BSandbox::create(options);
  // cp cannot put the file src/<key> over the directory dst/<key>: its stderr names the key, the paths we pass do not.
  sandbox->write_file("cpr/src/" + key, "file");
  sandbox->write_file("cpr/dst/" + key + "/inner", "dir");
  try {
    sandbox->copy("cpr/src", "cpr/dst");
    FAIL("copy did not throw");
  } catch (const SandboxExecutionError& e) {
    const std::string message = e.what();
    CHECK(message == "copy 'cpr/src' to 'cpr/dst' failed: cp: cannot overwrite directory 'cpr/dst/./[redacted]' "
                     "with non-directory");
    CHECK(message.find(key) == std::string::npos);
    CHECK(e.stage() == Stage::kUpload);
    CHECK(e.kind() == ErrorKind::kInternal);
  }
  sandbox->terminate();
}

TEST_CASE("copy reads ~ as the home directory and refuses a directory into or onto itself, making nothing",
          "[e2b][files]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  sandbox->write_file("cpt/a/f.txt", "x");
  sandbox->copy("~/cpt/a", "~/cpt/b");
  CHECK(sandbox->read_file("cpt/b/f.txt") == "x");
  sandbox->copy("~/cpt/a/f.txt", "cpt/g.txt");
  CHECK(sandbox->read_file("~/cpt/g.txt") == "x");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"cpt/a", "cpt/a/sub"}, {"~/cpt/a", "cpt/a"}, {"cpt/a/", "~/cpt/./a/../a/deeper/x"}, {"/", "cpt/root"}}) {
    INFO(from << " -> " << to);
    try {
      sandbox->copy(from, to);
      FAIL("copy did not throw");
    } catch (const SandboxExecutionError& e) {
      CHECK(std::string(e.what()) ==
            "copy '" + from + "' to '" + to + "' failed: cannot copy a directory into itself");
      CHECK(e.stage() == Stage::kUpload);
      CHECK(e.kind() == ErrorKind::kInvalidArgument);
    }
  }
  CHECK_FALSE(sandbox->exists("cpt/a/sub"));
  CHECK_FALSE(sandbox->exists("cpt/a/deeper"));
  CHECK_FALSE(sandbox->exists("cpt/root"));
  sandbox->terminate();
}

TEST_CASE("set_timeout renews the lease, an expired sandbox is gone: ERROR, retry_safe, state_lost", "[e2b]") {
  E2BServer server;
  auto options = server.options();
  options.lifetime = 2s;
  auto sandbox = E2BSandbox::create(options);
  sandbox->set_timeout(3s);
  std::this_thread::sleep_for(2500ms);
  CHECK(server.alive().size() == 1);  // renewed past its first lifetime
  std::this_thread::sleep_for(1500ms);
  CHECK(server.alive().empty());
  const auto r = sandbox->execute_code("1");
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  CHECK(r.state_lost);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "http.502");
  CHECK(r.failure->retry_safe);
  sandbox->terminate();  // already gone (404): success
}

TEST_CASE("connect attaches to a running sandbox by id, an unknown id is NOT_FOUND", "[e2b]") {
  E2BServer server;
  auto first = E2BSandbox::create(server.options());
  REQUIRE(first->execute_code("shared = 7").status == ExecutionStatus::kSuccess);
  auto second = E2BSandbox::connect(*first->sandbox_id(), server.options());
  CHECK(second->sandbox_id() == first->sandbox_id());
  CHECK(second->execute_code("print(shared)").stdout_text == "7\n");
  second->terminate();
  CHECK(server.alive().empty());

  try {
    (void)E2BSandbox::connect("nosuchsandbox0000000", server.options());
    FAIL("connect to an unknown sandbox must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.kind() == ErrorKind::kNotFound);
    CHECK(e.stage() == Stage::kCreate);
    CHECK_FALSE(e.transient());
  }
  CHECK_THROWS_AS(E2BSandbox::connect("../../x", server.options()), SandboxStartError);
}

TEST_CASE("a bad API key is UNAUTHENTICATED and not transient, a missing one fails before any request", "[e2b]") {
  E2BServer server;
  auto options = server.options();
  options.api_key = "e2b_" + std::string(40, '1');
  try {
    (void)E2BSandbox::create(options);
    FAIL("a bad key must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.kind() == ErrorKind::kUnauthenticated);
    CHECK_FALSE(e.transient());
    CHECK(std::string(e.what()).find(std::string(40, '1')) == std::string::npos);
    const auto* cause = test::nested_transport(e);
    REQUIRE(cause);
    CHECK(cause->http_status() == 401);
  }
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 1);  // a 401 is not retried

  options.api_key = "";
  ::unsetenv("E2B_API_KEY");
  try {
    (void)E2BSandbox::create(options);
    FAIL("a missing key must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kUnauthenticated);
  }
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 1);
}

TEST_CASE("a template that does not exist is a TemplateBuildError", "[e2b]") {
  E2BServer server;
  auto options = server.options();
  options.template_id = "no-such-template";
  try {
    (void)E2BSandbox::create(options);
    FAIL("an unknown template must throw");
  } catch (const TemplateBuildError& e) {
    CHECK(e.stage() == Stage::kTemplateBuild);
    CHECK(e.kind() == ErrorKind::kNotFound);
    CHECK_FALSE(e.transient());
  }
  CHECK(server.alive().empty());
}

TEST_CASE("additional_packages are installed with pip at creation, a failed install tears the sandbox down",
          "[e2b]") {
  E2BServer server;
  auto options = server.options();
  // pip may not use an index (none is reachable here anyway), so the install fails at once; creation must then
  // fail at install_packages and kill the sandbox.
  options.additional_packages = {"surely-not-a-package-xyz"};
  options.env_vars = {{"PIP_NO_INDEX", "1"}};
  options.create_timeout = 120s;
  try {
    (void)E2BSandbox::create(options);
    FAIL("a failed install must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kInstallPackages);
  }
  CHECK(server.alive().empty());
}

TEST_CASE("a sandbox URL that refuses connections: ERROR, curl.COULDNT_CONNECT, retry_safe", "[e2b]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  auto options = server.options();
  options.sandbox_url = "http://127.0.0.1:1";
  auto unreachable = E2BSandbox::connect(*sandbox->sandbox_id(), options);
  const auto r = unreachable->execute_code("1");
  CHECK(r.status == ExecutionStatus::kError);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "curl.COULDNT_CONNECT");
  CHECK(r.failure->retry_safe);
  const auto c = unreachable->execute_command("true");
  CHECK(c.status == ExecutionStatus::kError);
  CHECK(c.failure->exception_type == "curl.COULDNT_CONNECT");
  unreachable->terminate();
  CHECK(server.alive().empty());
}
