// The factory by name, its JSON configuration and the provider registry (include/code_interpreter/factory.hpp,
// docs/backends.md).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "bedrock_test_support.hpp"
#include "code_interpreter/code_interpreter.hpp"
#include "e2b_test_support.hpp"
#include "http/http_client.hpp"
#include "../support/scoped_env.hpp"

using namespace code_interpreter;
using code_interpreter::test::BedrockServer;
using code_interpreter::test::E2BServer;
namespace fs = std::filesystem;

namespace {

// The configuration error `json` gives: stage configure, the kind, the exact message.
void check_refused(std::string_view json, ErrorKind kind, std::string_view message) {
  INFO("config: " << json);
  try {
    (void)sandbox_config_from_json(json);
    FAIL("no error");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == kind);
    CHECK(std::string(e.what()) == message);
    CHECK_FALSE(e.transient());
  }
}

using test_support::ScopedEnv;

BackendStatus status_of(const std::vector<BackendStatus>& all, std::string_view name) {
  for (const auto& s : all)
    if (s.name == name) return s;
  FAIL("no status for " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("a JSON configuration gives every common setting and the chosen backend's own options exactly",
          "[management][factory]") {
  const auto c = sandbox_config_from_json(R"({
    "backend": "e2b", "language": "javascript", "packages": ["numpy", "pandas"], "lifetime_seconds": 600,
    "env": {"A": "1", "B": "two"}, "metadata": {"run": "42"}, "create_timeout_ms": 60000,
    "e2b": {"domain": "example.test", "api_url": "http://127.0.0.1:1", "sandbox_url": "http://127.0.0.1:2",
            "template": "custom", "request_timeout_ms": 5000, "max_output_bytes": 1000, "max_line_bytes": 2000,
            "max_download_bytes": 3000, "process_keepalive_seconds": 7}})");
  CHECK(c.backend == "e2b");
  CHECK(c.language == Language::kJavaScript);
  CHECK(c.packages == std::vector<std::string>{"numpy", "pandas"});
  CHECK(c.lifetime == std::chrono::seconds(600));
  CHECK(c.env == std::map<std::string, std::string>{{"A", "1"}, {"B", "two"}});
  CHECK(c.metadata == std::map<std::string, std::string>{{"run", "42"}});
  CHECK(c.create_timeout == std::chrono::milliseconds(60000));
  CHECK_FALSE(c.name);
  CHECK(c.e2b.domain == "example.test");
  CHECK(c.e2b.api_url == "http://127.0.0.1:1");
  CHECK(c.e2b.sandbox_url == "http://127.0.0.1:2");
  CHECK(c.e2b.template_id == "custom");
  CHECK(c.e2b.request_timeout == std::chrono::milliseconds(5000));
  CHECK(c.e2b.max_output_bytes == 1000);
  CHECK(c.e2b.max_line_bytes == 2000);
  CHECK(c.e2b.max_download_bytes == 3000);
  CHECK(c.e2b.process_keepalive == std::chrono::seconds(7));
  CHECK_FALSE(c.e2b.api_key);
}

TEST_CASE("a JSON configuration of Pyodide and of Bedrock AgentCore reads their own sections", "[management][factory]") {
  const auto p = sandbox_config_from_json(R"({"pyodide": {"runtime_dir": "/rt", "wheel_dir": "/w",
    "snapshot_dir": "/s", "use_snapshot": false, "interrupt_grace_ms": 500, "max_output_bytes": 1, "max_frame_bytes": 2,
    "max_download_bytes": 3, "memory_limit_bytes": 4, "require_kernel_confinement": true}})");
  CHECK(p.backend == "pyodide");
  CHECK(p.pyodide.runtime_dir == fs::path("/rt"));
  CHECK(p.pyodide.wheel_dir == fs::path("/w"));
  CHECK(p.pyodide.snapshot_dir == fs::path("/s"));
  CHECK_FALSE(p.pyodide.use_snapshot);
  CHECK(p.pyodide.interrupt_grace == std::chrono::milliseconds(500));
  CHECK(p.pyodide.max_output_bytes == 1);
  CHECK(p.pyodide.max_frame_bytes == 2);
  CHECK(p.pyodide.max_download_bytes == 3);
  CHECK(p.pyodide.memory_limit_bytes == 4);
  CHECK(p.pyodide.require_kernel_confinement);

  const auto b = sandbox_config_from_json(R"({"backend": "bedrock", "language": "typescript", "name": "nightly",
    "lifetime_seconds": 1200, "bedrock": {"region": "eu-west-1", "endpoint_url": "http://127.0.0.1:3",
    "profile": "work", "code_interpreter_identifier": "mine", "request_timeout_ms": 7000, "max_output_bytes": 5,
    "max_message_bytes": 6, "max_download_bytes": 7}})");
  CHECK(b.backend == "bedrock");
  CHECK(b.language == Language::kTypeScript);
  CHECK(b.name == "nightly");
  CHECK(b.lifetime == std::chrono::seconds(1200));
  CHECK(b.bedrock.region == "eu-west-1");
  CHECK(b.bedrock.endpoint_url == "http://127.0.0.1:3");
  CHECK(b.bedrock.profile == "work");
  CHECK(b.bedrock.code_interpreter_identifier == "mine");
  CHECK(b.bedrock.request_timeout == std::chrono::milliseconds(7000));
  CHECK(b.bedrock.max_output_bytes == 5);
  CHECK(b.bedrock.max_message_bytes == 6);
  CHECK(b.bedrock.max_download_bytes == 7);
  CHECK_FALSE(b.bedrock.credentials);
}

TEST_CASE("an empty JSON object is the default configuration: Pyodide, Python", "[management][factory]") {
  const auto c = sandbox_config_from_json("{}");
  CHECK(c.backend == "pyodide");
  CHECK(c.language == Language::kPython);
  CHECK(c.packages.empty());
  CHECK_FALSE(c.lifetime);
  CHECK_FALSE(c.create_timeout);
}

TEST_CASE("unknown keys are refused by name, at the top and in a backend's section", "[management][factory]") {
  check_refused(R"({"backnd": "e2b"})", ErrorKind::kInvalidArgument, "configuration: unknown key 'backnd'");
  // A key cannot break the message's line or carry much: control characters and quotes shown as '?', 64 at most.
  check_refused("{\"sk-SECRET\\n[fake] log line\": 5}", ErrorKind::kInvalidArgument,
                "configuration: unknown key 'sk-SECRET?[fake] log line'");
  check_refused("{\"" + std::string(100, 'k') + "\": 5}", ErrorKind::kInvalidArgument,
                "configuration: unknown key '" + std::string(64, 'k') + "...'");
  check_refused(R"({"backend": "e2b", "e2b": {"templat": "x"}})", ErrorKind::kInvalidArgument,
                "configuration: unknown key 'e2b.templat'");
  check_refused(R"({"pyodide": {"network": true}})", ErrorKind::kInvalidArgument,
                "configuration: unknown key 'pyodide.network'");
}

TEST_CASE("a key given twice is refused, never silently the last one", "[management][factory]") {
  check_refused(R"({"backend": "pyodide", "backend": "e2b"})", ErrorKind::kInvalidArgument,
                "configuration: the key 'backend' appears twice");
  check_refused(R"({"backend": "e2b", "e2b": {"domain": "a", "domain": "b"}})", ErrorKind::kInvalidArgument,
                "configuration: the key 'e2b.domain' appears twice");
  check_refused(R"({"a": {"b": {"c": 1, "c": 2}}})", ErrorKind::kInvalidArgument,
                "configuration: the key 'a.b.c' appears twice");
  // The same name in two different objects is no duplicate.
  const auto c = sandbox_config_from_json(R"({"backend": "e2b", "env": {"max_output_bytes": "1"},
                                              "e2b": {"max_output_bytes": 9}})");
  CHECK(c.env.at("max_output_bytes") == "1");
  CHECK(c.e2b.max_output_bytes == 9);
}

TEST_CASE("values of the wrong type or range are refused by key, never quoting the value", "[management][factory]") {
  check_refused(R"({"backend": 3})", ErrorKind::kInvalidArgument, "configuration: 'backend' must be a string");
  check_refused(R"({"lifetime_seconds": "s3cr3t-value"})", ErrorKind::kInvalidArgument,
                "configuration: 'lifetime_seconds' must be a whole number of seconds above 0");
  check_refused(R"({"backend": "e2b", "lifetime_seconds": 0})", ErrorKind::kInvalidArgument,
                "configuration: 'lifetime_seconds' must be a whole number of seconds above 0");
  check_refused(R"({"packages": "numpy"})", ErrorKind::kInvalidArgument,
                "configuration: 'packages' must be an array of strings");
  check_refused(R"({"backend": "e2b", "env": {"A": 1}})", ErrorKind::kInvalidArgument,
                "configuration: 'env.A' must be a string");
  check_refused(R"({"pyodide": {"max_output_bytes": -1}})", ErrorKind::kInvalidArgument,
                "configuration: 'pyodide.max_output_bytes' must be a whole number from 0 to 18446744073709551615");
  const std::string ms_range = "must be a whole number of milliseconds from 1 to 2592000000 (30 days)";
  check_refused(R"({"pyodide": {"interrupt_grace_ms": 0}})", ErrorKind::kInvalidArgument,
                "configuration: 'pyodide.interrupt_grace_ms' " + ms_range);
  // Past what a clock can add without overflowing, and below zero: refused, never wrapped.
  check_refused(R"({"pyodide": {"interrupt_grace_ms": 9223372036854775807}})", ErrorKind::kInvalidArgument,
                "configuration: 'pyodide.interrupt_grace_ms' " + ms_range);
  check_refused(R"({"create_timeout_ms": 18446744073709551615})", ErrorKind::kInvalidArgument,
                "configuration: 'create_timeout_ms' " + ms_range);
  check_refused(R"({"create_timeout_ms": -5})", ErrorKind::kInvalidArgument,
                "configuration: 'create_timeout_ms' " + ms_range);
  check_refused(R"({"backend": "e2b", "e2b": {"request_timeout_ms": 1.5}})", ErrorKind::kInvalidArgument,
                "configuration: 'e2b.request_timeout_ms' " + ms_range);
  const std::string keepalive_range = "must be a whole number of seconds from 1 to 3600 (1 hour)";
  for (const char* value : {"0", "3601", "1.5", "-1", "\"50\""})
    check_refused(std::string(R"({"backend": "e2b", "e2b": {"process_keepalive_seconds": )") + value + "}}",
                  ErrorKind::kInvalidArgument, "configuration: 'e2b.process_keepalive_seconds' " + keepalive_range);
  const auto keepalive = [](const char* json) { return sandbox_config_from_json(json).e2b.process_keepalive; };
  CHECK(keepalive(R"({"backend": "e2b", "e2b": {"process_keepalive_seconds": 3600}})") == std::chrono::hours(1));
  CHECK(keepalive(R"({"backend": "e2b", "e2b": {"process_keepalive_seconds": 1}})") == std::chrono::seconds(1));
  check_refused(R"({"create_timeout_ms": 2592000001})", ErrorKind::kInvalidArgument,
                "configuration: 'create_timeout_ms' " + ms_range);
  CHECK(sandbox_config_from_json(R"({"create_timeout_ms": 2592000000})").create_timeout ==
        std::chrono::milliseconds(2592000000LL));
  // A number beyond a double: the parser's own message would quote it.
  check_refused(R"({"create_timeout_ms": 1e400})", ErrorKind::kInvalidArgument,
                "configuration: a number is out of range");
  check_refused(R"({"pyodide": {"max_output_bytes": -1e400}})", ErrorKind::kInvalidArgument,
                "configuration: a number is out of range");
  check_refused(R"({"pyodide": {"use_snapshot": "yes"}})", ErrorKind::kInvalidArgument,
                "configuration: 'pyodide.use_snapshot' must be true or false");
  check_refused(R"({"language": "cobol"})", ErrorKind::kInvalidArgument,
                "configuration: unknown language in 'language' (known: python, javascript, typescript, bash, r, java)");
  check_refused(R"({"pyodide": []})", ErrorKind::kInvalidArgument, "configuration: 'pyodide' must be an object");
}

TEST_CASE("text that is not a JSON object is refused with its position only", "[management][factory]") {
  check_refused(R"({"backend": "e2b", "e2b": {"domain": s3cr3t}})", ErrorKind::kInvalidArgument,
                "configuration: not JSON (at byte 38)");
  check_refused("", ErrorKind::kInvalidArgument, "configuration: not JSON (at byte 1)");
  check_refused(R"(["pyodide"])", ErrorKind::kInvalidArgument, "configuration: the document must be a JSON object");
  check_refused(std::string(40, '[') + std::string(40, ']'), ErrorKind::kInvalidArgument,
                "configuration: the document nests deeper than 16");
}

TEST_CASE("an unknown backend is refused naming the known ones", "[management][factory]") {
  check_refused(R"({"backend": "docker"})", ErrorKind::kInvalidArgument,
                "configuration: unknown backend in 'backend' (known: pyodide, e2b, bedrock)");
  // What was put there is not said back: it may be a secret pasted into the wrong field.
  check_refused(R"({"backend": "sk-e2b-SECRETVALUE123"})", ErrorKind::kInvalidArgument,
                "configuration: unknown backend in 'backend' (known: pyodide, e2b, bedrock)");
  SandboxConfig c;
  c.backend = "Pyodide";
  try {
    (void)create_sandbox(c);
    FAIL("no error");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "configuration: unknown backend in 'backend' (known: pyodide, e2b, bedrock)");
  }
}

TEST_CASE("a setting the chosen backend cannot honour is refused as unsupported, naming it", "[management][factory]") {
  check_refused(R"({"lifetime_seconds": 60})", ErrorKind::kUnsupported,
                "configuration: the backend pyodide cannot honour 'lifetime_seconds'");
  check_refused(R"({"env": {"A": "b"}})", ErrorKind::kUnsupported,
                "configuration: the backend pyodide cannot honour 'env'");
  check_refused(R"({"backend": "bedrock", "metadata": {"run": "1"}})", ErrorKind::kUnsupported,
                "configuration: the backend bedrock cannot honour 'metadata'");
  check_refused(R"({"backend": "bedrock", "env": {"A": "b"}})", ErrorKind::kUnsupported,
                "configuration: the backend bedrock cannot honour 'env'");
  check_refused(R"({"backend": "e2b", "name": "x"})", ErrorKind::kUnsupported,
                "configuration: the backend e2b cannot honour 'name'");
  check_refused(R"({"language": "javascript"})", ErrorKind::kUnsupported,
                "configuration: the backend pyodide does not run javascript code ('language')");
  check_refused(R"({"backend": "bedrock", "language": "bash"})", ErrorKind::kUnsupported,
                "configuration: the backend bedrock does not run bash code ('language')");
}

TEST_CASE("a section for another backend is refused as unsupported, wherever it stands", "[management][factory]") {
  check_refused(R"({"e2b": {"template": "x"}, "backend": "pyodide"})", ErrorKind::kUnsupported,
                "configuration: the key 'e2b' configures the backend e2b, not pyodide");
  check_refused(R"({"backend": "e2b", "bedrock": {}})", ErrorKind::kUnsupported,
                "configuration: the key 'bedrock' configures the backend bedrock, not e2b");
}

TEST_CASE("secrets are not read from a configuration document, and the refusal never repeats them",
          "[management][factory]") {
  const std::string key = "e2b_" + std::string(40, '7');
  try {
    (void)sandbox_config_from_json(R"({"backend": "e2b", "e2b": {"api_key": ")" + key + R"("}})");
    FAIL("no error");
  } catch (const SandboxStartError& e) {
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "configuration: 'e2b.api_key' is not read from a configuration: set E2B_API_KEY");
    CHECK(std::string(e.what()).find(key) == std::string::npos);
  }
  check_refused(R"({"backend": "bedrock", "bedrock": {"secret_access_key": "abc"}})", ErrorKind::kInvalidArgument,
                "configuration: 'bedrock.secret_access_key' is not read from a configuration: AWS credentials come "
                "from the environment or the AWS files");
}

TEST_CASE("create_sandbox refuses an unsupported C++ setting by its field name before creating anything",
          "[management][factory]") {
  SandboxConfig c;
  c.metadata = {{"run", "1"}};
  try {
    (void)create_sandbox(c);
    FAIL("no error");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kUnsupported);
    CHECK(std::string(e.what()) == "configuration: the backend pyodide cannot honour 'metadata'");
  }
}

TEST_CASE("create_sandbox makes a Pyodide sandbox from a JSON configuration and it runs Python",
          "[management][factory]") {
  const auto c = sandbox_config_from_json(R"({"backend": "pyodide", "pyodide": {"runtime_dir": ")" +
                                          std::string(CI_TEST_RUNTIME_DIR) + R"("}})");
  auto sandbox = create_sandbox(c);
  REQUIRE(dynamic_cast<PyodideSandbox*>(sandbox.get()) != nullptr);
  const auto r = sandbox->execute_code("print(6 * 7)");
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "42\n");
  sandbox->terminate();
}

TEST_CASE("create_sandbox makes an E2B sandbox with the common lifetime, env and metadata", "[management][factory]") {
  E2BServer server;
  SandboxConfig c;
  c.backend = "e2b";
  c.e2b = server.options();
  c.env = {{"CI_FACTORY", "from-config"}};
  c.metadata = {{"run", "factory-42"}};
  c.lifetime = std::chrono::seconds(123);
  auto sandbox = create_sandbox(c);
  REQUIRE(dynamic_cast<E2BSandbox*>(sandbox.get()) != nullptr);
  const auto r = sandbox->execute_code("import os\nprint(os.environ['CI_FACTORY'])");
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "from-config\n");
  // E2B lists the sandbox with its metadata (docs/protocols/e2b.md "Listing sandboxes by metadata").
  http::Request list;
  list.method = "GET";
  list.url = server.options().api_url.value() + "/v2/sandboxes";
  list.headers = {{"X-API-Key", test::kTestApiKey}};
  list.timeout = std::chrono::seconds(10);
  const auto ex = http::HttpClient::shared().perform(list);
  REQUIRE(ex.ok());
  const auto listed = nlohmann::json::parse(ex.response.body);
  REQUIRE(listed.size() == 1);
  // Beside the library's own key (the token that finds a sandbox whose create was lost: docs/backends/e2b.md).
  CHECK(listed[0].at("metadata").at("run") == "factory-42");
  // ... and its tag, the process's when the configuration names none (management.hpp).
  CHECK(listed[0].at("metadata").at(std::string(kTagMetadataKey)) == process_sandbox_tag());
  CHECK(listed[0].at("metadata").size() == 3);
  CHECK(listed[0].at("sandboxID") == *sandbox->sandbox_id());
  sandbox->terminate();
}

TEST_CASE("create_sandbox makes a Bedrock AgentCore sandbox with the common name and lifetime",
          "[management][factory]") {
  BedrockServer server;
  SandboxConfig c;
  c.backend = "bedrock";
  c.bedrock = server.options();
  c.name = "factory-session";
  c.lifetime = std::chrono::seconds(900);
  auto sandbox = create_sandbox(c);
  REQUIRE(dynamic_cast<BedrockAgentCoreSandbox*>(sandbox.get()) != nullptr);
  const auto r = sandbox->execute_code("print(6 * 7)");
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "42\n");
  CHECK(server.requests("start").size() == 1);
  sandbox->terminate();
  CHECK(server.all_signatures_valid());
}

TEST_CASE("the registry reports each backend in order and Pyodide available with its runtime",
          "[management][registry]") {
  const auto all = available_backends(fs::path(CI_TEST_RUNTIME_DIR));
  REQUIRE(all.size() == 3);
  CHECK(all[0].name == "pyodide");
  CHECK(all[1].name == "e2b");
  CHECK(all[2].name == "bedrock");
  CHECK(all[0].available);
  CHECK(all[0].missing.empty());
  CHECK(all[0].how.empty());
}

TEST_CASE("the registry names a missing Pyodide runtime directory and how to get it", "[management][registry]") {
  const fs::path missing = fs::temp_directory_path() / "ci-no-runtime-here";
  const auto s = status_of(available_backends(missing), "pyodide");
  CHECK_FALSE(s.available);
  CHECK(s.missing == std::vector<std::string>{missing.string()});
  CHECK(s.how.find("PyodideOptions::runtime_dir") != std::string::npos);
}

TEST_CASE("the registry finds E2B's key by its name only and never returns its value", "[management][registry]") {
  {
    ScopedEnv key("E2B_API_KEY", std::nullopt);
    const auto s = status_of(available_backends(), "e2b");
    CHECK_FALSE(s.available);
    CHECK(s.missing == std::vector<std::string>{"E2B_API_KEY"});
    CHECK(s.how == "set E2B_API_KEY to an API key of your E2B team (or pass E2BOptions::api_key)");
  }
  const std::string secret = "e2b_" + std::string(40, '9');
  ScopedEnv key("E2B_API_KEY", secret);
  const auto s = status_of(available_backends(), "e2b");
  CHECK(s.available);
  CHECK(s.missing.empty());
  CHECK(s.how.empty());
}

TEST_CASE("the registry reports Bedrock AgentCore's missing credentials and region by variable name",
          "[management][registry]") {
  const fs::path empty = fs::temp_directory_path() / "ci-registry-no-aws";
  fs::create_directories(empty);
  ScopedEnv home("HOME", empty.string());
  ScopedEnv credentials_file("AWS_SHARED_CREDENTIALS_FILE", (empty / "credentials").string());
  ScopedEnv config_file("AWS_CONFIG_FILE", (empty / "config").string());
  ScopedEnv profile("AWS_PROFILE", std::nullopt);
  ScopedEnv region2("AWS_DEFAULT_REGION", std::nullopt);
  ScopedEnv endpoint_agentcore("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", std::nullopt);
  ScopedEnv endpoint_any("AWS_ENDPOINT_URL", std::nullopt);
  {
    ScopedEnv id("AWS_ACCESS_KEY_ID", std::nullopt);
    ScopedEnv secret("AWS_SECRET_ACCESS_KEY", std::nullopt);
    ScopedEnv region("AWS_REGION", "us-east-1");
    const auto s = status_of(available_backends(), "bedrock");
    CHECK_FALSE(s.available);
    CHECK(s.missing == std::vector<std::string>{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"});
    CHECK(s.how.find("no AWS credentials") != std::string::npos);
  }
  const std::string secret_value = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  ScopedEnv id("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE");
  ScopedEnv secret("AWS_SECRET_ACCESS_KEY", secret_value);
  {
    ScopedEnv region("AWS_REGION", std::nullopt);
    const auto s = status_of(available_backends(), "bedrock");
    CHECK_FALSE(s.available);
    CHECK(s.missing == std::vector<std::string>{"AWS_REGION"});
    CHECK(s.how.find(secret_value) == std::string::npos);
  }
  ScopedEnv region("AWS_REGION", "us-east-1");
  {
    // A malformed endpoint holding a password: reported, never repeated.
    ScopedEnv endpoint("AWS_ENDPOINT_URL", "svc:SuperSecretPassw0rd@proxy.internal:8443");
    const auto s = status_of(available_backends(), "bedrock");
    CHECK_FALSE(s.available);
    CHECK(s.missing.empty());
    CHECK(s.how == "the Bedrock endpoint must start with http:// or https://");
  }
  const auto s = status_of(available_backends(), "bedrock");
  CHECK(s.available);
  CHECK(s.missing.empty());
}
