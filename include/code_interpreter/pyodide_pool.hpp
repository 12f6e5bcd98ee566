// A warm pool of local Pyodide sandboxes: ready runtimes handed out at once. Guide: docs/backends/pyodide.md "Pool".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "code_interpreter/pyodide_sandbox.hpp"

namespace code_interpreter {

/// Keeps `size` Pyodide sandboxes started and ready, and hands each out once.
///
/// A background thread creates sandboxes with the pool's `PyodideOptions` (one at a time, restoring the memory
/// snapshot when `use_snapshot` is set) until `size` are ready, plus one for every caller waiting in `acquire`.
/// Each new sandbox runs the expression `0` 20 times before it counts as ready, so that V8 has compiled the path
/// every call takes (a new runtime's first calls are several times slower); it leaves nothing behind. The pool
/// refills 100 ms after a sandbox is taken (at once for a caller waiting with none ready), so that a start does not
/// compete with the first calls of the sandbox just handed out. No user's code has run in a sandbox of the pool:
/// every acquired sandbox starts fresh, and none is handed out twice (the caller owns it; destroying it ends its
/// runtime). The pool holds at most `size` ready runtimes plus the one being started. Thread-safe; `acquire` may be
/// called from any number of threads.
///
/// A creation that fails is reported to every caller waiting at that moment (the exception `PyodideSandbox::create`
/// threw), and retried after 1 s, doubling up to 30 s. A failure that no retry can mend (stages configure,
/// template_build, install_packages: a bad option, a missing runtime, a missing wheel) stops the refilling: every
/// later `acquire` rethrows it at once.
///
/// **Fast respawn.** A sandbox handed out by the pool, whenever its runtime is replaced (killed after a timeout's
/// grace period, `restart()`, a runtime that died or broke the protocol), takes a ready runtime from the pool if one
/// is waiting, instead of restoring a new one (about 0.5-1 s): the next call then finds it ready. Such a runtime is
/// one the pool would have handed out (same options, no user code run); it counts as taken, and the pool refills.
/// Callers waiting in `acquire` come first: a respawn takes one only when more are ready than callers wait. With
/// none to take, or once the pool is destroyed, the sandbox starts its own as any sandbox does. A ready runtime that
/// ended while it waited (killed from outside) is neither handed out nor taken: it is replaced, with one warning.
///
/// Destruction stops the background work (a creation under way is cancelled) and ends the ready runtimes; it
/// must not overlap an `acquire` on another thread. Sandboxes handed out live on, and start their own runtimes.
class CODE_INTERPRETER_EXPORT PyodidePool {
 public:
  /// Starts filling the pool in the background and returns at once. `options.cancel` is ignored: the pool cancels
  /// its own creations. @throws SandboxStartError (stage configure, kInvalidArgument) if `size` is 0.
  explicit PyodidePool(std::size_t size, PyodideOptions options = {});
  ~PyodidePool();

  PyodidePool(const PyodidePool&) = delete;
  PyodidePool& operator=(const PyodidePool&) = delete;

  /// A ready sandbox: at once when one is waiting, else the next one the pool finishes starting (a restore from
  /// the snapshot takes about 0.5 s). `timeout`: nullopt waits up to the options' `create_timeout` (default 120 s);
  /// <= 0 waits without bound.
  /// @throws SandboxStartError (stage start_runtime, kTimeout, nesting TransportError kTimeout) when none is ready
  ///         in time; (kUnknown, nesting TransportError kCancelled) when `stop` is requested first; or the error of a
  ///         creation that failed while the caller waited, or of one that cannot be mended (see the class).
  [[nodiscard]] std::unique_ptr<PyodideSandbox> acquire(Timeout timeout = std::nullopt, std::stop_token stop = {});

  /// The sandboxes ready now (0 to `size()`).
  [[nodiscard]] std::size_t ready() const;
  /// The number of ready sandboxes the pool keeps.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Sandboxes the pool has started so far (handed out or still waiting), for monitoring.
  [[nodiscard]] std::uint64_t started() const;

 private:
  struct Link;  // what the sandboxes handed out reach the pool by; cut first by the destructor
  void refill(std::stop_token stop);
  /// With `mu_` held: the first ready sandbox whose runtime is idle and alive, counted as taken; nullptr when none
  /// is. Ready ones whose runtime ended while they waited go to `ended`, for the caller to destroy once it has let
  /// go of `mu_` (that reaps their processes); the refill replaces them.
  std::unique_ptr<PyodideSandbox> pop_ready(std::vector<std::unique_ptr<PyodideSandbox>>& ended);
  /// For a respawn: pop_ready, when more are ready than callers wait in `acquire` (they come first), else nullptr.
  std::unique_ptr<PyodideSandbox> take_ready(std::vector<std::unique_ptr<PyodideSandbox>>& ended);

  const std::size_t size_;
  PyodideOptions options_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<std::unique_ptr<PyodideSandbox>> ready_;
  std::size_t waiting_ = 0;            // callers inside acquire
  std::uint64_t started_ = 0;
  std::chrono::steady_clock::time_point last_acquire_{};  // when a sandbox was last handed out
  std::exception_ptr error_;           // the last creation's failure
  std::uint64_t error_generation_ = 0;  // bumped on every failure
  bool broken_ = false;                // error_ cannot be mended: no more creations
  std::shared_ptr<Link> link_;
  std::jthread worker_;                // last: stopped and joined before the members it uses are destroyed
};

}  // namespace code_interpreter
