// The AgentCore stub (docs/architecture.md "Backends"): builds every request AgentCore is sent — SigV4-signed by
// libcurl (bedrock/sigv4.hpp) — and decodes every answer into typed protocol facts: restJson1 errors, session
// ids, and the InvokeCodeInterpreter event stream folded into an Invocation. No retry (src/http/retry.hpp), no
// status mapping (bedrock/invoke.cpp with src/http/outcome.hpp), no call state (bedrock/bedrock_impl.hpp). Wire
// format: docs/protocols/bedrock.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "bedrock/config.hpp"
#include "bedrock/event_stream.hpp"
#include "bedrock/sigv4.hpp"
#include "code_interpreter/bedrock_sandbox.hpp"
#include "core/output.hpp"
#include "core/untrusted.hpp"
#include "http/http_client.hpp"

namespace code_interpreter::bedrock {

/// Whether `id` is one the service could issue: ^[0-9a-zA-Z]{1,40}$ (docs/protocols/bedrock.md "Session operations").
bool valid_session_id(std::string_view id);

/// Marks a session name as carrying the library's tag (docs/backends/bedrock.md "Tags and session names").
constexpr std::string_view kTagNamePrefix = "ci.";
/// The name a session is started with: "ci.<tag>.<name>", "ci.<tag>" without a name; `name` alone without a tag.
std::string session_name_on_wire(const std::optional<std::string>& tag, const std::optional<std::string>& name);
/// The tag and the user's name of a session's name on the wire (the inverse of session_name_on_wire). A name that
/// does not start with "ci.<valid tag>" then "." or its end has no tag: all of it is the user's.
std::pair<std::optional<std::string>, std::optional<std::string>> split_session_name(std::string_view wire);

/// Checks options.interpreter_network_mode and options.network_policy (docs/backends/bedrock.md "Network policy").
/// @throws SandboxStartError (stage configure): kInvalidArgument for an unknown mode or a malformed policy,
///         kUnsupported for a policy the mode cannot honour.
void check_network_mode(const BedrockOptions& options);

/// The most of an error answer's body an invocation keeps.
constexpr std::size_t kMaxErrorBody = 64 * 1024;

/// `text` cut to `limit` bytes at a character boundary (with "..." when cut), ill-formed UTF-8 replaced.
std::string bounded_text(std::string_view text, std::size_t limit = 300);
/// A name the service chose (an error code, an exception type) as it may appear in exception_type: letters,
/// digits, '.', '_' and '-' kept, at most 100 characters.
std::string safe_name(std::string_view text);
using detail::string_member;
/// One shell word: single-quoted, each ' written as '\''.
std::string shell_quote(std::string_view text);
/// The ErrorKind an AWS error code (or, without one, the HTTP status) stands for.
ErrorKind aws_error_kind(std::string_view code, int status);
/// "aws." + the name with its first letter upper-cased (docs/backends/bedrock.md "execute_code and execute_command").
std::string aws_type(std::string_view name);

/// A restJson1 error (docs/protocols/bedrock.md "Error answers and what proves a call never ran").
struct AwsError {
  std::string code;     ///< safe_name'd, secrets redacted; empty when the answer is not in the service's shape
  std::string message;  ///< the service's words, bounded, secrets redacted
};

/// What one InvokeCodeInterpreter call produced (docs/protocols/bedrock.md "Events and exception frames").
struct Invocation {
  http::Exchange exchange;
  int status = 0;
  std::string error_body;
  bool result_seen = false;
  nlohmann::json content = nlohmann::json::array();      ///< every result event's content[], concatenated
  nlohmann::json structured = nlohmann::json::object();  ///< the latest non-null scalar of each structuredContent member
  std::string out, err;                                  ///< stdout / stderr concatenated across result events
  bool is_error = false;
  std::optional<std::string> exception;  ///< "aws.<Name>"
  std::string exception_message;
  bool exception_first = false;
  EventStreamError decode_error = EventStreamError::kNone;
  bool truncated = false;
  bool malformed_event = false;
  bool too_large = false;          ///< the result events together exceeded their budget
  std::size_t result_bytes = 0;    ///< payload bytes of the result events so far
  std::uint64_t file_bytes = 0;    ///< decoded file content (resource text / blob) of the result events so far
  bool over_cap = false;           ///< file_bytes passed the read's cap: the transfer was stopped
  std::optional<std::string> callback_threw;  ///< what an output callback threw (detail::deliver_guarded)

  /// The service's exitCode, if it sent one; untrusted, so never wrapped or read as success when malformed
  /// (core/untrusted.hpp).
  [[nodiscard]] std::optional<int> exit_code() const;
  /// The answer ended in a result that is not an error.
  [[nodiscard]] bool succeeded() const { return exchange.success() && result_seen && !is_error && !exception; }
};

/// How one invocation's events are bounded and where its output goes.
struct InvocationLimits {
  std::size_t result_budget = 0;             ///< most payload bytes of all result events together
  std::optional<std::uint64_t> file_cap;     ///< readFiles: most bytes of file content
  detail::OutputStream* out = nullptr;       ///< stdout as it arrives (executeCode)
  detail::OutputStream* err = nullptr;
};

class AgentCoreStub {
 public:
  /// Checks the options and resolves region, endpoint and credentials (stage configure: nothing is sent).
  /// @throws SandboxStartError.
  explicit AgentCoreStub(BedrockOptions options);
  AgentCoreStub(const AgentCoreStub&) = delete;  // the signer's hook points into it
  AgentCoreStub& operator=(const AgentCoreStub&) = delete;

  BedrockOptions options;  ///< credentials cleared after resolution
  ResolvedConfig config;
  std::string session_id;

  /// The service's own words, bounded, valid UTF-8 and with every secret it echoed redacted (docs/backends/bedrock.md
  /// "Secrets").
  [[nodiscard]] std::string service_text(std::string text, std::size_t limit = 300) const;
  [[nodiscard]] AwsError aws_error(const http::Response& response, std::string_view body) const;

  // ---- requests: signed, each stamped with its operation of the idempotency table (src/http/idempotency.hpp) ----

  [[nodiscard]] http::Request request(http::Operation op, std::string method, std::string path, std::string body = {}) const;
  /// StartCodeInterpreterSession with a fresh clientToken (docs/protocols/bedrock.md "Session operations").
  [[nodiscard]] http::Request start_request() const;
  [[nodiscard]] http::Request stop_request() const;
  [[nodiscard]] http::Request stop_request_for(std::string_view id) const;
  [[nodiscard]] http::Request get_session_request() const;
  /// InvokeCodeInterpreter of `tool` on the session (docs/protocols/bedrock.md "InvokeCodeInterpreter").
  [[nodiscard]] http::Request invoke_request(http::Operation op, std::string_view tool, nlohmann::json arguments) const;

  // ---- answers ----

  /// The sessionId of a Start answer, when it is one the service could have issued.
  [[nodiscard]] static std::optional<std::string> session_id_of(std::string_view body);
  /// The status of a GetCodeInterpreterSession answer.
  [[nodiscard]] static std::optional<std::string> session_status_of(std::string_view body);
  /// Folds one event-stream message into `inv`; false stops the transfer (an exception frame, a malformed or
  /// oversize event, a file past its cap, a throwing callback).
  bool decode_message(Invocation& inv, EventMessage&& message, const InvocationLimits& limits) const;

 private:
  std::optional<SigV4> signer_;
};

}  // namespace code_interpreter::bedrock
