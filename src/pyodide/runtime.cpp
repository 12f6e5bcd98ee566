#include "pyodide/runtime.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "code_interpreter/errors.hpp"

namespace code_interpreter::detail {

namespace fs = std::filesystem;

fs::path default_runtime_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&default_runtime_dir), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    fs::path lib = fs::canonical(fs::path(info.dli_fname), ec);
    if (ec) lib = fs::absolute(fs::path(info.dli_fname), ec);
    return (lib.parent_path() / CODE_INTERPRETER_RUNTIME_RELPATH).lexically_normal();
  }
  return fs::path(CODE_INTERPRETER_RUNTIME_RELPATH);
}

namespace {
[[noreturn]] void missing(const fs::path& dir, const std::string& what) {
  throw TemplateBuildError("Pyodide runtime in '" + dir.string() + "' is incomplete: " + what +
                               " is missing (rebuild or reinstall code_interpreter, or set "
                               "PyodideOptions::runtime_dir)",
                           Stage::kTemplateBuild, ErrorKind::kNotFound);
}

void require_file(const fs::path& dir, const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) missing(dir, fs::relative(file, dir, ec).string());
}

void require_version(const fs::path& dir, const fs::path& package_json, const std::string& name,
                     const std::string& expected) {
  require_file(dir, package_json);
  std::ifstream in(package_json);
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  std::string found = "unknown";
  if (j.is_object() && j.contains("version") && j["version"].is_string()) found = j["version"].get<std::string>();
  if (found != expected) {
    throw TemplateBuildError("Pyodide runtime in '" + dir.string() + "' has " + name + " " + found + ", but " +
                                 expected + " is required (rebuild or reinstall code_interpreter)",
                             Stage::kTemplateBuild, ErrorKind::kInvalidArgument);
  }
}
}  // namespace

Runtime check_runtime(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw TemplateBuildError("Pyodide runtime directory '" + dir.string() +
                                 "' does not exist (rebuild or reinstall code_interpreter, or set "
                                 "PyodideOptions::runtime_dir)",
                             Stage::kTemplateBuild, ErrorKind::kNotFound);
  }
  Runtime rt;
  rt.dir = fs::canonical(dir, ec);
  if (ec) rt.dir = dir;
  if (rt.dir.string().find(',') != std::string::npos) {
    throw TemplateBuildError("Pyodide runtime path '" + rt.dir.string() +
                                 "' contains a comma, which Deno's --allow-read cannot express",
                             Stage::kTemplateBuild, ErrorKind::kInvalidArgument);
  }
  const fs::path pyodide = rt.dir / "node_modules" / "pyodide";
  for (const char* f : {"host.mjs", "frames.mjs", "ring.mjs", "stdin_worker.mjs", "python_worker.mjs", "runner.py"}) {
    require_file(rt.dir, rt.dir / f);
    rt.readable.push_back(rt.dir / f);
  }
  for (const char* f : {"pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
                        "pyodide-lock.json"}) {
    require_file(rt.dir, pyodide / f);
  }
  require_version(rt.dir, pyodide / "package.json", "Pyodide", kPyodideVersion);
  rt.readable.push_back(pyodide);
  // npm installs only the Deno platform package that matches the machine (an optional dependency of "deno").
#if defined(__aarch64__)
  const fs::path deno_pkg = rt.dir / "node_modules" / "@deno" / "linux-arm64-glibc";
#else
  const fs::path deno_pkg = rt.dir / "node_modules" / "@deno" / "linux-x64-glibc";
#endif
  rt.deno = deno_pkg / "deno";
  require_file(rt.dir, rt.deno);
  if (::access(rt.deno.c_str(), X_OK) != 0) {
    throw TemplateBuildError("Deno in the Pyodide runtime ('" + rt.deno.string() + "') is not executable",
                             Stage::kTemplateBuild, ErrorKind::kPermissionDenied);
  }
  require_version(rt.dir, deno_pkg / "package.json", "Deno", kDenoVersion);
  rt.host_script = rt.dir / "host.mjs";
  return rt;
}

}  // namespace code_interpreter::detail
