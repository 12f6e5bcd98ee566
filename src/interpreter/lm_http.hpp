// The HTTP half shared by the LM invokers: the endpoint each one makes from its options, one JSON POST through the
// project's libcurl wrapper with the retry loop, and the translation of every failure into an LMInvocationError with
// its TransportError nested.
#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/interpreter.hpp"

namespace code_interpreter::interpreter {

/// What an invoker keeps to reach its API: made once by its constructor (make_endpoint), used by every call.
struct LMEndpoint {
  std::string operation;  ///< names the call in error messages, e.g. "openai chat completions"
  std::string url;
  std::string api_key;  ///< the one copy of the secret: never logged, removed from any text that could reach an error
  std::chrono::milliseconds timeout{0};
  int max_attempts = 3;
};

/// What each invoker's Impl holds: its options (without the API key) and the endpoint made from them.
template <class Options>
struct LMInvokerState {
  Options options;
  LMEndpoint endpoint;
};

/// The headers of one call besides Content-Type and Accept; they may hold the API key: never logged.
using LMHeaders = std::vector<std::pair<std::string, std::string>>;

/// POSTs `body` to `endpoint` and returns the parsed JSON of a 2xx answer, retrying 408 / 429 / 5xx and transport
/// failures (Retry-After honoured; "x-should-retry: false" honoured, as the official SDKs do).
/// @throws LMInvocationError (stage execute) for everything else, with http::to_transport_error nested.
nlohmann::json post_json(const LMEndpoint& endpoint, LMHeaders headers, const nlohmann::json& body,
                         std::stop_token cancel);

/// A reply that parsed but is not what the API promises: LMInvocationError kInternal with a TransportError of kind
/// kProtocol nested.
[[noreturn]] void throw_malformed(std::string_view operation, std::string_view what);

/// `text` with every non-empty secret replaced by "[redacted]".
std::string scrub(std::string text, const std::vector<std::string>& secrets);

/// The value of environment variable `name`, or "" when unset.
std::string env_or_empty(const char* name);

/// Refuses a header value that cannot be sent (a line break or NUL byte, e.g. a key read from a file with its
/// newline). The value is never quoted: it may be a secret.
/// @throws LMInvocationError (stage configure, kInvalidArgument) naming `what`.
void check_header_value(std::string_view operation, std::string_view what, std::string_view value);

/// Reads the stop reason (`stop_holder[stop_key]`, when a string) and the token counts (`body["usage"][input_key]`
/// and `[output_key]`, when non-negative integers; else 0) of a reply into `response`: the fields both APIs have
/// under their own names.
void read_stop_and_usage(const nlohmann::json& stop_holder, const char* stop_key, const nlohmann::json& body,
                         const char* input_key, const char* output_key, LMResponse& response);

/// `base` without trailing slashes.
std::string trim_slashes(std::string base);

/// Refuses options without a model or a base URL, naming `invoker` (e.g. "OpenAIChatInvoker").
/// @throws LMInvocationError (stage configure, kInvalidArgument).
void check_model_and_base_url(std::string_view invoker, const std::string& model, const std::string& base_url);

/// The endpoint at `options.base_url` (trailing slashes dropped) + `path`, with the options' request_timeout and
/// max_attempts and `api_key` (the key already resolved from the options or the environment), which must fit in a
/// header. The key is then taken out of `options`: the endpoint's copy is the only one kept.
/// @throws LMInvocationError (stage configure, kInvalidArgument) naming `invoker` when the key cannot be sent.
template <class Options>
LMEndpoint make_endpoint(std::string_view invoker, std::string operation, std::string api_key, std::string_view path,
                         Options& options) {
  check_header_value(invoker, "the API key", api_key);
  LMEndpoint endpoint;
  endpoint.operation = std::move(operation);
  endpoint.url = trim_slashes(options.base_url) + std::string(path);
  endpoint.api_key = std::move(api_key);
  endpoint.timeout = options.request_timeout;
  endpoint.max_attempts = options.max_attempts;
  options.api_key.reset();
  return endpoint;
}

/// The JSON Schema text of a tool, parsed; a text that is not a JSON object is refused.
/// @throws LMInvocationError (stage execute, kInvalidArgument).
nlohmann::json tool_schema(const ToolDefinition& tool);

}  // namespace code_interpreter::interpreter
