// The calls in flight on one sandbox, so terminate (from any thread) can cancel them and later calls are refused
// (docs/errors.md "Throw or return", "terminate"). Shared by the HTTP backends.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"

namespace code_interpreter::detail {

class CallRegistry {
 public:
  /// One public call: its stop token is requested by the caller's token or by cancel_all().
  class Call {
   public:
    Call(CallRegistry& registry, std::stop_token user) : registry_(registry) {
      link_.emplace(std::move(user), std::function<void()>([this] { source_.request_stop(); }));
    }
    ~Call() {
      std::lock_guard lock(registry_.mutex_);
      registry_.inflight_.erase(&source_);
      registry_.interruptible_.erase(&source_);
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    [[nodiscard]] std::stop_token token() const { return source_.get_token(); }

   private:
    friend class CallRegistry;
    CallRegistry& registry_;
    std::stop_source source_;
    std::optional<std::stop_callback<std::function<void()>>> link_;
  };

  /// Registers a call. @throws SandboxNotInitializedError after mark_terminated().
  /// `interruptible`: an execute_code, which interrupt_running() stops.
  std::unique_ptr<Call> begin(std::stop_token user = {}, bool interruptible = false) {
    auto call = std::make_unique<Call>(*this, std::move(user));
    std::lock_guard lock(mutex_);
    if (terminated_) throw SandboxNotInitializedError();
    inflight_.insert(&call->source_);
    if (interruptible) interruptible_.insert(&call->source_);
    return call;
  }

  /// Requests a stop of every interruptible call in flight (CodeInterpreterSandbox::interrupt on a backend that
  /// can only cancel the request). @throws SandboxNotInitializedError after mark_terminated().
  void interrupt_running() {
    std::lock_guard lock(mutex_);
    if (terminated_) throw SandboxNotInitializedError();
    for (auto* source : interruptible_) source->request_stop();
  }

  /// Requests a stop of every call in flight, for terminate. Returns false when already terminated.
  bool cancel_all() {
    std::lock_guard lock(mutex_);
    if (terminated_) return false;
    terminating_ = true;
    for (auto* source : inflight_) source->request_stop();
    return true;
  }

  /// Terminate did not end the sandbox (its kill failed): the sandbox, and its state, live on.
  void terminate_failed() {
    std::lock_guard lock(mutex_);
    terminating_ = false;
  }

  void mark_terminated() {
    std::lock_guard lock(mutex_);
    terminated_ = true;
  }
  [[nodiscard]] bool terminated() const {
    std::lock_guard lock(mutex_);
    return terminated_;
  }

  /// `r`, the result of one call, as it returns to the caller: a call cancelled after its code was sent (kUnknown
  /// `cancelled`; one cancelled before is kError) while terminate is under way or done lost the sandbox's state
  /// with it (docs/errors.md "terminate"), so it gets state_lost. A terminate whose kill failed (terminate_failed)
  /// leaves the state, and later results, alone.
  [[nodiscard]] ExecutionResult settled(ExecutionResult r) const {
    std::lock_guard lock(mutex_);
    if (terminating_ && r.status == ExecutionStatus::kUnknown && r.failure && r.failure->exception_type == "cancelled")
      r.state_lost = true;
    return r;
  }

 private:
  mutable std::mutex mutex_;
  bool terminated_ = false;
  bool terminating_ = false;  // terminate has begun (cancel_all), whether or not it ends in success
  std::set<std::stop_source*> inflight_;
  std::set<std::stop_source*> interruptible_;  // the execute_code calls among inflight_
};

}  // namespace code_interpreter::detail
