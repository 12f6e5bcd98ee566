// The Pyodide backend's outcome mapping: results and thrown errors from the facts PyodideHost decodes (host.hpp),
// by the rules of docs/errors.md ("Statuses and what each result carries", "FailureDetail", "Thrown errors"). The
// rules shared with the other backends are src/core/outcome.hpp; what is here is only what a local runtime adds.
#pragma once

#include <cstdint>
#include <string>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"
#include "core/outcome.hpp"
#include "pyodide/host.hpp"

namespace code_interpreter::detail {

/// The code never ran, and a caught failure proves it: retry_safe (docs/errors.md "FailureDetail").
inline ExecutionResult never_ran_safe(std::string code, std::string error, std::string exception_type,
                                      bool state_lost) {
  return never_ran(std::move(code), std::move(error), FailureDetail{std::move(exception_type), true}, state_lost);
}

/// Refused locally before anything was sent: kError, exit_code -1 and no FailureDetail.
inline ExecutionResult refused(std::string code, std::string error) {
  return never_ran(std::move(code), std::move(error), std::nullopt);
}

/// No answer came in time, before the code could run (the runtime was starting, or an upload timed out):
/// kTimeout / kRequest (docs/errors.md "TimeoutKind").
ExecutionResult request_timed_out(std::string code, std::string error, bool state_lost);

/// A call that found the runtime not ready (`e.kind` not kNone): kTimeout / kRequest when it was still starting,
/// else never ran (`cancelled`, or `pyodide.runtime_unavailable` with the state lost).
ExecutionResult not_ready_outcome(std::string code, const ReadyError& e);

/// Fills `r` from the end of a run: kSuccess with the last expression's formats as the main result, or kError with
/// the user's exception (docs/errors.md "The user's exception"); either way the run's displays first, in order.
/// Rich results past `max_rich_bytes` in all (counted on their mime types and texts) are dropped, later ones first,
/// and `truncated` is set, as the runtime does past its own cap.
void apply_run_end(RunEnd&& end, ExecutionResult& r, std::size_t max_rich_bytes);

/// The cap's outcome when the runtime had to be ended for it: kError, exit_code 1, a MemoryError naming the cap,
/// state_lost (docs/errors.md "Statuses and what each result carries").
void set_memory_outcome(ExecutionResult& r, std::uint64_t memory_limit_bytes);

/// kUnknown with a FailureDetail that is not retry_safe: the code may have run.
void set_unknown(ExecutionResult& r, std::string exception_type, std::string message);

/// Why the library asked a run to stop (docs/architecture.md "Timeout: interrupt, grace, kill, respawn",
/// "Cancellation and terminate").
enum class StopReason { kNone, kTimeout, kCancel, kCallback, kInterrupt };

/// The outcome of a run stopped on the library's request, by interrupt (`killed` false) or by kill: kTimeout /
/// kExecution for a timeout, kUnknown `cancelled` or `callback.exception` otherwise.
void set_stopped(ExecutionResult& r, StopReason reason, bool killed, const std::string& callback_error);

/// A run whose runtime broke the protocol and was replaced: kUnknown `pyodide.malformed_frame`, state_lost.
void set_malformed(ExecutionResult& r, const std::string& why);

/// A run ended by terminate: kUnknown `cancelled`, state_lost.
void set_terminated(ExecutionResult& r);

/// A file operation's error: SandboxExecutionError at `stage`, nesting the TransportError of a timeout, a lost
/// runtime or a broken protocol (docs/errors.md "TransportError").
[[noreturn]] void throw_file_error(const FileError& e, Stage stage);

/// create's error for a runtime that did not become ready (docs/backends/pyodide.md "Troubleshooting").
[[noreturn]] void throw_start_error(const ReadyError& e);

}  // namespace code_interpreter::detail
