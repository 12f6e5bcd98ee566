// Creation, runtime checks, packages, hostile output and terminate.
#include <catch2/catch.hpp>

#include <stop_token>
#include <thread>

#include "pyodide_test_support.hpp"

using test_support::make_sandbox;
using test_support::RuntimeCopy;

namespace {
ci::PyodideOptions with_runtime(const std::filesystem::path& dir) {
  ci::PyodideOptions o;
  o.runtime_dir = dir;
  return o;
}
}  // namespace

TEST_CASE("the default runtime directory is found beside the library", "[lifecycle]") {
  CHECK(std::filesystem::equivalent(ci::PyodideSandbox::default_runtime_dir(), CI_TEST_RUNTIME_DIR));
}

TEST_CASE("a missing runtime directory is a TemplateBuildError naming it", "[lifecycle]") {
  try {
    (void)ci::PyodideSandbox::create(with_runtime("/nonexistent/runtime"));
    FAIL("create succeeded");
  } catch (const ci::TemplateBuildError& e) {
    CHECK(e.stage() == ci::Stage::kTemplateBuild);
    CHECK(e.kind() == ci::ErrorKind::kNotFound);
    CHECK(std::string(e.what()).find("'/nonexistent/runtime' does not exist") != std::string::npos);
    CHECK_FALSE(e.transient());
  }
}

TEST_CASE("a runtime without Deno is a TemplateBuildError naming the missing file", "[lifecycle]") {
  RuntimeCopy copy;
  std::filesystem::remove(copy.dir() / "node_modules/@deno/linux-x64-glibc/deno");
  try {
    (void)ci::PyodideSandbox::create(with_runtime(copy.dir()));
    FAIL("create succeeded");
  } catch (const ci::TemplateBuildError& e) {
    CHECK(e.stage() == ci::Stage::kTemplateBuild);
    CHECK(std::string(e.what()).find("node_modules/@deno/linux-x64-glibc/deno is missing") != std::string::npos);
  }
}

TEST_CASE("a runtime without the host script is a TemplateBuildError", "[lifecycle]") {
  RuntimeCopy copy;
  std::filesystem::remove(copy.dir() / "host.mjs");
  try {
    (void)ci::PyodideSandbox::create(with_runtime(copy.dir()));
    FAIL("create succeeded");
  } catch (const ci::TemplateBuildError& e) {
    CHECK(std::string(e.what()).find("host.mjs is missing") != std::string::npos);
  }
}

TEST_CASE("a runtime with another Pyodide version is a TemplateBuildError naming both versions", "[lifecycle]") {
  RuntimeCopy copy;
  auto pkg = test_support::read_text(copy.dir() / "node_modules/pyodide/package.json");
  const auto at = pkg.find("\"version\": \"314.0.7\"");
  REQUIRE(at != std::string::npos);
  pkg.replace(at, std::string("\"version\": \"314.0.7\"").size(), "\"version\": \"0.27.0\"");
  copy.rewrite("node_modules/pyodide/package.json", pkg);
  try {
    (void)ci::PyodideSandbox::create(with_runtime(copy.dir()));
    FAIL("create succeeded");
  } catch (const ci::TemplateBuildError& e) {
    CHECK(e.stage() == ci::Stage::kTemplateBuild);
    CHECK(std::string(e.what()).find("has Pyodide 0.27.0, but 314.0.7 is required") != std::string::npos);
  }
}

TEST_CASE("a language other than Python is refused at configure", "[lifecycle]") {
  ci::PyodideOptions o;
  o.language = ci::Language::kJavaScript;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kConfigure);
    CHECK(e.kind() == ci::ErrorKind::kUnsupported);
    CHECK(std::string(e.what()) == "the Pyodide sandbox runs only Python, not javascript");
  }
  CHECK(test_support::deno_children().empty());
}

TEST_CASE("additional_packages are installed from the wheel directory and importable", "[packages]") {
  ci::PyodideOptions o;
  o.additional_packages = {"ci-hello"};
  o.wheel_dir = CI_TEST_WHEEL_DIR;
  auto sb = make_sandbox(o);
  CHECK(sb->additional_packages() == std::vector<std::string>{"ci-hello"});
  auto r = sb->execute_code("import ci_hello\nci_hello.GREETING, ci_hello.greet('pyodide')");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "('hello from a local wheel', 'hello, pyodide')");
}

TEST_CASE("a package without a wheel aborts creation at install_packages and leaves no process", "[packages]") {
  ci::PyodideOptions o;
  o.additional_packages = {"ci-hello", "no-such-package"};
  o.wheel_dir = CI_TEST_WHEEL_DIR;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kInstallPackages);
    CHECK(e.kind() == ci::ErrorKind::kNotFound);
    CHECK(std::string(e.what()) == "unknown package 'no-such-package': pyodide-lock.json does not hold it and '" +
                                       std::filesystem::canonical(CI_TEST_WHEEL_DIR).string() + "' has no wheel of it");
  }
  CHECK(test_support::no_deno_children());
}

TEST_CASE("a wheel that cannot be installed aborts creation and leaves no process", "[packages]") {
  ci::PyodideOptions o;
  o.additional_packages = {"ci_broken"};
  o.wheel_dir = CI_TEST_WHEEL_DIR;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kInstallPackages);
    CHECK(std::string(e.what()).rfind("installing additional_packages failed: ci_broken: ", 0) == 0);
  }
  CHECK(test_support::no_deno_children());
}

TEST_CASE("additional_packages without a wheel_dir use the default package directory, and its absence is named",
          "[packages]") {
  test_support::TempDir cache;
  test_support::ScopedEnv xdg("XDG_CACHE_HOME", cache.path().string());
  ci::PyodideOptions o;
  o.additional_packages = {"ci-hello"};
  o.use_snapshot = false;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kInstallPackages);
    CHECK(e.kind() == ci::ErrorKind::kNotFound);
    CHECK(std::string(e.what()) == "package directory '" + cache.path().string() + "/code_interpreter/pyodide/packages-" +
                                       CI_TEST_PYODIDE_VERSION +
                                       "' is not a directory: fetch packages into it with `code-interpreter packages fetch`");
  }
  CHECK(test_support::deno_children().empty());
}

TEST_CASE("a package the lock holds is loaded with its dependencies, each checked against the lock", "[packages]") {
  ci::PyodideOptions o;
  o.additional_packages = {"CI_App"};
  o.wheel_dir = CI_TEST_PACKAGE_DIR;
  o.package_lock = CI_TEST_PACKAGE_LOCK;
  auto sb = make_sandbox(o);
  CHECK(sb->additional_packages() == std::vector<std::string>{"ci-base", "ci-app"});
  auto r = sb->execute_code("import ci_app, ci_base\nci_app.ANSWER, ci_base.VALUE");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "(42, 41)");
}

TEST_CASE("a package whose file does not match the lock's SHA-256 is refused before anything starts", "[packages]") {
  ci::PyodideOptions o;
  o.additional_packages = {"ci-tampered"};
  o.wheel_dir = CI_TEST_PACKAGE_DIR;
  o.package_lock = CI_TEST_PACKAGE_LOCK;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kInstallPackages);
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "package 'ci-tampered' 0.1.0: 'ci_tampered-0.1.0-py3-none-any.whl' in '" +
                                       std::filesystem::canonical(CI_TEST_PACKAGE_DIR).string() +
                                       "' does not match the SHA-256 that test-lock.json gives; delete it and fetch it "
                                       "again with `code-interpreter packages fetch ci-tampered`");
  }
  CHECK(test_support::deno_children().empty());
}

TEST_CASE("a package whose file is missing from the package directory names the file and the fetch command",
          "[packages]") {
  ci::PyodideOptions o;
  o.additional_packages = {"ci-base", "ci-absent"};
  o.wheel_dir = CI_TEST_PACKAGE_DIR;
  o.package_lock = CI_TEST_PACKAGE_LOCK;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kInstallPackages);
    CHECK(e.kind() == ci::ErrorKind::kNotFound);
    CHECK(std::string(e.what()) == "package 'ci-absent' 0.1.0 needs 'ci_absent-0.1.0-py3-none-any.whl' in '" +
                                       std::filesystem::canonical(CI_TEST_PACKAGE_DIR).string() +
                                       "', which is missing: fetch it with `code-interpreter packages fetch ci-base "
                                       "ci-absent`");
  }
  CHECK(test_support::deno_children().empty());
}

TEST_CASE("a package lock that is not one is refused at install_packages naming the file's fault", "[packages]") {
  test_support::TempDir dir;
  const auto lock = dir.path() / "lock.json";
  { std::ofstream(lock) << R"({"packages": {"x": {"name": "x", "version": "1", "file_name": "../x.whl", "sha256": ")"
                        << std::string(64, 'a') << R"("}}})"; }
  ci::PyodideOptions o;
  o.additional_packages = {"x"};
  o.wheel_dir = CI_TEST_PACKAGE_DIR;
  o.package_lock = lock;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kInstallPackages);
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "pyodide-lock.json: package 'x' has a file_name that is not a plain file name");
  }
}

TEST_CASE("packages are installed again when the runtime is respawned", "[packages][timing]") {
  ci::PyodideOptions o;
  o.additional_packages = {"ci_hello"};
  o.wheel_dir = CI_TEST_WHEEL_DIR;
  o.interrupt_grace = 500ms;
  auto sb = make_sandbox(o);
  ci::ExecuteOptions quick;
  quick.timeout = 500ms;
  auto killed = sb->execute_code(test_support::kUnstoppable, quick);
  REQUIRE(killed.state_lost);
  auto r = sb->execute_code("import ci_hello\nci_hello.greet('again')");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "'hello, again'");
}

TEST_CASE("creation that does not finish within create_timeout fails transiently and leaves no process",
          "[lifecycle]") {
  ci::PyodideOptions o;
  o.create_timeout = 50ms;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kStartRuntime);
    CHECK(e.kind() == ci::ErrorKind::kTimeout);
    CHECK(e.transient());
  }
  CHECK(test_support::no_deno_children());
}

TEST_CASE("creation can be cancelled through its stop_token", "[lifecycle][timing][concurrency]") {
  std::stop_source source;
  ci::PyodideOptions o;
  o.cancel = source.get_token();
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    source.request_stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(ci::PyodideSandbox::create(o), ci::SandboxStartError);
  canceller.join();
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  CHECK(test_support::no_deno_children());
}

TEST_CASE("after terminate every call throws SandboxNotInitializedError and the identity stays", "[lifecycle]") {
  auto sb = make_sandbox();
  const auto id = sb->sandbox_id();
  sb->terminate();
  CHECK(test_support::no_deno_children());
  auto expect_not_initialized = [](auto&& call) {
    try {
      call();
      FAIL("no exception");
    } catch (const ci::SandboxNotInitializedError& e) {
      CHECK(std::string(e.what()) == "Sandbox is not initialized");
      CHECK(e.stage() == ci::Stage::kNotInitialized);
    }
  };
  expect_not_initialized([&] { (void)sb->execute_code("1"); });
  expect_not_initialized([&] { (void)sb->execute_command("ls"); });
  expect_not_initialized([&] { (void)sb->download_file("/files/x"); });
  expect_not_initialized([&] { (void)sb->download_file_to("/files/x", "/tmp/ci-never-written"); });
  expect_not_initialized([&] { sb->write_file("/files/x", "y"); });
  expect_not_initialized([&] { (void)sb->read_file("/files/x"); });
  expect_not_initialized([&] { (void)sb->list_files("/files"); });
  expect_not_initialized([&] { sb->remove_file("/files/x"); });
  expect_not_initialized([&] { sb->make_dir("/files/d"); });
  expect_not_initialized([&] { sb->set_timeout(60s); });
  CHECK_NOTHROW(sb->terminate());  // twice is fine
  CHECK(sb->sandbox_id() == id);
  CHECK(sb->language() == ci::Language::kPython);
  CHECK(sb->additional_packages().empty());
  CHECK(sb->capabilities().upload_dir == "/files");
}

TEST_CASE("terminate refuses a non-positive timeout", "[lifecycle]") {
  auto sb = make_sandbox();
  CHECK_THROWS_AS(sb->terminate(ci::kNoTimeout), std::invalid_argument);
  CHECK_THROWS_AS(sb->terminate(std::chrono::milliseconds(-1)), std::invalid_argument);
  CHECK(sb->execute_code("1").status == ci::ExecutionStatus::kSuccess);
  sb->terminate(5000ms);
  CHECK(test_support::no_deno_children());
}

TEST_CASE("destroying a sandbox ends its runtime", "[lifecycle]") {
  {
    auto sb = make_sandbox();
    CHECK(test_support::deno_children().size() == 1);
  }
  CHECK(test_support::no_deno_children());
}

TEST_CASE("set_timeout is a no-op", "[lifecycle]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("v = 3").status == ci::ExecutionStatus::kSuccess);
  sb->set_timeout(1s);
  CHECK(sb->execute_code("v").results.at(0).data.at("text/plain") == "3");
}

// ---- hostile output: a runtime whose host script was altered to misbehave on a marker ----

namespace {
std::unique_ptr<ci::PyodideSandbox> hostile_sandbox(RuntimeCopy& copy) {
  auto host = test_support::read_text(copy.dir() / "host.mjs");
  // The protocol realm's main loop, where each checked answer is about to be signed and written; the marker is the
  // run's result value.
  const std::string anchor = "  if (answer.t !== \"out\") answered = current;\n";
  const auto at = host.find(anchor);
  REQUIRE(at != std::string::npos);
  host.insert(at + anchor.size(),
              "  const code = answer.t === 'result' ? String(answer.value ?? '') : '';\n"
              "  const id = answer.id;\n"
              "  if (code.includes('HOSTILE_OVERSIZE')) writeAll(new Uint8Array([0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]));\n"
              "  if (code.includes('HOSTILE_JSON')) writeAll(new Uint8Array([0, 0, 0, 3, 0, 0, 0, 0, 0x7b, 0x7b, 0x7b]));\n"
              "  if (code.includes('HOSTILE_ID')) send({ t: 'result', id: id + 1000, status: 'ok' });\n"
              "  if (code.includes('HOSTILE_TOKEN')) writeAll(encodeFrame({ t: 'result', id, status: 'ok' }));\n"
              "  if (code.includes('HOSTILE_CUT')) { writeAll(new Uint8Array([0, 0, 0, 40, 0, 0, 0, 0, 0x7b])); Deno.exit(0); }\n");
  copy.rewrite("host.mjs", host);
  return make_sandbox(with_runtime(copy.dir()));
}

void check_hostile(ci::PyodideSandbox& sb, const std::string& marker) {
  INFO(marker);
  REQUIRE(sb.execute_code("before = 1").status == ci::ExecutionStatus::kSuccess);
  auto r = sb.execute_code("print('seen', flush=True)\n'" + marker + "'");
  CHECK(r.status == ci::ExecutionStatus::kUnknown);
  REQUIRE(r.failure.has_value());
  CHECK(r.failure->exception_type == "pyodide.malformed_frame");
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.state_lost);
  CHECK(r.exit_code == -1);
  auto next = sb.execute_code("'before' in globals()");
  REQUIRE(next.status == ci::ExecutionStatus::kSuccess);
  CHECK(next.results.at(0).data.at("text/plain") == "False");
}
}  // namespace

TEST_CASE("an oversize frame from the runtime is UNKNOWN and the runtime is replaced", "[hostile]") {
  RuntimeCopy copy;
  auto sb = hostile_sandbox(copy);
  check_hostile(*sb, "HOSTILE_OVERSIZE");
}

TEST_CASE("a frame whose header is not JSON is UNKNOWN and the runtime is replaced", "[hostile]") {
  RuntimeCopy copy;
  auto sb = hostile_sandbox(copy);
  check_hostile(*sb, "HOSTILE_JSON");
}

TEST_CASE("a result for another request is UNKNOWN and the runtime is replaced", "[hostile]") {
  RuntimeCopy copy;
  auto sb = hostile_sandbox(copy);
  check_hostile(*sb, "HOSTILE_ID");
}

TEST_CASE("output that ends inside a frame is UNKNOWN, never SUCCESS", "[hostile]") {
  RuntimeCopy copy;
  auto sb = hostile_sandbox(copy);
  check_hostile(*sb, "HOSTILE_CUT");
}

TEST_CASE("a frame limit below one file chunk is refused at configure", "[lifecycle]") {
  ci::PyodideOptions o;
  o.max_frame_bytes = 1u << 20;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kConfigure);
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "max_frame_bytes must be at least 9437184 bytes (a file chunk of 8 MiB plus its header)");
  }
}

TEST_CASE("a package matching several wheels is refused rather than guessed", "[packages]") {
  const auto dir = std::filesystem::temp_directory_path() / ("ci-wheels-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path wheel = std::string(CI_TEST_WHEEL_DIR) + "/ci_hello-0.1.0-py3-none-any.whl";
  std::filesystem::copy_file(wheel, dir / "ci_hello-0.1.0-py3-none-any.whl");
  std::filesystem::copy_file(wheel, dir / "ci.hello-0.2.0-py3-none-any.whl");
  ci::PyodideOptions o;
  o.additional_packages = {"CI-Hello"};
  o.wheel_dir = dir;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kInstallPackages);
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()).find("matches several wheels") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
  CHECK(test_support::deno_children().empty());
}

TEST_CASE("a start that times out nests a TransportError of kind timeout", "[lifecycle]") {
  ci::PyodideOptions o;
  o.create_timeout = 10ms;
  try {
    (void)ci::PyodideSandbox::create(o);
    FAIL("create succeeded");
  } catch (const ci::SandboxStartError& e) {
    try {
      std::rethrow_if_nested(e);
      FAIL("nothing nested");
    } catch (const ci::TransportError& cause) {
      CHECK(cause.kind() == ci::TransportError::Kind::kTimeout);
      CHECK(std::string(cause.what()) == "the Pyodide runtime did not become ready in time");
    }
  }
  CHECK(test_support::no_deno_children());
}

TEST_CASE("no runtime survives a host program that is killed", "[lifecycle][timing]") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t host = ::fork();
  REQUIRE(host >= 0);
  if (host == 0) {
    // The host program: start a sandbox, report its runtime's pid, then die without any cleanup.
    ::close(pipe_fds[0]);
    try {
      auto sb = ci::PyodideSandbox::create();
      const auto children = test_support::deno_children();
      const pid_t runtime = children.size() == 1 ? children[0] : -1;
      [[maybe_unused]] auto n = ::write(pipe_fds[1], &runtime, sizeof runtime);
    } catch (...) {
    }
    ::raise(SIGKILL);
  }
  ::close(pipe_fds[1]);
  pid_t runtime = -1;
  REQUIRE(::read(pipe_fds[0], &runtime, sizeof runtime) == static_cast<ssize_t>(sizeof runtime));
  ::close(pipe_fds[0]);
  REQUIRE(runtime > 0);
  int status = 0;
  REQUIRE(::waitpid(host, &status, 0) == host);
  CHECK(WIFSIGNALED(status));
  // The runtime was the killed host's child; PR_SET_PDEATHSIG ends it. Poll until it is gone (or a zombie).
  const auto end = std::chrono::steady_clock::now() + 3s;
  bool gone = false;
  while (std::chrono::steady_clock::now() < end && !gone) {
    std::ifstream stat("/proc/" + std::to_string(runtime) + "/stat");
    std::string line;
    gone = !std::getline(stat, line) || line.find(") Z ") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(20ms);
  }
  CHECK(gone);
}

TEST_CASE("an interrupt_grace below 0 or over 24 hours is refused at configure", "[lifecycle]") {
  // Over 24 hours, now() plus the grace would overflow into a deadline in the past.
  const std::pair<std::chrono::milliseconds, const char*> cases[] = {
      {std::chrono::milliseconds(-100), "interrupt_grace must not be negative"},
      {std::chrono::milliseconds::max(), "interrupt_grace must be at most 24 hours"}};
  for (const auto& [grace, message] : cases) {
    ci::PyodideOptions o;
    o.interrupt_grace = grace;
    try {
      (void)ci::PyodideSandbox::create(o);
      FAIL("create succeeded");
    } catch (const ci::SandboxStartError& e) {
      CHECK(e.stage() == ci::Stage::kConfigure);
      CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
      CHECK(std::string(e.what()) == message);
    }
  }
}

TEST_CASE("the runtime has its own process group, so a terminal's Ctrl-C leaves it to the host", "[lifecycle]") {
  auto sb = make_sandbox();
  const auto children = test_support::deno_children();
  REQUIRE(children.size() == 1);
  CHECK(::getpgid(children[0]) == children[0]);
  CHECK(::getpgid(children[0]) != ::getpgrp());
}

TEST_CASE("a well-formed result without the runtime's token is taken as forged: UNKNOWN", "[hostile]") {
  RuntimeCopy copy;
  auto sb = hostile_sandbox(copy);
  check_hostile(*sb, "HOSTILE_TOKEN");
}

TEST_CASE("a runtime directory left by a host that died is removed by the next create", "[lifecycle]") {
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);  // a pid that no longer exists
  const auto stale = std::filesystem::temp_directory_path() / "code_interpreter-deno-stale-test";
  std::filesystem::create_directories(stale / "cache");
  test_support::write_text(stale / "owner", std::to_string(dead) + "\n");
  const auto alive = std::filesystem::temp_directory_path() / "code_interpreter-deno-alive-test";
  std::filesystem::create_directories(alive);
  test_support::write_text(alive / "owner", std::to_string(::getpid()) + "\n");
  auto sb = make_sandbox();
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(alive));  // its owner (this process) is alive
  std::filesystem::remove_all(alive);
}

TEST_CASE("a package file changed after create is refused when a respawned runtime loads it, never loaded",
          "[packages][timing]") {
  test_support::TempDir dir;
  for (const char* name : {"ci_base", "ci_tampered"}) {
    const std::string file = std::string(name) + "-0.1.0-py3-none-any.whl";
    std::filesystem::copy_file(std::filesystem::path(CI_TEST_PACKAGE_DIR) / file, dir.path() / file);
  }
  ci::PyodideOptions o;
  o.additional_packages = {"ci-base"};
  o.wheel_dir = dir.path();
  o.package_lock = CI_TEST_PACKAGE_LOCK;
  o.interrupt_grace = 500ms;
  auto sb = make_sandbox(o);
  REQUIRE(sb->execute_code("import ci_base\nci_base.VALUE").results.at(0).data.at("text/plain") == "41");
  // Another wheel put in its place, then a respawn (code that ignores the interrupt is killed).
  std::filesystem::copy_file(dir.path() / "ci_tampered-0.1.0-py3-none-any.whl",
                             dir.path() / "ci_base-0.1.0-py3-none-any.whl",
                             std::filesystem::copy_options::overwrite_existing);
  ci::ExecuteOptions quick;
  quick.timeout = 500ms;
  REQUIRE(sb->execute_code(test_support::kUnstoppable, quick).state_lost);
  auto r = sb->execute_code("import ci_base\nci_base.VALUE");
  CHECK(r.status != ci::ExecutionStatus::kSuccess);
  CHECK(r.results.empty());
  INFO(r.error);
  CHECK(r.error.find("ci_base-0.1.0-py3-none-any.whl does not match the SHA-256 its lock gives") != std::string::npos);
}
