#include "code_interpreter/e2b_sandbox.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "code_interpreter/logging.hpp"
#include "core/call_registry.hpp"
#include "core/deadline.hpp"
#include "core/file_guards.hpp"
#include "core/nested.hpp"
#include "core/outcome.hpp"
#include "core/untrusted.hpp"
#include "core/utf8.hpp"
#include "e2b/streams.hpp"
#include "http/http_client.hpp"
#include "http/outcome.hpp"
#include "http/retry.hpp"

namespace code_interpreter {
namespace {

using nlohmann::json;
using detail::Deadline;
using detail::throw_nested;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kEnvdPort = 49983;         // docs/protocols/e2b.md "Surfaces and ports"
constexpr int kInterpreterPort = 49999;  // docs/protocols/e2b.md "Surfaces and ports"
// The metadata key of the token that lets a lost create be found again (docs/protocols/e2b.md "Listing sandboxes by metadata": list filters by metadata).
constexpr std::string_view kClientTokenKey = "code_interpreter_client_token";
constexpr milliseconds kDefaultExecuteTimeout{std::chrono::seconds(300)};
constexpr milliseconds kDefaultCommandTimeout{std::chrono::seconds(30)};
constexpr milliseconds kDefaultCreateTimeout{std::chrono::minutes(5)};
constexpr milliseconds kCleanupBudget{std::chrono::seconds(20)};  // finding and killing what a lost create made
constexpr milliseconds kHealthTimeout{std::chrono::seconds(5)};
constexpr std::size_t kMaxErrorBody = 64 * 1024;

std::optional<std::string> from_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string random_hex(std::size_t bytes) {
  std::random_device device;
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < bytes; ++i) {
    const auto b = static_cast<unsigned>(device()) & 0xFF;
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string without_trailing_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// Request bodies are JSON, whose strings must be UTF-8 (nlohmann's dump() throws a json::type_error otherwise): a
// caller's text that is not UTF-8 is a bad argument, refused before anything is sent.
void require_utf8(std::string_view text, std::string_view what) {
  if (!detail::is_valid_utf8(text)) throw std::invalid_argument(std::string(what) + " is not valid UTF-8");
}

bool is_http_url(std::string_view url) { return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0; }

// Sandbox ids become part of a host name or header: only what E2B issues (docs/protocols/e2b.md "Control plane": [a-z0-9], the proxy checks
// ^[a-z0-9]+$; older ids carry a "-<clientID>" suffix).
bool valid_sandbox_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// The service's own words from an error body: `message` of a JSON body, else the text itself; each secret
// replaced (before the cut, so no piece of one survives), bounded and made valid UTF-8, since the body is untrusted.
std::string service_message(std::string_view body, std::initializer_list<std::string_view> secrets = {}) {
  std::string text(body);
  const json parsed = detail::parse_untrusted_json(body);
  if (parsed.is_object()) {
    if (const auto it = parsed.find("message"); it != parsed.end() && it->is_string()) text = it->get<std::string>();
  } else if (parsed.is_string()) {
    text = parsed.get<std::string>();
  }
  detail::redact(text, secrets);
  if (text.size() > 300) text = text.substr(0, detail::utf8_safe_cut(text, 300)) + "...";
  std::string clean;
  detail::append_utf8_replacing(clean, text);
  return clean;
}

// The proxy's answer for a sandbox that is gone (docs/protocols/e2b.md "Reaching a sandbox"): 502 with "The sandbox was not found".
bool is_gone_answer(int status, std::string_view body) {
  return status == 502 && body.find("not found") != std::string_view::npos;
}


using detail::never_ran;

void apply(const http::Verdict& verdict, ExecutionResult& r) {
  r.status = verdict.status;
  r.timeout_kind = verdict.timeout_kind;
  r.failure = verdict.failure;
  r.error = verdict.message;
  r.exit_code = -1;
}

// A stream that our side stopped for cause: hostile bytes or a throwing callback (docs/backends/e2b.md "execute_code and execute_command").
void apply_fault(e2b::StreamFault fault, const std::string& detail, ExecutionResult& r) {
  r.status = ExecutionStatus::kUnknown;
  r.exit_code = -1;
  r.timeout_kind.reset();
  switch (fault) {
    case e2b::StreamFault::kCallbackThrew:
      r.failure = FailureDetail{"callback.exception", false};
      r.error = "an output callback threw; the call was cancelled";
      return;
    case e2b::StreamFault::kOversize:
      r.failure = FailureDetail{"protocol.oversize", false};
      break;
    default:
      r.failure = FailureDetail{"protocol.malformed", false};
      break;
  }
  r.error = "the sandbox's answer was not the protocol: " + detail;
}

// A status that is neither the stream (200) nor a refusal (>= 400): unclassifiable, so cautious (docs/errors.md "FailureDetail").
void unexpected_status(int status, std::string_view what, ExecutionResult& r) {
  r.status = ExecutionStatus::kUnknown;
  r.exit_code = -1;
  r.timeout_kind.reset();
  r.failure = FailureDetail{"http." + std::to_string(status), false};
  r.error = std::string(what) + ": unexpected HTTP " + std::to_string(status) + "; the code may have run";
}

ErrorKind connect_error_kind(std::string_view code) {
  if (code == "not_found") return ErrorKind::kNotFound;
  if (code == "invalid_argument" || code == "already_exists" || code == "failed_precondition" || code == "out_of_range")
    return ErrorKind::kInvalidArgument;
  if (code == "unauthenticated") return ErrorKind::kUnauthenticated;
  if (code == "permission_denied") return ErrorKind::kPermissionDenied;
  if (code == "resource_exhausted") return ErrorKind::kRateLimited;
  if (code == "unavailable") return ErrorKind::kUnavailable;
  if (code == "deadline_exceeded") return ErrorKind::kTimeout;
  if (code == "unimplemented") return ErrorKind::kUnsupported;
  if (code == "internal" || code == "data_loss") return ErrorKind::kInternal;
  return ErrorKind::kUnknown;
}

}  // namespace

struct E2BSandbox::Impl {
  http::HttpClient& client = http::HttpClient::shared();
  E2BOptions options;  // api_key cleared after resolution
  std::string api_key;
  std::string api_url;
  std::optional<std::string> sandbox_url;
  std::string domain;
  std::string id;
  std::string access_token;
  std::string envd_version;

  // ---- configuration (stage configure: nothing sent yet) ----

  explicit Impl(E2BOptions opts) : options(std::move(opts)) {
    auto key = options.api_key ? options.api_key : from_env("E2B_API_KEY");
    options.api_key.reset();
    if (!key || key->empty())
      throw SandboxStartError("no E2B API key: set E2BOptions::api_key or E2B_API_KEY", Stage::kConfigure,
                              ErrorKind::kUnauthenticated);
    if (key->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
      throw SandboxStartError("the E2B API key contains a line break or NUL", Stage::kConfigure,
                              ErrorKind::kInvalidArgument);
    api_key = std::move(*key);
    domain = options.domain ? *options.domain : from_env("E2B_DOMAIN").value_or("e2b.app");
    api_url = without_trailing_slash(options.api_url ? *options.api_url
                                                     : from_env("E2B_API_URL").value_or("https://api." + domain));
    if (auto s = options.sandbox_url ? options.sandbox_url : from_env("E2B_SANDBOX_URL"))
      sandbox_url = without_trailing_slash(*s);
    if (!is_http_url(api_url))
      throw SandboxStartError("the E2B API URL must start with http:// or https://: " + api_url, Stage::kConfigure,
                              ErrorKind::kInvalidArgument);
    if (sandbox_url && !is_http_url(*sandbox_url))
      throw SandboxStartError("the E2B sandbox URL must start with http:// or https://: " + *sandbox_url,
                              Stage::kConfigure, ErrorKind::kInvalidArgument);
    if (options.lifetime.count() <= 0)
      throw SandboxStartError("the sandbox lifetime must be positive", Stage::kConfigure, ErrorKind::kInvalidArgument);
    // A cap of 0 would make every line hostile, so every execute and command UNKNOWN.
    if (options.max_line_bytes == 0 || options.max_output_bytes == 0)
      throw SandboxStartError("max_line_bytes and max_output_bytes must be positive", Stage::kConfigure,
                              ErrorKind::kInvalidArgument);
    if (options.max_download_bytes == 0)
      throw SandboxStartError("max_download_bytes must be positive", Stage::kConfigure, ErrorKind::kInvalidArgument);
    // They travel as JSON strings (the create's body, the pip install's code).
    const auto not_utf8 = [](std::string_view what) {
      return SandboxStartError(std::string(what) + " is not valid UTF-8", Stage::kConfigure, ErrorKind::kInvalidArgument);
    };
    if (!detail::is_valid_utf8(options.template_id)) throw not_utf8("template_id");
    for (const auto& [k, v] : options.metadata)
      if (!detail::is_valid_utf8(k) || !detail::is_valid_utf8(v)) throw not_utf8("a metadata key or value");
    for (const auto& [k, v] : options.env_vars)
      if (!detail::is_valid_utf8(k) || !detail::is_valid_utf8(v)) throw not_utf8("an env_vars name or value");
    for (const auto& p : options.additional_packages)
      if (!detail::is_valid_utf8(p)) throw not_utf8("an additional_packages name");
  }

  // The service's own words from an error body, with our secrets taken out: a hostile or careless service may
  // echo the API key or the envd token it was sent (docs/backends/e2b.md "Secrets": secrets never reach an error or a result).
  std::string service_text(std::string_view body) const { return service_message(body, {api_key, access_token}); }

  // ---- requests ----

  http::Request api_request(std::string method, std::string path, std::string body = {}) const {
    http::Request r;
    r.method = std::move(method);
    r.url = api_url + path;
    r.body = std::move(body);
    r.headers = {{"X-API-Key", api_key}};  // docs/protocols/e2b.md "Control plane"
    if (!r.body.empty()) r.headers.emplace_back("Content-Type", "application/json");
    r.timeout = options.request_timeout;
    return r;
  }

  std::string base_url(int port) const {
    if (sandbox_url) return *sandbox_url;
    return "https://" + std::to_string(port) + "-" + id + "." + domain;  // docs/protocols/e2b.md "Reaching a sandbox"
  }

  http::Request sandbox_request(int port, std::string method, std::string path, std::string body = {}) const {
    http::Request r;
    r.method = std::move(method);
    r.url = base_url(port) + path;
    r.body = std::move(body);
    // Routing headers on every sandbox request, and the envd token where one was issued (docs/protocols/e2b.md
    // "Reaching a sandbox").
    r.headers = {{"E2b-Sandbox-Id", id}, {"E2b-Sandbox-Port", std::to_string(port)}};
    if (!access_token.empty()) r.headers.emplace_back("X-Access-Token", access_token);
    r.timeout = options.request_timeout;
    return r;
  }

  // ---- calls: one guard per public call, cancelled by the caller or by terminate ----

  detail::CallRegistry calls;

  std::unique_ptr<detail::CallRegistry::Call> begin_call(std::stop_token user = {}) { return calls.begin(std::move(user)); }

  // ---- create / connect ----

  [[noreturn]] void throw_start_error(const http::Exchange& ex, Stage stage, std::string_view what) {
    const std::string said = ex.ok() ? service_text(ex.response.body) : std::string();
    const auto cause = http::to_transport_error(ex, what, said);
    if (ex.failure == http::Failure::kCancelled)
      throw_nested(SandboxStartError(std::string(what) + " was cancelled", stage, ErrorKind::kUnknown), cause);
    throw_nested(SandboxStartError(std::string(what) + " failed: " + cause.what(), stage, http::error_kind(ex)), cause);
  }

  // A create whose request was written but whose answer did not arrive (or was a 5xx) may have made a sandbox.
  static bool may_have_created(const http::Exchange& ex) {
    return ex.request_written && (!ex.ok() || ex.response.status >= 500);
  }

  // Lists the sandboxes carrying `token` and kills them; true when the listing worked and every kill did.
  // Finds the sandboxes a create may have made (by the client token in their metadata) and kills them. It has a
  // budget of its own (kCleanupBudget for the listing and the kills together) and is never cancelled: the caller's
  // deadline or cancellation may be what ended the create, and must not leave a sandbox running unnoticed. So a
  // create that fails this way may return up to kCleanupBudget after create_timeout.
  bool cleanup_by_token(const std::string& token) {
    const auto budget = Deadline::after(kCleanupBudget, kCleanupBudget);
    // The JS SDK encodes each key and value, joins them as k=v, and sends that as one parameter (docs/protocols/e2b.md "Listing sandboxes by metadata").
    const std::string filter = http::url_encode(kClientTokenKey) + "=" + http::url_encode(token);
    auto list = api_request("GET", "/v2/sandboxes?metadata=" + http::url_encode(filter) + "&state=running,paused");
    list.timeout = budget.bound(list.timeout);
    const auto listed = http::perform_with_retries(client, list, {}, deadline_hooks(budget));
    if (!listed.success()) {
      logger()->error("e2b: could not list sandboxes to clean up a lost create ({})", http::to_transport_error(listed, "list").what());
      return false;
    }
    const json found = detail::parse_untrusted_json(listed.response.body);
    if (!found.is_array()) return false;
    bool all = true;
    for (const auto& sandbox : found) {
      const auto it = sandbox.find("sandboxID");
      if (it == sandbox.end() || !it->is_string() || !valid_sandbox_id(it->get<std::string>())) continue;
      // Only a sandbox that carries the token is this create's: a listing that ignored the filter (an older or
      // proxied API) must not get someone else's sandbox killed.
      const auto meta = sandbox.find("metadata");
      if (meta == sandbox.end() || !meta->is_object()) continue;
      const auto tok = meta->find(std::string(kClientTokenKey));
      if (tok == meta->end() || !tok->is_string() || tok->get_ref<const std::string&>() != token) continue;
      const std::string found_id = it->get<std::string>();
      auto kill = api_request("DELETE", "/sandboxes/" + found_id);
      kill.timeout = budget.bound(kill.timeout);
      const auto killed = http::perform_with_retries(client, kill, {}, deadline_hooks(budget));
      const bool ok = killed.success() || (killed.ok() && killed.response.status == 404);
      if (ok) logger()->warn("e2b: killed sandbox {} left by a create whose answer was lost", found_id);
      else logger()->error("e2b: could not kill sandbox {} left by a lost create", found_id);
      all = all && ok;
    }
    return all;
  }

  void accept_sandbox_answer(const http::Exchange& ex, Stage stage) {
    const json answer = detail::parse_untrusted_json(ex.response.body);
    const auto* sandbox_id = answer.is_object() && answer.contains("sandboxID") && answer["sandboxID"].is_string()
                                 ? answer["sandboxID"].get_ptr<const std::string*>() : nullptr;
    if (sandbox_id == nullptr || !valid_sandbox_id(*sandbox_id))
      throw SandboxStartError("the E2B API answered without a usable sandboxID", stage, ErrorKind::kInternal);
    id = *sandbox_id;
    if (const auto t = answer.find("envdAccessToken"); t != answer.end() && t->is_string()) access_token = t->get<std::string>();
    if (access_token.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) access_token.clear();
    if (const auto v = answer.find("envdVersion"); v != answer.end() && v->is_string()) envd_version = v->get<std::string>();
    if (const auto d = answer.find("domain"); d != answer.end() && d->is_string() && !d->get<std::string>().empty())
      domain = d->get<std::string>();
  }

  http::RetryHooks deadline_hooks(const Deadline& deadline) const {
    http::RetryHooks hooks;
    hooks.sleep = [deadline](milliseconds delay, std::stop_token cancel) {
      return deadline.allows(delay) && http::interruptible_sleep(delay, cancel);
    };
    // Each attempt gets only what is left: a Retry-After sleep must not extend a later attempt past the deadline.
    hooks.prepare = [deadline](http::Request& request) { request.timeout = deadline.bound(request.timeout); };
    return hooks;
  }

  void create_sandbox(const Deadline& deadline) {
    const std::string token = random_hex(16);
    json metadata = json::object();
    for (const auto& [k, v] : options.metadata) metadata[k] = v;
    metadata[std::string(kClientTokenKey)] = token;
    json body = {{"templateID", options.template_id}, {"timeout", options.lifetime.count()}, {"metadata", metadata}};
    if (!options.env_vars.empty()) body["envVars"] = options.env_vars;

    bool left_unknown = false;  // a create that may have made a sandbox we could not clean up
    auto hooks = deadline_hooks(deadline);
    // Transient answers are retried; a create that may have been processed is cleaned up first, which is what
    // makes retrying a non-idempotent create safe (docs/backends/e2b.md "Create retries and lost creates").
    hooks.retryable = [](const http::Exchange& ex) {
      return ex.failure != http::Failure::kCancelled && http::is_transient(ex, true);
    };
    bool cleaned = false;  // what the latest attempt may have made was already cleaned up
    hooks.prepare = [&cleaned, prepare = hooks.prepare](http::Request& request) {
      cleaned = false;
      prepare(request);
    };
    hooks.before_retry = [&](const http::Exchange& ex) {
      if (!may_have_created(ex)) return true;
      if (!cleanup_by_token(token)) {
        left_unknown = true;
        return false;
      }
      cleaned = true;
      return true;
    };

    std::string path = "/v2/sandboxes";  // npm e2b@2.51.0 (docs/protocols/e2b.md "Control plane")
    http::Exchange ex;
    for (int round = 0; round < 2; ++round) {
      auto request = api_request("POST", path, body.dump());
      request.idempotent = false;
      request.cancel = options.cancel;
      request.timeout = deadline.bound(options.request_timeout);
      ex = http::perform_with_retries(client, request, {}, hooks);
      // Older or self-hosted APIs have only v1 (docs/protocols/e2b.md "Control plane"); a 404 about the template is the template's.
      const bool no_v2 = ex.ok() && (ex.response.status == 405 ||
                                     (ex.response.status == 404 && ex.response.body.find("emplate") == std::string::npos));
      if (round == 0 && no_v2) {
        path = "/sandboxes";
        body["secure"] = true;
        continue;
      }
      break;
    }
    if (ex.success()) {
      try {
        accept_sandbox_answer(ex, Stage::kCreate);
        return;
      } catch (const SandboxStartError&) {
        cleanup_by_token(token);
        throw;
      }
    }
    if (!left_unknown && !cleaned && may_have_created(ex) && !cleanup_by_token(token)) left_unknown = true;
    if (left_unknown)
      logger()->error("e2b: a create may have made a sandbox that could not be killed; it carries metadata {}={}",
                  kClientTokenKey, token);
    if (ex.ok() && ex.response.status == 404) {
      const auto said = service_text(ex.response.body);
      throw_nested(TemplateBuildError("E2B template '" + options.template_id + "' does not exist: " + said,
                                      Stage::kTemplateBuild, ErrorKind::kNotFound),
                   http::to_transport_error(ex, "create", said));
    }
    throw_start_error(ex, Stage::kCreate, "create");
  }

  void connect_sandbox(std::string_view sandbox_id, const Deadline& deadline) {
    if (!valid_sandbox_id(sandbox_id))
      throw SandboxStartError("not an E2B sandbox id: '" + std::string(sandbox_id).substr(0, 64) + "'",
                              Stage::kConfigure, ErrorKind::kInvalidArgument);
    const json body = {{"timeout", options.lifetime.count()}};
    http::Exchange ex;
    for (const std::string prefix : {"/v2/sandboxes/", "/sandboxes/"}) {
      auto request = api_request("POST", prefix + std::string(sandbox_id) + "/connect", body.dump());
      request.cancel = options.cancel;
      request.timeout = deadline.bound(options.request_timeout);
      ex = http::perform_with_retries(client, request, {}, deadline_hooks(deadline));
      if (!(ex.ok() && ex.response.status == 405)) break;
    }
    if (!ex.success()) throw_start_error(ex, Stage::kCreate, "connect");
    accept_sandbox_answer(ex, Stage::kCreate);
  }

  // `budget`: the caller's create_timeout, which `deadline` bounds.
  void install_packages(const Deadline& deadline, milliseconds budget, E2BSandbox& self) {
    if (self.additional_packages().empty()) return;
    if (self.language() != Language::kPython) {
      logger()->warn("e2b: additional_packages skipped: the sandbox's language is {}, not python",
                 to_string(self.language()));
      return;
    }
    json args = json::array({"-m", "pip", "install", "--disable-pip-version-check", "-q"});
    for (const auto& p : self.additional_packages()) args.push_back(p);
    // JSON strings are valid Python string literals, so package names cannot break out of the list.
    const std::string code = "import subprocess, sys\n_r = subprocess.run([sys.executable] + " + args.dump() +
                             ", capture_output=True, text=True)\nprint(_r.stdout, end='')\nprint(_r.stderr, end='', "
                             "file=sys.stderr)\nif _r.returncode:\n    raise SystemExit(_r.returncode)\n";
    ExecuteOptions install;
    install.timeout = deadline.at ? std::optional(deadline.bound(milliseconds(0))) : std::optional(kNoTimeout);
    install.cancel = options.cancel;
    const auto result = execute(std::nullopt, code, install);
    if (result.status == ExecutionStatus::kSuccess) return;
    try {
      kill_quietly();
    } catch (...) {
    }
    throw detail::install_packages_error(result, options.cancel, budget);
  }

  void kill_quietly() {
    const auto ex = http::perform_with_retries(client, api_request("DELETE", "/sandboxes/" + id));
    if (!(ex.success() || (ex.ok() && ex.response.status == 404)))
      logger()->warn("e2b: could not kill sandbox {} after a failed creation", id);
    calls.mark_terminated();
  }

  // ---- health: is the sandbox still there? (docs/protocols/e2b.md "envd health and files": GET /health, 502 when gone) ----

  bool sandbox_gone() {
    auto request = sandbox_request(kEnvdPort, "GET", "/health");
    request.timeout = kHealthTimeout;
    const auto ex = client.perform(request);
    return ex.ok() && is_gone_answer(ex.response.status, ex.response.body);
  }

  // ---- files ----

  http::Exchange upload(const std::string& dir, const std::vector<Attachment>& files, std::stop_token cancel) {
    // One multipart part per file, named `file`, its filename the destination path (docs/protocols/e2b.md "envd health and files").
    auto request = sandbox_request(kEnvdPort, "POST", "/files");
    request.cancel = cancel;
    for (const auto& f : files) {
      http::MultipartPart part;
      part.name = "file";
      part.filename = without_trailing_slash(dir) + "/" + f.filename;
      if (f.source) part.file = f.source;
      else part.data = f.data;
      request.multipart.push_back(std::move(part));
    }
    return http::perform_with_retries(client, request);
  }

  [[noreturn]] void throw_file_error(const http::Exchange& ex, Stage stage, std::string_view what) {
    std::string said = ex.ok() ? service_text(ex.response.body) : std::string();
    ErrorKind kind = http::error_kind(ex);
    std::string message = std::string(what) + " failed";
    if (ex.ok() && is_gone_answer(ex.response.status, ex.response.body)) {
      kind = ErrorKind::kUnavailable;
      message += ": the sandbox is gone";
    } else if (!said.empty()) {
      message += ": " + said;
    } else if (!ex.ok()) {
      message += ": " + std::string(http::to_transport_error(ex, what).what());
    }
    // A Connect error names its code (docs/protocols/e2b.md "Connect calls and their JSON").
    if (ex.ok()) {
      const json parsed = detail::parse_untrusted_json(ex.response.body);
      if (parsed.is_object() && parsed.contains("code") && parsed["code"].is_string())
        kind = connect_error_kind(parsed["code"].get<std::string>());
    }
    throw_nested(SandboxExecutionError(std::move(message), stage, kind), http::to_transport_error(ex, what, said));
  }

  std::string files_query(std::string_view path) const { return "/files?path=" + http::url_encode(path); }

  // `body` holds one caller's path, named by `what` in the refusal.
  http::Request rpc_request(std::string_view method, const json& body, std::stop_token cancel,
                            std::string_view what) const {
    for (const auto& [key, value] : body.items())
      if (value.is_string()) require_utf8(value.get_ref<const std::string&>(), std::string(what) + ": the " + key);
    auto request = sandbox_request(kEnvdPort, "POST", "/" + std::string(method), body.dump());
    request.headers.emplace_back("Content-Type", "application/json");
    request.headers.emplace_back("Connect-Protocol-Version", "1");  // unary Connect call (docs/protocols/e2b.md "Connect calls and their JSON")
    request.cancel = std::move(cancel);
    return request;
  }

  json rpc(std::string_view method, const json& body, Stage stage, std::string_view what) {
    const auto call = begin_call();
    const auto ex = http::perform_with_retries(client, rpc_request(method, body, call->token(), what));
    if (!ex.success()) throw_file_error(ex, stage, what);
    json answer = detail::parse_untrusted_json(ex.response.body);
    if (!answer.is_object())
      throw SandboxExecutionError(std::string(what) + ": the sandbox answered with malformed JSON", stage, ErrorKind::kInternal);
    return answer;
  }

  // ---- execute ----

  ExecutionResult execute(std::optional<std::string_view> context_id, std::string_view code, const ExecuteOptions& o) {
    require_utf8(code, "execute: the code");
    if (context_id) require_utf8(*context_id, "execute: the context id");
    const auto call = begin_call(o.cancel);
    ExecutionResult r;
    r.code = std::string(code);

    if (!o.files.empty()) {
      const auto ex = upload(o.upload_dir.value_or("/files"), o.files, call->token());
      if (!ex.success()) {
        // The code has not run: whatever broke, a retry cannot duplicate it (uploads overwrite).
        if (ex.ok()) {
          const int status = ex.response.status;
          return never_ran(r.code, "upload refused: HTTP " + std::to_string(status) + ": " + service_text(ex.response.body),
                           FailureDetail{"http." + std::to_string(status), true}, is_gone_answer(status, ex.response.body));
        }
        const auto verdict = http::classify(ex, TimeoutKind::kRequest, "upload");
        return never_ran(r.code, verdict.message,
                         FailureDetail{verdict.failure ? verdict.failure->exception_type : "curl." + ex.curl_code, true});
      }
    }
    const auto started = Clock::now();  // duration is the execution itself, after the uploads (execution.hpp)

    json body = {{"code", code}};
    if (context_id) body["context_id"] = *context_id;
    else body["language"] = to_string(language);
    if (!o.env.empty()) body["env_vars"] = o.env;  // this call only (docs/protocols/e2b.md "Code-interpreter requests")

    auto request = sandbox_request(kInterpreterPort, "POST", "/execute", body.dump());
    request.headers.emplace_back("Content-Type", "application/json");
    request.idempotent = false;  // runs code: never re-sent (docs/protocols/libcurl.md "No silent re-send")
    request.http1_only = true;   // closing the connection is what interrupts the kernel (docs/protocols/e2b.md "Interrupts need HTTP/1.1")
    const milliseconds budget = o.timeout.value_or(kDefaultExecuteTimeout);
    request.timeout = budget.count() > 0 ? budget : milliseconds(0);
    request.cancel = call->token();

    e2b::ExecuteStream stream(o.on_stdout ? &o.on_stdout : nullptr, o.on_stderr ? &o.on_stderr : nullptr,
                              options.max_output_bytes, options.max_line_bytes);
    int status = 0;
    std::string error_body;
    request.on_headers = [&](int s) { status = s; };
    request.on_body = [&](std::string_view piece) {
      if (status != 200) {
        error_body.append(piece.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body.size())));
        return true;
      }
      return stream.feed(piece);
    };
    const auto ex = client.perform(request);
    r.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);

    if (ex.ok() && ex.response.status == 200) {
      // A cleanly finished body is complete even without end_of_execution (docs/backends/e2b.md "Executing code").
      const bool clean = stream.finish();
      stream.collect(r);
      if (!clean) {
        apply_fault(stream.fault(), stream.fault_detail(), r);
        return r;
      }
      // The interpreter's first line comes from the kernel taking the code (docs/protocols/e2b.md "Fields of the /execute events"): a 200 without a single
      // event (an empty body, or blank lines) does not show the code ran, let alone to its end.
      if (!stream.started()) {
        apply_fault(e2b::StreamFault::kMalformed, "a 200 answer without any event", r);
        return r;
      }
      finish_code_result(r);
      return r;
    }
    if (ex.ok() && ex.response.status < 400) {
      // Neither the stream nor a refusal (a 201, 204, redirect...): nothing says the code did not run.
      unexpected_status(ex.response.status, "execute", r);
      return r;
    }
    if (ex.ok()) return answered_error(r, ex.response.status, error_body, "execute");
    stream.finish_output();
    stream.collect(r);
    if (stream.fault() != e2b::StreamFault::kNone) {
      apply_fault(stream.fault(), stream.fault_detail(), r);
      return r;
    }
    apply(http::classify(ex, TimeoutKind::kExecution, "execute"), r);
    // A stream that broke after the code started: if the sandbox itself is gone, it died during the call.
    if (r.status == ExecutionStatus::kUnknown && ex.request_written && ex.failure != http::Failure::kCancelled &&
        sandbox_gone()) {
      detail::mark_sandbox_lost(r, "execute: the sandbox was lost during the call");
    }
    if (r.status == ExecutionStatus::kTimeout && r.timeout_kind == TimeoutKind::kExecution)
      r.error = "execute: the execution timed out after " + std::to_string(budget.count()) +
                " ms; the connection was closed, which interrupts the code";
    return r;
  }

  // An answered error status (>= 400) to a request that runs code (docs/errors.md "Answered statuses"): a 4xx is the
  // service's refusal and the sandbox-not-found answer shows the sandbox gone before the call; any other 5xx may come
  // from a proxy after the code was taken, so nothing is known.
  ExecutionResult answered_error(ExecutionResult& r, int status, std::string_view body, std::string_view what) const {
    const bool gone = is_gone_answer(status, body);
    const auto verdict = http::answered(status, gone, "http." + std::to_string(status), what, service_text(body));
    apply(verdict, r);
    if (gone) {
      r.error = "the sandbox is gone (it expired or was killed)";
      r.state_lost = true;
    }
    return std::move(r);
  }

  static void finish_code_result(ExecutionResult& r) {
    if (!r.code_error) {
      r.status = ExecutionStatus::kSuccess;
      r.exit_code = 0;
      return;
    }
    const CodeError& e = *r.code_error;
    if (e.name == "SystemExit") {
      // sys.exit() / sys.exit(0) / sys.exit(None) end the code successfully (docs/backends/e2b.md "Executing code"); so does
      // sys.exit(False), as CPython exits with status 0 for it (the value is str() of the code).
      if (e.value.empty() || e.value == "0" || e.value == "None" || e.value == "False") {
        r.status = ExecutionStatus::kSuccess;
        r.exit_code = 0;
        r.code_error.reset();
        return;
      }
      // str() of an int code is digits with an optional '-'; anything else (" 3", "+3": only a str code prints so)
      // exits 1, as CPython does.
      int n = 1;
      if (const auto [end, ec] = std::from_chars(e.value.data(), e.value.data() + e.value.size(), n);
          ec != std::errc() || end != e.value.data() + e.value.size())
        n = 1;
      r.status = ExecutionStatus::kError;
      r.exit_code = n;
      r.error = e.traceback.empty() ? e.name + ": " + e.value : e.traceback;
      return;
    }
    r.status = ExecutionStatus::kError;
    r.exit_code = 1;
    r.error = e.traceback.empty() ? e.name + ": " + e.value : e.traceback;
  }

  Language language = Language::kPython;

  // ---- commands: process.Process/Start (docs/protocols/e2b.md "process.Process/Start") ----

  ExecutionResult command(std::string_view cmd, const CommandOptions& o) {
    const auto call = begin_call(o.cancel);
    const auto started = Clock::now();
    ExecutionResult r;
    r.code = std::string(cmd);

    json process = {{"cmd", "/bin/bash"}, {"args", json::array({"-l", "-c", std::string(cmd)})}, {"envs", json::object()}};
    for (const auto& [k, v] : o.env) process["envs"][k] = v;
    if (o.cwd) process["cwd"] = *o.cwd;
    const json body = {{"process", process}, {"stdin", false}};

    auto request = sandbox_request(kEnvdPort, "POST", "/process.Process/Start",
                                   http::encode_envelope(0, body.dump()));
    request.headers.emplace_back("Content-Type", "application/connect+json");
    request.headers.emplace_back("Connect-Protocol-Version", "1");
    request.headers.emplace_back("Keepalive-Ping-Interval", "50");
    const milliseconds budget = o.timeout.value_or(kDefaultCommandTimeout);
    // envd kills the process when Connect-Timeout-Ms elapses (docs/protocols/e2b.md "process.Process/Start"); our own limit is a backstop. The
    // Connect protocol allows at most 10 digits (a longer value is refused): a budget beyond that (~115 days)
    // is no limit.
    constexpr milliseconds kMaxConnectTimeout{9'999'999'999};
    constexpr milliseconds kBackstop{std::chrono::seconds(10)};
    if (budget.count() > 0 && budget <= kMaxConnectTimeout) {
      request.headers.emplace_back("Connect-Timeout-Ms", std::to_string(budget.count()));
      request.timeout = budget + kBackstop;
    } else {
      request.timeout = milliseconds(0);
    }
    request.idempotent = false;
    request.http1_only = true;
    request.cancel = call->token();

    e2b::ProcessStream stream(o.on_stdout ? &o.on_stdout : nullptr, o.on_stderr ? &o.on_stderr : nullptr,
                              options.max_output_bytes, options.max_line_bytes);
    int status = 0;
    std::string error_body;
    request.on_headers = [&](int s) { status = s; };
    request.on_body = [&](std::string_view piece) {
      if (status != 200) {
        error_body.append(piece.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body.size())));
        return true;
      }
      return stream.feed(piece);
    };
    const auto ex = client.perform(request);
    r.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
    stream.finish();
    stream.collect(r);

    if (stream.fault() != e2b::StreamFault::kNone) {
      apply_fault(stream.fault(), stream.fault_detail(), r);
      return r;
    }
    if (ex.ok() && ex.response.status != 200 && ex.response.status < 400) {
      unexpected_status(ex.response.status, "command", r);
      return r;
    }
    if (ex.ok() && ex.response.status != 200) return answered_error(r, ex.response.status, error_body, "command");
    if (!ex.ok()) {
      apply(http::classify(ex, TimeoutKind::kExecution, "command"), r);
      // Our backstop fired after envd's own limit should have: name the caller's budget, not libcurl's timer.
      if (r.status == ExecutionStatus::kTimeout && r.timeout_kind == TimeoutKind::kExecution)
        r.error = "command: timed out after " + std::to_string(budget.count()) +
                  " ms; envd did not end it in time, so the command may still be running";
      if (r.status == ExecutionStatus::kUnknown && ex.request_written && ex.failure != http::Failure::kCancelled &&
          sandbox_gone()) {
        detail::mark_sandbox_lost(r, "command: the sandbox was lost during the call");
      }
      return r;
    }
    // A complete HTTP body: the Connect stream itself says how it ended.
    if (stream.stream_error() == "deadline_exceeded") {
      r.status = ExecutionStatus::kTimeout;
      r.timeout_kind = TimeoutKind::kExecution;
      r.exit_code = -1;
      r.error = "command: timed out after " + std::to_string(budget.count()) + " ms; the command was killed";
      return r;
    }
    if (!stream.stream_closed()) {
      r.status = ExecutionStatus::kUnknown;
      r.exit_code = -1;
      r.failure = FailureDetail{stream.partial_envelope() ? "connect.truncated_envelope" : "connect.missing_end_stream", false};
      r.error = "command: the stream ended without its end-of-stream envelope";
      return r;
    }
    if (!stream.stream_error().empty()) {
      const std::string type = "connect." + stream.stream_error();
      const std::string said = "command: " + stream.stream_error() + ": " + service_text(stream.stream_error_message());
      if (!stream.started()) {
        auto refused = never_ran(r.code, said, FailureDetail{type, true});
        refused.duration = r.duration;
        return refused;
      }
      r.status = ExecutionStatus::kUnknown;
      r.exit_code = -1;
      r.failure = FailureDetail{type, false};
      r.error = said;
      return r;
    }
    if (!stream.ended()) {
      r.status = ExecutionStatus::kUnknown;
      r.exit_code = -1;
      r.failure = FailureDetail{"connect.missing_end_event", false};
      r.error = "command: the stream closed without the process's end event";
      return r;
    }
    const auto& end = *stream.end();
    r.exit_code = end.exit_code;
    if (end.exit_code == 0 && end.error.empty()) {
      r.status = ExecutionStatus::kSuccess;
    } else {
      r.status = ExecutionStatus::kError;
      r.error = end.error.empty() ? end.status : end.error;
      if (r.error.empty()) r.error = "exit status " + std::to_string(end.exit_code);
    }
    return r;
  }
};

// ---- E2BSandbox ----

E2BSandbox::E2BSandbox(std::unique_ptr<Impl> impl, Language language, std::vector<std::string> packages)
    : CodeInterpreterSandbox(language, std::move(packages)), impl_(std::move(impl)) {
  impl_->language = language;
}

std::unique_ptr<E2BSandbox> E2BSandbox::create(E2BOptions options) {
  const auto deadline = Deadline::after(options.create_timeout, kDefaultCreateTimeout);
  const milliseconds options_budget = options.create_timeout.value_or(kDefaultCreateTimeout);
  const Language language = options.language;
  auto packages = options.additional_packages;
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->create_sandbox(deadline);
  std::unique_ptr<E2BSandbox> sandbox(new E2BSandbox(std::move(impl), language, std::move(packages)));
  sandbox->impl_->install_packages(deadline, options_budget, *sandbox);
  return sandbox;
}

std::unique_ptr<E2BSandbox> E2BSandbox::connect(std::string_view sandbox_id, E2BOptions options) {
  const auto deadline = Deadline::after(options.create_timeout, kDefaultCreateTimeout);
  const Language language = options.language;
  auto packages = options.additional_packages;
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->connect_sandbox(sandbox_id, deadline);
  return std::unique_ptr<E2BSandbox>(new E2BSandbox(std::move(impl), language, std::move(packages)));
}

E2BSandbox::~E2BSandbox() {
  if (impl_->calls.terminated()) return;
  try {
    do_terminate(std::nullopt);
  } catch (const std::exception& e) {
    logger()->warn("e2b: sandbox {} could not be killed on destruction: {}", impl_->id, e.what());
  } catch (...) {
    logger()->warn("e2b: sandbox {} could not be killed on destruction", impl_->id);
  }
}

std::optional<std::string> E2BSandbox::sandbox_id() const { return impl_->id; }

Capabilities E2BSandbox::capabilities() const {
  Capabilities c;
  c.stateful = true;
  c.shell_commands = true;
  c.file_download = true;
  c.filesystem = true;
  c.packages = true;
  c.network = true;
  c.interrupt = true;
  c.languages = {Language::kPython, Language::kJavaScript, Language::kTypeScript, Language::kBash, Language::kR,
                 Language::kJava};
  c.upload_dir = "/files";
  return c;
}

ExecutionResult E2BSandbox::do_execute_code(std::string_view code, const ExecuteOptions& options) {
  return impl_->execute(std::nullopt, code, options);
}

ExecutionResult E2BSandbox::execute_in_context(std::string_view context_id, std::string_view code,
                                               const ExecuteOptions& options) {
  if (context_id.empty()) throw std::invalid_argument("context_id is empty");
  check_execute_options(options);
  return impl_->execute(context_id, code, options);
}

ExecutionResult E2BSandbox::do_execute_command(std::string_view command, const CommandOptions& options) {
  return impl_->command(command, options);
}

void E2BSandbox::do_set_timeout(std::chrono::seconds lease) {
  if (lease.count() <= 0) throw std::invalid_argument("set_timeout: the lease must be positive");
  const auto call = impl_->begin_call();
  auto request = impl_->api_request("POST", "/sandboxes/" + impl_->id + "/timeout",
                                    json{{"timeout", lease.count()}}.dump());
  request.cancel = call->token();
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (!ex.success()) {
    const std::string said = ex.ok() ? impl_->service_text(ex.response.body) : std::string();
    const auto cause = http::to_transport_error(ex, "set_timeout", said);
    throw_nested(SandboxExecutionError(std::string("set_timeout failed: ") + cause.what(), Stage::kSetTimeout,
                                       http::error_kind(ex)), cause);
  }
}

void E2BSandbox::do_write_file(std::string_view path, std::string_view data) {
  const auto call = impl_->begin_call();
  auto request = impl_->sandbox_request(kEnvdPort, "POST", impl_->files_query(path));
  request.cancel = call->token();
  request.multipart.push_back({"file", std::string(path), "application/octet-stream", data, std::nullopt});
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (!ex.success()) impl_->throw_file_error(ex, Stage::kUpload, "write_file");
}

std::string E2BSandbox::do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  auto request = impl_->sandbox_request(kEnvdPort, "GET", impl_->files_query(path));
  request.cancel = call->token();
  // Counted by the client's write callback on the bytes received (decoded), whatever Content-Length says.
  const std::uint64_t cap = max_bytes.value_or(impl_->options.max_download_bytes);
  request.max_body = cap;
  auto ex = http::perform_with_retries(impl_->client, request);
  if (ex.failure == http::Failure::kTooLarge) throw detail::over_cap_error(path, cap);
  if (!ex.success()) impl_->throw_file_error(ex, Stage::kDownload, "read_file");
  return std::move(ex.response.body);
}

std::vector<FileInfo> E2BSandbox::do_list_files(std::string_view dir) {
  const json answer = impl_->rpc("filesystem.Filesystem/ListDir", {{"path", dir}, {"depth", 1}}, Stage::kDownload, "list_files");
  std::vector<FileInfo> files;
  const auto entries = answer.find("entries");
  if (entries == answer.end()) return files;  // protojson omits an empty list
  if (!entries->is_array())
    throw SandboxExecutionError("list_files: malformed answer", Stage::kDownload, ErrorKind::kInternal);
  for (const auto& e : *entries) {
    if (!e.is_object()) continue;
    FileInfo info;
    if (const auto it = e.find("name"); it != e.end() && it->is_string()) info.name = it->get<std::string>();
    if (const auto it = e.find("path"); it != e.end() && it->is_string()) info.path = it->get<std::string>();
    if (const auto it = e.find("type"); it != e.end() && it->is_string())
      info.is_directory = it->get<std::string>() == "FILE_TYPE_DIRECTORY";
    // int64 fields are JSON strings in protojson (docs/protocols/e2b.md "Connect calls and their JSON").
    if (const auto it = e.find("size"); it != e.end()) {
      // Digits only: std::stoull would take "-1" as 2^64-1, and " 7" or "+7" too.
      if (it->is_string()) {
        const auto& text = it->get_ref<const std::string&>();
        std::uint64_t size = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
        info.size = ec == std::errc() && end == text.data() + text.size() && !text.empty() ? size : 0;
      } else if (it->is_number_unsigned()) {
        info.size = it->get<std::uint64_t>();
      }
    }
    files.push_back(std::move(info));
  }
  return files;
}

void E2BSandbox::do_remove_file(std::string_view path) {
  (void)impl_->rpc("filesystem.Filesystem/Remove", {{"path", path}}, Stage::kUpload, "remove_file");
}

void E2BSandbox::do_make_dir(std::string_view path) {
  const auto call = impl_->begin_call();
  const auto ex = http::perform_with_retries(impl_->client,
                                             impl_->rpc_request("filesystem.Filesystem/MakeDir", {{"path", path}}, call->token(), "make_dir"));
  if (ex.success()) return;
  // already_exists: the directory is there, which is what make_dir promises. A file in the way is
  // invalid_argument and stays an error (docs/protocols/e2b.md "filesystem.Filesystem").
  if (ex.ok()) {
    const json answer = detail::parse_untrusted_json(ex.response.body);
    if (answer.is_object() && answer.value("code", "") == "already_exists") return;
  }
  impl_->throw_file_error(ex, Stage::kUpload, "make_dir");
}

std::optional<std::string> E2BSandbox::do_download_file(std::string_view path, Timeout timeout,
                                                        std::optional<std::uint64_t> max_bytes) {
  try {
    const auto call = impl_->begin_call();
    auto request = impl_->sandbox_request(kEnvdPort, "GET", impl_->files_query(path));
    request.cancel = call->token();
    const std::uint64_t cap = max_bytes.value_or(impl_->options.max_download_bytes);
    request.max_body = cap;
    // The timeout bounds the whole call: retries get only what is left of it, and none starts past it.
    const auto deadline = Deadline::after(timeout, impl_->options.request_timeout);
    request.timeout = deadline.bound(milliseconds(0));
    auto ex = http::perform_with_retries(impl_->client, request, {}, impl_->deadline_hooks(deadline));
    if (ex.failure == http::Failure::kTooLarge) detail::warn_over_cap("download_file", path, cap);
    if (!ex.success()) return std::nullopt;
    return std::move(ex.response.body);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const SandboxNotInitializedError&) {
    throw;
  } catch (...) {
    return std::nullopt;
  }
}

bool E2BSandbox::do_download_file_to(std::string_view path, const std::filesystem::path& destination, Timeout timeout,
                                     std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  // Streamed into a temporary file beside the destination, renamed into place only when complete.
  const auto partial = std::filesystem::path(destination.string() + ".part-" + random_hex(4));
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!out) return false;
  auto request = impl_->sandbox_request(kEnvdPort, "GET", impl_->files_query(path));
  request.cancel = call->token();
  if (timeout) request.timeout = timeout->count() > 0 ? *timeout : milliseconds(0);
  int status = 0;
  request.on_headers = [&](int s) { status = s; };
  // Counted on the bytes received; the transfer stops at the first piece past the cap.
  detail::ByteCap count(max_bytes.value_or(impl_->options.max_download_bytes));
  request.on_body = [&](std::string_view piece) {
    if (status != 200) return true;  // an error body is not the file
    if (!count.add(piece.size())) return false;
    out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
    return static_cast<bool>(out);
  };
  const auto ex = impl_->client.perform(request);
  out.close();
  std::error_code ec;
  if (count.over()) detail::warn_over_cap("download_file_to", path, count.cap());
  if (!ex.success() || status != 200 || !out || count.over()) {
    std::filesystem::remove(partial, ec);
    return false;
  }
  std::filesystem::rename(partial, destination, ec);
  if (ec) std::filesystem::remove(partial, ec);
  return !ec;
}

void E2BSandbox::do_terminate(Timeout timeout) {
  // Calls in flight are cancelled: they return by the contract's rules (docs/backends/e2b.md "terminate").
  if (!impl_->calls.cancel_all()) return;
  const auto deadline = Deadline::after(timeout, impl_->options.request_timeout * 2);
  auto request = impl_->api_request("DELETE", "/sandboxes/" + impl_->id);
  request.timeout = deadline.bound(impl_->options.request_timeout);
  const auto ex = http::perform_with_retries(impl_->client, request, {}, impl_->deadline_hooks(deadline));
  // 404: already gone, which is what terminate wants (docs/protocols/e2b.md "Control plane").
  if (ex.success() || (ex.ok() && ex.response.status == 404)) {
    impl_->calls.mark_terminated();
    return;
  }
  const std::string said = ex.ok() ? impl_->service_text(ex.response.body) : std::string();
  const auto cause = http::to_transport_error(ex, "terminate", said);
  throw_nested(SandboxTerminateError("terminate failed; the sandbox " + impl_->id + " may still be running: " +
                                         cause.what(), Stage::kTerminate, http::error_kind(ex)), cause);
}

E2BContext E2BSandbox::create_context(Language language, std::optional<std::string> cwd) {
  if (cwd) require_utf8(*cwd, "create_context: the cwd");
  const auto call = impl_->begin_call();
  json body = {{"language", to_string(language)}};
  if (cwd) body["cwd"] = *cwd;
  auto request = impl_->sandbox_request(kInterpreterPort, "POST", "/contexts", body.dump());
  request.headers.emplace_back("Content-Type", "application/json");
  request.cancel = call->token();
  request.idempotent = false;  // a re-sent create could start a second kernel: never retried once written
  http::RetryHooks hooks;
  hooks.retryable = [](const http::Exchange& e) { return !e.request_written && http::is_transient(e, false); };
  const auto ex = http::perform_with_retries(impl_->client, request, {}, hooks);
  if (!ex.success()) impl_->throw_file_error(ex, Stage::kExecute, "create_context");
  const json answer = detail::parse_untrusted_json(ex.response.body);
  if (!answer.is_object() || !answer.contains("id") || !answer["id"].is_string())
    throw SandboxExecutionError("create_context: malformed answer", Stage::kExecute, ErrorKind::kInternal);
  return {answer["id"].get<std::string>(), answer.value("language", ""), answer.value("cwd", "")};
}

std::vector<E2BContext> E2BSandbox::list_contexts() {
  const auto call = impl_->begin_call();
  auto request = impl_->sandbox_request(kInterpreterPort, "GET", "/contexts");
  request.cancel = call->token();
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (!ex.success()) impl_->throw_file_error(ex, Stage::kExecute, "list_contexts");
  const json answer = detail::parse_untrusted_json(ex.response.body);
  if (!answer.is_array()) throw SandboxExecutionError("list_contexts: malformed answer", Stage::kExecute, ErrorKind::kInternal);
  std::vector<E2BContext> contexts;
  for (const auto& c : answer) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string()) continue;
    contexts.push_back({c["id"].get<std::string>(), c.value("language", ""), c.value("cwd", "")});
  }
  return contexts;
}

void E2BSandbox::restart_context(std::string_view context_id) {
  if (context_id.empty()) throw std::invalid_argument("context_id is empty");
  const auto call = impl_->begin_call();
  auto request = impl_->sandbox_request(kInterpreterPort, "POST", "/contexts/" + http::url_encode(context_id) + "/restart");
  request.cancel = call->token();
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (!ex.success()) impl_->throw_file_error(ex, Stage::kExecute, "restart_context");
}

void E2BSandbox::remove_context(std::string_view context_id) {
  if (context_id.empty()) throw std::invalid_argument("context_id is empty");
  const auto call = impl_->begin_call();
  auto request = impl_->sandbox_request(kInterpreterPort, "DELETE", "/contexts/" + http::url_encode(context_id));
  request.cancel = call->token();
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (!ex.success()) impl_->throw_file_error(ex, Stage::kExecute, "remove_context");
}

}  // namespace code_interpreter
