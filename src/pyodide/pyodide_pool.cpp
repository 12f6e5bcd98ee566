#include "code_interpreter/pyodide_pool.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/logging.hpp"
#include "core/deadline.hpp"
#include "core/defaults.hpp"
#include "core/nested.hpp"
#include "pyodide/sandbox_impl.hpp"

namespace code_interpreter {

namespace {

using namespace std::chrono_literals;

constexpr auto kDefaultAcquireTimeout = detail::kDefaultPyodideCreateTimeout;  // create_timeout's default
constexpr auto kFirstRetry = std::chrono::milliseconds(1s);
constexpr auto kLongestRetry = std::chrono::milliseconds(30s);
constexpr auto kWarmUpTimeout = std::chrono::milliseconds(30s);
constexpr int kWarmUpCalls = 20;
constexpr auto kRefillPause = std::chrono::milliseconds(100);

// A failure that a later creation with the same options would repeat: a bad option, a missing runtime or wheel, a
// kernel without what require_kernel_confinement asks for.
bool cannot_mend(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const CodeInterpreterError& error) {
    return error.stage() == Stage::kConfigure || error.stage() == Stage::kTemplateBuild ||
           error.stage() == Stage::kInstallPackages || error.kind() == ErrorKind::kUnsupported ||
           error.kind() == ErrorKind::kInvalidArgument;
  } catch (...) {
    return false;
  }
}

}  // namespace

// The sandboxes handed out hold this, not the pool: the destructor sets `pool` to null (under `mu`) before anything
// else, so a respawn either finishes taking a runtime first or finds no pool.
struct PyodidePool::Link {
  std::mutex mu;
  PyodidePool* pool = nullptr;
};

PyodidePool::PyodidePool(std::size_t size, PyodideOptions options) : size_(size), options_(std::move(options)) {
  if (size_ == 0) {
    throw SandboxStartError("a PyodidePool needs a size of at least 1", Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  }
  options_.cancel = {};
  link_ = std::make_shared<Link>();
  link_->pool = this;
  worker_ = std::jthread([this](std::stop_token stop) { refill(std::move(stop)); });
}

PyodidePool::~PyodidePool() {
  {
    std::lock_guard lock(link_->mu);
    link_->pool = nullptr;
  }
  worker_.request_stop();
  if (worker_.joinable()) worker_.join();
  std::deque<std::unique_ptr<PyodideSandbox>> left;
  {
    std::lock_guard lock(mu_);
    left.swap(ready_);
  }
  left.clear();  // each sandbox's destructor ends its runtime
}

void PyodidePool::refill(std::stop_token stop) {
  auto retry = kFirstRetry;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      // One more for every caller waiting beyond the ready ones, so that each gets a runtime of its own.
      cv_.wait(lock, stop, [this] { return broken_ || ready_.size() < size_ + waiting_; });
      if (stop.stop_requested() || broken_) return;
      // A start takes both cores of a small machine for half a second: right after a sandbox was handed out it
      // waits kRefillPause, so that the caller's first calls do not compete with it, unless a caller is waiting
      // with none ready.
      // An acquire during the pause moves its end.
      for (auto resume = last_acquire_ + kRefillPause; std::chrono::steady_clock::now() < resume;
           resume = last_acquire_ + kRefillPause) {
        if (cv_.wait_until(lock, stop, resume, [this] { return broken_ || waiting_ > ready_.size(); })) break;
        if (stop.stop_requested()) return;
      }
      if (stop.stop_requested() || broken_) return;
    }
    try {
      PyodideOptions options = options_;
      options.cancel = stop;
      auto sandbox = PyodideSandbox::create(std::move(options));
      // A new runtime's first calls are slow (10-15 ms, then 3-5 ms: V8 compiles each wasm and JavaScript function
      // the first time it runs): paid here, with calls that leave nothing behind (an expression whose value goes
      // back as a result, the path every call takes), instead of by the caller of acquire.
      ExecuteOptions warm;
      warm.timeout = kWarmUpTimeout;
      warm.cancel = stop;
      for (int i = 0; i < kWarmUpCalls; ++i) {
        if (const auto r = sandbox->execute_code("0", warm); r.status != ExecutionStatus::kSuccess) {
          throw SandboxStartError("the new sandbox's first calls failed: " + r.error, Stage::kStartRuntime,
                                  ErrorKind::kUnavailable);
        }
      }
      std::lock_guard lock(mu_);
      ready_.push_back(std::move(sandbox));
      ++started_;
      retry = kFirstRetry;
    } catch (...) {
      if (stop.stop_requested()) return;
      const auto error = std::current_exception();
      const bool permanent = cannot_mend(error);
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        logger()->warn("Pyodide pool: starting a sandbox failed: {}{}", e.what(),
                       permanent ? "; the pool stops refilling" : "");
      } catch (...) {
        logger()->warn("Pyodide pool: starting a sandbox failed");
      }
      std::unique_lock lock(mu_);
      error_ = error;
      ++error_generation_;
      broken_ = permanent;
      cv_.notify_all();
      if (permanent) return;
      // Back off before the next attempt; the destructor's stop ends the wait.
      cv_.wait_for(lock, stop, retry, [] { return false; });
      retry = std::min(retry * 2, kLongestRetry);
      continue;
    }
    cv_.notify_all();
  }
}

std::unique_ptr<PyodideSandbox> PyodidePool::acquire(Timeout timeout, std::stop_token stop) {
  const auto deadline = detail::Deadline::after(timeout ? timeout : options_.create_timeout, kDefaultAcquireTimeout);
  std::vector<std::unique_ptr<PyodideSandbox>> ended;  // declared before the lock: destroyed once it is let go
  std::unique_lock lock(mu_);
  if (broken_) std::rethrow_exception(error_);
  const auto generation = error_generation_;
  ++waiting_;
  cv_.notify_all();  // the refill thread starts one more if none is ready
  const auto have = [&] { return !ready_.empty() || broken_ || error_generation_ != generation; };
  std::unique_ptr<PyodideSandbox> sandbox;
  // Until one is handed out, a failure is reported, or the wait ends: ready ones whose runtime ended while they
  // waited are left for the refill to replace.
  while (!sandbox && (deadline.at ? cv_.wait_until(lock, stop, *deadline.at, have) : cv_.wait(lock, stop, have)) &&
         !ready_.empty()) {
    sandbox = pop_ready(ended);
  }
  --waiting_;
  if (sandbox) {
    lock.unlock();
    // Its respawns take a ready runtime of this pool while there is one (and a pool).
    sandbox->impl_->host.standby = [link = std::weak_ptr<Link>(link_)]() -> std::optional<detail::ReadyRuntime> {
      const auto held = link.lock();
      if (!held) return std::nullopt;
      std::vector<std::unique_ptr<PyodideSandbox>> gone;  // destroyed last, after the locks
      std::unique_ptr<PyodideSandbox> donor;
      {
        std::lock_guard lock(held->mu);
        if (held->pool) donor = held->pool->take_ready(gone);
      }
      // The donor, left without a process, ends here with nothing to end.
      return donor ? donor->impl_->host.release() : std::nullopt;
    };
    return sandbox;
  }
  if (broken_ || error_generation_ != generation) std::rethrow_exception(error_);
  if (stop.stop_requested()) {
    const std::string message = "cancelled while waiting for a sandbox of the pool";
    detail::throw_nested(SandboxStartError(message, Stage::kStartRuntime, ErrorKind::kUnknown),
                         TransportError(message, TransportError::Kind::kCancelled));
  }
  const std::string message = "no sandbox of the pool became ready in time";
  detail::throw_nested(SandboxStartError(message, Stage::kStartRuntime, ErrorKind::kTimeout),
                       TransportError(message, TransportError::Kind::kTimeout));
}

std::unique_ptr<PyodideSandbox> PyodidePool::pop_ready(std::vector<std::unique_ptr<PyodideSandbox>>& ended) {
  while (!ready_.empty()) {
    auto sandbox = std::move(ready_.front());
    ready_.pop_front();
    cv_.notify_all();  // room for the next one
    if (sandbox->impl_->host.idle_and_alive()) {
      last_acquire_ = std::chrono::steady_clock::now();
      return sandbox;
    }
    logger()->warn("Pyodide pool: a ready runtime ended while it waited (killed from outside?); the pool replaces it");
    ended.push_back(std::move(sandbox));
  }
  return nullptr;
}

std::unique_ptr<PyodideSandbox> PyodidePool::take_ready(std::vector<std::unique_ptr<PyodideSandbox>>& ended) {
  std::lock_guard lock(mu_);
  // Callers blocked in acquire come first: a respawn has a way of its own to a runtime, they have none.
  return ready_.size() > waiting_ ? pop_ready(ended) : nullptr;
}

std::size_t PyodidePool::ready() const {
  std::lock_guard lock(mu_);
  return ready_.size();
}

std::uint64_t PyodidePool::started() const {
  std::lock_guard lock(mu_);
  return started_;
}

}  // namespace code_interpreter
