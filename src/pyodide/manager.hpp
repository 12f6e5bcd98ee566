// The Pyodide backend's SandboxManager (include/code_interpreter/management.hpp): it has no verb.
#pragma once

#include <memory>

#include "code_interpreter/management.hpp"

namespace code_interpreter::pyodide {

/// A manager that refuses every verb (kUnsupported): Pyodide sandboxes are Deno child processes of the program that
/// created them and end with it, so there is nothing another process could list, pause or kill.
std::unique_ptr<SandboxManager> make_manager();

}  // namespace code_interpreter::pyodide
