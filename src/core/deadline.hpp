// A bound on a whole multi-request operation (create with retries, terminate), shared by the HTTP backends.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

#include "code_interpreter/execution.hpp"

namespace code_interpreter::detail {

struct Deadline {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> at;  ///< none: unbounded

  /// `timeout` nullopt: `fallback`; <= 0: unbounded.
  static Deadline after(Timeout timeout, std::chrono::milliseconds fallback) {
    const auto t = timeout.value_or(fallback);
    if (t.count() <= 0) return {};
    const auto now = Clock::now();
    // A timeout the clock cannot reach is none: now + t would overflow into the past, i.e. "already expired".
    if (t >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) return {};
    return {now + t};
  }
  [[nodiscard]] bool expired() const { return at && Clock::now() >= *at; }
  /// A request timeout bounded by what is left (at least 1 ms, so libcurl times out at once when nothing is).
  /// `request_timeout` <= 0 means the request has no bound of its own.
  [[nodiscard]] std::chrono::milliseconds bound(std::chrono::milliseconds request_timeout) const {
    if (!at) return request_timeout;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*at - Clock::now());
    const auto capped = std::max(std::chrono::milliseconds(1), left);
    return request_timeout.count() <= 0 ? capped : std::min(request_timeout, capped);
  }
  /// Whether a sleep of `delay` still ends before the deadline.
  [[nodiscard]] bool allows(std::chrono::milliseconds delay) const { return !at || Clock::now() + delay < *at; }
};

}  // namespace code_interpreter::detail
