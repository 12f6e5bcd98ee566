// The one retry loop of the HTTP backends (docs/architecture.md "HTTP"): which exchanges are transient (outcome.hpp), a jittered capped backoff
// that honours Retry-After, and the idempotency rule — the idempotency table's row for the request's operation
// (idempotency.hpp), or for a request without one its own flag (a non-idempotent request is retried only when it
// provably was not written). The sleep is injectable so tests check the backoff without sleeping.
#pragma once

#include <chrono>
#include <functional>
#include <random>
#include <stop_token>

#include "http/http_client.hpp"

namespace code_interpreter::http {

struct RetryPolicy {
  int max_attempts = 3;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{std::chrono::seconds(10)};
  std::chrono::milliseconds max_retry_after{std::chrono::seconds(30)};
};

/// Sleeps for `delay` unless `cancel` is requested first; returns false when cancelled.
using SleepFunction = std::function<bool(std::chrono::milliseconds delay, std::stop_token cancel)>;

/// The real sleep: waits on a condition variable woken by a stop request.
bool interruptible_sleep(std::chrono::milliseconds delay, std::stop_token cancel);

/// The delay before attempt `attempt + 1` (attempt counts from 1): full jitter in [base/2, base] where
/// base = min(max_backoff, initial_backoff * 2^(attempt-1)); a Retry-After (capped at max_retry_after) is a floor.
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt,
                                        std::optional<std::chrono::seconds> retry_after, std::mt19937_64& rng);

struct RetryHooks {
  /// Whether this exchange may be tried again. Default: the idempotency table's rule for Request::operation
  /// (may_resend, idempotency.hpp), else is_transient(exchange, request.idempotent). Set only to narrow what the
  /// table allows with what the answer's body says (AgentCore's in-stream refusals).
  std::function<bool(const Exchange&)> retryable;
  /// Called before each retry with the failed exchange (e.g. to clean up what a lost answer may have created).
  /// Returning false stops retrying and returns that exchange.
  std::function<bool(const Exchange&)> before_retry;
  /// Whether an exchange that succeeded at the HTTP level carries a refusal in its body (AgentCore's exception as
  /// the first frame of a 200 event stream). Such an exchange counts as failed, and is retried when `retryable`
  /// says so. Unset: a 2xx is a success.
  std::function<bool(const Exchange&)> refused;
  SleepFunction sleep;  ///< default: interruptible_sleep
  /// Adjusts each attempt's own copy of the request before it is sent (e.g. bounds its timeout by what is left of
  /// an overall deadline, so later attempts cannot outlast it). Unset: every attempt sends the request as given.
  std::function<void(Request&)> prepare;
};

/// Performs `request` up to policy.max_attempts times while the exchange is retryable. Returns the last
/// exchange; `attempts`, when given, receives the number of exchanges made.
Exchange perform_with_retries(HttpClient& client, const Request& request, const RetryPolicy& policy = {},
                              const RetryHooks& hooks = {}, int* attempts = nullptr);

}  // namespace code_interpreter::http
