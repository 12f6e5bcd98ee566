// Finding and checking the Pyodide runtime directory (host script, Pyodide, Deno).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace code_interpreter::detail {

/// Versions the library was built against, read by CMake from src/pyodide/host/package.json.
inline constexpr const char* kPyodideVersion = CODE_INTERPRETER_PYODIDE_VERSION;
inline constexpr const char* kDenoVersion = CODE_INTERPRETER_DENO_VERSION;
inline constexpr int kHostProtocolVersion = 1;

struct Runtime {
  std::filesystem::path dir;
  std::filesystem::path deno;         // the Deno executable
  std::filesystem::path host_script;  // host.mjs
  /// What the Deno process may read: the host files and the Pyodide package.
  std::vector<std::filesystem::path> readable;
};

/// The runtime directory beside the library: `<dir of libcode_interpreter>/CODE_INTERPRETER_RUNTIME_RELPATH`.
std::filesystem::path default_runtime_dir();

/// Checks that every asset is present and of the expected version.
/// @throws TemplateBuildError naming what is missing or mismatched.
Runtime check_runtime(const std::filesystem::path& dir);

}  // namespace code_interpreter::detail
