// SandboxManager (include/code_interpreter/management.hpp) against the local E2B and AgentCore servers: list, get,
// kill, pause, resume and sweep, tags and their encodings, verbs a backend lacks, hostile listings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bedrock/stub.hpp"
#include "core/manager.hpp"
#include "bedrock_test_support.hpp"
#include "code_interpreter/code_interpreter.hpp"
#include "code_interpreter/testing/fake_sandbox.hpp"
#include "e2b_test_support.hpp"
#include "http/http_client.hpp"

using namespace code_interpreter;
using code_interpreter::test::BedrockServer;
using code_interpreter::test::E2BServer;
using nlohmann::json;

namespace {

std::unique_ptr<SandboxManager> e2b_manager(const E2BServer& server) {
  SandboxConfig c;
  c.backend = "e2b";
  c.e2b = server.options();
  return create_manager(c);
}

std::unique_ptr<SandboxManager> bedrock_manager(const BedrockServer& server) {
  SandboxConfig c;
  c.backend = "bedrock";
  c.bedrock = server.options();
  return create_manager(c);
}

std::unique_ptr<E2BSandbox> e2b_tagged(const E2BServer& server, std::optional<std::string> tag) {
  auto o = server.options();
  o.tag = std::move(tag);
  return E2BSandbox::create(o);
}

std::unique_ptr<BedrockAgentCoreSandbox> bedrock_tagged(const BedrockServer& server, std::string tag,
                                                        std::optional<std::string> name = std::nullopt) {
  auto o = server.options();
  o.tag = std::move(tag);
  o.session_name = std::move(name);
  return BedrockAgentCoreSandbox::create(o);
}

// An E2B API call made directly (with the test key): what the server stored, or a sandbox made without the library.
json e2b_api(const E2BServer& server, const std::string& method, const std::string& path, const json& body = nullptr) {
  http::Request r;
  r.method = method;
  r.url = server.api_url() + path;
  r.headers = {{"X-API-Key", test::kTestApiKey}};
  if (!body.is_null()) {
    r.body = body.dump();
    r.headers.emplace_back("Content-Type", "application/json");
  }
  r.timeout = std::chrono::seconds(10);
  const auto ex = http::HttpClient::shared().perform(r);
  REQUIRE(ex.ok());
  return ex.response.body.empty() ? json() : json::parse(ex.response.body);
}

std::vector<std::string> ids_of(const std::vector<SandboxInfo>& infos) {
  std::vector<std::string> ids;
  for (const auto& i : infos) ids.push_back(i.sandbox_id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The SandboxManagementError `call` throws: stage manage, the kind, the exact message.
template <typename Call>
void check_management_error(Call&& call, ErrorKind kind, std::string_view message) {
  try {
    call();
    FAIL("no error");
  } catch (const SandboxManagementError& e) {
    CHECK(e.stage() == Stage::kManage);
    CHECK(e.kind() == kind);
    CHECK(std::string(e.what()) == message);
  }
}

template <typename Call>
void check_start_error(Call&& call, ErrorKind kind, std::string_view message) {
  try {
    call();
    FAIL("no error");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == kind);
    CHECK(std::string(e.what()) == message);
  }
}

}  // namespace

// ---- tags ----

TEST_CASE("a tag is 1..32 characters of A-Z, a-z, 0-9 and _, and the process's tag is one of them, always the same",
          "[management][tags]") {
  CHECK(is_valid_sandbox_tag("a"));
  CHECK(is_valid_sandbox_tag("Nightly_Run_2"));
  CHECK(is_valid_sandbox_tag(std::string(32, 'x')));
  CHECK_FALSE(is_valid_sandbox_tag(""));
  CHECK_FALSE(is_valid_sandbox_tag(std::string(33, 'x')));
  CHECK_FALSE(is_valid_sandbox_tag("a.b"));
  CHECK_FALSE(is_valid_sandbox_tag("a-b"));
  CHECK_FALSE(is_valid_sandbox_tag("caf\xc3\xa9"));
  CHECK(is_valid_sandbox_tag(process_sandbox_tag()));
  CHECK(process_sandbox_tag().size() == 17);
  CHECK(&process_sandbox_tag() == &process_sandbox_tag());
  CHECK(to_string(SandboxState::kRunning) == "running");
  CHECK(to_string(SandboxState::kPaused) == "paused");
  CHECK(to_string(SandboxState::kTerminated) == "terminated");
  CHECK(to_string(SandboxState::kUnknown) == "unknown");
}

TEST_CASE("AgentCore session names carry the tag as ci.<tag>.<name>, and only such a prefix is read back as a tag",
          "[management][tags]") {
  using bedrock::session_name_on_wire;
  using bedrock::split_session_name;
  CHECK(session_name_on_wire(std::string("A"), std::string("job")) == "ci.A.job");
  CHECK(session_name_on_wire(std::string("A"), std::nullopt) == "ci.A");
  CHECK(session_name_on_wire(std::nullopt, std::string("job")) == "job");
  using Split = std::pair<std::optional<std::string>, std::optional<std::string>>;
  CHECK(split_session_name("ci.A.job") == Split{"A", "job"});
  CHECK(split_session_name("ci.A") == Split{"A", std::nullopt});
  CHECK(split_session_name("ci.A.b.c") == Split{"A", "b.c"});
  CHECK(split_session_name("A.job") == Split{std::nullopt, "A.job"});
  CHECK(split_session_name("ci.a-b.job") == Split{std::nullopt, "ci.a-b.job"});
  CHECK(split_session_name("ci.A.") == Split{std::nullopt, "ci.A."});
  CHECK(split_session_name("ci.") == Split{std::nullopt, "ci."});
}

TEST_CASE("a session_name may have 100 characters less the tag's prefix, counted in characters",
          "[management][tags]") {
  BedrockServer server;
  std::string name;
  for (int i = 0; i < 95; ++i) name += "\xc3\xa9";  // 95 characters: 100 less "ci.t."
  auto sandbox = bedrock_tagged(server, "t", name);
  const auto starts = server.requests("start");
  sandbox->terminate();
  check_start_error([&] { (void)bedrock_tagged(server, "t", name + "x"); }, ErrorKind::kInvalidArgument,
                    "session_name must be 1..95 characters of UTF-8 (the service's 100 less the tag's prefix ci.t.)");
  check_start_error([&] { (void)bedrock_tagged(server, "bad-tag"); }, ErrorKind::kInvalidArgument,
                    "tag must be 1..32 characters of A-Z, a-z, 0-9 and _");
  CHECK(server.requests("start").size() == 1);
  REQUIRE(starts.size() == 1);
}

TEST_CASE("E2B create tags the sandbox in its metadata and refuses a caller's metadata under the tag's key",
          "[management][tags]") {
  E2BServer server;
  auto sandbox = e2b_tagged(server, "nightly");
  const auto detail = e2b_api(server, "GET", "/sandboxes/" + *sandbox->sandbox_id());
  CHECK(detail.at("metadata").at("code_interpreter.tag") == "nightly");
  auto untagged = e2b_tagged(server, std::nullopt);
  CHECK(e2b_api(server, "GET", "/sandboxes/" + *untagged->sandbox_id()).at("metadata").at("code_interpreter.tag") ==
        process_sandbox_tag());
  sandbox->terminate();
  untagged->terminate();
  auto o = server.options();
  o.metadata = {{"code_interpreter.tag", "forged"}};
  check_start_error([&] { (void)E2BSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "metadata: the key code_interpreter.tag is the library's; set E2BOptions::tag");
  o.metadata.clear();
  o.tag = "";
  check_start_error([&] { (void)E2BSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "tag must be 1..32 characters of A-Z, a-z, 0-9 and _");
  CHECK(server.requests("POST", "/v2/sandboxes").size() == 2);
}

TEST_CASE("times of a listing are RFC 3339 with Z or an offset and an optional fraction, and nothing else",
          "[management][hostile]") {
  using detail::parse_rfc3339;
  using namespace std::chrono;
  const auto at = [](int h, int m, int s) { return sys_days(year(2026) / 1 / 2) + hours(h) + minutes(m) + seconds(s); };
  CHECK(parse_rfc3339("2026-01-02T03:04:05Z") == at(3, 4, 5));
  CHECK(parse_rfc3339("2026-01-02t03:04:05z") == at(3, 4, 5));
  CHECK(parse_rfc3339("2026-01-02T03:04:05.5Z") == at(3, 4, 5) + milliseconds(500));
  CHECK(parse_rfc3339("2026-01-02T03:04:05.123456789123Z") == at(3, 4, 5) + nanoseconds(123456789));
  CHECK(parse_rfc3339("2026-01-02T03:04:05+02:30") == at(0, 34, 5));
  CHECK(parse_rfc3339("2026-01-02T03:04:05-01:00") == at(4, 4, 5));
  // Past what system_clock holds in nanoseconds (about 2262, 1677): clamped, never wrapped into another time.
  const auto latest = system_clock::time_point(duration_cast<system_clock::duration>(
      duration_cast<seconds>(system_clock::duration::max())));
  const auto earliest = system_clock::time_point(duration_cast<system_clock::duration>(
      duration_cast<seconds>(system_clock::duration::min())));
  CHECK(parse_rfc3339("2300-01-01T00:00:00.5Z") == latest);
  CHECK(parse_rfc3339("9999-12-31T23:59:59Z") == latest);
  CHECK(parse_rfc3339("1600-01-01T00:00:00Z") == earliest);
  CHECK(parse_rfc3339("2262-01-01T00:00:00Z") == sys_days(year(2262) / 1 / 1));
  for (const char* bad : {"", "2026-01-02", "2026-01-02T03:04:05", "2026-01-02 03:04:05Z", "2026-02-30T00:00:00Z",
                          "2026-13-01T00:00:00Z", "2026-01-02T24:00:00Z", "2026-01-02T03:04:05.Z",
                          "2026-01-02T03:04:05+0200", "2026-01-02T03:04:05Zjunk", "+2026-01-02T03:04:05Z",
                          "1767322000"}) {
    INFO("text: " << bad);
    CHECK_FALSE(parse_rfc3339(bad).has_value());
  }
}

// ---- E2B manager ----

TEST_CASE("E2B list pages through exactly the sandboxes of a tag, with limit and nextToken", "[management][e2b]") {
  E2BServer server;
  std::vector<std::unique_ptr<E2BSandbox>> mine;
  for (int i = 0; i < 3; ++i) mine.push_back(e2b_tagged(server, "pages"));
  auto other = e2b_tagged(server, "other");
  auto manager = e2b_manager(server);
  SandboxFilter filter;
  filter.tag = "pages";
  const auto first = manager->list_page(filter, 2);
  REQUIRE(first.sandboxes.size() == 2);
  REQUIRE(first.next_token.has_value());
  const auto second = manager->list_page(filter, 2, first.next_token);
  REQUIRE(second.sandboxes.size() == 1);
  CHECK_FALSE(second.next_token.has_value());
  std::vector<SandboxInfo> both = first.sandboxes;
  both.insert(both.end(), second.sandboxes.begin(), second.sandboxes.end());
  CHECK(ids_of(both) == sorted({*mine[0]->sandbox_id(), *mine[1]->sandbox_id(), *mine[2]->sandbox_id()}));
  CHECK(ids_of(manager->list(filter)) == ids_of(both));
  // The tag travels as E2B's metadata filter, encoded as the JS SDK does (docs/protocols/e2b.md).
  const auto listed = server.requests("GET", "/v2/sandboxes");
  REQUIRE(listed.size() >= 2);
  CHECK(listed[0].at("path") == "/v2/sandboxes?state=running%2Cpaused&limit=2&metadata=code_interpreter.tag%3Dpages");
  CHECK(ids_of(manager->list()) ==
        sorted({*mine[0]->sandbox_id(), *mine[1]->sandbox_id(), *mine[2]->sandbox_id(), *other->sandbox_id()}));
  for (auto& s : mine) s->terminate();
  other->terminate();
}

TEST_CASE("E2B get reports a sandbox's id, state, times, metadata, tag and template, and nullopt for an unknown id",
          "[management][e2b]") {
  E2BServer server;
  auto o = server.options();
  o.tag = "getter";
  o.metadata = {{"run", "7"}};
  auto sandbox = E2BSandbox::create(o);
  auto manager = e2b_manager(server);
  const auto info = manager->get(*sandbox->sandbox_id());
  REQUIRE(info.has_value());
  CHECK(info->sandbox_id == *sandbox->sandbox_id());
  CHECK(info->backend == "e2b");
  CHECK(info->state == SandboxState::kRunning);
  CHECK(info->raw_state == "running");
  CHECK(info->tag == "getter");
  CHECK(info->metadata.at("run") == "7");
  CHECK(info->metadata.at("code_interpreter.tag") == "getter");
  CHECK(info->template_id == "code-interpreter-v1");
  CHECK_FALSE(info->name.has_value());
  REQUIRE(info->created_at.has_value());
  REQUIRE(info->end_at.has_value());
  CHECK(*info->end_at - *info->created_at == std::chrono::seconds(300));
  CHECK_FALSE(manager->get("doesnotexist00000000").has_value());
  sandbox->terminate();
  CHECK_FALSE(manager->get(info->sandbox_id).has_value());  // E2B forgets a killed sandbox
}

TEST_CASE("E2B kill answers true, then false once the sandbox is gone", "[management][e2b]") {
  E2BServer server;
  auto sandbox = e2b_tagged(server, "killer");
  const auto id = *sandbox->sandbox_id();
  auto manager = e2b_manager(server);
  CHECK(manager->kill(id));
  CHECK(server.alive().empty());
  CHECK_FALSE(manager->kill(id));
  sandbox->terminate();  // 404: already gone, which is what terminate wants
}

TEST_CASE("E2B pause answers true then false, a paused sandbox is unreachable, resume brings it back with its state",
          "[management][e2b]") {
  E2BServer server;
  auto sandbox = e2b_tagged(server, "pauser");
  const auto id = *sandbox->sandbox_id();
  REQUIRE(sandbox->execute_code("kept = 41").status == ExecutionStatus::kSuccess);
  auto manager = e2b_manager(server);
  CHECK(manager->pause(id));
  CHECK_FALSE(manager->pause(id));
  CHECK(manager->get(id)->state == SandboxState::kPaused);
  CHECK(manager->get(id)->raw_state == "paused");
  const auto gone = sandbox->execute_code("kept");
  CHECK(gone.status == ExecutionStatus::kError);
  CHECK(gone.state_lost);
  SandboxFilter paused;
  paused.states = {SandboxState::kPaused};
  CHECK(ids_of(manager->list(paused)) == std::vector<std::string>{id});
  SandboxFilter running;
  running.states = {SandboxState::kRunning};
  CHECK(manager->list(running).empty());
  manager->resume(id, std::chrono::seconds(120));
  const auto connects = server.requests("POST", "/v2/sandboxes/" + id + "/connect");
  REQUIRE(connects.size() == 1);
  CHECK(connects[0].at("status") == 201);
  CHECK(manager->get(id)->state == SandboxState::kRunning);
  const auto back = sandbox->execute_code("print(kept + 1)");
  CHECK(back.status == ExecutionStatus::kSuccess);
  CHECK(back.stdout_text == "42\n");
  sandbox->terminate();
}

TEST_CASE("E2B pause and resume of an unknown sandbox are kNotFound", "[management][e2b]") {
  E2BServer server;
  auto manager = e2b_manager(server);
  try {
    (void)manager->pause("doesnotexist00000000");
    FAIL("no error");
  } catch (const SandboxManagementError& e) {
    CHECK(e.stage() == Stage::kManage);
    CHECK(e.kind() == ErrorKind::kNotFound);
    CHECK_FALSE(e.transient());
  }
  try {
    manager->resume("doesnotexist00000000");
    FAIL("no error");
  } catch (const SandboxManagementError& e) {
    CHECK(e.kind() == ErrorKind::kNotFound);
  }
}

TEST_CASE("E2B sweep kills exactly the sandboxes of its tag: another tag, a longer tag and an untagged one live on",
          "[management][e2b][sweep]") {
  E2BServer server;
  auto a1 = e2b_tagged(server, "A");
  auto a2 = e2b_tagged(server, "A");
  auto b = e2b_tagged(server, "B");
  auto aa = e2b_tagged(server, "AA");
  // Made without the library: no tag at all.
  const auto untagged = e2b_api(server, "POST", "/v2/sandboxes", {{"templateID", "code-interpreter-v1"}}).at("sandboxID").get<std::string>();
  auto manager = e2b_manager(server);
  const auto report = manager->sweep("A");
  CHECK(sorted(report.killed) == sorted({*a1->sandbox_id(), *a2->sandbox_id()}));
  CHECK(report.failed.empty());
  CHECK(sorted(server.alive()) == sorted({*b->sandbox_id(), *aa->sandbox_id(), untagged}));
  CHECK(manager->sweep("A").killed.empty());
  a1->terminate();
  a2->terminate();
  b->terminate();
  aa->terminate();
  CHECK(manager->kill(untagged));
}

TEST_CASE("E2B sweep never kills another tag's sandbox even when the service ignores the tag filter",
          "[management][e2b][sweep][hostile]") {
  E2BServer server;
  auto b = e2b_tagged(server, "B");
  const auto listing = e2b_api(server, "GET", "/v2/sandboxes");  // lists B, whatever the filter says
  server.fault({{"surface", "api"}, {"method", "GET"}, {"path", "/v2/sandboxes"}, {"count", -1}, {"action", "status"},
                {"status", 200}, {"body", listing.dump()}});
  auto manager = e2b_manager(server);
  const auto report = manager->sweep("A");
  CHECK(report.killed.empty());
  CHECK(report.failed.empty());
  CHECK(server.alive() == std::vector<std::string>{*b->sandbox_id()});
  SandboxFilter a;
  a.tag = "A";
  CHECK(manager->list_page(a).sandboxes.empty());
  server.clear_faults();
  b->terminate();
}

TEST_CASE("E2B hostile listings: a malformed entry is dropped, more entries than the page is kInternal, not an "
          "array is kInternal, a repeated page token is kInternal",
          "[management][e2b][hostile]") {
  E2BServer server;
  auto manager = e2b_manager(server);
  const auto entry = [](const std::string& id) {
    return json{{"sandboxID", id}, {"templateID", "t"}, {"state", "running"}, {"startedAt", "2026-01-02T03:04:05.5Z"},
                {"endAt", "2026-01-02T03:09:05Z"}, {"metadata", {{"code_interpreter.tag", "h"}}}};
  };
  json bad_time = entry("abc2");
  bad_time["startedAt"] = 1767322000;
  const json page = json::array({entry("abc1"), entry("ABC/../x"), bad_time, json("text"), entry("abc3")});
  server.fault({{"surface", "api"}, {"path", "/v2/sandboxes"}, {"action", "status"}, {"status", 200}, {"body", page.dump()}});
  const auto listed = manager->list_page();
  CHECK(ids_of(listed.sandboxes) == std::vector<std::string>{"abc1", "abc3"});
  REQUIRE(listed.sandboxes[0].created_at.has_value());
  CHECK(*listed.sandboxes[1].end_at - *listed.sandboxes[1].created_at == std::chrono::milliseconds(299500));
  CHECK(listed.sandboxes[0].tag == "h");

  json huge = json::array();
  for (int i = 0; i < 3; ++i) huge.push_back(entry("abc" + std::to_string(i)));
  server.fault({{"surface", "api"}, {"path", "/v2/sandboxes"}, {"action", "status"}, {"status", 200}, {"body", huge.dump()}});
  check_management_error([&] { (void)manager->list_page({}, 2); }, ErrorKind::kInternal,
                         "e2b: the listing answered 3 sandboxes for a page of at most 2");
  server.fault({{"surface", "api"}, {"path", "/v2/sandboxes"}, {"action", "status"}, {"status", 200}, {"body", R"({"items":[]})"}});
  check_management_error([&] { (void)manager->list_page(); }, ErrorKind::kInternal,
                         "e2b: the listing is not a JSON array");
}

TEST_CASE("a management error never carries the E2B API key, even when the service echoes it", "[management][e2b][secrets]") {
  E2BServer server;
  server.fault({{"surface", "api"}, {"path", "/v2/sandboxes"}, {"action", "status"}, {"status", 401},
                {"message", "bad key " + test::kTestApiKey}});
  auto manager = e2b_manager(server);
  try {
    (void)manager->list();
    FAIL("no error");
  } catch (const SandboxManagementError& e) {
    CHECK(e.kind() == ErrorKind::kUnauthenticated);
    CHECK(std::string(e.what()).find(test::kTestApiKey) == std::string::npos);
    CHECK(std::string(e.what()).rfind("e2b: list failed: ", 0) == 0);
    const auto* cause = test::nested_transport(e);
    REQUIRE(cause != nullptr);
    CHECK(std::string(cause->what()).find(test::kTestApiKey) == std::string::npos);
  }
}

TEST_CASE("a management error never carries the AWS secret key, even when the service echoes it",
          "[management][bedrock][secrets]") {
  BedrockServer server;
  server.fault({{"operation", "stop"}, {"action", "status"}, {"status", 403},
                {"message", "denied for " + test::kTestCredentials.secret_access_key}});
  auto manager = bedrock_manager(server);
  try {
    (void)manager->kill("abc123");
    FAIL("no error");
  } catch (const SandboxManagementError& e) {
    CHECK(e.stage() == Stage::kManage);
    CHECK(e.kind() == ErrorKind::kPermissionDenied);
    const std::string said = e.what();
    CHECK(said.rfind("bedrock: StopCodeInterpreterSession failed: HTTP 403 AccessDeniedException: denied for ", 0) == 0);
    CHECK(said.find(test::kTestCredentials.secret_access_key) == std::string::npos);
    const auto* cause = test::nested_transport(e);
    REQUIRE(cause != nullptr);
    CHECK(std::string(cause->what()).find(test::kTestCredentials.secret_access_key) == std::string::npos);
  }
}

// ---- network policy on E2B ----

TEST_CASE("E2B create sends exactly the network fields of its policy, as the official SDK does", "[management][network][e2b]") {
  E2BServer server;
  auto o = server.options();
  o.network_policy = NetworkPolicy::none();
  auto closed = E2BSandbox::create(o);
  o.network_policy = NetworkPolicy::allowlist({"pypi.org", "*.example.com", "10.0.0.0/8"});
  auto listed = E2BSandbox::create(o);
  o.network_policy = NetworkPolicy::all();
  auto open = E2BSandbox::create(o);
  o.network_policy.reset();
  auto unset = E2BSandbox::create(o);

  const auto detail = [&](const E2BSandbox& s) { return e2b_api(server, "GET", "/sandboxes/" + *s.sandbox_id()); };
  CHECK(detail(*closed).at("allowInternetAccess") == false);
  CHECK(detail(*closed).at("network").is_null());
  CHECK(detail(*listed).at("allowInternetAccess").is_null());
  CHECK(detail(*listed).at("network") ==
        json{{"allowOut", {"pypi.org", "*.example.com", "10.0.0.0/8"}}, {"denyOut", {"0.0.0.0/0"}}});
  for (const auto* s : {open.get(), unset.get()}) {
    CHECK(detail(*s).at("allowInternetAccess").is_null());
    CHECK(detail(*s).at("network").is_null());
  }
  const std::vector<NetworkAccess> every{NetworkAccess::kNone, NetworkAccess::kAllowlist, NetworkAccess::kAll};
  CHECK(closed->capabilities().network_policies == every);
  CHECK_FALSE(closed->capabilities().network);
  CHECK(listed->capabilities().network);
  CHECK(open->capabilities().network);
  for (auto* s : {closed.get(), listed.get(), open.get(), unset.get()}) s->terminate();
}

TEST_CASE("a malformed allowlist is refused before anything is sent, naming the index and never the host",
          "[management][network]") {
  E2BServer server;
  auto o = server.options();
  o.network_policy = NetworkPolicy::allowlist({"pypi.org", "bad host\n"});
  check_start_error([&] { (void)E2BSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "network_policy: allowed_hosts[1] is not a host name, an IPv4 address or a CIDR range");
  o.network_policy = NetworkPolicy::allowlist({});
  check_start_error([&] { (void)E2BSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "network_policy: an allowlist needs 1..100 hosts (it has 0)");
  o.network_policy = NetworkPolicy::allowlist(std::vector<std::string>(101, "a.b"));
  check_start_error([&] { (void)E2BSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "network_policy: an allowlist needs 1..100 hosts (it has 101)");
  o.network_policy = NetworkPolicy{NetworkAccess::kNone, {"pypi.org"}};
  check_start_error([&] { (void)E2BSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "network_policy: allowed_hosts must be empty unless access is allowlist (it is none)");
  o.network_policy = NetworkPolicy::allowlist({"a.*.b"});
  check_start_error([&] { (void)E2BSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "network_policy: allowed_hosts[0] is not a host name, an IPv4 address or a CIDR range");
  CHECK(server.requests("POST").empty());
}

TEST_CASE("Pyodide honours only network policy none: all and allowlist are refused at create, unsupported",
          "[management][network][pyodide]") {
  PyodideOptions o;
  o.network_policy = NetworkPolicy::all();
  check_start_error([&] { (void)PyodideSandbox::create(o); }, ErrorKind::kUnsupported,
                    "the Pyodide sandbox cannot honour network policy 'all': its runtime has no network (only 'none')");
  o.network_policy = NetworkPolicy::allowlist({"pypi.org"});
  check_start_error([&] { (void)PyodideSandbox::create(o); }, ErrorKind::kUnsupported,
                    "the Pyodide sandbox cannot honour network policy 'allowlist': its runtime has no network (only "
                    "'none')");
  testing::FakeSandbox fake;
  CHECK(fake.capabilities().network_policies == std::vector<NetworkAccess>{NetworkAccess::kNone});
}

TEST_CASE("Bedrock AgentCore refuses network policies none and allowlist, and all unless the interpreter is PUBLIC",
          "[management][network][bedrock]") {
  BedrockServer server({"--interpreter", "myPublic-abc1234567"});  // a custom interpreter, PUBLIC by the options' word
  auto o = server.options();
  o.network_policy = NetworkPolicy::none();
  check_start_error([&] { (void)BedrockAgentCoreSandbox::create(o); }, ErrorKind::kUnsupported,
                    "Bedrock AgentCore cannot honour network policy 'none': no interpreter network mode has no network "
                    "(SANDBOX mode still reaches S3 and DNS)");
  o.network_policy = NetworkPolicy::allowlist({"pypi.org"});
  check_start_error([&] { (void)BedrockAgentCoreSandbox::create(o); }, ErrorKind::kUnsupported,
                    "Bedrock AgentCore cannot honour network policy 'allowlist': no interpreter network mode limits a "
                    "session to a list of hosts");
  o.network_policy = NetworkPolicy::all();
  check_start_error([&] { (void)BedrockAgentCoreSandbox::create(o); }, ErrorKind::kUnsupported,
                    "Bedrock AgentCore cannot honour network policy 'all': it needs an interpreter in PUBLIC network "
                    "mode (interpreter_network_mode is SANDBOX)");
  o.interpreter_network_mode = "PUBLIC";
  check_start_error([&] { (void)BedrockAgentCoreSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "the built-in interpreter aws.codeinterpreter.v1 runs in SANDBOX network mode; a PUBLIC "
                    "interpreter is one you create (pass its identifier)");
  o.interpreter_network_mode = "OPEN";
  check_start_error([&] { (void)BedrockAgentCoreSandbox::create(o); }, ErrorKind::kInvalidArgument,
                    "interpreter_network_mode must be SANDBOX, PUBLIC or VPC");
  CHECK(server.requests("start").empty());

  o = server.options();
  auto sandboxed = BedrockAgentCoreSandbox::create(o);
  CHECK_FALSE(sandboxed->capabilities().network);
  CHECK(sandboxed->capabilities().network_policies.empty());
  sandboxed->terminate();
  o.code_interpreter_identifier = "myPublic-abc1234567";
  o.interpreter_network_mode = "PUBLIC";
  o.network_policy = NetworkPolicy::all();
  auto open = BedrockAgentCoreSandbox::create(o);
  CHECK(open->capabilities().network);
  CHECK(open->capabilities().network_policies == std::vector<NetworkAccess>{NetworkAccess::kAll});
  open->terminate();
}

// ---- AgentCore manager ----

TEST_CASE("AgentCore list pages through the sessions of a tag, and get shows the user's part of the name",
          "[management][bedrock]") {
  BedrockServer server;
  std::vector<std::unique_ptr<BedrockAgentCoreSandbox>> mine;
  for (int i = 0; i < 3; ++i) mine.push_back(bedrock_tagged(server, "pages", "job" + std::to_string(i)));
  auto other = bedrock_tagged(server, "other");
  auto manager = bedrock_manager(server);
  SandboxFilter filter;
  filter.tag = "pages";
  std::vector<SandboxInfo> seen;
  std::optional<std::string> token;
  int pages = 0;
  do {
    auto page = manager->list_page(filter, 2, token);
    seen.insert(seen.end(), page.sandboxes.begin(), page.sandboxes.end());
    token = page.next_token;
    ++pages;
  } while (token && pages < 10);
  CHECK(pages == 2);  // 4 sessions, 2 a page; the other tag's is dropped from its page
  CHECK(ids_of(seen) == sorted({*mine[0]->sandbox_id(), *mine[1]->sandbox_id(), *mine[2]->sandbox_id()}));
  CHECK(ids_of(manager->list(filter)) == ids_of(seen));
  const auto lists = server.requests("list");
  REQUIRE_FALSE(lists.empty());

  const auto info = manager->get(*mine[1]->sandbox_id());
  REQUIRE(info.has_value());
  CHECK(info->backend == "bedrock");
  CHECK(info->state == SandboxState::kRunning);
  CHECK(info->raw_state == "READY");
  CHECK(info->tag == "pages");
  CHECK(info->name == "job1");
  CHECK(info->template_id == "aws.codeinterpreter.v1");
  REQUIRE(info->created_at.has_value());
  CHECK(*info->end_at - *info->created_at == std::chrono::seconds(900));
  CHECK(info->metadata.empty());
  const auto untitled = manager->get(*other->sandbox_id());
  CHECK(untitled->tag == "other");
  CHECK_FALSE(untitled->name.has_value());
  CHECK_FALSE(manager->get("doesnotexist0000").has_value());
  for (auto& s : mine) s->terminate();
  other->terminate();
  CHECK(server.all_signatures_valid());
}

TEST_CASE("AgentCore kill stops a session (true), then answers false, and a stopped session reads TERMINATED",
          "[management][bedrock]") {
  BedrockServer server;
  auto sandbox = bedrock_tagged(server, "killer");
  const auto id = *sandbox->sandbox_id();
  auto manager = bedrock_manager(server);
  CHECK(manager->kill(id));
  CHECK_FALSE(manager->kill(id));
  CHECK(server.alive().empty());
  const auto info = manager->get(id);
  REQUIRE(info.has_value());
  CHECK(info->state == SandboxState::kTerminated);
  CHECK(info->raw_state == "TERMINATED");
  SandboxFilter ended;
  ended.states = {SandboxState::kTerminated};
  CHECK(ids_of(manager->list(ended)) == std::vector<std::string>{id});
  CHECK(manager->list().empty());
  sandbox->terminate();
}

TEST_CASE("AgentCore sweep stops exactly the sessions of its tag: another tag, a longer tag and an untagged session "
          "live on",
          "[management][bedrock][sweep]") {
  BedrockServer server;
  auto a1 = bedrock_tagged(server, "A");
  auto a2 = bedrock_tagged(server, "A", "named");
  auto b = bedrock_tagged(server, "B", "A");
  auto aa = bedrock_tagged(server, "AA");
  // Made without the library's tag: a session whose name merely looks like one ("A.x" has no "ci." prefix).
  auto o = server.options();
  o.session_name = "A.x";
  bedrock::AgentCoreStub stub(o);
  const auto started = http::HttpClient::shared().perform(stub.start_request());
  REQUIRE(started.success());
  const auto untagged = *bedrock::AgentCoreStub::session_id_of(started.response.body);
  auto manager = bedrock_manager(server);
  const auto report = manager->sweep("A");
  CHECK(sorted(report.killed) == sorted({*a1->sandbox_id(), *a2->sandbox_id()}));
  CHECK(report.failed.empty());
  CHECK(sorted(server.alive()) == sorted({*b->sandbox_id(), *aa->sandbox_id(), untagged}));
  CHECK(manager->get(untagged)->name == "A.x");
  CHECK_FALSE(manager->get(untagged)->tag.has_value());
  a1->terminate();
  a2->terminate();
  b->terminate();
  aa->terminate();
  CHECK(manager->kill(untagged));
}

TEST_CASE("AgentCore has no pause, resume or metadata filter: each is refused as unsupported before any request",
          "[management][bedrock][unsupported]") {
  BedrockServer server;
  auto manager = bedrock_manager(server);
  CHECK(manager->backend() == "bedrock");
  CHECK(manager->capabilities() == ManagerCapabilities{.list = true, .get = true, .kill = true});
  const std::string why = " (Bedrock AgentCore sessions cannot be paused and carry no metadata)";
  check_management_error([&] { (void)manager->pause("abc"); }, ErrorKind::kUnsupported,
                         "the bedrock backend cannot pause a sandbox" + why);
  check_management_error([&] { manager->resume("abc"); }, ErrorKind::kUnsupported,
                         "the bedrock backend cannot resume a sandbox" + why);
  SandboxFilter by_metadata;
  by_metadata.metadata = {{"run", "1"}};
  check_management_error([&] { (void)manager->list(by_metadata); }, ErrorKind::kUnsupported,
                         "the bedrock backend cannot filter by metadata" + why);
  CHECK(server.requests().empty());
}

TEST_CASE("AgentCore hostile listings: a malformed session is dropped, an oversize page is kInternal",
          "[management][bedrock][hostile]") {
  BedrockServer server;
  auto manager = bedrock_manager(server);
  const auto item = [](const std::string& id) {
    return json{{"codeInterpreterIdentifier", "aws.codeinterpreter.v1"}, {"sessionId", id}, {"status", "READY"},
                {"createdAt", "2026-01-02T03:04:05.123+01:00"}, {"name", "ci.h"}};
  };
  json epoch = item("abc2");
  epoch["createdAt"] = 1767322000;
  const json page = {{"items", json::array({item("abc1"), item("abc-2"), epoch, item("abc3")})}};
  server.fault({{"operation", "list"}, {"action", "status"}, {"status", 200}, {"body", page.dump()}});
  const auto listed = manager->list_page();
  CHECK(ids_of(listed.sandboxes) == std::vector<std::string>{"abc1", "abc3"});
  CHECK(listed.sandboxes[0].tag == "h");
  CHECK(listed.sandboxes[0].created_at ==
        std::chrono::sys_days(std::chrono::year(2026) / 1 / 2) + std::chrono::hours(2) + std::chrono::minutes(4) +
            std::chrono::seconds(5) + std::chrono::milliseconds(123));
  json many = {{"items", json::array({item("a1"), item("a2"), item("a3")})}};
  server.fault({{"operation", "list"}, {"action", "status"}, {"status", 200}, {"body", many.dump()}});
  check_management_error([&] { (void)manager->list_page({}, 2); }, ErrorKind::kInternal,
                         "bedrock: ListCodeInterpreterSessions answered 3 sessions for a page of at most 2");
  server.fault({{"operation", "list"}, {"action", "status"}, {"status", 200},
                {"body", json{{"items", json::array()}, {"nextToken", "same"}}.dump()}, {"count", -1}});
  check_management_error([&] { (void)manager->list(); }, ErrorKind::kInternal,
                         "bedrock: the listing handed back a page token it gave before");
  server.clear_faults();
  // New tokens with empty pages, on and on: the pages are counted (max_sandboxes / 100 + 10 of them).
  for (int i = 0; i < 12; ++i) {
    server.fault({{"operation", "list"}, {"action", "status"}, {"status", 200},
                  {"body", json{{"items", json::array()}, {"nextToken", "t" + std::to_string(i)}}.dump()}});
  }
  check_management_error([&] { (void)manager->list({}, 50); }, ErrorKind::kInternal,
                         "bedrock: the listing did not end after 10 pages");
}

// ---- the non-virtual checks, and Pyodide ----

TEST_CASE("Pyodide's manager refuses every verb as unsupported, saying why", "[management][pyodide][unsupported]") {
  auto manager = create_manager(SandboxConfig{});
  CHECK(manager->backend() == "pyodide");
  CHECK(manager->capabilities() == ManagerCapabilities{});
  const std::string why = " (Pyodide sandboxes are child processes of the program that created them and end with it: "
                          "there is nothing to list or govern from outside)";
  check_management_error([&] { (void)manager->list(); }, ErrorKind::kUnsupported,
                         "the pyodide backend cannot list sandboxes" + why);
  check_management_error([&] { (void)manager->list_page(); }, ErrorKind::kUnsupported,
                         "the pyodide backend cannot list sandboxes" + why);
  check_management_error([&] { (void)manager->get("abc"); }, ErrorKind::kUnsupported,
                         "the pyodide backend cannot get a sandbox" + why);
  check_management_error([&] { (void)manager->kill("abc"); }, ErrorKind::kUnsupported,
                         "the pyodide backend cannot kill a sandbox" + why);
  check_management_error([&] { (void)manager->pause("abc"); }, ErrorKind::kUnsupported,
                         "the pyodide backend cannot pause a sandbox" + why);
  check_management_error([&] { manager->resume("abc"); }, ErrorKind::kUnsupported,
                         "the pyodide backend cannot resume a sandbox" + why);
  check_management_error([&] { (void)manager->sweep("abc"); }, ErrorKind::kUnsupported,
                         "the pyodide backend cannot kill a sandbox" + why);
}

TEST_CASE("arguments are checked once, before any request: page size, ids, tags, lifetimes, page tokens",
          "[management][arguments]") {
  E2BServer server;
  auto manager = e2b_manager(server);
  check_management_error([&] { (void)manager->list_page({}, 0); }, ErrorKind::kInvalidArgument, "page_size must be 1..100");
  check_management_error([&] { (void)manager->list_page({}, 101); }, ErrorKind::kInvalidArgument, "page_size must be 1..100");
  const std::string bad_id = "a sandbox id must be 1..128 characters of A-Z, a-z, 0-9 and -";
  for (const std::string id : {std::string(), std::string(129, 'a'), std::string("../x"), std::string("a/b"), std::string("a\nb")}) {
    INFO("id: " << id);
    check_management_error([&] { (void)manager->get(id); }, ErrorKind::kInvalidArgument, bad_id);
    check_management_error([&] { (void)manager->kill(id); }, ErrorKind::kInvalidArgument, bad_id);
    check_management_error([&] { (void)manager->pause(id); }, ErrorKind::kInvalidArgument, bad_id);
  }
  check_management_error([&] { (void)manager->get("UPPER"); }, ErrorKind::kInvalidArgument,
                         "not an E2B sandbox id (a-z, 0-9 and -)");
  const std::string bad_tag = "a tag must be 1..32 characters of A-Z, a-z, 0-9 and _";
  check_management_error([&] { (void)manager->sweep(""); }, ErrorKind::kInvalidArgument, bad_tag);
  check_management_error([&] { (void)manager->sweep("a-b"); }, ErrorKind::kInvalidArgument, bad_tag);
  SandboxFilter f;
  f.tag = std::string(33, 'x');
  check_management_error([&] { (void)manager->list(f); }, ErrorKind::kInvalidArgument, bad_tag);
  check_management_error([&] { manager->resume("abc", std::chrono::seconds(0)); }, ErrorKind::kInvalidArgument,
                         "lifetime must be 1 second to 24 hours");
  check_management_error([&] { (void)manager->list_page({}, 10, std::string()); }, ErrorKind::kInvalidArgument,
                         "page_token must be a next_token of a previous page");
  CHECK(server.requests().empty());
}

TEST_CASE("create_manager refuses an unknown backend and a cloud backend without credentials, at configure",
          "[management][arguments]") {
  SandboxConfig c;
  c.backend = "docker";
  check_start_error([&] { (void)create_manager(c); }, ErrorKind::kInvalidArgument,
                    "configuration: unknown backend in 'backend' (known: pyodide, e2b, bedrock)");
  c.backend = "e2b";
  c.e2b.api_url = "http://127.0.0.1:9";
  const char* saved = std::getenv("E2B_API_KEY");
  const std::optional<std::string> key = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::unsetenv("E2B_API_KEY");
  check_start_error([&] { (void)create_manager(c); }, ErrorKind::kUnauthenticated,
                    "no E2B API key: set E2BOptions::api_key or E2B_API_KEY");
  if (key) ::setenv("E2B_API_KEY", key->c_str(), 1);
}

// ---- JSON configuration ----

TEST_CASE("a JSON configuration reads 'tag' and each shape of 'network' exactly", "[management][factory][network]") {
  auto c = sandbox_config_from_json(R"({"backend": "e2b", "tag": "nightly_2", "network": "none"})");
  CHECK(c.tag == "nightly_2");
  CHECK(c.network_policy == NetworkPolicy::none());
  c = sandbox_config_from_json(R"({"backend": "e2b", "network": "all"})");
  CHECK(c.network_policy == NetworkPolicy::all());
  CHECK_FALSE(c.tag.has_value());
  c = sandbox_config_from_json(R"({"backend": "e2b", "network": {"allow": ["pypi.org", "10.0.0.0/8"]}})");
  CHECK(c.network_policy == NetworkPolicy::allowlist({"pypi.org", "10.0.0.0/8"}));
  c = sandbox_config_from_json(R"({"network": "none"})");
  CHECK(c.backend == "pyodide");
  CHECK(c.network_policy == NetworkPolicy::none());
  c = sandbox_config_from_json(R"({"backend": "bedrock", "tag": "t", "bedrock": {"interpreter_network_mode": "VPC"}})");
  CHECK(c.bedrock.interpreter_network_mode == "VPC");
  CHECK(c.tag == "t");
}

TEST_CASE("JSON 'tag' and 'network' refusals name the key (and a host by its index), never the value",
          "[management][factory][network]") {
  const auto refused = [](std::string_view text, ErrorKind kind, std::string_view message) {
    check_start_error([&] { (void)sandbox_config_from_json(text); }, kind, message);
  };
  refused(R"({"backend": "e2b", "tag": "has space"})", ErrorKind::kInvalidArgument,
          "configuration: 'tag' must be 1..32 characters of A-Z, a-z, 0-9 and _");
  refused(R"({"tag": "fine"})", ErrorKind::kUnsupported, "configuration: the backend pyodide cannot honour 'tag'");
  refused(R"({"backend": "e2b", "network": "some"})", ErrorKind::kInvalidArgument,
          R"(configuration: 'network' must be "none", "all" or {"allow": [host, ...]})");
  refused(R"({"backend": "e2b", "network": {"deny": ["x"]}})", ErrorKind::kInvalidArgument,
          R"(configuration: 'network' must be "none", "all" or {"allow": [host, ...]})");
  refused(R"({"backend": "e2b", "network": {"allow": []}})", ErrorKind::kInvalidArgument,
          "configuration: 'network.allow' must be an array of 1..100 hosts");
  refused(R"({"backend": "e2b", "network": {"allow": ["ok.org", "secret token"]}})", ErrorKind::kInvalidArgument,
          "configuration: 'network.allow[1]' is not a host name, an IPv4 address or a CIDR range");
  refused(R"({"backend": "bedrock", "bedrock": {"interpreter_network_mode": "open"}})", ErrorKind::kInvalidArgument,
          R"(configuration: 'bedrock.interpreter_network_mode' must be "SANDBOX", "PUBLIC" or "VPC")");
}

TEST_CASE("create_sandbox passes the common tag and network policy to the backend", "[management][factory][network]") {
  E2BServer server;
  SandboxConfig c;
  c.backend = "e2b";
  c.e2b = server.options();
  c.tag = "factory_tag";
  c.network_policy = NetworkPolicy::none();
  auto sandbox = create_sandbox(c);
  const auto detail = e2b_api(server, "GET", "/sandboxes/" + *sandbox->sandbox_id());
  CHECK(detail.at("metadata").at("code_interpreter.tag") == "factory_tag");
  CHECK(detail.at("allowInternetAccess") == false);
  sandbox->terminate();
  SandboxConfig p;
  p.network_policy = NetworkPolicy::all();
  check_start_error([&] { (void)create_sandbox(p); }, ErrorKind::kUnsupported,
                    "the Pyodide sandbox cannot honour network policy 'all': its runtime has no network (only 'none')");
}
