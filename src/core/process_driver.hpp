// The backend side of a ProcessHandle (include/code_interpreter/process.hpp): the state every backend shares — the
// link to the sandbox that says whether it still lives, the process's state and the wait on it — and the virtuals a
// backend implements (stdin, signals, reading the output). Semantics: docs/errors.md "Processes".
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/process.hpp"

namespace code_interpreter::detail {

/// Shared by a sandbox and its process handles: ended by the sandbox's terminate or destruction, after which every
/// call on a handle throws SandboxNotInitializedError and a wait in progress ends. A handle never points into its
/// sandbox; this is what it holds instead.
class SandboxLink {
 public:
  /// Ends the link: stops what waits on token(), then waits for every use() in progress to finish (they are
  /// cancelled by the stop) before later ones throw.
  void end() {
    stop_.request_stop();
    std::unique_lock lock(mutex_);
    ended_ = true;
  }
  [[nodiscard]] bool ended() const {
    std::shared_lock lock(mutex_);
    return ended_;
  }
  /// Stopped when the sandbox ends.
  [[nodiscard]] std::stop_token token() const { return stop_.get_token(); }
  /// @throws SandboxNotInitializedError once ended.
  void require_alive() const {
    if (ended()) throw SandboxNotInitializedError();
  }
  /// Keeps the sandbox from ending (end() waits) while the returned lock lives: for a driver that calls into its
  /// backend's sandbox state. Hold it only across calls that token() cancels.
  /// @throws SandboxNotInitializedError once ended.
  [[nodiscard]] std::shared_lock<std::shared_mutex> use() const {
    std::shared_lock lock(mutex_);
    if (ended_) throw SandboxNotInitializedError();
    return lock;
  }

 private:
  mutable std::shared_mutex mutex_;
  bool ended_ = false;
  std::stop_source stop_;
};

class ProcessDriver {
 public:
  explicit ProcessDriver(std::shared_ptr<SandboxLink> link) : link_(std::move(link)) {}
  virtual ~ProcessDriver() = default;
  ProcessDriver(const ProcessDriver&) = delete;
  ProcessDriver& operator=(const ProcessDriver&) = delete;

  [[nodiscard]] const SandboxLink& link() const noexcept { return *link_; }

  [[nodiscard]] std::string id() const;
  [[nodiscard]] std::optional<std::uint32_t> pid() const;
  /// Blocks until the process ended, `timeout` passed (nullopt or <= 0: unbounded) or the sandbox ended.
  [[nodiscard]] ProcessResult wait(Timeout timeout);
  [[nodiscard]] ProcessResult poll();

  virtual void send_stdin(std::string_view bytes) = 0;
  virtual void close_stdin() = 0;
  /// `kill`: SIGKILL; otherwise SIGTERM (or the backend's own stop).
  virtual void signal(bool kill) = 0;
  /// The handle is gone: stop reading (the process runs on). Called once, before destruction.
  virtual void detach() {}

 protected:
  /// The output and end known so far, onto `r` (called with mutex_ held).
  virtual void collect_locked(ProcessResult& r) const = 0;

  mutable std::mutex mutex_;
  std::string id_;                    // guarded by mutex_
  std::optional<std::uint32_t> pid_;  // guarded by mutex_
  ProcessState state_ = ProcessState::kRunning;  // guarded by mutex_
  std::condition_variable_any changed_;          // notified when pid_ or state_ changes

 private:
  std::shared_ptr<SandboxLink> link_;
};

/// The "not supported here" refusal of a process operation (SandboxExecutionError, stage command, kUnsupported).
[[noreturn]] void refuse_process_operation(std::string_view operation, std::string_view backend);

}  // namespace code_interpreter::detail
