// PyodideHost (host.hpp): starting and replacing a sandbox's runtime processes, waiting for them to be ready,
// making the snapshot image, file requests, and the decoding of the frames a run sends back. The frames and their
// fields are docs/architecture.md "The Pyodide frame protocol"; the posture is docs/protocols/pyodide.md "The
// posture used".
#include "pyodide/host.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "code_interpreter/logging.hpp"
#include "pyodide/snapshot.hpp"

namespace code_interpreter::detail {

namespace fs = std::filesystem;
using Clock = HostClock;
using json = nlohmann::json;

namespace {

std::vector<std::string> child_env(const RuntimeDir& dir) {
  return {"DENO_DIR=" + dir.deno_dir().string(), "NO_COLOR=1", "DENO_NO_UPDATE_CHECK=1", "DENO_NO_PROMPT=1"};
}

}  // namespace

PyodideHost::~PyodideHost() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

int PyodideHost::open_wake() {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return wake_fd_ < 0 ? errno : 0;
}

void PyodideHost::wake() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void PyodideHost::drain_wake() noexcept {
  std::uint64_t v;
  while (::read(wake_fd_, &v, sizeof v) > 0) {
  }
}

std::uint32_t PyodideHost::request_id() {
  const std::uint32_t rid = next_request_;
  next_request_ = next_request_ >= 0x7fffffff ? 1 : next_request_ + 1;
  return rid;
}

ConfinementReport PyodideHost::report() const {
  std::lock_guard lock(report_mu_);
  return report_;
}

std::shared_ptr<HostProcess> PyodideHost::current() {
  std::lock_guard lock(state_mu_);
  return process_;
}

void PyodideHost::spawn(bool make_snapshot) {
  auto dir = std::make_unique<RuntimeDir>(config.temp_base);
  const Confinement confinement(config.confinement_spec);
  const bool realm = config.test_mode != TestConfinement::kKernelOnly;
  const auto env = child_env(*dir);
  auto p = std::make_shared<HostProcess>(config.runtime, config.deno_args, std::move(dir), env, &confinement,
                                         config.max_frame_bytes, config.memory_limit_bytes);
  json init = {{"t", "init"},
               {"token", p->token},
               {"wheels", config.wheels},
               {"wheel_sha256", config.wheel_sha256},
               {"packages", config.packages},
               {"memory_limit", config.memory_limit_bytes},
               {"realm", realm}};
  if (make_snapshot) {
    init["make_snapshot"] = true;
  } else if (snapshot) {
    init["snapshot"] = snapshot->string();
  }
  write_all(p->child.stdin_fd(), encode_frame(init));
  const auto& layers = confinement.layers();
  {
    std::lock_guard lock(report_mu_);
    report_ = ConfinementReport{realm, layers.landlock_abi, layers.landlock_network, layers.landlock_scoped,
                                layers.seccomp, layers.no_new_privs};
  }
  std::lock_guard lock(state_mu_);
  process_ = std::move(p);
}

void PyodideHost::kill() {
  std::shared_ptr<HostProcess> p;
  {
    std::lock_guard lock(state_mu_);
    p = std::move(process_);
  }
  if (p) {
    p->child.kill();
    p->child.wait();
  }
}

void PyodideHost::respawn() {
  kill();
  if (terminating_) return;
  if (standby) {
    if (auto ready = standby(); ready && ready->process) {
      {
        std::lock_guard lock(report_mu_);
        report_ = ready->report;
      }
      // Ids go on from the larger counter, so no id this runtime has already seen comes again.
      next_request_ = std::max(next_request_, ready->next_request);
      std::lock_guard lock(state_mu_);
      process_ = std::move(ready->process);
      return;
    }
  }
  try {
    spawn();
  } catch (const std::exception& e) {
    logger()->warn("sandbox {}: could not restart the Pyodide runtime: {}", id_, e.what());
  }
}

namespace {

// An idle runtime writes nothing: output or a hang-up on its pipe means it ended while it waited (killed from
// outside, say) or broke the protocol.
bool idle_and_alive(const HostProcess& p) {
  if (!p.ready || p.eof) return false;
  pollfd out_pipe{p.child.stdout_fd(), POLLIN, 0};
  return ::poll(&out_pipe, 1, 0) == 0;
}

}  // namespace

bool PyodideHost::idle_and_alive() {
  std::lock_guard lock(state_mu_);
  return !terminating_ && process_ && detail::idle_and_alive(*process_);
}

std::optional<ReadyRuntime> PyodideHost::release() {
  if (terminating_) return std::nullopt;
  ReadyRuntime out;
  {
    std::lock_guard lock(state_mu_);
    if (!process_ || !detail::idle_and_alive(*process_)) return std::nullopt;  // it ends with this host
    out.process = std::move(process_);
  }
  out.report = report();
  out.next_request = next_request_;
  return out;
}

void PyodideHost::shut_down() {
  terminating_ = true;
  wake();
  if (auto p = current()) p->child.kill();  // ends a call in flight at once
}

// Makes the image of a freshly loaded runtime in a throwaway process, which runs no other code, and writes it to
// `file`. False, with the reason in `why`, when it cannot; nothing is left running either way.
bool PyodideHost::make_snapshot(const fs::path& file, std::optional<Clock::time_point> deadline,
                                const std::stop_token& cancel, std::string& why) {
  try {
    spawn(/*make_snapshot=*/true);
  } catch (const std::exception& e) {
    why = std::string("cannot start the Pyodide runtime: ") + e.what();
    return false;
  }
  const auto p = current();
  if (!p) {
    why = "the sandbox is being terminated";
    return false;
  }
  std::string image;
  for (;;) {
    Frame f;
    std::string w;
    switch (next_frame(*p, deadline, f, w)) {
      case FrameWait::kFrame: {
        const auto t = field_string(f.header, "t");
        if (t == "snapshot" && image.size() + f.body.size() <= kMaxSnapshotBytes) {
          image += f.body;
          continue;
        }
        kill();
        if (t == "snapshot_end" && field_int(f.header, "size") == static_cast<std::int64_t>(image.size()) &&
            !image.empty()) {
          try {
            write_snapshot(file, image);
            return true;
          } catch (const std::exception& e) {
            why = std::string("cannot write it: ") + e.what();
            return false;
          }
        }
        why = t == "snapshot" ? "the image is larger than " + std::to_string(kMaxSnapshotBytes >> 20) + " MiB"
                              : "unexpected frame '" + t + "' from the runtime making it";
        return false;
      }
      case FrameWait::kDeadline:
        kill();
        why = "the runtime making it did not finish in time";
        return false;
      case FrameWait::kWoken:
        if (terminating_ || cancel.stop_requested()) {
          kill();
          why = "cancelled";
          return false;
        }
        break;
      case FrameWait::kEof:
        why = p->death_description();
        kill();
        return false;
      case FrameWait::kMalformed:
        kill();
        why = "malformed output from the runtime making it: " + w;
        return false;
    }
  }
}

std::optional<fs::path> PyodideHost::find_or_make_snapshot(const std::optional<fs::path>& file,
                                                           std::optional<Clock::time_point> deadline,
                                                           const std::stop_token& cancel) {
  if (!file) {
    logger()->warn("sandbox {}: no snapshot cache directory (neither XDG_CACHE_HOME nor HOME is an absolute path, "
                   "and PyodideOptions::snapshot_dir is not set): every runtime loads cold",
                   id_);
    return std::nullopt;
  }
  if (snapshot_valid(*file)) return file;
  std::error_code ec;
  if (fs::exists(*file, ec)) {
    logger()->warn("sandbox {}: snapshot {} does not check; making it again", id_, file->string());
  }
  std::string why;
  if (!make_snapshot(*file, deadline, cancel, why)) {
    if (cancel.stop_requested() || terminating_) return std::nullopt;  // create sees the cancel next
    logger()->warn("sandbox {}: cannot make a snapshot in {}: {}; every runtime loads cold", id_,
                   file->parent_path().string(), why);
    return std::nullopt;
  }
  return file;
}

ReadyError PyodideHost::await_ready(std::optional<Clock::time_point> deadline, const std::stop_token& cancel) {
  auto r = await_ready_once(deadline, cancel);
  if ((r.kind == ReadyError::kDied || r.kind == ReadyError::kMalformed) && snapshot) {
    logger()->warn("sandbox {}: a runtime restoring snapshot {} failed ({}); loading cold from now on", id_,
                   snapshot->string(), r.message);
    if (snapshot_installed) {
      mark_snapshot_unusable(*snapshot);  // later sandboxes use the cache directory
    } else {
      std::error_code ignored;
      fs::remove(*snapshot, ignored);  // made again by the next sandbox created
    }
    snapshot.reset();
    snapshot_installed = false;
    r = await_ready_once(deadline, cancel);
  }
  return r;
}

ReadyError PyodideHost::await_ready_once(std::optional<Clock::time_point> deadline, const std::stop_token& cancel) {
  std::shared_ptr<HostProcess> p = current();
  if (!p) {
    try {
      spawn();
    } catch (const std::exception& e) {
      return {ReadyError::kDied, std::string("cannot start the Pyodide runtime: ") + e.what()};
    }
    p = current();
    if (!p) return {ReadyError::kCancelled, "the sandbox is being terminated"};
  }
  while (!p->ready) {
    // A cancel that arrived before this wait (while the snapshot was being made, say) has already been drained
    // from the eventfd: it is seen here.
    if (terminating_ || cancel.stop_requested()) {
      kill();
      return {ReadyError::kCancelled, "cancelled while the Pyodide runtime was starting"};
    }
    Frame f;
    std::string why;
    switch (next_frame(*p, deadline, f, why)) {
      case FrameWait::kFrame: {
        const auto t = field_string(f.header, "t");
        if (t == "ready") {
          const auto protocol = field_int(f.header, "protocol");
          const auto version = field_string(f.header, "pyodide");
          if (protocol != kHostProtocolVersion || version != kPyodideVersion) {
            kill();
            return {ReadyError::kVersion, "the Pyodide runtime reports protocol " + std::to_string(protocol) +
                                              " and Pyodide " + version + "; this library needs protocol " +
                                              std::to_string(kHostProtocolVersion) + " and Pyodide " +
                                              kPyodideVersion};
          }
          if (!tighten_data_limit(p->child.pid(), config.memory_limit_bytes)) {
            logger()->warn("sandbox {}: cannot lower the runtime's data limit: {}", id_, std::strerror(errno));
          }
          p->ready = true;
          break;
        }
        if (t == "init_error") {
          const auto message = field_string(f.header, "message", "unknown error");
          kill();
          return {field_string(f.header, "stage") == "install_packages" ? ReadyError::kInstall : ReadyError::kDied,
                  message};
        }
        kill();
        return {ReadyError::kMalformed, "unexpected frame '" + t + "' before the runtime was ready"};
      }
      case FrameWait::kDeadline:
        // Left to finish starting: the next call (or create's cleanup) picks it up.
        return {ReadyError::kTimeout, "the Pyodide runtime did not become ready in time"};
      case FrameWait::kWoken:
        if (terminating_ || cancel.stop_requested()) {
          kill();
          return {ReadyError::kCancelled, "cancelled while the Pyodide runtime was starting"};
        }
        break;
      case FrameWait::kEof: {
        auto message = p->death_description();
        kill();
        return {ReadyError::kDied, message};
      }
      case FrameWait::kMalformed:
        kill();
        return {ReadyError::kMalformed, "malformed output from the Pyodide runtime: " + why};
    }
  }
  return {};
}

std::variant<Frame, FileError> PyodideHost::file_request(json header, std::string_view body,
                                                         std::optional<Clock::time_point> deadline,
                                                         const std::stop_token& cancel) {
  if (cancel.stop_requested()) return FileError{ErrorKind::kUnknown, "cancelled"};
  if (auto err = await_ready(deadline, cancel); err.kind != ReadyError::kNone) {
    return FileError{err.kind == ReadyError::kTimeout ? ErrorKind::kTimeout : ErrorKind::kUnavailable, err.message};
  }
  auto p = current();
  if (!p) return FileError{ErrorKind::kUnavailable, "the sandbox is being terminated"};
  const auto rid = request_id();
  header["t"] = "fs";
  header["id"] = rid;
  if (!write_all(p->child.stdin_fd(), encode_frame(header, body), deadline)) {
    if (deadline && Clock::now() >= *deadline) {
      respawn();
      return FileError{ErrorKind::kTimeout, "the runtime did not take the request in time; it was restarted", true};
    }
    const auto message = p->death_description();
    respawn();
    return FileError{ErrorKind::kUnavailable, message, true};
  }
  for (;;) {
    Frame f;
    std::string why;
    switch (next_frame(*p, deadline, f, why)) {
      case FrameWait::kFrame:
        if (field_string(f.header, "t") == "fs" && field_int(f.header, "id") == rid) return f;
        respawn();
        return FileError{ErrorKind::kInternal, "unexpected frame from the Pyodide runtime", true};
      case FrameWait::kDeadline:
        respawn();
        return FileError{ErrorKind::kTimeout, "the file operation timed out; the runtime was restarted", true};
      case FrameWait::kWoken:
        if (terminating_) return FileError{ErrorKind::kUnavailable, "the sandbox is being terminated"};
        if (cancel.stop_requested()) {
          // The request is small and synchronous in the runtime; wait for its answer briefly, then replace it.
          if (!deadline || *deadline > Clock::now() + config.interrupt_grace) {
            deadline = Clock::now() + config.interrupt_grace;
          }
        }
        break;
      case FrameWait::kEof: {
        // The request itself may have taken the runtime past its memory cap (a copy of a large tree): that is the
        // cap's refusal, as execute_code reports it, not an unavailable sandbox.
        const bool memory = p->died_of_memory();
        auto message = p->death_description();
        respawn();
        if (memory)
          return FileError{ErrorKind::kQuotaExceeded,
                           "the runtime exceeded its memory limit of " + std::to_string(config.memory_limit_bytes >> 20) +
                               " MiB; a fresh runtime was started and its files and state are lost",
                           true};
        return FileError{ErrorKind::kUnavailable, std::move(message), true};
      }
      case FrameWait::kMalformed:
        respawn();
        return FileError{ErrorKind::kInternal, "malformed output from the Pyodide runtime: " + why, true};
    }
  }
}

std::optional<FileError> fs_answer_error(const Frame& f, std::string_view op, std::string_view path) {
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
  } else if (code == "EINVAL") {  // e.g. a copy or move of a directory into itself (python_worker.mjs)
    kind = ErrorKind::kInvalidArgument, what = "invalid argument";
  } else if (code == "ELOOP") {
    kind = ErrorKind::kInvalidArgument, what = "too many levels of symbolic links";
  } else if (code == "ENOMEM") {  // a copy's buffer refused under the memory cap (python_worker.mjs copyTree)
    kind = ErrorKind::kQuotaExceeded, what = "not enough memory under the runtime's memory limit";
  }
  return FileError{kind, std::string(op) + " '" + std::string(path) + "': " + what + " (" + code + ")"};
}

RunFrame classify_run_frame(const Frame& f, std::uint32_t rid) {
  const auto t = field_string(f.header, "t");
  if (field_int(f.header, "id") != rid || (t != "out" && t != "result")) {
    return {RunFrame::kUnexpected, 0, "unexpected frame '" + t + "'"};
  }
  if (t == "result") return {RunFrame::kResult, 0, {}};
  const auto s = field_int(f.header, "s");
  if (s != 1 && s != 2) return {RunFrame::kUnexpected, 0, "output frame for an unknown stream"};
  return {RunFrame::kOut, static_cast<int>(s), {}};
}

std::optional<RunEnd> decode_run_end(const json& h) {
  try {
    RunEnd end;
    const auto status = h.at("status").get<std::string>();
    if (status == "ok") {
      end.status = RunEnd::Status::kOk;
      if (const auto v = h.find("value"); v != h.end() && v->is_string()) end.value = v->get<std::string>();
      if (const auto d = h.find("value_data"); end.value && d != h.end()) {
        end.value_data = d->get<std::map<std::string, std::string>>();
        end.value_data.erase("text/plain");
      }
    } else if (status == "error" || status == "interrupted") {
      const auto& e = h.at("error");
      end.error = CodeError{e.at("name").get<std::string>(), e.at("value").get<std::string>(),
                            e.at("traceback").get<std::string>()};
      end.status = status == "error" ? RunEnd::Status::kError : RunEnd::Status::kInterrupted;
      end.exit_code = status == "error" ? h.at("exit_code").get<int>() : 1;
    } else {
      return std::nullopt;
    }
    if (const auto d = h.find("displays"); d != h.end()) {
      end.displays = d->get<std::vector<std::map<std::string, std::string>>>();
    }
    end.displays_dropped = field_bool(h, "displays_dropped");
    end.host_interrupt = field_bool(h, "host_interrupt");
    return end;
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

}  // namespace code_interpreter::detail
