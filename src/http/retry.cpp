#include "http/retry.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "http/idempotency.hpp"
#include "http/outcome.hpp"

namespace code_interpreter::http {

bool interruptible_sleep(std::chrono::milliseconds delay, std::stop_token cancel) {
  if (cancel.stop_requested()) return false;
  std::mutex mutex;
  std::condition_variable_any cv;
  std::unique_lock lock(mutex);
  return !cv.wait_for(lock, cancel, delay, [] { return false; }) && !cancel.stop_requested();
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt,
                                        std::optional<std::chrono::seconds> retry_after, std::mt19937_64& rng) {
  using std::chrono::milliseconds;
  long long base = policy.initial_backoff.count();
  for (int i = 1; i < attempt && base < policy.max_backoff.count(); ++i) base *= 2;
  base = std::min(base, static_cast<long long>(policy.max_backoff.count()));
  std::uniform_int_distribution<long long> jitter(base / 2, std::max(base / 2, base));
  milliseconds delay(jitter(rng));
  if (retry_after) delay = std::max(delay, std::min<milliseconds>(*retry_after, policy.max_retry_after));
  return delay;
}

namespace {

// The idempotency table's rule for the request's operation (idempotency.hpp), else the request's own flag.
bool default_retryable(const Request& request, const Exchange& exchange) {
  return request.operation ? may_resend(*request.operation, exchange) : is_transient(exchange, request.idempotent);
}

}  // namespace

Exchange perform_with_retries(HttpClient& client, const Request& request, const RetryPolicy& policy,
                              const RetryHooks& hooks, int* attempts) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const SleepFunction sleep = hooks.sleep ? hooks.sleep : SleepFunction(interruptible_sleep);
  int attempt = 0;
  while (true) {
    ++attempt;
    std::optional<Request> prepared;
    if (hooks.prepare) hooks.prepare(prepared.emplace(request));
    Exchange exchange = client.perform(prepared ? *prepared : request);
    if (attempts) *attempts = attempt;
    const bool failed = !exchange.success() || (hooks.refused && hooks.refused(exchange));
    const bool retryable =
        failed && (hooks.retryable ? hooks.retryable(exchange) : default_retryable(request, exchange));
    if (!retryable || attempt >= policy.max_attempts) return exchange;
    if (hooks.before_retry && !hooks.before_retry(exchange)) return exchange;
    if (!sleep(backoff_delay(policy, attempt, exchange.response.retry_after(), rng), request.cancel)) return exchange;
  }
}

}  // namespace code_interpreter::http
