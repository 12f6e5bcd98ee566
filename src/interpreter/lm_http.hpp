// The HTTP half shared by the LM invokers: one JSON POST through the project's libcurl wrapper with the retry
// loop, and the translation of every failure into an LMInvocationError with its TransportError nested.
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

struct LMHttpCall {
  std::string operation;  ///< names the call in error messages, e.g. "openai chat completions"
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  ///< may hold secrets: never logged
  std::string body;
  std::chrono::milliseconds timeout{0};
  int max_attempts = 3;
  std::vector<std::string> secrets;  ///< removed from any text that could reach an error or a log
};

/// POSTs `call.body` and returns the parsed JSON of a 2xx answer, retrying 408 / 429 / 5xx and transport failures
/// (Retry-After honoured; "x-should-retry: false" honoured, as the official SDKs do).
/// @throws LMInvocationError (stage execute) for everything else, with http::to_transport_error nested.
nlohmann::json post_json(const LMHttpCall& call, std::stop_token cancel);

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

/// The JSON Schema text of a tool, parsed; a text that is not a JSON object is refused.
/// @throws LMInvocationError (stage execute, kInvalidArgument).
nlohmann::json tool_schema(const ToolDefinition& tool);

}  // namespace code_interpreter::interpreter
