// The abstract sandbox: BaseSandbox (lifecycle and file transfer) and CodeInterpreterSandbox (code, commands,
// lease, files). Every backend implements the protected virtuals; callers use the public non-virtual functions,
// which hold the default arguments and the argument checks in one place (non-virtual interface).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"
#include "code_interpreter/export.hpp"
#include "code_interpreter/process.hpp"

namespace code_interpreter {

/// Lifecycle and file transfer, shared by every backend.
///
/// Thread safety: every public function may be called from any thread. Destroying a sandbox while another thread
/// is inside one of its calls is undefined; call `terminate` first.
class CODE_INTERPRETER_EXPORT BaseSandbox {
 public:
  BaseSandbox(const BaseSandbox&) = delete;
  BaseSandbox& operator=(const BaseSandbox&) = delete;
  virtual ~BaseSandbox();

  /// Reads a whole file from the sandbox.
  /// @param path absolute, or relative to the sandbox's working directory.
  /// @param timeout nullopt: the backend's default (60 s for Pyodide); <= 0: unbounded.
  /// @param max_bytes the most bytes the file may have, counted on the bytes actually received (never on a size
  ///        the sandbox reports); the transfer stops as soon as it is passed. nullopt: the backend options'
  ///        `max_download_bytes` (default 512 MiB). Must be positive.
  /// @return the bytes, or std::nullopt on any failure (missing file, timeout, lost sandbox, a file over
  ///         `max_bytes`: logged as a warning naming the cap). Never throws except std::invalid_argument (a path
  ///         that is empty, holds a NUL byte or is over 4096 bytes; a `max_bytes` of 0) and
  ///         SandboxNotInitializedError after terminate.
  [[nodiscard]] std::optional<std::string> download_file(std::string_view path, Timeout timeout = std::nullopt,
                                                         std::optional<std::uint64_t> max_bytes = std::nullopt);

  /// Tears the sandbox down. A second call is a no-op. From another thread it cancels the call in flight.
  /// @param timeout nullopt: the backend's default; must be positive otherwise.
  /// @throws std::invalid_argument if `timeout` is zero or negative.
  /// @throws SandboxTerminateError if teardown failed after every retry; the handle is kept for another try.
  void terminate(Timeout timeout = std::nullopt);

  /// The default transient classifier: reads TransportError (connection failures, timeouts, HTTP 408, 429 and
  /// 5xx are transient; other statuses and local refusals are not) and the ErrorKind of a CodeInterpreterError
  /// (kUnavailable, kRateLimited and kTimeout are transient).
  static bool is_transient_create_error(const std::exception& error) noexcept;

 protected:
  BaseSandbox() = default;
  /// `max_bytes` is resolved by the backend (nullopt: its options' default) and never 0.
  virtual std::optional<std::string> do_download_file(std::string_view path, Timeout timeout,
                                                      std::optional<std::uint64_t> max_bytes) = 0;
  virtual void do_terminate(Timeout timeout) = 0;
};

/// A sandbox that runs code: the seam every backend implements and every agent loop programs against; agent code
/// can be tested offline against a scripted implementation of it.
class CODE_INTERPRETER_EXPORT CodeInterpreterSandbox : public BaseSandbox {
 public:
  /// The language `execute_code` runs. Valid after terminate.
  [[nodiscard]] Language language() const noexcept { return language_; }
  /// The packages installed at creation: on Pyodide every package loaded, dependencies included (as the lock spells
  /// their names, each after its dependencies, then wheels of the user's own); elsewhere the names asked for.
  /// Valid after terminate.
  [[nodiscard]] const std::vector<std::string>& additional_packages() const noexcept { return packages_; }

  /// The backend's id for this sandbox; nullopt before it started. Kept after terminate.
  [[nodiscard]] virtual std::optional<std::string> sandbox_id() const = 0;
  /// What this backend can do. Valid after terminate.
  [[nodiscard]] virtual Capabilities capabilities() const = 0;

  /// Runs `code`. Never throws for anything that happens once the arguments are checked: every outcome is an
  /// ExecutionResult (docs/errors.md).
  /// @throws std::invalid_argument for a bad attachment name, duplicate attachment names, an empty upload_dir, or
  ///         an env name that is empty or holds '=' or NUL, or an env name or value that is not valid UTF-8.
  /// @throws SandboxNotInitializedError after terminate.
  [[nodiscard]] ExecutionResult execute_code(std::string_view code, const ExecuteOptions& options = {});

  /// Runs a shell command; a backend without shell commands answers kError, exit_code -1, no FailureDetail.
  /// @throws std::invalid_argument for an env name that is empty or holds '=' or NUL, or an env name or value that
  ///         is not valid UTF-8.
  /// @throws SandboxNotInitializedError after terminate.
  [[nodiscard]] ExecutionResult execute_command(std::string_view command, const CommandOptions& options = {});

  /// Renews the sandbox's lease to `lease` from now; a no-op on backends without leases.
  /// @throws SandboxExecutionError (stage set_timeout) on failure; SandboxNotInitializedError after terminate.
  void set_timeout(std::chrono::seconds lease);

  /// Writes `data` (arbitrary bytes) to `path`, creating parent directories.
  /// @throws SandboxExecutionError (stage upload) on failure.
  void write_file(std::string_view path, std::string_view data);
  /// Reads a whole file.
  /// @param max_bytes the most bytes the file may have, counted on the bytes actually received (never on a size
  ///        the sandbox reports); the transfer stops as soon as it is passed. nullopt: the backend options'
  ///        `max_download_bytes` (default 512 MiB). Must be positive (std::invalid_argument).
  /// @throws SandboxExecutionError (stage download; kind kNotFound if absent; kind kQuotaExceeded, message naming
  ///         the cap in bytes, for a file over `max_bytes`).
  [[nodiscard]] std::string read_file(std::string_view path, std::optional<std::uint64_t> max_bytes = std::nullopt);
  /// Lists a directory (not recursive). The answer is checked on every backend: an entry whose name is empty,
  /// holds '/', '\\' or NUL, or is "." or "..", or whose path is not `dir` + '/' + name, is dropped, with one
  /// warning naming how many were. `size` is what the sandbox reports: never a bound on what a read returns.
  /// @throws SandboxExecutionError (stage download; kNotFound if absent).
  [[nodiscard]] std::vector<FileInfo> list_files(std::string_view dir);
  /// Removes a file or a directory tree. @throws SandboxExecutionError (stage upload; kNotFound if absent).
  void remove_file(std::string_view path);
  /// Creates a directory and its parents. @throws SandboxExecutionError (stage upload).
  void make_dir(std::string_view path);
  /// Streams a file to `destination` on the host (written beside it, then renamed, so a failure leaves no partial
  /// file).
  /// @param max_bytes as for download_file: counted on the bytes received; the transfer stops once it is passed.
  /// @return false on any failure, a file over `max_bytes` included (logged as a warning naming the cap; no
  ///         partial file is left). Throws only std::invalid_argument (also for a `max_bytes` of 0) and
  ///         SandboxNotInitializedError.
  bool download_file_to(std::string_view path, const std::filesystem::path& destination,
                        Timeout timeout = std::nullopt, std::optional<std::uint64_t> max_bytes = std::nullopt);

  // ---- processes (docs/errors.md "Processes"; what each backend does: Capabilities::processes and its guide) ----

  /// Starts `command` (run by the sandbox's shell, as execute_command does) in the background and returns once it
  /// started. Its output goes to the options' callbacks and to the handle's results, by execute_command's rules.
  /// @throws std::invalid_argument for an empty command, a command, cwd or env that is not valid UTF-8 or holds NUL,
  ///         or an env name that is empty or holds '='.
  /// Once the backend named the process (an E2B pid, an AgentCore task id), spawn throws no more: whatever fails
  /// after that shows in the handle's state, so the id is never lost.
  /// @throws SandboxExecutionError (stage command): kUnsupported where the backend has no processes
  ///         (Capabilities::processes false); kTimeout when the backend did not report the start within its
  ///         request_timeout (E2B; the error names a pid that came too late); kInternal for an answer that is not
  ///         the protocol; else the backend's refusal or transport failure.
  /// @throws SandboxNotInitializedError after terminate.
  [[nodiscard]] ProcessHandle spawn(std::string_view command, const SpawnOptions& options = {});
  /// The processes running in the sandbox. @throws as spawn.
  [[nodiscard]] std::vector<ProcessInfo> list_processes();
  /// Attaches a new handle to a process started earlier (by spawn, another client, or before a handle was dropped),
  /// named by `id` (ProcessHandle::id, ProcessInfo::id). Its output from now on reaches the handle; what it wrote
  /// before is not replayed where the backend cannot (ProcessResult::output_lost then says so).
  /// Named apart from E2BSandbox::connect (which attaches to a sandbox).
  /// @throws std::invalid_argument for an id that is empty or not the backend's form of one.
  /// @throws SandboxExecutionError (stage command): kNotFound for a process that is not running, kUnsupported where
  ///         the backend cannot (Capabilities::process_connect false).
  /// @throws SandboxNotInitializedError after terminate.
  [[nodiscard]] ProcessHandle connect_process(std::string_view id, const ProcessConnectOptions& options = {});
  // ---- filesystem, interrupt, restart, variables ----
  // Each refuses with SandboxExecutionError kind kUnsupported on a backend whose Capabilities say it cannot
  // (docs/errors.md "Filesystem, interrupt, restart and variables"). Paths are checked as for read_file.

  /// Writes `data` to `path`; with `make_dirs` false the parent directory must exist already (kNotFound
  /// otherwise, nothing written; checked with get_info first, so it needs Capabilities::file_info).
  /// @throws SandboxExecutionError (stage upload).
  void write_file(std::string_view path, std::string_view data, bool make_dirs);
  /// Whether `path` exists: true or false only when the sandbox said so. A transport failure, a timeout or a
  /// malformed answer throws SandboxExecutionError (stage download), never reads as "absent".
  [[nodiscard]] bool exists(std::string_view path);
  /// What `path` is: type, size, modification time and permission bits where the backend tells them.
  /// @throws SandboxExecutionError (stage download; kNotFound if absent).
  [[nodiscard]] FileInfo get_info(std::string_view path);
  /// Copies a file, or a directory tree, to `to` (its parents created; an existing file there is replaced).
  /// @throws SandboxExecutionError (stage upload; kNotFound if `from` is absent).
  void copy(std::string_view from, std::string_view to);
  /// Renames `from` to `to` (its parents created; an existing file there is replaced).
  /// @throws SandboxExecutionError (stage upload; kNotFound if `from` is absent).
  void move(std::string_view from, std::string_view to);

  /// Stops the execute_code running now, from any thread; a no-op when none runs (an interrupt is never kept for a
  /// later call). With Capabilities::interrupt_keeps_state the call returns kError with code_error
  /// KeyboardInterrupt and the state kept (CancelledError when the interrupt lands while the run waits in the event
  /// loop; docs/errors.md "Filesystem, interrupt, restart and variables"); otherwise it returns as a cancelled call does (kUnknown `cancelled`,
  /// state_lost telling whether the state survived).
  /// @throws SandboxExecutionError (kUnsupported) without Capabilities::interrupt_call; SandboxNotInitializedError
  ///         after terminate.
  void interrupt();
  /// Gives a clean interpreter (no variables, no imports) in the same sandbox; files are kept where the backend
  /// keeps them (docs/backends/*.md). Waits for a running execute_code to end first where the backend serializes.
  /// @throws SandboxExecutionError (stage execute) on failure; SandboxNotInitializedError after terminate.
  void restart();

  /// Sets the global `name` of the interpreter to `value` (JSON objects become dicts, arrays lists).
  /// @param name an ASCII Python identifier that is not a keyword, at most 255 bytes (std::invalid_argument).
  /// @throws std::invalid_argument also for a value holding a string that is not valid UTF-8.
  /// @throws SandboxExecutionError (stage execute) when the code that sets it does not succeed.
  void set_variable(std::string_view name, const nlohmann::json& value);
  /// The global `name` as JSON (tuples arrive as arrays; NaN and infinities are refused).
  /// @throws std::invalid_argument for a bad name (as set_variable).
  /// @throws SandboxExecutionError stage execute: kNotFound when no such global exists; kInvalidArgument when its
  ///         value is not JSON-serialisable (the message names Python's error); kInternal for an answer that is not
  ///         what the library asked for; the call's own kind (kTimeout, kUnknown, ...) when it did not succeed.
  [[nodiscard]] nlohmann::json get_variable(std::string_view name);

 protected:
  CodeInterpreterSandbox(Language language, std::vector<std::string> additional_packages)
      : language_(language), packages_(std::move(additional_packages)) {}

  /// The argument checks of execute_code, for a backend's own execute variants (std::invalid_argument).
  static void check_execute_options(const ExecuteOptions& options);

  virtual ExecutionResult do_execute_code(std::string_view code, const ExecuteOptions& options) = 0;
  virtual ExecutionResult do_execute_command(std::string_view command, const CommandOptions& options) = 0;
  virtual void do_set_timeout(std::chrono::seconds lease) = 0;
  virtual void do_write_file(std::string_view path, std::string_view data) = 0;
  virtual std::string do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) = 0;
  virtual std::vector<FileInfo> do_list_files(std::string_view dir) = 0;
  virtual void do_remove_file(std::string_view path) = 0;
  virtual void do_make_dir(std::string_view path) = 0;
  virtual bool do_download_file_to(std::string_view path, const std::filesystem::path& destination,
                                   Timeout timeout, std::optional<std::uint64_t> max_bytes) = 0;

  // processes: each refuses with SandboxExecutionError (stage command, kUnsupported) unless a backend overrides it,
  // so a subclass written before processes existed compiles and answers honestly.
  virtual ProcessHandle do_spawn(std::string_view command, const SpawnOptions& options);
  virtual std::vector<ProcessInfo> do_list_processes();
  virtual ProcessHandle do_connect_process(std::string_view id, const ProcessConnectOptions& options);
  // filesystem, interrupt, restart, variables: the defaults refuse with kUnsupported (stage download for exists
  // and get_info, upload for copy and move, execute for the rest), so older subclasses compile unchanged.
  virtual bool do_exists(std::string_view path);
  virtual FileInfo do_get_info(std::string_view path);
  virtual void do_copy(std::string_view from, std::string_view to);
  virtual void do_move(std::string_view from, std::string_view to);
  virtual void do_interrupt();
  virtual void do_restart();
  /// `name` is checked; `value_json` is `value` serialized (valid UTF-8).
  virtual void do_set_variable(std::string_view name, const std::string& value_json);
  /// `name` is checked. The answer is checked by the caller (a JSON value).
  virtual nlohmann::json do_get_variable(std::string_view name);

  /// set_variable / get_variable as Python code run through execute_code: the value travels as base64 text, the
  /// answer comes back printed between two markers holding a fresh random nonce, as base64 of JSON, and is parsed
  /// as untrusted. For a backend whose interpreter is Python.
  void set_variable_by_code(std::string_view name, const std::string& value_json);
  nlohmann::json get_variable_by_code(std::string_view name);

 private:
  Language language_;
  std::vector<std::string> packages_;
};

}  // namespace code_interpreter
