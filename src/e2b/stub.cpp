#include "e2b/stub.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <initializer_list>

#include "code_interpreter/management.hpp"
#include "core/defaults.hpp"
#include "core/manager.hpp"
#include "core/network_policy.hpp"
#include "core/untrusted.hpp"
#include "core/utf8.hpp"
#include "http/stream_decoders.hpp"

namespace code_interpreter::e2b {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

std::optional<std::string> from_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string without_trailing_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

bool is_http_url(std::string_view url) { return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0; }

// `text` with each secret replaced (before the cut, so no piece of one survives), bounded to 300 bytes and made valid
// UTF-8, since it is untrusted.
std::string clean_text(std::string text, std::initializer_list<std::string_view> secrets) {
  detail::redact(text, secrets);
  if (text.size() > 300) text = text.substr(0, detail::utf8_safe_cut(text, 300)) + "...";
  std::string clean;
  detail::append_utf8_replacing(clean, text);
  return clean;
}

// The service's own words from an error body: `message` of a JSON body, else the text itself, cleaned.
std::string service_message(std::string_view body, std::initializer_list<std::string_view> secrets) {
  std::string text(body);
  const json parsed = detail::parse_untrusted_json(body);
  if (parsed.is_object()) {
    if (const auto it = parsed.find("message"); it != parsed.end() && it->is_string()) text = it->get<std::string>();
  } else if (parsed.is_string()) {
    text = parsed.get<std::string>();
  }
  return clean_text(std::move(text), secrets);
}

}  // namespace

bool valid_sandbox_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

bool is_gone_answer(int status, std::string_view body) {
  return status == 502 && body.find("not found") != std::string_view::npos;
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

std::optional<std::string> connect_error_code(std::string_view body) {
  const json parsed = detail::parse_untrusted_json(body);
  if (parsed.is_object() && parsed.contains("code") && parsed["code"].is_string()) return parsed["code"].get<std::string>();
  return std::nullopt;
}

void require_utf8(std::string_view text, std::string_view what) {
  if (!detail::is_valid_utf8(text)) throw std::invalid_argument(std::string(what) + " is not valid UTF-8");
}

// ---- configuration (stage configure: nothing sent yet) ----

E2BStub::E2BStub(E2BOptions opts) : options(std::move(opts)) {
  auto key = options.api_key ? options.api_key : from_env("E2B_API_KEY");
  options.api_key.reset();
  if (!key || key->empty())
    throw SandboxStartError("no E2B API key: set E2BOptions::api_key or E2B_API_KEY", Stage::kConfigure,
                            ErrorKind::kUnauthenticated);
  if (key->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
    throw SandboxStartError("the E2B API key contains a line break or NUL", Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  if (options.request_timeout.count() <= 0 || options.request_timeout > detail::kMaxRequestBudget)
    throw SandboxStartError("request_timeout must be above 0 and at most 24 hours", Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  api_key_ = std::move(*key);
  domain_ = options.domain ? *options.domain : from_env("E2B_DOMAIN").value_or("e2b.app");
  api_url_ = without_trailing_slash(options.api_url ? *options.api_url
                                                    : from_env("E2B_API_URL").value_or("https://api." + domain_));
  if (auto s = options.sandbox_url ? options.sandbox_url : from_env("E2B_SANDBOX_URL"))
    sandbox_url_ = without_trailing_slash(*s);
  if (!is_http_url(api_url_))
    throw SandboxStartError("the E2B API URL must start with http:// or https://: " + api_url_, Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  if (sandbox_url_ && !is_http_url(*sandbox_url_))
    throw SandboxStartError("the E2B sandbox URL must start with http:// or https://: " + *sandbox_url_,
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  if (options.lifetime.count() <= 0)
    throw SandboxStartError("the sandbox lifetime must be positive", Stage::kConfigure, ErrorKind::kInvalidArgument);
  if (options.process_keepalive.count() < 1 || options.process_keepalive > std::chrono::hours(1))
    throw SandboxStartError("process_keepalive must be 1 s to 1 hour", Stage::kConfigure, ErrorKind::kInvalidArgument);
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
  // The tag's key is the library's (docs/backends/e2b.md "Tags"): a caller's value there would pass for a tag.
  if (options.metadata.count(std::string(kTagMetadataKey)) != 0)
    throw SandboxStartError("metadata: the key " + std::string(kTagMetadataKey) + " is the library's; set E2BOptions::tag",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  if (options.tag && !is_valid_sandbox_tag(*options.tag))
    throw SandboxStartError("tag must be 1..32 characters of A-Z, a-z, 0-9 and _", Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  detail::check_network_policy(options.network_policy);  // E2B honours all three accesses
  for (const auto& [k, v] : options.env_vars)
    if (!detail::is_valid_utf8(k) || !detail::is_valid_utf8(v)) throw not_utf8("an env_vars name or value");
  for (const auto& p : options.additional_packages)
    if (!detail::is_valid_utf8(p)) throw not_utf8("an additional_packages name");
}

std::string E2BStub::service_text(std::string_view body) const { return service_message(body, {api_key_, access_token}); }

std::string E2BStub::untrusted_text(std::string_view text) const {
  return clean_text(std::string(text), {api_key_, access_token});
}

// ---- requests ----

http::Request E2BStub::api_request(http::Operation op, std::string method, std::string path, std::string body) const {
  http::Request r = http::for_operation(op);
  r.method = std::move(method);
  r.url = api_url_ + path;
  r.body = std::move(body);
  r.headers = {{"X-API-Key", api_key_}};  // docs/protocols/e2b.md "Control plane"
  if (!r.body.empty()) r.headers.emplace_back("Content-Type", "application/json");
  r.timeout = options.request_timeout;
  return r;
}

std::string E2BStub::base_url(int port) const {
  if (sandbox_url_) return *sandbox_url_;
  return "https://" + std::to_string(port) + "-" + id + "." + domain_;  // docs/protocols/e2b.md "Reaching a sandbox"
}

http::Request E2BStub::sandbox_request(http::Operation op, int port, std::string method, std::string path,
                                       std::string body) const {
  http::Request r = http::for_operation(op);
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

http::Request E2BStub::create_request(bool v1, const std::string& token) const {
  json metadata = json::object();
  for (const auto& [k, v] : options.metadata) metadata[k] = v;
  metadata[std::string(kClientTokenKey)] = token;
  if (options.tag) metadata[std::string(kTagMetadataKey)] = *options.tag;
  json body = {{"templateID", options.template_id}, {"timeout", options.lifetime.count()}, {"metadata", metadata}};
  if (!options.env_vars.empty()) body["envVars"] = options.env_vars;
  // As npm e2b@2.51.0 encodes allowInternetAccess and network {allowOut, denyOut} (docs/protocols/e2b.md "Network
  // fields of a create"); all() sends nothing: the service's default is the whole internet.
  if (options.network_policy && options.network_policy->access == NetworkAccess::kNone) {
    body["allow_internet_access"] = false;
  } else if (options.network_policy && options.network_policy->access == NetworkAccess::kAllowlist) {
    body["network"] = {{"allowOut", options.network_policy->allowed_hosts}, {"denyOut", json::array({"0.0.0.0/0"})}};
  }
  // npm e2b@2.51.0 (docs/protocols/e2b.md "Control plane"); older or self-hosted APIs have only v1.
  if (v1) body["secure"] = true;
  return api_request(http::Operation::kE2BCreate, "POST", v1 ? "/sandboxes" : "/v2/sandboxes", body.dump());
}

http::Request E2BStub::connect_request(std::string_view prefix, std::string_view sandbox_id) const {
  return api_request(http::Operation::kE2BConnect, "POST", std::string(prefix) + std::string(sandbox_id) + "/connect",
                     json{{"timeout", options.lifetime.count()}}.dump());
}

http::Request E2BStub::list_by_token_request(const std::string& token) const {
  // The JS SDK encodes each key and value, joins them as k=v, and sends that as one parameter (docs/protocols/e2b.md
  // "Listing sandboxes by metadata").
  const std::string filter = http::url_encode(kClientTokenKey) + "=" + http::url_encode(token);
  return api_request(http::Operation::kE2BListSandboxes, "GET",
                     "/v2/sandboxes?metadata=" + http::url_encode(filter) + "&state=running,paused");
}

http::Request E2BStub::kill_request(std::string_view sandbox_id) const {
  return api_request(http::Operation::kE2BKill, "DELETE", "/sandboxes/" + std::string(sandbox_id));
}

http::Request E2BStub::health_request() const {
  return sandbox_request(http::Operation::kE2BHealth, kEnvdPort, "GET", "/health");
}

http::Request E2BStub::files_request(http::Operation op, std::string method, std::string_view path) const {
  return sandbox_request(op, kEnvdPort, std::move(method), "/files?path=" + http::url_encode(path));
}

http::Request E2BStub::upload_request(const std::string& dir, const std::vector<Attachment>& files) const {
  // docs/protocols/e2b.md "envd health and files"
  auto request = sandbox_request(http::Operation::kE2BUpload, kEnvdPort, "POST", "/files");
  for (const auto& f : files) {
    http::MultipartPart part;
    part.name = "file";
    part.filename = without_trailing_slash(dir) + "/" + f.filename;
    if (f.source) part.file = f.source;
    else part.data = f.data;
    request.multipart.push_back(std::move(part));
  }
  return request;
}

http::Request E2BStub::rpc_request(std::string_view method, const json& body, std::string_view what) const {
  for (const auto& [key, value] : body.items())
    if (value.is_string()) require_utf8(value.get_ref<const std::string&>(), std::string(what) + ": the " + key);
  auto request = sandbox_request(http::Operation::kE2BFilesystem, kEnvdPort, "POST", "/" + std::string(method), body.dump());
  request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("Connect-Protocol-Version", "1");  // unary Connect call (docs/protocols/e2b.md "Connect calls and their JSON")
  return request;
}

http::Request E2BStub::execute_request(std::optional<std::string_view> context_id, std::string_view code,
                                       Language language, const std::map<std::string, std::string>& env,
                                       milliseconds budget) const {
  json body = {{"code", code}};
  if (context_id) body["context_id"] = *context_id;
  else body["language"] = to_string(language);
  if (!env.empty()) body["env_vars"] = env;  // this call only (docs/protocols/e2b.md "Code-interpreter requests")
  auto request = sandbox_request(http::Operation::kE2BExecute, kInterpreterPort, "POST", "/execute", body.dump());
  request.headers.emplace_back("Content-Type", "application/json");
  request.http1_only = true;  // closing the connection is what interrupts the kernel (docs/protocols/e2b.md "Interrupts need HTTP/1.1")
  request.timeout = budget.count() > 0 ? budget : milliseconds(0);
  return request;
}

namespace {
// The ProcessConfig of a shell command, as the SDK's commands.run sends it (docs/protocols/e2b.md "process.Process/Start").
json shell_process(std::string_view cmd, const std::map<std::string, std::string>& env,
                   const std::optional<std::string>& cwd) {
  json process = {{"cmd", "/bin/bash"}, {"args", json::array({"-l", "-c", std::string(cmd)})}, {"envs", json::object()}};
  for (const auto& [k, v] : env) process["envs"][k] = v;
  if (cwd) process["cwd"] = *cwd;
  return process;
}
// The Connect protocol allows at most 10 digits of Connect-Timeout-Ms (a longer value is refused): a budget beyond
// that (~115 days) is no limit.
constexpr milliseconds kMaxConnectTimeout{9'999'999'999};
}  // namespace

http::Request E2BStub::command_request(std::string_view cmd, const CommandOptions& o, milliseconds budget) const {
  auto request = stream_request(http::Operation::kE2BCommand, "Start",
                                json{{"process", shell_process(cmd, o.env, o.cwd)}, {"stdin", false}}, budget);
  // envd kills the process when Connect-Timeout-Ms elapses (docs/protocols/e2b.md "process.Process/Start"); our own
  // limit is a backstop.
  constexpr milliseconds kBackstop{std::chrono::seconds(10)};
  if (budget.count() > 0 && budget <= kMaxConnectTimeout) request.timeout = budget + kBackstop;
  return request;
}

http::Request E2BStub::stream_request(http::Operation op, std::string_view method, const json& body,
                                      milliseconds budget) const {
  auto request = sandbox_request(op, kEnvdPort, "POST", "/process.Process/" + std::string(method),
                                 http::encode_envelope(0, body.dump()));
  request.headers.emplace_back("Content-Type", "application/connect+json");
  request.headers.emplace_back("Connect-Protocol-Version", "1");
  request.headers.emplace_back("Keepalive-Ping-Interval", std::to_string(options.process_keepalive.count()));
  // A stream silent for twice its keep-alive interval is dead (docs/protocols/e2b.md "process.Process/Connect and the
  // unary process calls").
  request.idle_timeout = 2 * options.process_keepalive;
  if (budget.count() > 0 && budget <= kMaxConnectTimeout)
    request.headers.emplace_back("Connect-Timeout-Ms", std::to_string(budget.count()));
  request.timeout = milliseconds(0);  // the process's lifetime is envd's to enforce; a dead stream is the watchdog's
  request.http1_only = true;  // closing the connection must reach envd as a disconnect
  return request;
}

http::Request E2BStub::spawn_request(std::string_view cmd, const SpawnOptions& o) const {
  const json body = {{"process", shell_process(cmd, o.env, o.cwd)}, {"stdin", o.stdin_pipe}};
  return stream_request(http::Operation::kE2BCommand, "Start", body, o.timeout.value_or(milliseconds(0)));
}

http::Request E2BStub::process_connect_request(std::uint32_t pid) const {
  return stream_request(http::Operation::kE2BProcessConnect, "Connect", json{{"process", {{"pid", pid}}}},
                        milliseconds(0));
}

http::Request E2BStub::process_rpc_request(http::Operation op, std::string_view method, const json& body) const {
  auto request = sandbox_request(op, kEnvdPort, "POST", "/process.Process/" + std::string(method), body.dump());
  request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("Connect-Protocol-Version", "1");  // unary Connect call (docs/protocols/e2b.md "Connect calls and their JSON")
  return request;
}

// ---- answers ----

void E2BStub::accept_sandbox_answer(std::string_view body, Stage stage) {
  const json answer = detail::parse_untrusted_json(body);
  const auto* sandbox_id = answer.is_object() && answer.contains("sandboxID") && answer["sandboxID"].is_string()
                               ? answer["sandboxID"].get_ptr<const std::string*>() : nullptr;
  if (sandbox_id == nullptr || !valid_sandbox_id(*sandbox_id))
    throw SandboxStartError("the E2B API answered without a usable sandboxID", stage, ErrorKind::kInternal);
  id = *sandbox_id;
  if (const auto t = answer.find("envdAccessToken"); t != answer.end() && t->is_string()) access_token = t->get<std::string>();
  if (access_token.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) access_token.clear();
  if (const auto v = answer.find("envdVersion"); v != answer.end() && v->is_string()) envd_version = v->get<std::string>();
  if (const auto d = answer.find("domain"); d != answer.end() && d->is_string() && !d->get<std::string>().empty())
    domain_ = d->get<std::string>();
}

std::optional<std::vector<std::string>> E2BStub::sandboxes_with_token(std::string_view body, const std::string& token) {
  const json found = detail::parse_untrusted_json(body);
  if (!found.is_array()) return std::nullopt;
  std::vector<std::string> ids;
  for (const auto& sandbox : found) {
    const auto it = sandbox.find("sandboxID");
    if (it == sandbox.end() || !it->is_string() || !valid_sandbox_id(it->get<std::string>())) continue;
    const auto meta = sandbox.find("metadata");
    if (meta == sandbox.end() || !meta->is_object()) continue;
    const auto tok = meta->find(std::string(kClientTokenKey));
    if (tok == meta->end() || !tok->is_string() || tok->get_ref<const std::string&>() != token) continue;
    ids.push_back(it->get<std::string>());
  }
  return ids;
}

std::vector<FileInfo> E2BStub::decode_entries(const json& answer) {
  std::vector<FileInfo> files;
  const auto entries = answer.find("entries");
  if (entries == answer.end()) return files;  // protojson omits an empty list
  if (!entries->is_array())
    throw SandboxExecutionError("list_files: malformed answer", Stage::kDownload, ErrorKind::kInternal);
  for (const auto& e : *entries) {
    if (!e.is_object()) continue;
    // A listing carries name, path, is_directory and size, as on every backend (get_info tells the rest), and a
    // link to a directory lists as a directory, as envd types it.
    FileInfo info = decode_entry(e);
    const auto type = e.find("type");
    info.is_directory = type != e.end() && *type == "FILE_TYPE_DIRECTORY";
    info.type.reset();
    info.modified.reset();
    info.permissions.reset();
    files.push_back(std::move(info));
  }
  return files;
}

FileInfo E2BStub::decode_entry(const json& e) {
  FileInfo info;
  if (!e.is_object()) return info;
  if (const auto it = e.find("name"); it != e.end() && it->is_string()) info.name = it->get<std::string>();
  if (const auto it = e.find("path"); it != e.end() && it->is_string()) info.path = it->get<std::string>();
  if (const auto it = e.find("type"); it != e.end() && it->is_string()) {
    const auto& type = it->get_ref<const std::string&>();
    info.is_directory = type == "FILE_TYPE_DIRECTORY";
    if (type == "FILE_TYPE_DIRECTORY") info.type = FileType::kDirectory;
    else if (type == "FILE_TYPE_FILE") info.type = FileType::kFile;
    else if (type == "FILE_TYPE_SYMLINK") info.type = FileType::kSymlink;
  }
  if (const auto it = e.find("symlinkTarget"); it != e.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
    info.type = FileType::kSymlink;
    info.is_directory = false;
  }
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
  if (const auto it = e.find("mode"); it != e.end() && it->is_number_unsigned() && it->get<std::uint64_t>() <= 0xFFFFFFFFu)
    info.permissions = static_cast<std::uint32_t>(it->get<std::uint64_t>() & 07777);
  if (const auto it = e.find("modifiedTime"); it != e.end() && it->is_string())
    info.modified = detail::parse_rfc3339(it->get_ref<const std::string&>());
  return info;
}

std::optional<E2BContext> E2BStub::decode_context(const json& c) {
  if (!c.is_object() || !c.contains("id") || !c["id"].is_string()) return std::nullopt;
  return E2BContext{c["id"].get<std::string>(), c.value("language", ""), c.value("cwd", "")};
}

}  // namespace code_interpreter::e2b
