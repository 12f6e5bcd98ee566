#include "core/outcome.hpp"

#include <fmt/format.h>

#include "code_interpreter/logging.hpp"

namespace code_interpreter::detail {

ExecutionResult never_ran(std::string code, std::string error, std::optional<FailureDetail> failure,
                          bool state_lost) {
  ExecutionResult r;
  r.status = ExecutionStatus::kError;
  r.exit_code = -1;
  r.code = std::move(code);
  r.error = std::move(error);
  r.failure = std::move(failure);
  r.state_lost = state_lost;
  return r;
}

void mark_sandbox_lost(ExecutionResult& r, std::string error) {
  r.status = ExecutionStatus::kTimeout;
  r.timeout_kind = TimeoutKind::kSandboxLost;
  r.exit_code = -1;
  r.failure.reset();
  r.state_lost = true;
  r.error = std::move(error);
}

SandboxStartError install_packages_error(const ExecutionResult& result, const std::stop_token& cancel,
                                         std::chrono::milliseconds budget) {
  if (cancel.stop_requested())
    return SandboxStartError("creating the sandbox was cancelled while additional_packages were installed",
                             Stage::kInstallPackages, ErrorKind::kUnknown);
  if (result.status == ExecutionStatus::kTimeout && result.timeout_kind != TimeoutKind::kSandboxLost)
    return SandboxStartError(
        fmt::format("installing additional_packages did not finish within create_timeout ({} ms)", budget.count()),
        Stage::kInstallPackages, ErrorKind::kTimeout);
  std::string detail = result.stderr_text.empty() ? result.error : result.stderr_text;
  if (detail.size() > 2000) detail = detail.substr(detail.size() - 2000);
  return SandboxStartError(fmt::format("installing additional_packages failed ({}): {}", to_string(result.status), detail),
                           Stage::kInstallPackages, ErrorKind::kInternal);
}

void mark_callback_threw(ExecutionResult& r, std::string_view thrown) {
  r.status = ExecutionStatus::kUnknown;
  r.exit_code = -1;
  r.timeout_kind.reset();
  r.failure = FailureDetail{"callback.exception", false};
  r.error = "an output callback threw: " + std::string(thrown);
  r.results.clear();
  r.code_error.reset();
}

ErrorKind error_kind_of(const ExecutionResult& r) noexcept {
  switch (r.status) {
    case ExecutionStatus::kTimeout: return ErrorKind::kTimeout;
    case ExecutionStatus::kUnknown: return ErrorKind::kUnknown;
    case ExecutionStatus::kSuccess: return ErrorKind::kInternal;
    case ExecutionStatus::kError: break;
  }
  if (r.code_error || !r.failure) return ErrorKind::kInternal;
  return r.failure->exception_type == "cancelled" ? ErrorKind::kUnknown : ErrorKind::kUnavailable;
}

void terminate_on_destruction(const std::function<void()>& terminate, std::string_view backend, std::string_view noun,
                              std::string_view id, std::string_view verb) noexcept {
  try {
    terminate();
  } catch (const std::exception& e) {
    logger()->warn("{}: {} {} could not be {} on destruction: {}", backend, noun, id, verb, e.what());
  } catch (...) {
    logger()->warn("{}: {} {} could not be {} on destruction", backend, noun, id, verb);
  }
}

}  // namespace code_interpreter::detail
