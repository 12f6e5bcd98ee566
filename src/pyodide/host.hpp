// PyodideHost: the Deno process of one sandbox and the frame protocol spoken with it (docs/architecture.md "The
// Pyodide frame protocol"). It starts, replaces and kills runtime processes, sends requests and decodes the frames
// that come back into typed facts (ready or why not, a file answer or why not, a run's output and end). It maps
// nothing onto results or thrown errors: that is src/pyodide/outcome.hpp, and src/pyodide/sandbox_impl.hpp decides
// what to do (docs/architecture.md "Backends").
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/execution.hpp"
#include "code_interpreter/pyodide_sandbox.hpp"
#include "core/pipe_write.hpp"
#include "pyodide/child_process.hpp"
#include "pyodide/confinement.hpp"
#include "pyodide/frame.hpp"
#include "pyodide/memory_watchdog.hpp"
#include "pyodide/runtime.hpp"
#include "pyodide/test_switch.hpp"

namespace code_interpreter::detail {

using HostClock = std::chrono::steady_clock;

// ---- one runtime process (src/pyodide/host_process.cpp) ----

inline constexpr std::string_view kRuntimeDirPrefix = "code_interpreter-deno-";

/// Removes the private directories of host programs that died without tearing their sandboxes down (a crash,
/// kill -9): each names its owner's pid in a file "owner"; one whose owner is gone (and that belongs to this user)
/// is removed. A directory whose pid was reused stays until that process ends too.
void sweep_stale_runtime_dirs(const std::filesystem::path& base);

/// The private directory of one runtime process: `<tmp>/code_interpreter-deno-XXXXXX` holding the file "owner"
/// (this process's pid, for sweep_stale_runtime_dirs) and "deno", the process's DENO_DIR. Landlock gives the
/// process no right on it at all: Deno runs without its caches (they would be empty in a new directory anyway), and
/// whatever Web storage or the Cache API try to write there fails, so a runtime writes nothing to disk. New for
/// every process, respawns included, so nothing a runtime could have stored reaches the next one; removed when the
/// process has ended (docs/architecture.md "One Deno process per sandbox").
struct RuntimeDir {
  explicit RuntimeDir(const std::filesystem::path& base);
  ~RuntimeDir();
  RuntimeDir(const RuntimeDir&) = delete;
  RuntimeDir& operator=(const RuntimeDir&) = delete;
  [[nodiscard]] std::filesystem::path deno_dir() const { return path / "deno"; }
  std::filesystem::path path;
};

/// How a wait for the next frame ended.
enum class FrameWait { kFrame, kDeadline, kWoken, kEof, kMalformed };

/// One runtime process and the decoder of its output. A watchdog kills the process when its resident memory passes
/// the cap (RLIMIT_DATA bounds private writable mappings; the watchdog catches what that does not count).
struct HostProcess {
  HostProcess(const Runtime& rt, const std::vector<std::string>& args, std::unique_ptr<RuntimeDir> private_dir,
              const std::vector<std::string>& env, const Confinement* confinement, std::size_t max_frame,
              std::uint64_t memory_limit);
  // Members end in reverse order: the watchdog stops, the process is killed and reaped, then its directory goes.

  /// Waits for the next frame, or for `wake_fd` to be written, sleeping in `poll` (docs/architecture.md "A normal
  /// run" says why it does not spin). A frame without this process's token is malformed.
  FrameWait next_frame(int wake_fd, std::optional<HostClock::time_point> deadline, Frame& out, std::string& why);
  /// Kills and reaps the process, and says how it ended, quoting the end of its stderr.
  std::string death_description();
  /// Whether its death was the memory cap: the watchdog killed it, or an allocation past RLIMIT_DATA was fatal to
  /// V8 or to Deno's Rust allocator (their messages on stderr).
  bool died_of_memory();

  std::unique_ptr<RuntimeDir> dir;
  ChildProcess child;
  FrameDecoder decoder;
  std::string token;  // every frame from this process must carry it (host.mjs send)
  bool ready = false;
  bool eof = false;
  MemoryWatchdog watchdog;
};

// ---- the facts frames carry ----

/// Why a runtime is not ready (docs/architecture.md "What the library accepts").
struct ReadyError {
  enum Kind { kNone, kTimeout, kCancelled, kDied, kInstall, kVersion, kMalformed } kind = kNone;
  std::string message;
};

/// Why a file request got no usable answer.
struct FileError {
  ErrorKind kind;
  std::string message;
  bool restarted = false;  // the runtime was replaced: its state is gone
};

/// A failed `fs` answer as a FileError naming `op` and `path`; nullopt for a successful one.
std::optional<FileError> fs_answer_error(const Frame& f, std::string_view op, std::string_view path);

/// What one frame read during run `rid` is: output of stream 1 or 2, the run's end, or a break of the protocol.
struct RunFrame {
  enum Kind { kOut, kResult, kUnexpected } kind;
  int stream = 0;   // kOut: 1 stdout, 2 stderr
  std::string why;  // kUnexpected
};
RunFrame classify_run_frame(const Frame& f, std::uint32_t rid);

/// A `result` frame's facts (docs/architecture.md "Host to library").
struct RunEnd {
  enum class Status { kOk, kError, kInterrupted } status = Status::kOk;
  std::optional<std::string> value;  // kOk: the repr of the last expression, when it is not None
  std::map<std::string, std::string> value_data;  // kOk: the last expression's other formats (mime type -> text)
  std::vector<std::map<std::string, std::string>> displays;  // display() calls and shown figures, in order
  bool displays_dropped = false;     // the runtime dropped displays past its own cap
  int exit_code = 0;                 // kError
  CodeError error;                   // kError, kInterrupted
  bool host_interrupt = false;       // an interrupt was received for this run
};
/// nullopt when the frame's status, exit_code or error cannot be read (a malformed result).
std::optional<RunEnd> decode_run_end(const nlohmann::json& header);

// ---- the succession of runtime processes of one sandbox (src/pyodide/host.cpp) ----

/// A started, ready runtime process that one sandbox's host gives up for another's (PyodidePool's fast respawn):
/// the process, the layers that hold it, and the request id its host would have used next.
struct ReadyRuntime {
  std::shared_ptr<HostProcess> process;
  ConfinementReport report;
  std::uint32_t next_request = 1;
};

/// What every runtime process of one sandbox is started with; set by create before the first spawn.
struct HostConfig {
  Runtime runtime;
  std::vector<std::string> wheels;    // absolute wheel paths, in the order of `packages`
  std::vector<std::string> wheel_sha256;  // beside `wheels`: the lock's SHA-256, checked at every load; "" unchecked
  std::vector<std::string> packages;  // additional_packages
  std::vector<std::string> deno_args;
  std::filesystem::path temp_base;    // where each runtime's RuntimeDir is made
  ConfinementSpec confinement_spec;   // the same for every runtime of the sandbox
  TestConfinement test_mode = TestConfinement::kFull;
  std::size_t max_frame_bytes = 0;
  std::uint64_t memory_limit_bytes = 0;
  std::chrono::milliseconds interrupt_grace{0};
};

class PyodideHost {
 public:
  explicit PyodideHost(std::string id) : id_(std::move(id)) {}
  ~PyodideHost();
  PyodideHost(const PyodideHost&) = delete;
  PyodideHost& operator=(const PyodideHost&) = delete;

  HostConfig config;
  std::optional<std::filesystem::path> snapshot;  // the checked image every runtime restores; nullopt: cold
  bool snapshot_installed = false;  // `snapshot` is the base image beside the runtime: read, never removed

  [[nodiscard]] const std::string& id() const noexcept { return id_; }

  /// Makes the eventfd that wakes a wait (cancellation, terminate). The errno when it cannot, else 0.
  int open_wake();
  void wake() noexcept;
  void drain_wake() noexcept;

  /// The next request id: 1 to 2^31 - 1, shared by exec and fs requests, wrapping back to 1.
  std::uint32_t request_id();

  /// The layers that hold the runtime started last. Thread-safe.
  [[nodiscard]] ConfinementReport report() const;

  /// The current process (nullptr: none, or being shut down). Thread-safe.
  std::shared_ptr<HostProcess> current();

  /// Starts a runtime process, with a new private directory and the kernel's confinement, and queues its init
  /// frame; readiness is awaited by await_ready(). @throws std::exception when the process cannot be started.
  void spawn(bool make_snapshot = false);
  /// Kills and reaps the current process, if any; its private directory goes with it.
  void kill();
  /// Kills the current process and starts a fresh one without waiting for it to load (none while shutting down;
  /// a failure is logged, and the next call finds no runtime). The fresh one is `standby`'s when it has one ready.
  void respawn();

  /// Where respawn() takes a ready runtime before it starts one: a source that returns nullopt when it has none
  /// ready now, or empty. Its runtimes are started with this host's `config` and run no user code. Set before the
  /// sandbox is handed to its owner (PyodidePool::acquire), never changed after; called on the calling thread.
  std::function<std::optional<ReadyRuntime>()> standby;
  /// Whether the current process is ready and idle: it has not ended, and has written nothing since its last
  /// answer (an idle runtime writes nothing; data or a hang-up on its pipe means it ended or broke the protocol).
  /// Thread-safe; for a sandbox no call is using (PyodidePool's ready ones).
  [[nodiscard]] bool idle_and_alive();
  /// Gives up the current process, for another host to adopt: nullopt when there is none, it is not idle_and_alive,
  /// or this host is shutting down. This host is then left without a process. Thread-safe.
  std::optional<ReadyRuntime> release();

  /// terminate: makes every later wait end, and kills the current process at once (a call in flight sees it).
  void shut_down();
  [[nodiscard]] bool shutting_down() const noexcept { return terminating_; }

  FrameWait next_frame(HostProcess& p, std::optional<HostClock::time_point> deadline, Frame& out, std::string& why) {
    return p.next_frame(wake_fd_, deadline, out, why);
  }

  /// Waits for the current runtime (started now when there is none) to be ready. A runtime that dies while
  /// restoring the snapshot is started again cold, after one warning, and the snapshot is not used again: a
  /// cache's image is removed (the next sandbox makes it again), the installed one is marked unusable.
  ReadyError await_ready(std::optional<HostClock::time_point> deadline, const std::stop_token& cancel);

  /// The snapshot runtimes of this sandbox restore: `file` (the cache's image for this runtime), made now if it is
  /// missing or does not check. nullopt, after one warning, when there is no cache directory (`file` nullopt) or
  /// the image cannot be made: every runtime then loads cold (docs/architecture.md "Memory snapshots").
  std::optional<std::filesystem::path> find_or_make_snapshot(const std::optional<std::filesystem::path>& file,
                                                             std::optional<HostClock::time_point> deadline,
                                                             const std::stop_token& cancel);

  /// Sends one `fs` request (waiting for the runtime to be ready first) and waits for its answer: the answer
  /// frame, or why there is none. A runtime that breaks the protocol or does not answer in time is replaced.
  std::variant<Frame, FileError> file_request(nlohmann::json header, std::string_view body,
                                              std::optional<HostClock::time_point> deadline,
                                              const std::stop_token& cancel = {});

 private:
  ReadyError await_ready_once(std::optional<HostClock::time_point> deadline, const std::stop_token& cancel);
  bool make_snapshot(const std::filesystem::path& file, std::optional<HostClock::time_point> deadline,
                     const std::stop_token& cancel, std::string& why);

  const std::string id_;
  mutable std::mutex report_mu_;
  ConfinementReport report_;  // of the last runtime started
  std::mutex state_mu_;       // guards `process_` against terminate() from another thread
  std::shared_ptr<HostProcess> process_;
  std::atomic<bool> terminating_{false};
  int wake_fd_ = -1;
  std::uint32_t next_request_ = 1;
};

}  // namespace code_interpreter::detail
