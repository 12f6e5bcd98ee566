#include "bedrock/stub.hpp"

#include <algorithm>
#include <cctype>

#include "code_interpreter/management.hpp"
#include "core/callback_guard.hpp"
#include "core/network_policy.hpp"
#include "core/random_id.hpp"
#include "core/untrusted.hpp"
#include "core/utf8.hpp"
#include "http/outcome.hpp"

namespace code_interpreter::bedrock {
namespace {

using nlohmann::json;

constexpr const char* kSessionHeader = "x-amzn-code-interpreter-session-id";  // docs/protocols/bedrock.md "InvokeCodeInterpreter"

// libcurl 7.88 signs the path as sent, encoded once; AWS signs it encoded twice (docs/protocols/bedrock.md
// "Endpoints and SigV4 signing"). Both agree exactly when the identifier needs no percent-encoding.
bool plain_identifier(std::string_view id) {
  if (id.empty() || id.size() > 256) return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == '~';
  });
}

// The decoded size of the file content in a readFiles answer's blocks (a blob's base64 counted as the bytes it
// decodes to, never more), so a file of exactly the cap passes.
std::uint64_t file_content_bytes(const json& content) {
  std::uint64_t total = 0;
  for (const auto& block : content) {
    if (!block.is_object()) continue;
    const auto resource = block.find("resource");
    if (resource == block.end() || !resource->is_object()) continue;
    if (const auto t = resource->find("text"); t != resource->end() && t->is_string())
      total += t->get_ref<const std::string&>().size();
    if (const auto b = resource->find("blob"); b != resource->end() && b->is_string()) {
      const auto& text = b->get_ref<const std::string&>();
      std::size_t n = text.size();
      while (n > 0 && text[n - 1] == '=') --n;
      total += n / 4 * 3 + (n % 4 > 1 ? n % 4 - 1 : 0);
    }
  }
  return total;
}

// Several result events are folded together (docs/protocols/bedrock.md "Events and exception frames"): content
// concatenated, stdout / stderr concatenated, the latest non-null scalar kept, isError OR-ed.
void merge_result(Invocation& inv, const json& payload, detail::OutputStream* out, detail::OutputStream* err) {
  inv.result_seen = true;
  if (const auto c = payload.find("content"); c != payload.end() && c->is_array())
    for (const auto& block : *c) inv.content.push_back(block);
  if (const auto e = payload.find("isError"); e != payload.end() && e->is_boolean()) inv.is_error |= e->get<bool>();
  const auto s = payload.find("structuredContent");
  if (s == payload.end() || !s->is_object()) return;
  for (const auto& [key, value] : s->items()) {
    if (value.is_null()) continue;
    if ((key == "stdout" || key == "stderr") && value.is_string()) {
      const auto& text = value.get_ref<const std::string&>();
      (key == "stdout" ? inv.out : inv.err) += text;
      auto* stream = key == "stdout" ? out : err;
      // After a throw both streams are silenced (they still collect the text), so no callback throws twice.
      if (stream == nullptr) continue;
      if (auto thrown = detail::deliver_guarded([&] { stream->feed(text); }, {out, err}))
        inv.callback_threw = std::move(thrown);
      continue;
    }
    inv.structured[key] = value;
  }
}

}  // namespace

bool valid_session_id(std::string_view id) {  // ^[0-9a-zA-Z]{1,40}$ (docs/protocols/bedrock.md "Session operations")
  return !id.empty() && id.size() <= 40 &&
         std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isalnum(c); });
}

std::string session_name_on_wire(const std::optional<std::string>& tag, const std::optional<std::string>& name) {
  if (!tag) return name.value_or("");
  return std::string(kTagNamePrefix) + *tag + (name ? "." + *name : "");
}

std::pair<std::optional<std::string>, std::optional<std::string>> split_session_name(std::string_view wire) {
  if (wire.rfind(kTagNamePrefix, 0) == 0) {
    const auto rest = wire.substr(kTagNamePrefix.size());
    const auto dot = rest.find('.');
    const auto tag = rest.substr(0, dot);
    if (is_valid_sandbox_tag(tag)) {
      if (dot == std::string_view::npos) return {std::string(tag), std::nullopt};
      if (dot + 1 < rest.size()) return {std::string(tag), std::string(rest.substr(dot + 1))};
    }
  }
  return {std::nullopt, std::string(wire)};  // a session this library did not tag
}

std::string bounded_text(std::string_view text, std::size_t limit) {
  std::string cut(text.substr(0, detail::utf8_safe_cut(text, std::min(limit, text.size()))));
  std::string clean;
  detail::append_utf8_replacing(clean, cut);
  return text.size() > limit ? clean + "..." : clean;
}

std::string safe_name(std::string_view text) {
  std::string out(text.substr(0, std::min<std::size_t>(text.size(), 100)));
  for (auto& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return out;
}

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

ErrorKind aws_error_kind(std::string_view code, int status) {
  std::string c(code);
  std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (c.find("throttl") != std::string::npos || status == 429) return ErrorKind::kRateLimited;
  if (c.find("notfound") != std::string::npos) return ErrorKind::kNotFound;
  if (c.find("accessdenied") != std::string::npos) return ErrorKind::kPermissionDenied;
  if (c.find("quota") != std::string::npos) return ErrorKind::kQuotaExceeded;
  if (c.find("validation") != std::string::npos || c.find("conflict") != std::string::npos) return ErrorKind::kInvalidArgument;
  if (c.find("signature") != std::string::npos || c.find("unrecognizedclient") != std::string::npos ||
      c.find("authenticationtoken") != std::string::npos || c.find("expiredtoken") != std::string::npos)
    return ErrorKind::kUnauthenticated;
  if (c.find("internalserver") != std::string::npos || c.find("serviceunavailable") != std::string::npos)
    return ErrorKind::kUnavailable;
  http::Exchange answered;
  answered.response.status = status;
  return http::error_kind(answered);
}

std::string aws_type(std::string_view name) {
  std::string out = "aws." + std::string(name);
  if (out.size() > 4) out[4] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[4])));
  return out;
}

std::optional<int> Invocation::exit_code() const {
  const auto it = structured.find("exitCode");
  if (it == structured.end()) return std::nullopt;
  return detail::untrusted_exit_code(*it);
}

// ---- configuration (stage configure: nothing sent yet) ----

AgentCoreStub::AgentCoreStub(BedrockOptions opts) : options(std::move(opts)) {
  if (options.language != Language::kPython && options.language != Language::kJavaScript &&
      options.language != Language::kTypeScript)
    throw SandboxStartError("Bedrock AgentCore runs python, javascript or typescript, not " +
                                std::string(to_string(options.language)),
                            Stage::kConfigure, ErrorKind::kUnsupported);
  // "." and ".." are dot segments: libcurl removes them from the path, so the requests would go to other paths.
  if (options.code_interpreter_identifier == "." || options.code_interpreter_identifier == "..")
    throw SandboxStartError("code interpreter identifier '" + options.code_interpreter_identifier +
                                "' is not an interpreter id, e.g. aws.codeinterpreter.v1",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  if (!plain_identifier(options.code_interpreter_identifier))
    throw SandboxStartError("code interpreter identifier '" + bounded_text(options.code_interpreter_identifier, 80) +
                                "' needs percent-encoding (an ARN?): pass the interpreter id instead, e.g. "
                                "aws.codeinterpreter.v1",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  if (options.session_timeout.count() < 1 || options.session_timeout.count() > 28800)
    throw SandboxStartError("session_timeout must be 1..28800 seconds", Stage::kConfigure, ErrorKind::kInvalidArgument);
  // Both go into JSON text (nlohmann's dump() throws type_error on bytes that are not UTF-8); the model's length
  // counts characters, not bytes.
  if (options.tag && !is_valid_sandbox_tag(*options.tag))
    throw SandboxStartError("tag must be 1..32 characters of A-Z, a-z, 0-9 and _", Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  if (options.session_name) {
    const auto& name = *options.session_name;
    const auto characters = std::count_if(name.begin(), name.end(), [](unsigned char c) { return (c & 0xC0) != 0x80; });
    // The service's name is 1..100 characters, the tag's prefix "ci.<tag>." counted (docs/backends/bedrock.md "Tags
    // and session names").
    const std::string prefix = options.tag ? session_name_on_wire(options.tag, std::nullopt) + "." : "";
    const auto limit = static_cast<long>(100 - prefix.size());
    if (!detail::is_valid_utf8(name) || characters < 1 || characters > limit)
      throw SandboxStartError("session_name must be 1.." + std::to_string(limit) + " characters of UTF-8" +
                                  (prefix.empty() ? std::string()
                                                  : " (the service's 100 less the tag's prefix " + prefix + ")"),
                              Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  check_network_mode(options);
  for (const auto& package : options.additional_packages)
    if (package.empty() || !detail::is_valid_utf8(package) || package.find('\0') != std::string::npos)
      throw SandboxStartError("additional_packages: a package name is empty, has a NUL byte or is not UTF-8",
                              Stage::kConfigure, ErrorKind::kInvalidArgument);
  config = resolve_config(options);
  options.credentials.reset();
  signer_.emplace(config.region, config.credentials);  // docs/protocols/bedrock.md "Endpoints and SigV4 signing"
}

std::string AgentCoreStub::service_text(std::string text, std::size_t limit) const {
  detail::redact(text, {config.credentials.secret_access_key, config.credentials.session_token,
                        config.credentials.access_key_id});
  redact_signatures(text);
  return bounded_text(text, limit);
}

// The code from x-amzn-ErrorType, else the body's code or __type, trimmed of a "prefix#" and of ":suffix" /
// ",suffix"; the message from message / Message.
AwsError AgentCoreStub::aws_error(const http::Response& response, std::string_view body) const {
  AwsError e;
  const json parsed = detail::parse_untrusted_json(body);
  if (auto header = response.header("x-amzn-errortype")) e.code = std::string(*header);
  if (parsed.is_object()) {
    if (e.code.empty()) {
      if (parsed.contains("code") && parsed["code"].is_string()) e.code = parsed["code"].get<std::string>();
      else if (parsed.contains("__type") && parsed["__type"].is_string()) e.code = parsed["__type"].get<std::string>();
    }
    for (const char* key : {"message", "Message"})
      if (parsed.contains(key) && parsed[key].is_string()) e.message = parsed[key].get<std::string>();
  }
  if (const auto colon = e.code.find_first_of(":,"); colon != std::string::npos) e.code.resize(colon);
  if (const auto hash = e.code.find('#'); hash != std::string::npos) e.code = e.code.substr(hash + 1);
  detail::redact(e.code, {config.credentials.secret_access_key, config.credentials.session_token});
  redact_signatures(e.code);
  e.code = safe_name(e.code);
  e.message = service_text(std::move(e.message));
  return e;
}

// ---- requests ----

http::Request AgentCoreStub::request(http::Operation op, std::string method, std::string path, std::string body) const {
  http::Request r = http::for_operation(op);
  r.method = std::move(method);
  r.url = config.endpoint + "/code-interpreters/" + options.code_interpreter_identifier + path;
  r.body = std::move(body);
  if (!r.body.empty()) r.headers.emplace_back("Content-Type", "application/json");
  r.timeout = options.request_timeout;
  signer_->sign(r);
  return r;
}

http::Request AgentCoreStub::start_request() const {
  json body = {{"sessionTimeoutSeconds", options.session_timeout.count()}, {"clientToken", detail::uuid4()}};
  if (options.session_name || options.tag) body["name"] = session_name_on_wire(options.tag, options.session_name);
  return request(http::Operation::kAgentCoreStart, "PUT", "/sessions/start", body.dump());
}

http::Request AgentCoreStub::stop_request() const { return stop_request_for(session_id); }

http::Request AgentCoreStub::stop_request_for(std::string_view id) const {
  return request(http::Operation::kAgentCoreStop, "PUT", "/sessions/stop?sessionId=" + std::string(id),
                 json{{"clientToken", detail::uuid4()}}.dump());
}

http::Request AgentCoreStub::get_session_request() const {
  return request(http::Operation::kAgentCoreGetSession, "GET", "/sessions/get?sessionId=" + session_id);
}

http::Request AgentCoreStub::invoke_request(http::Operation op, std::string_view tool, json arguments) const {
  auto req = request(op, "POST", "/tools/invoke", json{{"name", tool}, {"arguments", std::move(arguments)}}.dump());
  req.headers.emplace_back(kSessionHeader, session_id);
  req.http1_only = true;
  return req;
}

// ---- answers ----

std::optional<std::string> AgentCoreStub::session_id_of(std::string_view body) {
  const json answer = detail::parse_untrusted_json(body);
  if (!answer.is_object() || !answer.contains("sessionId") || !answer["sessionId"].is_string() ||
      !valid_session_id(answer["sessionId"].get<std::string>()))
    return std::nullopt;
  return answer["sessionId"].get<std::string>();
}

std::optional<std::string> AgentCoreStub::session_status_of(std::string_view body) {
  const json answer = detail::parse_untrusted_json(body);
  if (!answer.is_object() || !answer.contains("status") || !answer["status"].is_string()) return std::nullopt;
  return answer["status"].get<std::string>();
}

bool AgentCoreStub::decode_message(Invocation& inv, EventMessage&& message, const InvocationLimits& limits) const {
  const auto type = message.string_header(":message-type").value_or("");
  if (type == "event") {
    if (message.string_header(":event-type").value_or("") != "result") return true;  // unknown events are skipped
    // Each message is capped, but not their number: what is kept from all of them is bounded too.
    inv.result_bytes += message.payload.size();
    if (inv.result_bytes > limits.result_budget) {
      inv.too_large = true;
      return false;
    }
    const json payload = detail::parse_untrusted_json(message.payload);
    if (!payload.is_object()) {
      inv.malformed_event = true;
      return false;
    }
    merge_result(inv, payload, limits.out, limits.err);
    if (limits.file_cap) {
      inv.file_bytes = file_content_bytes(inv.content);
      if (inv.file_bytes > *limits.file_cap) {
        inv.over_cap = true;
        return false;
      }
    }
    return !inv.callback_threw;
  }
  if (type != "exception" && type != "error") {
    // No, an unknown or a non-string message type: not a refusal the service made, a malformed frame.
    inv.malformed_event = true;
    return false;
  }
  // An exception or an error frame: names are matched case-insensitively (docs/protocols/bedrock.md "Events and
  // exception frames").
  std::string name(type == "exception" ? message.string_header(":exception-type").value_or("")
                                       : message.string_header(":error-code").value_or(""));
  detail::redact(name, {config.credentials.secret_access_key, config.credentials.session_token});
  redact_signatures(name);
  name = safe_name(name);
  if (name.empty()) name = type == "exception" ? "UnknownException" : "InternalFailure";
  inv.exception = aws_type(name);
  inv.exception_first = !inv.result_seen;
  if (type == "exception") {
    const json payload = detail::parse_untrusted_json(message.payload);
    if (payload.is_object() && payload.contains("message") && payload["message"].is_string())
      inv.exception_message = service_text(payload["message"].get<std::string>());
  } else {
    inv.exception_message = service_text(std::string(message.string_header(":error-message").value_or("")));
  }
  return false;
}

// The interpreter's network mode is fixed when it is made (the control plane); a session cannot change it. So the
// policy is checked against the mode the caller states, and refused where the mode cannot give it (docs/backends/
// bedrock.md "Network policy").
void check_network_mode(const BedrockOptions& options) {
  const auto& mode = options.interpreter_network_mode;
  if (mode != "SANDBOX" && mode != "PUBLIC" && mode != "VPC")
    throw SandboxStartError("interpreter_network_mode must be SANDBOX, PUBLIC or VPC", Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  if (options.code_interpreter_identifier == "aws.codeinterpreter.v1" && mode != "SANDBOX")
    throw SandboxStartError("the built-in interpreter aws.codeinterpreter.v1 runs in SANDBOX network mode; a " + mode +
                                " interpreter is one you create (pass its identifier)",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  detail::check_network_policy(options.network_policy);
  if (!options.network_policy) return;
  switch (options.network_policy->access) {
    case NetworkAccess::kNone:
      detail::refuse_network_policy("Bedrock AgentCore", NetworkAccess::kNone,
                                    "no interpreter network mode has no network (SANDBOX mode still reaches S3 and DNS)");
    case NetworkAccess::kAllowlist:
      detail::refuse_network_policy("Bedrock AgentCore", NetworkAccess::kAllowlist,
                                    "no interpreter network mode limits a session to a list of hosts");
    case NetworkAccess::kAll:
      if (mode != "PUBLIC")
        detail::refuse_network_policy("Bedrock AgentCore", NetworkAccess::kAll,
                                      "it needs an interpreter in PUBLIC network mode (interpreter_network_mode is " +
                                          mode + ")");
      return;
  }
}

}  // namespace code_interpreter::bedrock
