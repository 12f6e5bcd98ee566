// The outcome rules that do not depend on a transport, shared by every backend (docs/errors.md "Statuses and what
// each result carries"): the never-ran result, the relabelling of a call whose sandbox died under it, and the error a
// create throws when its package installation did not succeed. src/http/outcome.hpp maps HTTP exchanges onto these.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"

namespace code_interpreter::detail {

/// A result for code that provably did not run: kError, exit code -1, `failure` as given (absent for a local
/// refusal decided before anything was sent), `state_lost` as given.
ExecutionResult never_ran(std::string code, std::string error, std::optional<FailureDetail> failure,
                          bool state_lost = false);

/// Relabels `r` as a call whose sandbox died during it: kTimeout / kSandboxLost, no FailureDetail, state_lost true,
/// `error` as given. Output received before the loss stays.
void mark_sandbox_lost(ExecutionResult& r, std::string error);

/// The SandboxStartError (stage install_packages) for a create whose installation of additional_packages ended in
/// `result` instead of success: kind kUnknown when `cancel` was requested (the create was cancelled), kTimeout
/// (transient) when the install ran out of the create's budget (`budget`, the caller's create_timeout, named in the
/// message), else kInternal with the installer's last 2000 bytes of stderr (or the result's error).
SandboxStartError install_packages_error(const ExecutionResult& result, const std::stop_token& cancel,
                                         std::chrono::milliseconds budget);

/// Relabels `r` as a call cancelled because an output callback threw (docs/errors.md "FailureDetail"): kUnknown, exit
/// code -1, no timeout kind, results or code_error, {callback.exception, not retry_safe}, error
/// "an output callback threw: " + `thrown`. Output received before stays. The guard that catches the throw, and
/// gives `thrown`, is detail::deliver_guarded (core/callback_guard.hpp).
void mark_callback_threw(ExecutionResult& r, std::string_view thrown);

/// The ErrorKind an operation throws when the execute_code (or execute_command) it rode on ended in `r` instead of
/// success (docs/errors.md "Filesystem, interrupt, restart and variables"): kTimeout for kTimeout, kUnknown for
/// kUnknown (the call's fate is not known); for kError, kUnavailable when the code provably never ran because of the
/// sandbox or its service (a FailureDetail other than "cancelled": refused, unreachable, gone), kUnknown when it
/// was cancelled before it ran, else kInternal (the operation's code failed, or a local refusal).
ErrorKind error_kind_of(const ExecutionResult& r) noexcept;

/// What a backend's destructor does for a sandbox the caller did not terminate: `terminate()` (no timeout), and a
/// warning instead of an exception when it fails — "<backend>: <noun> <id> could not be <verb> on destruction".
void terminate_on_destruction(const std::function<void()>& terminate, std::string_view backend, std::string_view noun,
                              std::string_view id, std::string_view verb) noexcept;

}  // namespace code_interpreter::detail
