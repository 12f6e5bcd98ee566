// ExecutionResults that tests script into FakeSandbox.
#pragma once

#include <string>

#include "code_interpreter/execution.hpp"

namespace code_interpreter::test_support {

/// A kSuccess result that printed `out`.
inline ExecutionResult success(std::string out) {
  ExecutionResult r;
  r.status = ExecutionStatus::kSuccess;
  r.stdout_text = std::move(out);
  r.exit_code = 0;
  return r;
}

}  // namespace code_interpreter::test_support
