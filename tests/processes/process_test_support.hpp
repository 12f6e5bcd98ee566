// Shared by the process tests: the kind of the SandboxExecutionError (stage command) a call throws.
#pragma once

#include <catch2/catch.hpp>

#include <functional>

#include "code_interpreter/errors.hpp"

namespace code_interpreter::test {

/// The kind of the SandboxExecutionError `call` throws, checking its stage is `command`; fails the test when it
/// throws none.
inline ErrorKind command_error_kind(const std::function<void()>& call) {
  try {
    call();
  } catch (const SandboxExecutionError& e) {
    CHECK(e.stage() == Stage::kCommand);
    return e.kind();
  }
  FAIL("no SandboxExecutionError");
  return ErrorKind::kUnknown;
}

}  // namespace code_interpreter::test
