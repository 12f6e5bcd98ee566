// The one function that turns an exchange's transport facts into the contract's status fields (docs/errors.md
// "Statuses and what each result carries"), and the one that turns them into the TransportError nested under
// lifecycle errors (docs/errors.md "TransportError").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"
#include "http/http_client.hpp"

namespace code_interpreter::http {

/// The status fields of an execution that did not finish normally.
struct Verdict {
  ExecutionStatus status = ExecutionStatus::kUnknown;
  std::optional<TimeoutKind> timeout_kind;
  std::optional<FailureDetail> failure;
  std::string message;  ///< for ExecutionResult::error
};

/// Maps a failed exchange (transport failure, or an HTTP status >= 400 answered before the code ran) to the status
/// table of docs/errors.md:
///  - kCancelled: nothing written → kError, retry_safe ("cancelled"); else kUnknown.
///  - kTimeout → kTimeout with `timeout_kind`, no FailureDetail.
///  - kConnect / kTls, or any failure before a request byte was written → kError, retry_safe, "curl.<CODE>".
///  - an answered HTTP status >= 400: as answered() with no refusal shape — a 4xx is kError, retry_safe,
///    "http.<status>" (the service refused before running); a 5xx is kUnknown, not retry_safe.
///  - a written request whose transport then broke (SEND_FAIL_REWIND, RECV_ERROR, PARTIAL_FILE, ...) or a
///    body that ended inside its framing → kUnknown, "curl.<CODE>", not retry_safe.
///  - kTooLarge → kUnknown "protocol.oversize"; kAborted → kUnknown "protocol.aborted" (callers that abort for
///    their own reason, e.g. a throwing callback, set their own exception_type).
/// `context` prefixes the message (e.g. "execute"). Must not be called for a successful exchange.
Verdict classify(const Exchange& exchange, TimeoutKind timeout_kind, std::string_view context);

/// Whether an answered error status proves that a request which runs code never ran it (docs/errors.md "Answered
/// statuses"): a 4xx (429 included) is the service's refusal; a 5xx proves it only when it carries the service's own
/// documented refusal shape (`service_refusal`: AgentCore's error type, E2B's sandbox-not-found answer). A bare 5xx
/// may come from a gateway after the service took the request, so it proves nothing.
[[nodiscard]] constexpr bool answer_proves_never_ran(int status, bool service_refusal) noexcept {
  return (status >= 400 && status < 500) || (status >= 500 && service_refusal);
}

/// The status fields for a request that runs code and was answered with `status` >= 400: kError with
/// {`exception_type`, retry_safe} when answer_proves_never_ran, else kUnknown with {`exception_type`, not
/// retry_safe} and a message saying the code may have run. The message is "<context> refused: HTTP <status>: <said>"
/// or "<context>: HTTP <status>: <said>; the request had been sent, ..."; `said` (the service's own text, already
/// made safe to show) may be empty.
Verdict answered(int status, bool service_refusal, std::string exception_type, std::string_view context,
                 std::string_view said = {});

/// The low-level cause to nest under a lifecycle error: kind from the failure (or kHttpStatus with the status
/// and Retry-After), request_written from the exchange. The message names the operation, the libcurl code or
/// the HTTP status and the service's own message (`service_message`, may be empty) — never a header value.
TransportError to_transport_error(const Exchange& exchange, std::string_view operation,
                                  std::string_view service_message = {});

/// The ErrorKind an HTTP status or transport failure stands for (401 → kUnauthenticated, 404 → kNotFound, ...).
ErrorKind error_kind(const Exchange& exchange) noexcept;

/// True when trying again may help and cannot duplicate work: transport failures before any request byte was
/// written; for idempotent requests also timeouts and broken receives; answered 408, 429 and 5xx (for a
/// non-idempotent request the caller decides whether an answered 5xx may have done the work).
bool is_transient(const Exchange& exchange, bool idempotent) noexcept;

}  // namespace code_interpreter::http
