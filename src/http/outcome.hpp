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
///  - an answered HTTP status >= 400 → kError, retry_safe, "http.<status>" (the service refused before running).
///  - a written request whose transport then broke (SEND_FAIL_REWIND, RECV_ERROR, PARTIAL_FILE, ...) or a
///    body that ended inside its framing → kUnknown, "curl.<CODE>", not retry_safe.
///  - kTooLarge → kUnknown "protocol.oversize"; kAborted → kUnknown "protocol.aborted" (callers that abort for
///    their own reason, e.g. a throwing callback, set their own exception_type).
/// `context` prefixes the message (e.g. "execute"). Must not be called for a successful exchange.
Verdict classify(const Exchange& exchange, TimeoutKind timeout_kind, std::string_view context);

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
