// The Pyodide backend's outcome mapping (outcome.hpp), by the rules of docs/errors.md.
#include "pyodide/outcome.hpp"

#include <algorithm>

#include "core/nested.hpp"
#include "core/outcome.hpp"

namespace code_interpreter::detail {

ExecutionResult request_timed_out(std::string code, std::string error, bool state_lost) {
  ExecutionResult r;
  r.status = ExecutionStatus::kTimeout;
  r.code = std::move(code);
  r.timeout_kind = TimeoutKind::kRequest;
  r.error = std::move(error);
  r.state_lost = state_lost;
  return r;
}

ExecutionResult not_ready_outcome(std::string code, const ReadyError& e) {
  if (e.kind == ReadyError::kTimeout) {
    return request_timed_out(std::move(code),
                             "the Pyodide runtime was still starting when the timeout ran out; it keeps starting "
                             "for the next call",
                             false);
  }
  const bool cancelled = e.kind == ReadyError::kCancelled;
  return never_ran_safe(std::move(code), e.message, cancelled ? "cancelled" : "pyodide.runtime_unavailable",
                        !cancelled);
}

void apply_run_end(RunEnd&& end, ExecutionResult& r, std::size_t max_rich_bytes) {
  std::size_t used = 0;
  auto keep = [&](std::map<std::string, std::string>&& data, bool main) {
    std::size_t size = 0;
    for (const auto& [k, v] : data) size += k.size() + v.size();
    if (size > max_rich_bytes - std::min(max_rich_bytes, used)) {
      r.truncated = true;
      return;
    }
    used += size;
    r.results.push_back(RichResult{std::move(data), main});
  };
  for (auto& d : end.displays) keep(std::move(d), false);
  if (end.displays_dropped) r.truncated = true;
  if (end.status == RunEnd::Status::kOk) {
    r.status = ExecutionStatus::kSuccess;
    r.exit_code = 0;
    if (end.value) {
      end.value_data["text/plain"] = std::move(*end.value);
      keep(std::move(end.value_data), true);
    }
    return;
  }
  r.status = ExecutionStatus::kError;
  r.exit_code = end.status == RunEnd::Status::kError ? end.exit_code : 1;
  r.error = end.error.traceback.empty() ? end.error.name + ": " + end.error.value : end.error.traceback;
  r.code_error = std::move(end.error);
}

void set_memory_outcome(ExecutionResult& r, std::uint64_t memory_limit_bytes) {
  r.status = ExecutionStatus::kError;
  r.exit_code = 1;
  r.state_lost = true;
  r.results.clear();
  r.code_error = CodeError{"MemoryError",
                           "the runtime exceeded its memory limit of " + std::to_string(memory_limit_bytes >> 20) +
                               " MiB",
                           ""};
  r.error = "MemoryError: " + r.code_error->value + "; a fresh runtime was started and the state is lost";
}

void set_unknown(ExecutionResult& r, std::string exception_type, std::string message) {
  r.status = ExecutionStatus::kUnknown;
  r.exit_code = -1;
  r.failure = FailureDetail{std::move(exception_type), false};
  r.error = std::move(message);
  r.results.clear();
  r.code_error.reset();
}

void set_stopped(ExecutionResult& r, StopReason reason, bool killed, const std::string& callback_error) {
  r.state_lost = killed;
  switch (reason) {
    case StopReason::kTimeout:
    case StopReason::kNone:
      r.status = ExecutionStatus::kTimeout;
      r.exit_code = -1;
      r.timeout_kind = TimeoutKind::kExecution;
      r.error = killed ? "execution timed out; the code did not stop after an interrupt, so the runtime was "
                         "restarted and its state lost"
                       : "execution timed out and was interrupted";
      r.results.clear();
      r.code_error.reset();
      break;
    case StopReason::kCancel:
      set_unknown(r, "cancelled", killed ? "cancelled; the runtime was restarted" : "cancelled");
      break;
    case StopReason::kInterrupt:
      // Reached only when the code did not stop within the grace period (or ended without an error, which the
      // caller keeps): the runtime was replaced, as a cancelled call's is.
      set_unknown(r, "cancelled", killed ? "interrupted; the code did not stop, so the runtime was restarted and its "
                                           "state lost"
                                         : "interrupted");
      break;
    case StopReason::kCallback:
      detail::mark_callback_threw(r, callback_error);
      break;
  }
}

void set_malformed(ExecutionResult& r, const std::string& why) {
  set_unknown(r, "pyodide.malformed_frame",
              "malformed output from the Pyodide runtime (" + why + "); the runtime was restarted and its state lost");
  r.state_lost = true;
}

void set_terminated(ExecutionResult& r) {
  set_unknown(r, "cancelled", "the sandbox was terminated during the call");
  r.state_lost = true;
}

void throw_file_error(const FileError& e, Stage stage) {
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

void throw_start_error(const ReadyError& e) {
  switch (e.kind) {
    case ReadyError::kInstall:
      throw SandboxStartError("installing additional_packages failed: " + e.message, Stage::kInstallPackages,
                              ErrorKind::kInvalidArgument);
    case ReadyError::kVersion:
      throw TemplateBuildError(e.message, Stage::kTemplateBuild, ErrorKind::kInvalidArgument);
    case ReadyError::kTimeout:
      throw_nested(SandboxStartError(e.message, Stage::kStartRuntime, ErrorKind::kTimeout),
                   TransportError(e.message, TransportError::Kind::kTimeout));
    case ReadyError::kCancelled:
      throw_nested(SandboxStartError(e.message, Stage::kStartRuntime, ErrorKind::kUnknown),
                   TransportError(e.message, TransportError::Kind::kCancelled));
    default:
      throw_nested(SandboxStartError("the Pyodide runtime failed to start: " + e.message, Stage::kStartRuntime,
                                     ErrorKind::kInternal),
                   TransportError(e.message, TransportError::Kind::kProtocol));
  }
}

}  // namespace code_interpreter::detail
