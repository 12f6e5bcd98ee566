// The E2B backend's SandboxManager (include/code_interpreter/management.hpp; docs/backends/e2b.md "Managing
// sandboxes"): list, get, kill, pause and resume over E2B's control plane.
#pragma once

#include <memory>

#include "code_interpreter/e2b_sandbox.hpp"
#include "code_interpreter/management.hpp"

namespace code_interpreter::e2b {

/// @throws SandboxStartError (stage configure) as E2BSandbox::create does for a missing API key or a bad URL.
std::unique_ptr<SandboxManager> make_manager(E2BOptions options);

}  // namespace code_interpreter::e2b
