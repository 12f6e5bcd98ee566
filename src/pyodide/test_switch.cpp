#include "pyodide/test_switch.hpp"

#include <cstdlib>
#include <cstring>

namespace code_interpreter::detail {

TestConfinement test_confinement() noexcept {
#if defined(CODE_INTERPRETER_SECURITY_TEST_SWITCHES)
  if (const char* mode = std::getenv("CODE_INTERPRETER_TEST_CONFINEMENT")) {
    if (std::strcmp(mode, "kernel-only") == 0) return TestConfinement::kKernelOnly;
    if (std::strcmp(mode, "realm-only") == 0) return TestConfinement::kRealmOnly;
  }
#endif
  return TestConfinement::kFull;
}

}  // namespace code_interpreter::detail
