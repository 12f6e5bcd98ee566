// A child process with piped stdin/stdout, started so that it cannot outlive the host program.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace code_interpreter::detail {

class Confinement;

/// Runs `executable` with `args` and exactly `env` (nothing of the host's environment), stdin and stdout piped,
/// stderr drained by a thread into the debug log (its last 4 KiB kept for error messages), every other descriptor
/// closed, its working directory "/" (the host's own is not the runtime's to learn). The child gets
/// PR_SET_PDEATHSIG(SIGKILL): processes are forked from one long-lived thread, so the
/// signal fires when the host process dies, not when the thread that asked for the child ends.
/// With a `confinement`, the child applies it (confinement.hpp) just before execve; if that fails, the child
/// writes which step failed to its stderr and exits with status 126 before running anything.
class ChildProcess {
 public:
  /// @param confinement  prepared in the caller, kept alive by it until the constructor returns; may be null.
  /// @throws std::system_error if the process cannot be started.
  ChildProcess(const std::filesystem::path& executable, const std::vector<std::string>& args,
               const std::vector<std::string>& env, const Confinement* confinement = nullptr);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] int stdin_fd() const noexcept { return stdin_fd_; }
  [[nodiscard]] int stdout_fd() const noexcept { return stdout_fd_; }

  /// Sends SIGKILL (once the process has been reaped this does nothing). Safe from any thread.
  void kill() noexcept;
  /// Closes our end of stdin: the host exits when it next reads.
  void close_stdin() noexcept;
  /// Waits for the process to end; returns its wait status. Idempotent.
  int wait() noexcept;
  /// The last bytes the process wrote to stderr.
  [[nodiscard]] std::string stderr_tail() const;

 private:
  void drain_stderr(int fd);

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::thread stderr_thread_;
  mutable std::mutex mu_;
  bool reaped_ = false;
  int status_ = 0;
  std::string stderr_tail_;
};

}  // namespace code_interpreter::detail
