// ProcessHandle and the state every backend's process driver shares (src/core/process_driver.hpp).
#include "code_interpreter/process.hpp"

#include <utility>

#include "core/process_driver.hpp"

namespace code_interpreter {

std::string_view to_string(ProcessState state) noexcept {
  switch (state) {
    case ProcessState::kRunning: return "running";
    case ProcessState::kExited: return "exited";
    case ProcessState::kSignaled: return "signaled";
    case ProcessState::kUnknown: return "unknown";
  }
  return "unknown";
}

ProcessHandle::ProcessHandle(std::shared_ptr<detail::ProcessDriver> driver) : driver_(std::move(driver)) {}
ProcessHandle::ProcessHandle(ProcessHandle&&) noexcept = default;

ProcessHandle& ProcessHandle::operator=(ProcessHandle&& other) noexcept {
  if (this != &other) {
    if (driver_) driver_->detach();
    driver_ = std::move(other.driver_);
  }
  return *this;
}

ProcessHandle::~ProcessHandle() {
  if (driver_) driver_->detach();
}

namespace {
detail::ProcessDriver& alive(const std::shared_ptr<detail::ProcessDriver>& driver) {
  // A moved-from handle has no process; it answers as one whose sandbox is gone.
  if (!driver) throw SandboxNotInitializedError();
  driver->link().require_alive();
  return *driver;
}
}  // namespace

std::string ProcessHandle::id() const { return alive(driver_).id(); }
std::optional<std::uint32_t> ProcessHandle::pid() const { return alive(driver_).pid(); }
void ProcessHandle::send_stdin(std::string_view bytes) { alive(driver_).send_stdin(bytes); }
void ProcessHandle::close_stdin() { alive(driver_).close_stdin(); }
ProcessResult ProcessHandle::wait(Timeout timeout) { return alive(driver_).wait(timeout); }
ProcessResult ProcessHandle::poll() { return alive(driver_).poll(); }
void ProcessHandle::kill() { alive(driver_).signal(true); }
void ProcessHandle::terminate() { alive(driver_).signal(false); }

namespace detail {

std::string ProcessDriver::id() const {
  std::lock_guard lock(mutex_);
  return id_;
}

std::optional<std::uint32_t> ProcessDriver::pid() const {
  std::lock_guard lock(mutex_);
  return pid_;
}

ProcessResult ProcessDriver::wait(Timeout timeout) {
  std::unique_lock lock(mutex_);
  const auto ended = [this] { return state_ != ProcessState::kRunning; };
  const auto stop = link_->token();
  if (!timeout || timeout->count() <= 0) changed_.wait(lock, stop, ended);
  else changed_.wait_for(lock, stop, *timeout, ended);
  if (stop.stop_requested()) throw SandboxNotInitializedError();
  ProcessResult r;
  r.state = state_;
  collect_locked(r);
  return r;
}

ProcessResult ProcessDriver::poll() {
  std::lock_guard lock(mutex_);
  ProcessResult r;
  r.state = state_;
  collect_locked(r);
  return r;
}

void refuse_process_operation(std::string_view operation, std::string_view backend) {
  throw SandboxExecutionError(std::string(operation) + " is not supported by " + std::string(backend), Stage::kCommand,
                              ErrorKind::kUnsupported);
}

}  // namespace detail
}  // namespace code_interpreter
