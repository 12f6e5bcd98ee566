// The local Pyodide sandbox: CPython compiled to WebAssembly, run in a locked-down Deno process per sandbox.
// Needs no account and no network. Guide: docs/backends/pyodide.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "code_interpreter/sandbox.hpp"

namespace code_interpreter {

/// Which confinement layers hold a runtime (docs/security.md, docs/backends/pyodide.md "Process limits").
/// Layer 1 is the Deno host script's realm; Layer 2 is the kernel's (Landlock, seccomp, no_new_privs), applied to
/// the Deno process before it starts.
struct ConfinementReport {
  bool realm = false;             ///< Layer 1: no host object, Deno API or persistent storage reachable from Python
  int landlock_abi = 0;           ///< the Landlock ABI in force; 0: none (kernel without Landlock)
  bool landlock_network = false;  ///< Landlock TCP bind/connect rules in force (ABI >= 4)
  bool landlock_scoped = false;   ///< Landlock signal and abstract-socket scoping in force (ABI >= 6)
  bool seccomp = false;           ///< the seccomp filter is installed
  bool no_new_privs = false;      ///< PR_SET_NO_NEW_PRIVS is set (always, where the child could be started)

  friend bool operator==(const ConfinementReport&, const ConfinementReport&) = default;
};

/// Options of `PyodideSandbox::create`.
struct PyodideOptions {
  /// Only Language::kPython is supported; anything else is a SandboxStartError (stage configure, kUnsupported).
  Language language = Language::kPython;
  /// Distribution names installed at start (and again after every respawn), from files in the package directory
  /// (`wheel_dir`). A name the runtime's pyodide-lock.json holds (compared as PEP 503 does) brings its dependencies
  /// from the lock, and every file is checked against the lock's SHA-256 before it is loaded; fetch them with
  /// `code-interpreter packages fetch NAME...`. Any other name must have exactly one wheel of the user's own there
  /// (`<name>-<version>-<tags>.whl`), loaded after the lock's packages and unchecked. Nothing is ever fetched from
  /// the sandbox. A missing or mismatched file, or an unknown name, fails creation (SandboxStartError, stage
  /// install_packages, naming the package and the fetch command).
  std::vector<std::string> additional_packages;
  /// The package directory; the Deno process may read it. Default: `packages-<Pyodide version>` in the snapshot
  /// cache directory (see `snapshot_dir`'s default).
  std::optional<std::filesystem::path> wheel_dir;
  /// A lock file in pyodide-lock.json's format to resolve `additional_packages` from, instead of the runtime's own
  /// (node_modules/pyodide/pyodide-lock.json in the runtime directory): for a lock of your own packages.
  std::optional<std::filesystem::path> package_lock;
  /// The runtime directory (host script, Pyodide, Deno). Default: the one installed beside the shared library.
  /// A static build cannot locate itself: pass the directory the package exports as
  /// `CodeInterpreter_PYODIDE_RUNTIME_DIR`.
  std::optional<std::filesystem::path> runtime_dir;
  /// Budget for starting the runtime and installing packages. nullopt: 120 s; <= 0: unbounded.
  Timeout create_timeout;
  /// After a timeout's interrupt, how long the code may take to stop before the runtime is killed and respawned.
  /// Zero kills at once; negative is refused (stage configure).
  std::chrono::milliseconds interrupt_grace{2000};
  /// Per-stream cap on stdout_text / stderr_text in bytes; past it `truncated` is set (callbacks still get all).
  std::size_t max_output_bytes = 10u << 20;
  /// Largest frame the runtime may send, in bytes; a larger one is hostile output (kUnknown, runtime killed).
  /// At least 9 MiB (a file chunk of 8 MiB plus its header), else create throws (stage configure).
  std::size_t max_frame_bytes = 16u << 20;
  /// Default cap of read_file / download_file / download_file_to (their `max_bytes`), in bytes, counted on the
  /// bytes received. Default 512 MiB; 0 is refused (SandboxStartError, stage configure).
  std::uint64_t max_download_bytes = std::uint64_t{512} << 20;
  /// Cap on all memory the runtime process holds (wasm heap, in-memory files, JS buffers), in bytes. Default 2 GiB.
  /// Enforced as the process's RLIMIT_DATA (private writable memory: an allocation past it fails, Python raises
  /// MemoryError and the state is kept) and by a watchdog that kills a runtime whose resident memory passes it
  /// (the call then returns kError, exit_code 1, code_error MemoryError naming the cap, state_lost true). At least
  /// 256 MiB (Pyodide needs about 150 MiB to start), else create throws (stage configure).
  std::size_t memory_limit_bytes = std::size_t{2} << 30;
  /// true: a kernel without Landlock or seccomp is a SandboxStartError (stage start_runtime, kUnsupported)
  /// instead of one warning.
  bool require_kernel_confinement = false;
  /// The network the code may reach. The runtime has none (Deno runs with no network permission), so only
  /// nullopt and none() are accepted; all() and allowlist() are refused (SandboxStartError, stage configure,
  /// kUnsupported), never weakened.
  std::optional<NetworkPolicy> network_policy;
  /// Start runtimes (the first, and every respawn) by restoring a memory snapshot of a freshly loaded Pyodide
  /// instead of loading it: about 0.4 s instead of 3 s. The build makes a base image and installs it beside the
  /// runtime; otherwise the image is made once per runtime build, in a throwaway process that runs no other code,
  /// and kept in `snapshot_dir`. A corrupt or unusable image is made again in the cache directory, or replaced by
  /// a cold load where it cannot be; each fallback logs one warning and never fails creation
  /// (docs/backends/pyodide.md "Snapshots"). false: always cold.
  bool use_snapshot = true;
  /// Where snapshot images are kept (created when missing). Unset: the base image beside the runtime when it
  /// checks, else `$XDG_CACHE_HOME/code_interpreter/pyodide`, else `$HOME/.cache/code_interpreter/pyodide`. Set:
  /// this directory alone. Files are `snapshot-<64 hex key>.bin`, about 30 MiB each.
  std::optional<std::filesystem::path> snapshot_dir;
  /// Cancels creation.
  std::stop_token cancel;
};

/// A Python sandbox in a local Deno + Pyodide process.
///
/// The process may read only the runtime files and the wheels it installs: no network, no environment, no writes
/// outside a private directory that is new for every runtime process, no subprocesses. Deno's permissions and the
/// kernel (Landlock, seccomp, no_new_privs, rlimits; see confinement()) each enforce this. State (variables,
/// imported modules, the in-memory filesystem) persists across calls of one sandbox and is never shared between
/// sandboxes. A timeout first interrupts the code (KeyboardInterrupt in running code and in time.sleep,
/// CancelledError at an await; state kept), then kills and respawns the process after `interrupt_grace` (state
/// lost; `state_lost` is set). Calls on one sandbox are serialized. Capabilities: stateful, file download and filesystem, packages (from
/// wheels), interrupt; no shell commands, no network; upload_dir "/files".
class CODE_INTERPRETER_EXPORT PyodideSandbox final : public CodeInterpreterSandbox {
 public:
  /// Starts the runtime and waits until Python is ready: about 0.5 s restoring the snapshot (use_snapshot), 3-4 s
  /// loading cold, on an idle 2-core machine; a create that finds no image to restore makes one (3-5 s more).
  /// @throws TemplateBuildError (stage template_build) if the runtime is missing or of the wrong version.
  /// @throws SandboxStartError (stages configure, start_runtime, install_packages) otherwise; nothing is left
  ///         running.
  [[nodiscard]] static std::unique_ptr<PyodideSandbox> create(PyodideOptions options = {});

  /// The runtime directory found beside the installed (or built) library.
  [[nodiscard]] static std::filesystem::path default_runtime_dir();

  ~PyodideSandbox() override;

  [[nodiscard]] std::optional<std::string> sandbox_id() const override;
  [[nodiscard]] Capabilities capabilities() const override;
  /// The layers that hold the current runtime process (after a respawn, the new one's). Thread-safe.
  [[nodiscard]] ConfinementReport confinement() const;

 protected:
  ExecutionResult do_execute_code(std::string_view code, const ExecuteOptions& options) override;
  ExecutionResult do_execute_command(std::string_view command, const CommandOptions& options) override;
  void do_set_timeout(std::chrono::seconds lease) override;
  void do_write_file(std::string_view path, std::string_view data) override;
  std::string do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) override;
  std::vector<FileInfo> do_list_files(std::string_view dir) override;
  void do_remove_file(std::string_view path) override;
  void do_make_dir(std::string_view path) override;
  bool do_download_file_to(std::string_view path, const std::filesystem::path& destination,
                           Timeout timeout, std::optional<std::uint64_t> max_bytes) override;
  std::optional<std::string> do_download_file(std::string_view path, Timeout timeout,
                                              std::optional<std::uint64_t> max_bytes) override;
  void do_terminate(Timeout timeout) override;
  // filesystem, interrupt, restart, variables
  bool do_exists(std::string_view path) override;
  FileInfo do_get_info(std::string_view path) override;
  void do_copy(std::string_view from, std::string_view to) override;
  void do_move(std::string_view from, std::string_view to) override;
  void do_interrupt() override;
  void do_restart() override;
  void do_set_variable(std::string_view name, const std::string& value_json) override;
  nlohmann::json do_get_variable(std::string_view name) override;

 private:
  friend class PyodidePool;  // hands its ready runtimes to the sandboxes it gave out, for their respawns
  struct Impl;  // src/pyodide/sandbox_impl.hpp
  PyodideSandbox(std::unique_ptr<Impl> impl, Language language, std::vector<std::string> packages);
  std::unique_ptr<Impl> impl_;
};

}  // namespace code_interpreter
