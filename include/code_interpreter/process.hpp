// Background processes in a sandbox: CodeInterpreterSandbox::spawn starts one and returns a ProcessHandle;
// list_processes and connect find and re-attach to processes started earlier. Semantics: docs/errors.md
// "Processes"; what each backend can do: its guide's "Processes" table and Capabilities::processes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/execution.hpp"
#include "code_interpreter/export.hpp"

namespace code_interpreter {

/// Options of one `spawn` call.
struct SpawnOptions {
  std::map<std::string, std::string> env;  ///< environment variables of the process
  std::optional<std::string> cwd;          ///< its working directory; nullopt: the sandbox's default
  /// The process's lifetime limit: when it elapses the backend kills the process. nullopt or <= 0: none.
  Timeout timeout;
  /// Whether the process reads a stdin the handle can write (send_stdin / close_stdin). false: stdin is empty.
  bool stdin_pipe = true;
  /// Called with one line at a time, by the same rules as CommandOptions::on_stdout (docs/errors.md "Output"), on a
  /// thread of the handle's own (not the caller's, kill and terminate included), in order within a stream. A
  /// partial line that nothing completes (a prompt) comes as a piece after 50 ms (E2B) or one poll (AgentCore).
  /// Must not call back into the handle or the sandbox. A callback that throws is silenced; the result then carries FailureDetail `callback.exception`.
  std::function<void(std::string_view)> on_stdout;
  std::function<void(std::string_view)> on_stderr;
};

/// Options of one `connect` call (re-attaching to a process started earlier).
struct ProcessConnectOptions {
  std::function<void(std::string_view)> on_stdout;  ///< as SpawnOptions::on_stdout
  std::function<void(std::string_view)> on_stderr;
};

/// Where a process is, as far as the handle knows.
enum class ProcessState {
  kRunning,   ///< not ended yet (a `wait` whose timeout elapsed says this; the process keeps running)
  kExited,    ///< it exited by itself; `exit_code` is its status
  kSignaled,  ///< a signal ended it; `signal` names it ("SIGKILL", "SIGTERM", ...)
  kUnknown,   ///< its fate cannot be learned (the stream broke and the process could not be found again)
};

/// "running", "exited", "signaled" or "unknown".
CODE_INTERPRETER_EXPORT std::string_view to_string(ProcessState state) noexcept;

/// What a handle knows of its process: its state and the output received since the handle attached.
struct ProcessResult {
  ProcessState state = ProcessState::kRunning;
  int exit_code = -1;       ///< the exit status when kExited; -1 otherwise
  std::string signal;       ///< for kSignaled: "SIGKILL", "SIGTERM" or the backend's own name; empty otherwise
  std::string stdout_text;  ///< valid UTF-8, at most the backend's output cap (then `truncated`)
  std::string stderr_text;
  bool truncated = false;   ///< output was cut at the cap (the callbacks still got all of it)
  /// Output may be missing: the handle attached (connect) after the process had started, or re-attached after its
  /// stream was cut, and the backend does not replay what was written meanwhile.
  bool output_lost = false;
  std::string error;        ///< for kUnknown and kSignaled: what happened, in words
  std::optional<FailureDetail> failure;  ///< for kUnknown: the cause (e.g. "connect.not_found", "callback.exception")
  friend bool operator==(const ProcessResult&, const ProcessResult&) = default;
};

/// A process listed by `list_processes`.
struct ProcessInfo {
  std::string id;                 ///< what `connect` takes (E2B: the pid as decimal text)
  std::optional<std::uint32_t> pid;
  std::string command;            ///< the program and its arguments, as the backend reports them, space-joined
  std::optional<std::string> tag;
  std::optional<std::string> cwd;
  friend bool operator==(const ProcessInfo&, const ProcessInfo&) = default;
};

namespace detail {
class ProcessDriver;
}

/// A process running in a sandbox, from `spawn` or `connect`. Movable, not copyable.
///
/// Destroying a handle detaches from the process: it keeps running, and `connect(id())` attaches again. After the
/// sandbox is terminated or destroyed every call throws SandboxNotInitializedError (the handle shares a state with
/// the sandbox; it never points into it). Thread safety: every function may be called from any thread.
class CODE_INTERPRETER_EXPORT ProcessHandle {
 public:
  /// For backends: a handle over `driver`.
  explicit ProcessHandle(std::shared_ptr<detail::ProcessDriver> driver);
  ProcessHandle(ProcessHandle&&) noexcept;
  ProcessHandle& operator=(ProcessHandle&&) noexcept;
  ProcessHandle(const ProcessHandle&) = delete;
  ProcessHandle& operator=(const ProcessHandle&) = delete;
  ~ProcessHandle();

  /// The backend's name for the process (E2B: the pid as decimal text); what `connect` takes.
  /// @throws SandboxNotInitializedError after the sandbox's terminate.
  [[nodiscard]] std::string id() const;
  /// The operating-system pid, where the backend has one (E2B); nullopt otherwise.
  /// @throws SandboxNotInitializedError after the sandbox's terminate.
  [[nodiscard]] std::optional<std::uint32_t> pid() const;

  /// Writes `bytes` (arbitrary bytes) to the process's stdin.
  /// @throws SandboxExecutionError (stage command): kUnsupported where the backend has no stdin, kNotFound once the
  ///         process is gone, kInvalidArgument when it was spawned without `stdin_pipe`.
  /// @throws SandboxNotInitializedError after the sandbox's terminate.
  void send_stdin(std::string_view bytes);
  /// Closes the process's stdin: it reads end-of-file. Errors as send_stdin.
  void close_stdin();

  /// Waits for the process to end, at most `timeout` (nullopt or <= 0: unbounded). A timeout does not kill the
  /// process: the result then says kRunning, with the output so far, and a later wait can still see the end.
  /// @throws SandboxNotInitializedError after the sandbox's terminate (a wait in progress ends with it).
  [[nodiscard]] ProcessResult wait(Timeout timeout = std::nullopt);
  /// What is known now, without waiting. @throws SandboxNotInitializedError after the sandbox's terminate.
  [[nodiscard]] ProcessResult poll();

  /// Sends SIGKILL. A process the handle knows has ended gets nothing sent (its pid may have been reused); one the
  /// backend no longer knows is left alone.
  /// @throws SandboxExecutionError (stage command) when the backend refused; SandboxNotInitializedError after the
  ///         sandbox's terminate.
  void kill();
  /// Sends SIGTERM where the backend can (E2B); where it cannot, stops the process as the backend does
  /// (Capabilities::process_signals). Errors as kill.
  void terminate();

 private:
  std::shared_ptr<detail::ProcessDriver> driver_;
};

}  // namespace code_interpreter
