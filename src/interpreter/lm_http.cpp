#include "interpreter/lm_http.hpp"

#include <cstdlib>
#include <exception>

#include <fmt/format.h>

#include "code_interpreter/logging.hpp"
#include "core/untrusted.hpp"
#include "http/http_client.hpp"
#include "http/outcome.hpp"
#include "http/retry.hpp"

namespace code_interpreter::interpreter {
namespace {

// A service's error text is untrusted and may be long; a bounded excerpt is enough to act on.
constexpr std::size_t kMaxServiceMessage = 500;

template <typename Cause>
[[noreturn]] void throw_lm_error(std::string message, Stage stage, ErrorKind kind, Cause cause) {
  try {
    throw std::move(cause);
  } catch (...) {
    std::throw_with_nested(LMInvocationError(std::move(message), stage, kind));
  }
}

// The service's own explanation: `error.message` in both the OpenAI and the Anthropic error shapes.
std::string service_message(const http::Exchange& exchange, const std::vector<std::string>& secrets) {
  std::string message;
  const auto body = detail::parse_untrusted_json(exchange.response.body);
  if (body.is_object() && body.contains("error")) {
    const auto& error = body["error"];
    if (error.is_object() && error.contains("message") && error["message"].is_string()) {
      message = error["message"].get<std::string>();
    } else if (error.is_string()) {
      message = error.get<std::string>();
    }
  }
  // Redact before cutting: a cut through an echoed key would leave its first bytes where scrub cannot see them.
  message = scrub(std::move(message), secrets);
  if (message.size() > kMaxServiceMessage) message = message.substr(0, kMaxServiceMessage) + "...";
  // The body is untrusted text: keep it printable and valid, byte by byte.
  for (auto& c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return message;
}

}  // namespace

std::string scrub(std::string text, const std::vector<std::string>& secrets) {
  detail::redact(text, secrets);
  return text;
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

void check_header_value(std::string_view operation, std::string_view what, std::string_view value) {
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
    throw LMInvocationError(fmt::format("{}: {} contains a line break or NUL byte", operation, what),
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
}

void read_stop_and_usage(const nlohmann::json& stop_holder, const char* stop_key, const nlohmann::json& body,
                         const char* input_key, const char* output_key, LMResponse& response) {
  if (stop_holder.contains(stop_key) && stop_holder[stop_key].is_string()) {
    response.stop_reason = stop_holder[stop_key].get<std::string>();
  }
  const auto count = [&](const char* key) -> std::uint64_t {
    if (!body.contains("usage") || !body["usage"].is_object() || !body["usage"].contains(key)) return 0;
    const auto& value = body["usage"][key];
    return value.is_number_unsigned() || (value.is_number_integer() && value.get<long long>() >= 0)
               ? value.get<std::uint64_t>()
               : 0;
  };
  response.usage.input_tokens = count(input_key);
  response.usage.output_tokens = count(output_key);
}

std::string trim_slashes(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

void throw_malformed(std::string_view operation, std::string_view what) {
  const std::string message = fmt::format("{}: the reply is not a valid response: {}", operation, what);
  throw_lm_error(message, Stage::kExecute, ErrorKind::kInternal,
                 TransportError(message, TransportError::Kind::kProtocol, 200, std::nullopt, true));
}

void check_model_and_base_url(std::string_view invoker, const std::string& model, const std::string& base_url) {
  if (model.empty()) {
    throw LMInvocationError(fmt::format("{}: no model given", invoker), Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (base_url.empty()) {
    throw LMInvocationError(fmt::format("{}: no base_url given", invoker), Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  }
}

nlohmann::json tool_schema(const ToolDefinition& tool) {
  nlohmann::json schema = nlohmann::json::parse(tool.parameters, nullptr, /*allow_exceptions=*/false);
  if (!schema.is_object()) {
    throw LMInvocationError("tool '" + tool.name + "': parameters is not a JSON object", Stage::kExecute,
                            ErrorKind::kInvalidArgument);
  }
  return schema;
}

nlohmann::json post_json(const LMEndpoint& endpoint, LMHeaders headers, const nlohmann::json& body,
                         std::stop_token cancel) {
  const std::vector<std::string> secrets = {endpoint.api_key};
  http::Request request;
  request.method = "POST";
  request.url = endpoint.url;
  request.headers = std::move(headers);
  request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("Accept", "application/json");
  // Model text is untrusted and may hold invalid UTF-8; replace rather than fail the call.
  request.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // A model call has no side effect to duplicate, so timeouts and broken answers are retried as well.
  request.idempotent = true;
  request.timeout = endpoint.timeout;
  request.cancel = cancel;

  http::RetryPolicy policy;
  policy.max_attempts = endpoint.max_attempts < 1 ? 1 : endpoint.max_attempts;
  http::RetryHooks hooks;
  hooks.retryable = [](const http::Exchange& exchange) {
    // The services say when a retry is pointless (or worth it) in x-should-retry; their SDKs obey it.
    if (exchange.ok()) {
      if (auto should = exchange.response.header("x-should-retry")) {
        if (*should == "false") return false;
        if (*should == "true") return true;
      }
    }
    return http::is_transient(exchange, true);
  };
  int attempts = 0;
  const http::Exchange exchange = http::perform_with_retries(http::HttpClient::shared(), request, policy, hooks,
                                                             &attempts);
  if (exchange.success()) {
    // Tool arguments sent as a JSON value are serialized back to text, and dump() recurses once per level: a
    // hostile depth is refused while parsing (detail::parse_untrusted_json), as every backend refuses it.
    nlohmann::json answer = detail::parse_untrusted_json(exchange.response.body);
    if (answer.is_discarded() || !answer.is_object()) {
      throw_malformed(endpoint.operation,
                      "the body is not a JSON object (or nests too deeply, or holds too many values)");
    }
    return answer;
  }

  const std::string detail = exchange.ok() ? service_message(exchange, secrets) : std::string();
  TransportError cause = http::to_transport_error(exchange, endpoint.operation, detail);
  std::string message = scrub(cause.what(), secrets);
  if (attempts > 1) message += fmt::format(" (after {} attempts)", attempts);
  const ErrorKind kind = http::error_kind(exchange);
  logger()->warn("{} failed: {}", endpoint.operation, message);
  throw_lm_error(std::move(message), Stage::kExecute, kind, std::move(cause));
}

}  // namespace code_interpreter::interpreter
