#include "http/outcome.hpp"

#include <fmt/format.h>

namespace code_interpreter::http {
namespace {

std::string describe(const Exchange& exchange) {
  if (exchange.ok()) return fmt::format("HTTP {}", exchange.response.status);
  return fmt::format("curl {}: {}", exchange.curl_code, exchange.message);
}

}  // namespace

Verdict classify(const Exchange& exchange, TimeoutKind timeout_kind, std::string_view context) {
  Verdict verdict;
  const std::string prefix = context.empty() ? std::string() : std::string(context) + ": ";
  switch (exchange.failure) {
    case Failure::kCancelled:
      verdict.status = exchange.request_written ? ExecutionStatus::kUnknown : ExecutionStatus::kError;
      verdict.failure = FailureDetail{"cancelled", !exchange.request_written};
      verdict.message = prefix + (exchange.request_written ? "cancelled after the request was sent; the code may have run"
                                                          : "cancelled before the request was sent");
      return verdict;
    case Failure::kTimeout:
      verdict.status = ExecutionStatus::kTimeout;
      verdict.timeout_kind = timeout_kind;
      verdict.message = prefix + "timed out (" + exchange.message + ")";
      return verdict;
    case Failure::kTooLarge:
      verdict.status = ExecutionStatus::kUnknown;
      verdict.failure = FailureDetail{"protocol.oversize", false};
      verdict.message = prefix + "the response exceeded its size limit";
      return verdict;
    case Failure::kAborted:
      verdict.status = ExecutionStatus::kUnknown;
      verdict.failure = FailureDetail{"protocol.aborted", false};
      verdict.message = prefix + "the response was rejected while it was read";
      return verdict;
    case Failure::kNone:
      return answered(exchange.response.status, false, fmt::format("http.{}", exchange.response.status), context);
    default:
      break;
  }
  const std::string type = "curl." + exchange.curl_code;
  // Connect/TLS failures and any failure before a request byte was written prove the request never left.
  if (exchange.failure == Failure::kConnect || exchange.failure == Failure::kTls || !exchange.request_written) {
    verdict.status = ExecutionStatus::kError;
    verdict.failure = FailureDetail{type, true};
    verdict.message = prefix + "the request was not sent (" + describe(exchange) + ")";
    return verdict;
  }
  verdict.status = ExecutionStatus::kUnknown;
  verdict.failure = FailureDetail{type, false};
  verdict.message = prefix + "the connection broke after the request was sent; the code may have run (" +
                    describe(exchange) + ")";
  return verdict;
}

Verdict answered(int status, bool service_refusal, std::string exception_type, std::string_view context,
                 std::string_view said) {
  Verdict verdict;
  const bool refused = answer_proves_never_ran(status, service_refusal);
  const std::string what = context.empty() ? std::string(refused ? "refused" : "answered")
                                           : fmt::format("{}{}", context, refused ? " refused" : "");
  std::string message = fmt::format("{}: HTTP {}", what, status);
  if (!said.empty()) message += fmt::format(": {}", said);
  verdict.failure = FailureDetail{std::move(exception_type), refused};
  if (refused) {
    verdict.status = ExecutionStatus::kError;
    verdict.message = std::move(message);
    return verdict;
  }
  verdict.status = ExecutionStatus::kUnknown;
  verdict.message = message + "; the request had been sent, so the code may have run";
  return verdict;
}

TransportError to_transport_error(const Exchange& exchange, std::string_view operation,
                                  std::string_view service_message) {
  using Kind = TransportError::Kind;
  if (exchange.ok()) {
    std::string message = fmt::format("{}: HTTP {}", operation, exchange.response.status);
    if (!service_message.empty()) message += fmt::format(": {}", service_message);
    return TransportError(std::move(message), Kind::kHttpStatus, exchange.response.status,
                          exchange.response.retry_after(), exchange.request_written);
  }
  Kind kind = Kind::kProtocol;
  switch (exchange.failure) {
    case Failure::kConnect: kind = Kind::kConnect; break;
    case Failure::kTls: kind = Kind::kTls; break;
    case Failure::kTimeout: kind = Kind::kTimeout; break;
    case Failure::kCancelled: kind = Kind::kCancelled; break;
    case Failure::kSend:
      // Nothing written: as good as an unreachable peer, and as safe to try again.
      kind = exchange.request_written ? Kind::kProtocol : Kind::kConnect;
      break;
    default: kind = Kind::kProtocol; break;
  }
  return TransportError(fmt::format("{}: {}", operation, describe(exchange)), kind, exchange.response.status,
                        std::nullopt, exchange.request_written);
}

ErrorKind error_kind(const Exchange& exchange) noexcept {
  switch (exchange.failure) {
    case Failure::kNone: break;
    case Failure::kConnect:
    case Failure::kTls:
    case Failure::kSend:
    case Failure::kReceive: return ErrorKind::kUnavailable;
    case Failure::kTimeout: return ErrorKind::kTimeout;
    case Failure::kCancelled: return ErrorKind::kUnknown;
    default: return ErrorKind::kInternal;
  }
  const int status = exchange.response.status;
  if (status == 400 || status == 409 || status == 422) return ErrorKind::kInvalidArgument;
  if (status == 401) return ErrorKind::kUnauthenticated;
  if (status == 403) return ErrorKind::kPermissionDenied;
  if (status == 404) return ErrorKind::kNotFound;
  if (status == 408 || status == 504) return ErrorKind::kTimeout;
  if (status == 429) return ErrorKind::kRateLimited;
  if (status == 507) return ErrorKind::kQuotaExceeded;
  if (status >= 500) return ErrorKind::kUnavailable;
  return ErrorKind::kUnknown;
}

bool is_transient(const Exchange& exchange, bool idempotent) noexcept {
  switch (exchange.failure) {
    case Failure::kNone: {
      const int status = exchange.response.status;
      return status == 408 || status == 429 || status >= 500;
    }
    case Failure::kConnect:
    case Failure::kTls: return exchange.failure == Failure::kConnect;  // a TLS verification failure stays
    case Failure::kCancelled:
    case Failure::kAborted:
    case Failure::kTooLarge: return false;
    case Failure::kTimeout:
    case Failure::kSend:
    case Failure::kReceive:
    case Failure::kOther: return idempotent || !exchange.request_written;
  }
  return false;
}

}  // namespace code_interpreter::http
