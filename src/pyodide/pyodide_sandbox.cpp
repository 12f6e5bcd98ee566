// PyodideSandbox: one Deno + Pyodide process per sandbox, spoken to in frames (frame.hpp, host/host.mjs).
// The posture, timeouts and output handling follow docs/protocols/pyodide.md (its Pyodide and Deno sections).
#include "code_interpreter/pyodide_sandbox.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>
#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <system_error>
#include <variant>
#include <cstring>

#include <nlohmann/json.hpp>

#include "code_interpreter/logging.hpp"
#include "core/file_guards.hpp"
#include "core/nested.hpp"
#include "core/deadline.hpp"
#include "core/outcome.hpp"
#include "core/output.hpp"
#include "core/utf8.hpp"
#include "pyodide/child_process.hpp"
#include "pyodide/confinement.hpp"
#include "pyodide/frame.hpp"
#include "pyodide/memory_watchdog.hpp"
#include "pyodide/runtime.hpp"
#include "pyodide/snapshot.hpp"
#include "pyodide/test_switch.hpp"

namespace code_interpreter {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using detail::ChildProcess;
using detail::Frame;
using detail::FrameDecoder;
using json = nlohmann::json;

namespace {

constexpr auto kDefaultExecuteTimeout = std::chrono::seconds(300);
constexpr auto kDefaultCreateTimeout = std::chrono::seconds(120);
constexpr auto kDefaultFileTimeout = std::chrono::seconds(60);
constexpr std::size_t kFileChunk = 8u << 20;  // bytes per read/write frame (the host caps reads at 8 MiB too)
constexpr const char* kUploadDir = "/files";
constexpr std::size_t kMaxCodeBytes = 16u << 20;
constexpr auto kSpin = std::chrono::microseconds(1000);
constexpr auto kInterruptRepeat = std::chrono::milliseconds(50);
constexpr auto kPartialLineDelay = std::chrono::milliseconds(50);  // see the call loop's flush_at
constexpr std::size_t kMinFrameBytes = kFileChunk + (1u << 20);
constexpr std::size_t kMaxEnvBytes = 512u << 10;
constexpr std::size_t kMinMemoryLimit = std::size_t{256} << 20;
constexpr auto kMemoryCheckInterval = std::chrono::milliseconds(100);
// RLIMIT_DATA while the runtime starts, above the cap: V8 reserves about 1.2 GiB of writable address space it does
// not touch (code range, thread stacks, allocator arenas), and fails to start below that. Once it is ready the
// limit is lowered to what it has mapped plus what the cap leaves (tighten_data_limit).
constexpr std::uint64_t kStartupDataHeadroom = std::uint64_t{2} << 30;

// The one deadline arithmetic (detail::Deadline): a budget the clock cannot reach is no bound, never an overflow.
std::optional<Clock::time_point> deadline_from(Timeout timeout, std::chrono::milliseconds fallback) {
  return detail::Deadline::after(timeout, fallback).at;
}

// Writes all of `data` to a pipe without letting SIGPIPE reach the host program. Gives up (false) when the reader
// is gone or, with a deadline, when a stopped reader leaves the pipe full until then.
bool write_all(int fd, std::string_view data, std::optional<Clock::time_point> deadline = std::nullopt) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  bool ok = true;
  bool got_epipe = false;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        int wait_ms = 100;
        if (deadline) {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
          if (left <= 0) {
            ok = false;
            break;
          }
          wait_ms = static_cast<int>(std::min<long long>(left, 100));
        }
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, wait_ms);
        continue;
      }
      got_epipe = errno == EPIPE;
      ok = false;
      break;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  if (got_epipe && !sigismember(&old_set, SIGPIPE)) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  return ok;
}

std::string random_token() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 32; ++i) token += kHex[rd() & 15];
  return token;
}

std::string random_id() {
  std::random_device rd;
  std::uniform_int_distribution<unsigned> byte(0, 255);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "pyodide-";
  for (int i = 0; i < 8; ++i) {
    const unsigned b = byte(rd);
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

std::string normalize_distribution(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '.' || c == '_') {
      out += '_';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

bool valid_distribution_name(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// The code never ran, and a caught failure proves it: retry_safe (docs/errors.md "FailureDetail").
ExecutionResult never_ran(std::string code, std::string error, std::string exception_type, bool state_lost) {
  return detail::never_ran(std::move(code), std::move(error), FailureDetail{std::move(exception_type), true}, state_lost);
}

// No answer came in time, before the code could run (the runtime was starting, or an upload timed out).
ExecutionResult request_timeout(std::string code, std::string error, bool state_lost) {
  ExecutionResult r;
  r.status = ExecutionStatus::kTimeout;
  r.code = std::move(code);
  r.timeout_kind = TimeoutKind::kRequest;
  r.error = std::move(error);
  r.state_lost = state_lost;
  return r;
}

// Refused locally before anything was sent: kError, exit_code -1 and no FailureDetail.
ExecutionResult refused(std::string code, std::string error) {
  return detail::never_ran(std::move(code), std::move(error), std::nullopt);
}

using detail::throw_nested;

constexpr std::string_view kDenoDirPrefix = "code_interpreter-deno-";

// What the Deno process reads besides the runtime and the wheels, found by running it under Landlock: the dynamic
// loader's cache, the C libraries Deno links (its DT_NEEDED entries; the pinned Deno loads nothing else), and
// /dev/urandom (V8 seeds itself from it). Each library is looked up in the usual multiarch and lib64 folders;
// the ones that do not exist on this system are skipped by Landlock's rule builder.
std::vector<fs::path> system_readable() {
  std::vector<fs::path> files = {"/etc/ld.so.cache", "/dev/urandom"};
#if defined(__aarch64__)
  const char* const dirs[] = {"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"};
#else
  const char* const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"};
#endif
  for (const char* dir : dirs) {
    for (const char* lib : {"libdl.so.2", "libgcc_s.so.1", "librt.so.1", "libpthread.so.0", "libm.so.6", "libc.so.6"}) {
      files.push_back(fs::path(dir) / lib);
    }
  }
  return files;
}
// The ELF interpreter, executed by the kernel on execve of Deno.
std::vector<fs::path> system_executable() {
#if defined(__aarch64__)
  return {"/lib/ld-linux-aarch64.so.1"};
#else
  return {"/lib64/ld-linux-x86-64.so.2"};
#endif
}

// Removes the private DENO_DIRs of host programs that died without tearing their sandboxes down (a crash, kill -9):
// each directory names its owner's pid in a file "owner"; one whose owner is gone (and that belongs to this user)
// is removed. A directory whose pid was reused stays until that process ends too.
void sweep_stale_deno_dirs(const fs::path& base) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(kDenoDirPrefix, 0) != 0) continue;
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) continue;
    std::ifstream owner(entry.path() / "owner");
    long pid = 0;
    if (!(owner >> pid) || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code remove_ec;
    fs::remove_all(entry.path(), remove_ec);
    if (!remove_ec) logger()->debug("removed the stale runtime directory '{}' of process {}", entry.path().string(), pid);
  }
}

// The private directory of one runtime process: `<tmp>/code_interpreter-deno-XXXXXX` holding the file "owner"
// (this process's pid, for sweep_stale_deno_dirs) and "deno", the process's DENO_DIR. Landlock gives the process no
// right on it at all: Deno runs without its caches (they would be empty in a new directory anyway), and whatever
// Web storage or the Cache API try to write there fails, so a runtime writes nothing to disk. New for every
// process, respawns included, so nothing a runtime could have stored reaches the next one; removed when the
// process has ended.
struct RuntimeDir {
  explicit RuntimeDir(const fs::path& base) {
    std::string pattern = (base / (std::string(kDenoDirPrefix) + "XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp under '" + base.string() + "'");
    }
    path = pattern;
    std::ofstream(path / "owner") << ::getpid() << "\n";
    std::error_code ec;
    fs::create_directory(deno_dir(), ec);
    if (ec) {
      fs::remove_all(path, ec);
      throw std::system_error(ec, "mkdir '" + deno_dir().string() + "'");
    }
  }
  ~RuntimeDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) logger()->warn("could not remove the runtime directory '{}': {}", path.string(), ec.message());
  }
  RuntimeDir(const RuntimeDir&) = delete;
  RuntimeDir& operator=(const RuntimeDir&) = delete;
  [[nodiscard]] fs::path deno_dir() const { return path / "deno"; }
  fs::path path;
};

// One runtime process and the decoder of its output. A watchdog kills the process when its resident memory passes
// the cap (RLIMIT_DATA bounds private writable mappings; the watchdog catches what that does not count).
struct Host {
  Host(const detail::Runtime& rt, const std::vector<std::string>& args, std::unique_ptr<RuntimeDir> private_dir,
       const std::vector<std::string>& env, const detail::Confinement* confinement, std::size_t max_frame,
       std::uint64_t memory_limit)
      : dir(std::move(private_dir)),
        child(rt.deno, args, env, confinement),
        decoder(max_frame),
        watchdog(child.pid(), memory_limit, kMemoryCheckInterval, [this] { child.kill(); }) {
    const int flags = ::fcntl(child.stdin_fd(), F_GETFL);
    ::fcntl(child.stdin_fd(), F_SETFL, flags | O_NONBLOCK);
  }
  // Members end in reverse order: the watchdog stops, the process is killed and reaped, then its directory goes.

  std::unique_ptr<RuntimeDir> dir;
  ChildProcess child;
  FrameDecoder decoder;
  std::string token = random_token();  // every frame from this process must carry it (host.mjs send)
  bool ready = false;
  bool eof = false;
  detail::MemoryWatchdog watchdog;
};

// Whether a runtime's death was the memory cap: the watchdog killed it, or an allocation past RLIMIT_DATA was
// fatal to V8 or to Deno's Rust allocator (their messages on stderr).
bool died_of_memory(Host& h) {
  if (h.watchdog.exceeded()) return true;
  const auto tail = h.child.stderr_tail();
  for (const char* sign : {"out of memory", "Out of memory", "memory allocation of", "allocation failed",
                           "Allocation failed"}) {
    if (tail.find(sign) != std::string::npos) return true;
  }
  return false;
}


// Fields of a frame header. The header comes from the runtime and is hostile: a missing field or one of the wrong
// type reads as the fallback, never as an exception.
std::string field_string(const json& h, const char* key, std::string fallback = {}) {
  const auto it = h.find(key);
  return it != h.end() && it->is_string() ? it->get<std::string>() : fallback;
}
std::int64_t field_int(const json& h, const char* key, std::int64_t fallback = -1) {
  const auto it = h.find(key);
  return it != h.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}
bool field_bool(const json& h, const char* key) {
  const auto it = h.find(key);
  return it != h.end() && it->is_boolean() && it->get<bool>();
}

enum class Wait { kFrame, kDeadline, kWoken, kEof, kMalformed };

}  // namespace

struct PyodideSandbox::Impl {
  PyodideOptions options;
  detail::Runtime runtime;
  std::vector<std::string> wheels;  // absolute wheel paths, in the order of additional_packages
  std::vector<std::string> deno_args;
  fs::path temp_base;  // where each runtime's RuntimeDir is made
  detail::ConfinementSpec confinement_spec;  // the same for every runtime of the sandbox
  detail::TestConfinement test_mode = detail::TestConfinement::kFull;
  std::optional<fs::path> snapshot;  // the checked image every runtime restores; nullopt: each loads cold
  mutable std::mutex report_mu;
  ConfinementReport report;  // of the last runtime started
  std::string id = random_id();

  std::mutex call_mu;   // serializes calls
  std::mutex state_mu;  // guards `host` against terminate() from another thread
  std::shared_ptr<Host> host;
  std::atomic<bool> terminating{false};
  std::atomic<bool> terminated{false};
  int wake_fd = -1;
  std::uint32_t next_request = 1;

  ~Impl() {
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void wake() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
  }

  void drain_wake() noexcept {
    std::uint64_t v;
    while (::read(wake_fd, &v, sizeof v) > 0) {
    }
  }

  std::uint32_t request_id() {
    const std::uint32_t rid = next_request;
    next_request = next_request >= 0x7fffffff ? 1 : next_request + 1;
    return rid;
  }

  // ---- process management ----

  static std::vector<std::string> child_env(const RuntimeDir& dir) {
    return {"DENO_DIR=" + dir.deno_dir().string(), "NO_COLOR=1", "DENO_NO_UPDATE_CHECK=1", "DENO_NO_PROMPT=1"};
  }

  // Starts a runtime process, with a new private directory and the kernel's confinement, and queues its init
  // frame; readiness is awaited by await_ready().
  void spawn(bool make_snapshot = false) {
    auto dir = std::make_unique<RuntimeDir>(temp_base);
    const detail::Confinement confinement(confinement_spec);
    const bool realm = test_mode != detail::TestConfinement::kKernelOnly;
    const auto env = child_env(*dir);
    auto h = std::make_shared<Host>(runtime, deno_args, std::move(dir), env, &confinement, options.max_frame_bytes,
                                    options.memory_limit_bytes);
    json init = {{"t", "init"},
                 {"token", h->token},
                 {"wheels", wheels},
                 {"packages", options.additional_packages},
                 {"memory_limit", options.memory_limit_bytes},
                 {"realm", realm}};
    if (make_snapshot) {
      init["make_snapshot"] = true;
    } else if (snapshot) {
      init["snapshot"] = snapshot->string();
    }
    write_all(h->child.stdin_fd(), detail::encode_frame(init));
    const auto& layers = confinement.layers();
    {
      std::lock_guard lock(report_mu);
      report = ConfinementReport{realm, layers.landlock_abi, layers.landlock_network, layers.landlock_scoped,
                                 layers.seccomp, layers.no_new_privs};
    }
    std::lock_guard lock(state_mu);
    host = std::move(h);
  }

  void kill_host() {
    std::shared_ptr<Host> h;
    {
      std::lock_guard lock(state_mu);
      h = std::move(host);
    }
    if (h) {
      h->child.kill();
      h->child.wait();
    }
  }

  // Makes the image of a freshly loaded runtime in a throwaway process, which runs no other code, and writes it to
  // `file`. False, with the reason in `why`, when it cannot; nothing is left running either way.
  bool make_snapshot(const fs::path& file, std::optional<Clock::time_point> deadline, const std::stop_token& cancel,
                     std::string& why) {
    try {
      spawn(/*make_snapshot=*/true);
    } catch (const std::exception& e) {
      why = std::string("cannot start the Pyodide runtime: ") + e.what();
      return false;
    }
    const auto h = current_host();
    if (!h) {
      why = "the sandbox is being terminated";
      return false;
    }
    std::string image;
    for (;;) {
      Frame f;
      std::string w;
      switch (next_frame(*h, deadline, f, w)) {
        case Wait::kFrame: {
          const auto t = field_string(f.header, "t");
          if (t == "snapshot" && image.size() + f.body.size() <= detail::kMaxSnapshotBytes) {
            image += f.body;
            continue;
          }
          kill_host();
          if (t == "snapshot_end" && field_int(f.header, "size") == static_cast<std::int64_t>(image.size()) &&
              !image.empty()) {
            try {
              detail::write_snapshot(file, image);
              return true;
            } catch (const std::exception& e) {
              why = std::string("cannot write it: ") + e.what();
              return false;
            }
          }
          why = t == "snapshot" ? "the image is larger than " + std::to_string(detail::kMaxSnapshotBytes >> 20) + " MiB"
                                : "unexpected frame '" + t + "' from the runtime making it";
          return false;
        }
        case Wait::kDeadline:
          kill_host();
          why = "the runtime making it did not finish in time";
          return false;
        case Wait::kWoken:
          if (terminating || cancel.stop_requested()) {
            kill_host();
            why = "cancelled";
            return false;
          }
          break;
        case Wait::kEof:
          why = death_description(*h);
          kill_host();
          return false;
        case Wait::kMalformed:
          kill_host();
          why = "malformed output from the runtime making it: " + w;
          return false;
      }
    }
  }

  // The snapshot runtimes of this sandbox restore: `file` (the cache's image for this runtime), made now if it is
  // missing or does not check. nullopt, after one warning, when there is no cache directory (`file` nullopt) or the
  // image cannot be made: every runtime then loads cold.
  std::optional<fs::path> find_or_make_snapshot(const std::optional<fs::path>& file,
                                                std::optional<Clock::time_point> deadline,
                                                const std::stop_token& cancel) {
    if (!file) {
      logger()->warn("sandbox {}: no snapshot cache directory (neither XDG_CACHE_HOME nor HOME is an absolute path, "
                     "and PyodideOptions::snapshot_dir is not set): every runtime loads cold",
                     id);
      return std::nullopt;
    }
    if (detail::snapshot_valid(*file)) return file;
    std::error_code ec;
    if (fs::exists(*file, ec)) {
      logger()->warn("sandbox {}: snapshot {} does not check; making it again", id, file->string());
    }
    std::string why;
    if (!make_snapshot(*file, deadline, cancel, why)) {
      if (cancel.stop_requested() || terminating) return std::nullopt;  // create sees the cancel next
      logger()->warn("sandbox {}: cannot make a snapshot in {}: {}; every runtime loads cold", id,
                     file->parent_path().string(), why);
      return std::nullopt;
    }
    return file;
  }

  // The cap's outcome when the runtime had to be ended for it (docs/errors.md).
  void set_memory_outcome(ExecutionResult& r) const {
    r.status = ExecutionStatus::kError;
    r.exit_code = 1;
    r.state_lost = true;
    r.results.clear();
    r.code_error = CodeError{"MemoryError",
                             "the runtime exceeded its memory limit of " +
                                 std::to_string(options.memory_limit_bytes >> 20) + " MiB",
                             ""};
    r.error = "MemoryError: " + r.code_error->value + "; a fresh runtime was started and the state is lost";
  }

  // Kills the current process and starts a fresh one without waiting for it to load.
  void respawn() {
    kill_host();
    if (terminating) return;
    try {
      spawn();
    } catch (const std::exception& e) {
      logger()->warn("sandbox {}: could not restart the Pyodide runtime: {}", id, e.what());
    }
  }

  // Waits for the next frame. With `spin`, polls without sleeping for up to kSpin first: a quick answer then costs
  // no wake-up of this thread, which on a loaded machine is most of a fast call's round trip.
  Wait next_frame(Host& h, std::optional<Clock::time_point> deadline, Frame& out, std::string& why,
                  bool spin = false) {
    const auto spin_until = spin ? Clock::now() + kSpin : Clock::time_point{};
    for (;;) {
      try {
        if (auto f = h.decoder.next()) {
          if (field_string(f->header, "k") != h.token) {
            why = "a frame without this runtime's token (forged output)";
            return Wait::kMalformed;
          }
          out = std::move(*f);
          return Wait::kFrame;
        }
      } catch (const std::exception& e) {
        why = e.what();
        return Wait::kMalformed;
      }
      if (h.eof) {
        if (h.decoder.buffered() > 0) why = "the runtime's output ended inside a frame";
        return Wait::kEof;
      }
      int wait_ms = -1;
      if (deadline) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
        if (left <= 0) return Wait::kDeadline;
        wait_ms = static_cast<int>(std::min<long long>(left, 60'000));
      }
      pollfd fds[2] = {{h.child.stdout_fd(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
      const bool spinning = spin && Clock::now() < spin_until;
      const int n = ::poll(fds, 2, spinning ? 0 : wait_ms);
      if (n < 0 && errno != EINTR) {
        why = std::string("poll failed: ") + std::strerror(errno);
        return Wait::kMalformed;
      }
      if (n <= 0) continue;
      if (fds[1].revents & POLLIN) {
        drain_wake();
        return Wait::kWoken;
      }
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[1 << 16];
        const ssize_t got = ::read(h.child.stdout_fd(), buf, sizeof buf);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) {
          h.eof = true;
        } else {
          h.decoder.push(std::string_view(buf, static_cast<std::size_t>(got)));
        }
      }
    }
  }

  std::string death_description(Host& h) {
    h.child.kill();
    const int status = h.child.wait();
    std::string text = "the Pyodide runtime exited";
    if (WIFSIGNALED(status)) {
      text += " (killed by signal " + std::to_string(WTERMSIG(status)) + ")";
    } else if (WIFEXITED(status)) {
      text += " (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    }
    // The end of what it wrote to stderr (a fatal error's message, say): at most the last 600 bytes, from a line
    // start where there is one, repaired to valid UTF-8.
    std::string tail = h.child.stderr_tail();
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    if (tail.size() > 600) {
      tail.erase(0, tail.size() - 600);
      if (const auto nl = tail.find('\n'); nl != std::string::npos) tail.erase(0, nl + 1);
    }
    if (!tail.empty()) text += ": " + detail::utf8_replacing(tail);
    return text;
  }

  // The outcome of waiting for a runtime to be ready.
  struct ReadyError {
    enum Kind { kNone, kTimeout, kCancelled, kDied, kInstall, kVersion, kMalformed } kind = kNone;
    std::string message;
  };

  // Waits for the current runtime (started now when there is none) to be ready. A runtime that dies while
  // restoring the snapshot is started again cold, after one warning, and the snapshot is not used again.
  ReadyError await_ready(std::optional<Clock::time_point> deadline, const std::stop_token& cancel) {
    auto r = await_ready_once(deadline, cancel);
    if ((r.kind == ReadyError::kDied || r.kind == ReadyError::kMalformed) && snapshot) {
      logger()->warn("sandbox {}: a runtime restoring snapshot {} failed ({}); loading cold from now on", id,
                     snapshot->string(), r.message);
      std::error_code ignored;
      fs::remove(*snapshot, ignored);  // made again by the next sandbox created
      snapshot.reset();
      r = await_ready_once(deadline, cancel);
    }
    return r;
  }

  ReadyError await_ready_once(std::optional<Clock::time_point> deadline, const std::stop_token& cancel) {
    std::shared_ptr<Host> h;
    {
      std::lock_guard lock(state_mu);
      h = host;
    }
    if (!h) {
      try {
        spawn();
      } catch (const std::exception& e) {
        return {ReadyError::kDied, std::string("cannot start the Pyodide runtime: ") + e.what()};
      }
      std::lock_guard lock(state_mu);
      h = host;
      if (!h) return {ReadyError::kCancelled, "the sandbox is being terminated"};
    }
    while (!h->ready) {
      // A cancel that arrived before this wait (while the snapshot was being made, say) has already been drained
      // from wake_fd: it is seen here.
      if (terminating || cancel.stop_requested()) {
        kill_host();
        return {ReadyError::kCancelled, "cancelled while the Pyodide runtime was starting"};
      }
      Frame f;
      std::string why;
      switch (next_frame(*h, deadline, f, why)) {
        case Wait::kFrame: {
          const auto t = field_string(f.header, "t");
          if (t == "ready") {
            const auto protocol = field_int(f.header, "protocol");
            const auto version = field_string(f.header, "pyodide");
            if (protocol != detail::kHostProtocolVersion || version != detail::kPyodideVersion) {
              kill_host();
              return {ReadyError::kVersion, "the Pyodide runtime reports protocol " + std::to_string(protocol) +
                                                " and Pyodide " + version + "; this library needs protocol " +
                                                std::to_string(detail::kHostProtocolVersion) + " and Pyodide " +
                                                detail::kPyodideVersion};
            }
            if (!detail::tighten_data_limit(h->child.pid(), options.memory_limit_bytes)) {
              logger()->warn("sandbox {}: cannot lower the runtime's data limit: {}", id, std::strerror(errno));
            }
            h->ready = true;
            break;
          }
          if (t == "init_error") {
            const auto message = field_string(f.header, "message", "unknown error");
            kill_host();
            return {field_string(f.header, "stage") == "install_packages" ? ReadyError::kInstall : ReadyError::kDied,
                    message};
          }
          kill_host();
          return {ReadyError::kMalformed, "unexpected frame '" + t + "' before the runtime was ready"};
        }
        case Wait::kDeadline:
          // Left to finish starting: the next call (or create's cleanup) picks it up.
          return {ReadyError::kTimeout, "the Pyodide runtime did not become ready in time"};
        case Wait::kWoken:
          if (terminating || cancel.stop_requested()) {
            kill_host();
            return {ReadyError::kCancelled, "cancelled while the Pyodide runtime was starting"};
          }
          break;
        case Wait::kEof: {
          auto message = death_description(*h);
          kill_host();
          return {ReadyError::kDied, message};
        }
        case Wait::kMalformed:
          kill_host();
          return {ReadyError::kMalformed, "malformed output from the Pyodide runtime: " + why};
      }
    }
    return {};
  }

  std::shared_ptr<Host> current_host() {
    std::lock_guard lock(state_mu);
    return host;
  }

  void check_alive() const {
    if (terminated || terminating) throw SandboxNotInitializedError();
  }

  // Starts a call: refuses after terminate, then waits its turn (waiting does not count against a budget) and
  // refuses again if the sandbox was terminated meanwhile.
  std::unique_lock<std::mutex> begin_call() {
    check_alive();
    std::unique_lock lock(call_mu);
    check_alive();
    return lock;
  }

  // ---- file requests ----

  struct FileError {
    ErrorKind kind;
    std::string message;
    bool restarted = false;  // the runtime was replaced: its state is gone
  };

  // Sends one file request and waits for its answer. Returns the answer frame or a FileError.
  std::variant<Frame, FileError> file_request(json header, std::string_view body,
                                              std::optional<Clock::time_point> deadline,
                                              const std::stop_token& cancel = {}) {
    if (cancel.stop_requested()) return FileError{ErrorKind::kUnknown, "cancelled"};
    if (auto err = await_ready(deadline, cancel); err.kind != ReadyError::kNone) {
      return FileError{err.kind == ReadyError::kTimeout ? ErrorKind::kTimeout : ErrorKind::kUnavailable,
                       err.message};
    }
    auto h = current_host();
    if (!h) return FileError{ErrorKind::kUnavailable, "the sandbox is being terminated"};
    const auto rid = request_id();
    header["t"] = "fs";
    header["id"] = rid;
    if (!write_all(h->child.stdin_fd(), detail::encode_frame(header, body), deadline)) {
      if (deadline && Clock::now() >= *deadline) {
        respawn();
        return FileError{ErrorKind::kTimeout, "the runtime did not take the request in time; it was restarted", true};
      }
      const auto message = death_description(*h);
      respawn();
      return FileError{ErrorKind::kUnavailable, message, true};
    }
    for (;;) {
      Frame f;
      std::string why;
      switch (next_frame(*h, deadline, f, why)) {
        case Wait::kFrame:
          if (field_string(f.header, "t") == "fs" && field_int(f.header, "id") == rid) return f;
          respawn();
          return FileError{ErrorKind::kInternal, "unexpected frame from the Pyodide runtime", true};
        case Wait::kDeadline:
          respawn();
          return FileError{ErrorKind::kTimeout, "the file operation timed out; the runtime was restarted", true};
        case Wait::kWoken:
          if (terminating) return FileError{ErrorKind::kUnavailable, "the sandbox is being terminated"};
          if (cancel.stop_requested()) {
            // The request is small and synchronous in the runtime; wait for its answer briefly, then replace it.
            if (!deadline || *deadline > Clock::now() + options.interrupt_grace) {
              deadline = Clock::now() + options.interrupt_grace;
            }
          }
          break;
        case Wait::kEof: {
          const auto message = death_description(*h);
          respawn();
          return FileError{ErrorKind::kUnavailable, message, true};
        }
        case Wait::kMalformed:
          respawn();
          return FileError{ErrorKind::kInternal, "malformed output from the Pyodide runtime: " + why, true};
      }
    }
  }

  static std::optional<FileError> answer_error(const Frame& f, std::string_view op, std::string_view path) {
    if (field_bool(f.header, "ok")) return std::nullopt;
    const auto code = field_string(f.header, "code", "EIO");
    ErrorKind kind = ErrorKind::kInternal;
    std::string what = code;
    if (code == "ENOENT") {
      kind = ErrorKind::kNotFound, what = "no such file or directory";
    } else if (code == "EISDIR") {
      kind = ErrorKind::kInvalidArgument, what = "is a directory";
    } else if (code == "ENOTDIR") {
      kind = ErrorKind::kInvalidArgument, what = "not a directory";
    } else if (code == "EEXIST") {
      kind = ErrorKind::kInvalidArgument, what = "already exists";
    } else if (code == "ENOTEMPTY") {
      kind = ErrorKind::kInvalidArgument, what = "directory not empty";
    }
    return FileError{kind, std::string(op) + " '" + std::string(path) + "': " + what + " (" + code + ")"};
  }

  [[noreturn]] static void throw_file_error(const FileError& e, Stage stage) {
    SandboxExecutionError error(e.message, stage, e.kind);
    switch (e.kind) {
      case ErrorKind::kTimeout:
        throw_nested(std::move(error), TransportError(e.message, TransportError::Kind::kTimeout, 0, std::nullopt, true));
      case ErrorKind::kUnavailable:
        throw_nested(std::move(error), TransportError(e.message, TransportError::Kind::kConnect, 0, std::nullopt, true));
      case ErrorKind::kInternal:
        throw_nested(std::move(error), TransportError(e.message, TransportError::Kind::kProtocol, 0, std::nullopt, true));
      default:
        throw error;
    }
  }

  // Writes `data` to `path` in chunks (the first creates or truncates, the rest append).
  std::optional<FileError> write_bytes(std::string_view path, std::string_view data,
                                       std::optional<Clock::time_point> deadline, const std::stop_token& cancel = {}) {
    std::size_t off = 0;
    do {
      const auto n = std::min(kFileChunk, data.size() - off);
      auto answer = file_request({{"op", "write"}, {"path", path}, {"append", off > 0}}, data.substr(off, n), deadline, cancel);
      if (auto* e = std::get_if<FileError>(&answer)) return *e;
      if (auto e = answer_error(std::get<Frame>(answer), "write", path)) return e;
      off += n;
    } while (off < data.size());
    return std::nullopt;
  }

  std::optional<FileError> write_from_file(std::string_view path, const fs::path& source,
                                           std::optional<Clock::time_point> deadline,
                                           const std::stop_token& cancel = {}) {
    std::ifstream in(source, std::ios::binary);
    if (!in) return FileError{ErrorKind::kInvalidArgument, "cannot read '" + source.string() + "'"};
    std::string chunk(kFileChunk, '\0');
    bool first = true;
    for (;;) {
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      const auto got = static_cast<std::size_t>(in.gcount());
      if (in.bad()) return FileError{ErrorKind::kInternal, "error reading '" + source.string() + "'"};
      if (got > 0 || first) {
        auto answer = file_request({{"op", "write"}, {"path", path}, {"append", !first}},
                                   std::string_view(chunk.data(), got), deadline, cancel);
        if (auto* e = std::get_if<FileError>(&answer)) return *e;
        if (auto e = answer_error(std::get<Frame>(answer), "write", path)) return e;
      }
      first = false;
      if (got < chunk.size()) return std::nullopt;
    }
  }

  // Reads `path` chunk by chunk, handing each to `sink`, and stops once more than `cap` bytes came (kind
  // kQuotaExceeded). The answer's "size" is never trusted: the bytes are counted, each request asks for no more
  // than one past the cap, and the file ends at the first chunk shorter than asked. A chunk longer than asked
  // breaks the protocol: the runtime is replaced.
  template <typename Sink>
  std::optional<FileError> read_chunks(std::string_view path, std::optional<Clock::time_point> deadline,
                                       std::string_view op, std::uint64_t cap, Sink sink) {
    detail::ByteCap count(cap);
    for (;;) {
      const std::uint64_t asked = std::min<std::uint64_t>(kFileChunk, count.room_plus_one());
      auto answer = file_request(
          {{"op", "read"}, {"path", path}, {"offset", count.received()}, {"length", asked}}, {}, deadline);
      if (auto* e = std::get_if<FileError>(&answer)) return *e;
      auto& f = std::get<Frame>(answer);
      if (auto e = answer_error(f, "read", path)) return e;
      if (f.body.size() > asked) {
        respawn();
        return FileError{ErrorKind::kInternal,
                         "the Pyodide runtime answered " + std::to_string(f.body.size()) + " bytes where at most " +
                             std::to_string(asked) + " were asked; the runtime was restarted",
                         true};
      }
      if (!count.add(f.body.size())) return FileError{ErrorKind::kQuotaExceeded, detail::over_cap_message(op, path, cap)};
      sink(f.body);
      if (f.body.size() < asked) return std::nullopt;
    }
  }

  // ---- execution ----

  ExecutionResult execute(std::string_view code, const ExecuteOptions& options);
};

namespace {

// Fills `r` from a "result" frame. Returns false if the frame is malformed.
bool apply_result(const json& h, ExecutionResult& r) {
  try {
    const auto status = h.at("status").get<std::string>();
    if (status == "ok") {
      r.status = ExecutionStatus::kSuccess;
      r.exit_code = 0;
      if (const auto v = h.find("value"); v != h.end() && v->is_string()) {
        r.results.push_back(RichResult{{{"text/plain", v->get<std::string>()}}, true});
      }
      return true;
    }
    if (status == "error" || status == "interrupted") {
      const auto& e = h.at("error");
      CodeError ce{e.at("name").get<std::string>(), e.at("value").get<std::string>(),
                   e.at("traceback").get<std::string>()};
      r.status = ExecutionStatus::kError;
      r.exit_code = status == "error" ? h.at("exit_code").get<int>() : 1;
      r.error = ce.traceback.empty() ? ce.name + ": " + ce.value : ce.traceback;
      r.code_error = std::move(ce);
      return true;
    }
  } catch (const json::exception&) {
  }
  return false;
}

}  // namespace

ExecutionResult PyodideSandbox::Impl::execute(std::string_view code, const ExecuteOptions& opts) {
  // The host reads at most 1 MiB of header and 64 MiB of body per frame (host/frames.mjs); refuse locally, before
  // anything is sent, what it would reject.
  if (code.size() > kMaxCodeBytes) {
    return refused(std::string(code), "the code is " + std::to_string(code.size()) +
                                          " bytes; the Pyodide sandbox accepts at most " +
                                          std::to_string(kMaxCodeBytes) + " (pass large data as an attachment)");
  }
  if (json(opts.env).dump().size() > kMaxEnvBytes) {
    return refused(std::string(code), "the env option holds more than " + std::to_string(kMaxEnvBytes) + " bytes");
  }
  if (opts.cancel.stop_requested()) {
    return never_ran(std::string(code), "cancelled before the code was sent", "cancelled", false);
  }
  const auto call = begin_call();
  drain_wake();
  std::stop_callback on_cancel(opts.cancel, [this] { wake(); });
  auto deadline = deadline_from(opts.timeout, kDefaultExecuteTimeout);

  if (auto e = await_ready(deadline, opts.cancel); e.kind != ReadyError::kNone) {
    if (e.kind == ReadyError::kTimeout) {
      return request_timeout(std::string(code),
                             "the Pyodide runtime was still starting when the timeout ran out; it keeps starting "
                             "for the next call",
                             false);
    }
    const bool cancelled = e.kind == ReadyError::kCancelled;
    if (!cancelled) respawn();
    return never_ran(std::string(code), e.message, cancelled ? "cancelled" : "pyodide.runtime_unavailable",
                     !cancelled);
  }

  // Upload the attachments. The code has not run yet, so a failure here is a clean refusal.
  const std::string upload_dir = opts.upload_dir.value_or(kUploadDir);
  for (const auto& file : opts.files) {
    const std::string path = (upload_dir.back() == '/' ? upload_dir : upload_dir + "/") + file.filename;
    const auto e = file.source ? write_from_file(path, *file.source, deadline, opts.cancel)
                               : write_bytes(path, file.data, deadline, opts.cancel);
    if (!e) continue;
    if (opts.cancel.stop_requested() && !e->restarted) {
      return never_ran(std::string(code), "cancelled while uploading '" + file.filename + "'", "cancelled", false);
    }
    if (e->kind == ErrorKind::kTimeout) {
      return request_timeout(std::string(code), "uploading '" + file.filename + "' timed out: " + e->message,
                             e->restarted);
    }
    if (terminating) return never_ran(std::string(code), "the sandbox is being terminated", "cancelled", false);
    return never_ran(std::string(code), "uploading '" + file.filename + "' failed: " + e->message, "pyodide.upload",
                     e->restarted);
  }

  auto h = current_host();
  if (!h) return never_ran(std::string(code), "the sandbox is being terminated", "cancelled", false);

  ExecutionResult r;
  r.code = std::string(code);
  detail::OutputStream out(&opts.on_stdout, options.max_output_bytes);
  detail::OutputStream err(&opts.on_stderr, options.max_output_bytes);

  // Why we asked the code to stop, if we did.
  enum class Reason { kNone, kTimeout, kCancel, kCallback } reason = Reason::kNone;
  std::string callback_error;
  std::optional<Clock::time_point> hard_deadline;  // set once the interrupt was sent: grace ends here

  // Delivers the final partial lines; a throwing callback there still turns the result into kUnknown.
  auto finish_streams = [&] {
    for (auto* s : {&out, &err}) {
      try {
        s->finish();
      } catch (const std::exception& e) {
        if (reason != Reason::kCallback) callback_error = e.what();
        reason = Reason::kCallback;
        s->silence();
      } catch (...) {
        reason = Reason::kCallback;
        s->silence();
      }
    }
    r.stdout_text = out.take_text();
    r.stderr_text = err.take_text();
    r.truncated = out.truncated() || err.truncated();
  };
  auto set_unknown = [&](std::string type, std::string message) {
    r.status = ExecutionStatus::kUnknown;
    r.exit_code = -1;
    r.failure = FailureDetail{std::move(type), false};
    r.error = std::move(message);
    r.results.clear();
    r.code_error.reset();
  };
  // The outcome when the code was stopped on our request (by interrupt or by kill).
  auto stopped = [&](bool killed) {
    r.state_lost = killed;
    switch (reason) {
      case Reason::kTimeout:
      case Reason::kNone:
        r.status = ExecutionStatus::kTimeout;
        r.exit_code = -1;
        r.timeout_kind = TimeoutKind::kExecution;
        r.error = killed ? "execution timed out; the code did not stop after an interrupt, so the runtime was "
                           "restarted and its state lost"
                         : "execution timed out and was interrupted";
        r.results.clear();
        r.code_error.reset();
        break;
      case Reason::kCancel:
        set_unknown("cancelled", killed ? "cancelled; the runtime was restarted" : "cancelled");
        break;
      case Reason::kCallback:
        set_unknown("callback.exception", "an output callback threw: " + callback_error);
        break;
    }
  };

  if (opts.cancel.stop_requested()) {
    return never_ran(std::string(code), "cancelled before the code was sent", "cancelled", false);
  }
  const auto rid = request_id();
  json header = {{"t", "exec"}, {"id", rid}, {"env", opts.env}};
  const auto started = Clock::now();
  if (!write_all(h->child.stdin_fd(), detail::encode_frame(header, code), deadline)) {
    // The runtime is killed before it could take the whole request, so the code never ran.
    const bool timed_out = deadline && Clock::now() >= *deadline;
    const auto message = timed_out ? std::string("the runtime did not take the code before the timeout (is it stopped?); "
                                                 "it was restarted")
                                   : death_description(*h);
    respawn();
    return never_ran(std::string(code), message, "pyodide.runtime_lost", true);
  }

  // The interrupt is repeated every kInterruptRepeat until the grace period ends: one that Python checks while the
  // user's code is off the stack (inside the event loop) only cancels its task, which a synchronous loop never sees.
  std::optional<Clock::time_point> next_interrupt;
  auto send_interrupt = [&] {
    // Bounded like every write: a stopped runtime with a full pipe must not hold the call past its grace period
    // (a frame cut short there is moot: the runtime is killed when the grace period ends).
    write_all(h->child.stdin_fd(), detail::encode_frame({{"t", "interrupt"}, {"id", rid}}),
              hard_deadline.value_or(Clock::now() + options.interrupt_grace));
    next_interrupt = Clock::now() + kInterruptRepeat;
  };
  auto ask_to_stop = [&](Reason why) {
    if (reason == Reason::kNone) reason = why;
    if (hard_deadline) return;
    send_interrupt();
    hard_deadline = Clock::now() + options.interrupt_grace;
  };

  // Runs the output callbacks through `deliver`; one that throws stops both and the code (docs/errors.md).
  auto guarded = [&](auto&& deliver) {
    try {
      deliver();
    } catch (...) {
      try {
        throw;
      } catch (const std::exception& e) {
        callback_error = e.what();
      } catch (...) {
        callback_error = "a non-standard exception";
      }
      out.silence();
      err.silence();
      reason = Reason::kCallback;
      ask_to_stop(Reason::kCallback);
    }
  };
  // A partial line the code flushed (each out frame is one flush of Python's line-buffered stream) is delivered
  // kPartialLineDelay after a frame first left it partial, unless a later frame completed it by then: print() of a
  // text with a newline in it flushes the text and then its end separately.
  std::optional<Clock::time_point> flush_at;

  for (;;) {
    Frame f;
    std::string why;
    const auto bound = hard_deadline ? std::optional(std::min(*hard_deadline, *next_interrupt)) : deadline;
    const auto wait_until = flush_at ? std::optional(bound ? std::min(*bound, *flush_at) : *flush_at) : bound;
    const Wait w = next_frame(*h, wait_until, f, why, /*spin=*/true);
    if (w == Wait::kFrame) {
      const auto t = field_string(f.header, "t");
      if (field_int(f.header, "id") != rid || (t != "out" && t != "result")) {
        why = "unexpected frame '" + t + "'";
      } else if (t == "out") {
        const auto s = field_int(f.header, "s");
        auto& stream = s == 2 ? err : out;
        if (s != 1 && s != 2) {
          why = "output frame for an unknown stream";
        } else {
          auto& other = s == 2 ? out : err;
          // What the other stream holds was produced first: delivered first, so the order across them is kept.
          // Two guarded steps: a callback that throws in the first still leaves this frame's text collected.
          if (other.holding()) guarded([&] { other.flush(); });
          guarded([&] { stream.feed(f.body); });
          if (!out.holding() && !err.holding()) {
            flush_at.reset();
          } else if (!flush_at) {
            flush_at = Clock::now() + kPartialLineDelay;
          }
          continue;
        }
      } else {  // result
        r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
        if (!apply_result(f.header, r)) {
          why = "malformed result frame";
        } else {
          const bool host_interrupt = field_bool(f.header, "host_interrupt");
          const auto status = field_string(f.header, "status");
          if (h->watchdog.over_limit_now()) {
            // The call ended holding more than the cap (an allocation that failed inside Python after others had
            // touched memory reserved before the data limit): the cap's outcome is this call's, not the next one's.
            respawn();
            finish_streams();
            set_memory_outcome(r);
            return r;
          }
          finish_streams();
          if (reason == Reason::kCallback) {
            stopped(false);
          } else if (host_interrupt && status != "ok") {
            // We asked the code to stop; whatever error it ended with (KeyboardInterrupt, CancelledError, or an
            // error the interrupt caused inside Pyodide) is the consequence of that request, not the code's own.
            stopped(false);
          }
          return r;
        }
      }
      // Falls through: a frame that breaks the protocol is handled as malformed output below.
    }
    if (w == Wait::kFrame || w == Wait::kMalformed || (w == Wait::kEof && !why.empty() && !terminating)) {
      // The runtime broke the protocol: it can no longer be trusted.
      r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
      respawn();
      finish_streams();
      set_unknown("pyodide.malformed_frame", "malformed output from the Pyodide runtime (" + why +
                                                 "); the runtime was restarted and its state lost");
      r.state_lost = true;
      return r;
    }
    if (w == Wait::kDeadline && flush_at && Clock::now() >= *flush_at) {
      flush_at.reset();
      guarded([&] {
        out.flush();
        err.flush();
      });
      if (!bound || Clock::now() < *bound) continue;
    }
    if (w == Wait::kDeadline) {
      if (!hard_deadline) {
        ask_to_stop(Reason::kTimeout);
        continue;
      }
      if (Clock::now() < *hard_deadline) {
        send_interrupt();
        continue;
      }
      // The grace period is over: kill, and start a fresh runtime for the next call.
      r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
      respawn();
      finish_streams();
      stopped(true);
      return r;
    }
    if (w == Wait::kWoken) {
      if (terminating) {
        r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
        kill_host();
        finish_streams();
        set_unknown("cancelled", "the sandbox was terminated during the call");
        r.state_lost = true;
        return r;
      }
      if (opts.cancel.stop_requested()) ask_to_stop(Reason::kCancel);
      continue;
    }
    // Wait::kEof: the runtime died during the call.
    r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    const auto message = death_description(*h);
    if (terminating) {
      kill_host();
      finish_streams();
      set_unknown("cancelled", "the sandbox was terminated during the call");
      r.state_lost = true;
      return r;
    }
    const bool memory = died_of_memory(*h);
    respawn();
    finish_streams();
    if (reason == Reason::kCancel || reason == Reason::kCallback) {
      stopped(true);
      return r;
    }
    if (memory) {
      // The cap could not be met inside Python (a buffer outside the wasm heap, a fatal allocation in V8): the
      // runtime is gone, and the call reports it as the program's MemoryError (docs/errors.md).
      set_memory_outcome(r);
      logger()->debug("sandbox {}: {}", id, message);
      return r;
    }
    detail::mark_sandbox_lost(r, message + "; a fresh runtime was started and the state is lost");
    return r;
  }
}

// ---- PyodideSandbox ----

PyodideSandbox::PyodideSandbox(std::unique_ptr<Impl> impl, Language language, std::vector<std::string> packages)
    : CodeInterpreterSandbox(language, std::move(packages)), impl_(std::move(impl)) {}

fs::path PyodideSandbox::default_runtime_dir() { return detail::default_runtime_dir(); }

std::unique_ptr<PyodideSandbox> PyodideSandbox::create(PyodideOptions options) {
  if (options.language != Language::kPython) {
    throw SandboxStartError("the Pyodide sandbox runs only Python, not " + std::string(to_string(options.language)),
                            Stage::kConfigure, ErrorKind::kUnsupported);
  }
  if (options.max_frame_bytes < kMinFrameBytes) {
    throw SandboxStartError("max_frame_bytes must be at least " + std::to_string(kMinFrameBytes) +
                                " bytes (a file chunk of 8 MiB plus its header)",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (options.interrupt_grace.count() < 0) {
    throw SandboxStartError("interrupt_grace must not be negative", Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (options.max_download_bytes == 0) {
    throw SandboxStartError("max_download_bytes must be positive", Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (options.max_output_bytes == 0) {
    throw SandboxStartError("max_output_bytes must be positive", Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (options.memory_limit_bytes < kMinMemoryLimit) {
    throw SandboxStartError("memory_limit_bytes must be at least " + std::to_string(kMinMemoryLimit >> 20) +
                                " MiB (Pyodide needs about 150 MiB to start)",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  auto impl = std::make_unique<Impl>();
  impl->runtime = detail::check_runtime(options.runtime_dir.value_or(detail::default_runtime_dir()));

  // Resolve additional_packages to wheel files before anything starts.
  std::vector<fs::path> readable = impl->runtime.readable;
  if (!options.additional_packages.empty()) {
    if (!options.wheel_dir) {
      throw SandboxStartError("additional_packages need PyodideOptions::wheel_dir: no package index is reachable "
                              "from the Pyodide sandbox",
                              Stage::kInstallPackages, ErrorKind::kInvalidArgument);
    }
    std::error_code ec;
    const fs::path dir = fs::canonical(*options.wheel_dir, ec);
    if (ec || !fs::is_directory(dir, ec)) {
      throw SandboxStartError("wheel_dir '" + options.wheel_dir->string() + "' is not a directory",
                              Stage::kInstallPackages, ErrorKind::kNotFound);
    }
    if (dir.string().find(',') != std::string::npos) {
      throw SandboxStartError("wheel_dir '" + dir.string() + "' contains a comma, which Deno's --allow-read "
                              "cannot express",
                              Stage::kConfigure, ErrorKind::kInvalidArgument);
    }
    for (const auto& name : options.additional_packages) {
      if (!valid_distribution_name(name)) {
        throw SandboxStartError("'" + name + "' is not a valid package name", Stage::kInstallPackages,
                                ErrorKind::kInvalidArgument);
      }
      const auto want = normalize_distribution(name);
      std::optional<fs::path> best;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto file = entry.path().filename().string();
        if (entry.path().extension() != ".whl") continue;
        const auto dash = file.find('-');
        if (dash == std::string::npos || normalize_distribution(file.substr(0, dash)) != want) continue;
        if (best) {
          throw SandboxStartError("package '" + name + "' matches several wheels in '" + dir.string() + "' ('" +
                                      best->filename().string() + "', '" + entry.path().filename().string() +
                                      "'); keep one",
                                  Stage::kInstallPackages, ErrorKind::kInvalidArgument);
        }
        best = entry.path();
      }
      if (!best) {
        throw SandboxStartError("package '" + name + "' has no wheel in '" + dir.string() + "'",
                                Stage::kInstallPackages, ErrorKind::kNotFound);
      }
      impl->wheels.push_back(best->string());
    }
    readable.push_back(dir);
  }

  // The kernel's confinement: Landlock read access to exactly the runtime's files and the wheels installed, not
  // the wheel directory (Deno's --allow-read keeps naming the directory). No right at all on the private directory
  // (see RuntimeDir).
  auto& spec = impl->confinement_spec;
  spec.readable = impl->runtime.readable;
  for (const auto& w : impl->wheels) spec.readable.emplace_back(w);
  for (auto& p : system_readable()) spec.readable.push_back(std::move(p));
  spec.executable = system_executable();
  spec.executable.push_back(impl->runtime.deno);
  spec.data_limit_bytes = options.memory_limit_bytes + kStartupDataHeadroom;
  impl->test_mode = detail::test_confinement();
  if (impl->test_mode == detail::TestConfinement::kRealmOnly) {
    spec.max_landlock_abi = 2;  // Debian 12's stock kernel: no TCP rules, no scoping
    spec.seccomp = false;
  }
  {
    const detail::KernelLayers probe = detail::Confinement(spec).layers();
    std::string missing;
    if (probe.landlock_abi == 0) missing = "Landlock";
    if (!probe.seccomp) missing += missing.empty() ? "seccomp" : " and seccomp";
    if (!missing.empty()) {
      if (options.require_kernel_confinement) {
        throw SandboxStartError("the kernel does not provide " + missing +
                                    ", which require_kernel_confinement asks for (docs/backends/pyodide.md)",
                                Stage::kStartRuntime, ErrorKind::kUnsupported);
      }
      logger()->warn("sandbox {}: the kernel does not provide {}; the Pyodide runtime runs with Deno's permissions "
                     "{}(see PyodideSandbox::confinement())",
                     impl->id, missing, probe.landlock_abi > 0 || probe.seccomp ? "and the other kernel layer " : "");
    }
  }

  std::error_code tmp_ec;
  fs::path base = fs::temp_directory_path(tmp_ec);
  // Absolute: the runtime starts in "/", so a relative TMPDIR would name another place there.
  if (!tmp_ec) base = fs::absolute(base, tmp_ec);
  if (tmp_ec) {
    throw_nested(SandboxStartError("no usable temporary directory for the runtime's private DENO_DIR (check TMPDIR)",
                                   Stage::kStartRuntime, ErrorKind::kInternal),
                 fs::filesystem_error("temp_directory_path", tmp_ec));
  }
  sweep_stale_deno_dirs(base);
  impl->temp_base = base;

  const auto deadline = deadline_from(options.create_timeout, kDefaultCreateTimeout);
  std::optional<fs::path> snapshot_file;
  if (const auto cache = detail::snapshot_cache_dir(options.snapshot_dir); options.use_snapshot && cache) {
    // The runtime may read the image (Deno and Landlock): named before the image exists, so that the process
    // that makes it runs with the very arguments of the ones that restore it.
    snapshot_file = detail::snapshot_path(*cache, detail::snapshot_key(impl->runtime));
    readable.push_back(*snapshot_file);
    spec.readable.push_back(*snapshot_file);
  }

  std::string allow = "--allow-read=";
  for (std::size_t i = 0; i < readable.size(); ++i) {
    if (i) allow += ',';
    allow += readable[i].string();
  }
  impl->deno_args = {"run",     "--no-prompt", "--no-remote", "--no-config", "--no-npm", "--no-lock",
                     allow,     "--v8-flags=--disallow-code-generation-from-strings,--no-wasm-dynamic-tiering",
                     impl->runtime.host_script.string()};
  impl->options = std::move(options);
  impl->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->wake_fd < 0) {
    const int e = errno;
    throw_nested(SandboxStartError("cannot create an eventfd", Stage::kStartRuntime, ErrorKind::kInternal),
                 std::system_error(e, std::generic_category(), "eventfd"));
  }

  std::stop_callback on_cancel(impl->options.cancel, [p = impl.get()] { p->wake(); });
  if (impl->options.use_snapshot) {
    impl->snapshot = impl->find_or_make_snapshot(snapshot_file, deadline, impl->options.cancel);
    if (impl->options.cancel.stop_requested()) {
      const std::string message = "cancelled while the Pyodide runtime was starting";
      throw_nested(SandboxStartError(message, Stage::kStartRuntime, ErrorKind::kUnknown),
                   TransportError(message, TransportError::Kind::kCancelled));
    }
  }
  auto cleanup = [&impl] { impl->kill_host(); };
  try {
    impl->spawn();
  } catch (const std::exception& e) {
    cleanup();
    std::throw_with_nested(SandboxStartError(std::string("cannot start the Pyodide runtime: ") + e.what(),
                                             Stage::kStartRuntime, ErrorKind::kUnavailable));
  }
  const auto ready = impl->await_ready(deadline, impl->options.cancel);
  if (ready.kind != Impl::ReadyError::kNone) {
    cleanup();
    switch (ready.kind) {
      case Impl::ReadyError::kInstall:
        throw SandboxStartError("installing additional_packages failed: " + ready.message, Stage::kInstallPackages,
                                ErrorKind::kInvalidArgument);
      case Impl::ReadyError::kVersion:
        throw TemplateBuildError(ready.message, Stage::kTemplateBuild, ErrorKind::kInvalidArgument);
      case Impl::ReadyError::kTimeout:
        throw_nested(SandboxStartError(ready.message, Stage::kStartRuntime, ErrorKind::kTimeout),
                     TransportError(ready.message, TransportError::Kind::kTimeout));
      case Impl::ReadyError::kCancelled:
        throw_nested(SandboxStartError(ready.message, Stage::kStartRuntime, ErrorKind::kUnknown),
                     TransportError(ready.message, TransportError::Kind::kCancelled));
      default:
        throw_nested(SandboxStartError("the Pyodide runtime failed to start: " + ready.message, Stage::kStartRuntime,
                                       ErrorKind::kInternal),
                     TransportError(ready.message, TransportError::Kind::kProtocol));
    }
  }
  const Language language = impl->options.language;
  auto packages = impl->options.additional_packages;
  return std::unique_ptr<PyodideSandbox>(new PyodideSandbox(std::move(impl), language, std::move(packages)));
}

PyodideSandbox::~PyodideSandbox() {
  try {
    do_terminate(std::nullopt);
  } catch (const std::exception& e) {
    logger()->warn("sandbox {}: teardown failed: {}", impl_->id, e.what());
  } catch (...) {
    logger()->warn("sandbox {}: teardown failed", impl_->id);
  }
}

std::optional<std::string> PyodideSandbox::sandbox_id() const { return impl_->id; }

ConfinementReport PyodideSandbox::confinement() const {
  std::lock_guard lock(impl_->report_mu);
  return impl_->report;
}

Capabilities PyodideSandbox::capabilities() const {
  Capabilities c;
  c.stateful = true;
  c.shell_commands = false;
  c.file_download = true;
  c.filesystem = true;
  c.packages = true;
  c.network = false;
  c.interrupt = true;
  c.languages = {Language::kPython};
  c.upload_dir = kUploadDir;
  return c;
}

ExecutionResult PyodideSandbox::do_execute_code(std::string_view code, const ExecuteOptions& options) {
  impl_->check_alive();
  return impl_->execute(code, options);
}

ExecutionResult PyodideSandbox::do_execute_command(std::string_view command, const CommandOptions&) {
  impl_->check_alive();
  return refused(std::string(command),
                 "shell commands are not available in the Pyodide sandbox (Python runs in WebAssembly, with no "
                 "processes); use execute_code");
}

void PyodideSandbox::do_set_timeout(std::chrono::seconds) {
  impl_->check_alive();  // a local runtime has no lease to renew
}

void PyodideSandbox::do_write_file(std::string_view path, std::string_view data) {
  const auto call = impl_->begin_call();
  if (auto e = impl_->write_bytes(path, data, deadline_from(std::nullopt, kDefaultFileTimeout))) {
    Impl::throw_file_error(*e, Stage::kUpload);
  }
}

std::string PyodideSandbox::do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  std::string data;
  if (auto e = impl_->read_chunks(path, deadline_from(std::nullopt, kDefaultFileTimeout), "read_file",
                                  max_bytes.value_or(impl_->options.max_download_bytes),
                                  [&](const std::string& chunk) { data += chunk; })) {
    Impl::throw_file_error(*e, Stage::kDownload);
  }
  return data;
}

std::vector<FileInfo> PyodideSandbox::do_list_files(std::string_view dir) {
  const auto call = impl_->begin_call();
  auto answer = impl_->file_request({{"op", "list"}, {"path", dir}}, {}, deadline_from(std::nullopt, kDefaultFileTimeout));
  if (auto* e = std::get_if<Impl::FileError>(&answer)) Impl::throw_file_error(*e, Stage::kDownload);
  const auto& f = std::get<Frame>(answer);
  if (auto e = Impl::answer_error(f, "list", dir)) Impl::throw_file_error(*e, Stage::kDownload);
  std::vector<FileInfo> files;
  try {
    for (const auto& entry : f.header.at("entries")) {
      files.push_back(FileInfo{entry.at("name").get<std::string>(), entry.at("path").get<std::string>(),
                               entry.at("dir").get<bool>(), entry.at("size").get<std::uint64_t>()});
    }
  } catch (const json::exception& e) {
    impl_->respawn();  // the runtime broke the protocol: it is not trusted further
    throw_nested(SandboxExecutionError("malformed listing from the Pyodide runtime; the runtime was restarted",
                                       Stage::kDownload, ErrorKind::kInternal),
                 TransportError(e.what(), TransportError::Kind::kProtocol, 0, std::nullopt, true));
  }
  std::sort(files.begin(), files.end(), [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  return files;
}

void PyodideSandbox::do_remove_file(std::string_view path) {
  const auto call = impl_->begin_call();
  auto answer = impl_->file_request({{"op", "remove"}, {"path", path}}, {}, deadline_from(std::nullopt, kDefaultFileTimeout));
  if (auto* e = std::get_if<Impl::FileError>(&answer)) Impl::throw_file_error(*e, Stage::kUpload);
  if (auto e = Impl::answer_error(std::get<Frame>(answer), "remove", path)) Impl::throw_file_error(*e, Stage::kUpload);
}

void PyodideSandbox::do_make_dir(std::string_view path) {
  const auto call = impl_->begin_call();
  auto answer = impl_->file_request({{"op", "mkdir"}, {"path", path}}, {}, deadline_from(std::nullopt, kDefaultFileTimeout));
  if (auto* e = std::get_if<Impl::FileError>(&answer)) Impl::throw_file_error(*e, Stage::kUpload);
  if (auto e = Impl::answer_error(std::get<Frame>(answer), "mkdir", path)) Impl::throw_file_error(*e, Stage::kUpload);
}

std::optional<std::string> PyodideSandbox::do_download_file(std::string_view path, Timeout timeout,
                                                            std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  std::string data;
  if (auto e = impl_->read_chunks(path, deadline_from(timeout, kDefaultFileTimeout), "download_file",
                                  max_bytes.value_or(impl_->options.max_download_bytes),
                                  [&](const std::string& chunk) { data += chunk; })) {
    if (e->kind == ErrorKind::kQuotaExceeded) logger()->warn("sandbox {}: {}", impl_->id, e->message);
    else logger()->debug("sandbox {}: download_file failed: {}", impl_->id, e->message);
    return std::nullopt;
  }
  return data;
}

bool PyodideSandbox::do_download_file_to(std::string_view path, const fs::path& destination, Timeout timeout,
                                         std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  fs::path partial = destination;
  partial += ".part";
  std::ofstream file(partial, std::ios::binary | std::ios::trunc);
  if (!file) {
    logger()->debug("sandbox {}: cannot write '{}'", impl_->id, partial.string());
    return false;
  }
  bool write_failed = false;
  auto e = impl_->read_chunks(path, deadline_from(timeout, kDefaultFileTimeout), "download_file_to",
                              max_bytes.value_or(impl_->options.max_download_bytes), [&](const std::string& chunk) {
    file.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    if (!file) write_failed = true;
  });
  file.close();
  std::error_code ec;
  if (e && e->kind == ErrorKind::kQuotaExceeded) logger()->warn("sandbox {}: {}", impl_->id, e->message);
  if (e || write_failed || !file) {
    fs::remove(partial, ec);
    return false;
  }
  fs::rename(partial, destination, ec);
  if (ec) {
    fs::remove(partial, ec);
    return false;
  }
  return true;
}

void PyodideSandbox::do_terminate(Timeout) {
  if (impl_->terminated) return;
  impl_->terminating = true;
  impl_->wake();
  if (auto h = impl_->current_host()) h->child.kill();  // ends a call in flight at once
  std::lock_guard call(impl_->call_mu);
  if (impl_->terminated) return;
  impl_->kill_host();  // the runtime's private directory goes with it
  impl_->terminated = true;
}

}  // namespace code_interpreter
