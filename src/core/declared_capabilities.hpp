// What each backend's sandbox can do, known from its options before one is created: each backend's capabilities()
// answers from these, and declared_capabilities (factory.hpp) reads them for a configuration, so a tool can be
// described before its sandbox starts.
#pragma once

#include "code_interpreter/bedrock_sandbox.hpp"
#include "code_interpreter/e2b_sandbox.hpp"
#include "code_interpreter/execution.hpp"
#include "code_interpreter/pyodide_sandbox.hpp"

namespace code_interpreter::detail {

Capabilities pyodide_capabilities(const PyodideOptions& options);
Capabilities e2b_capabilities(const E2BOptions& options);
Capabilities bedrock_capabilities(const BedrockOptions& options);

}  // namespace code_interpreter::detail
