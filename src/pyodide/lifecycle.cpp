// PyodideSandbox's lifecycle: create (checking the options, resolving the wheels, building the kernel's
// confinement and Deno's arguments, the snapshot, the first runtime), and terminate. Deno's flags and the
// environment are docs/architecture.md "One Deno process per sandbox"; the confinement "The kernel's confinement of
// the process" and docs/security.md "The two layers"; the errors create throws docs/errors.md "Stage".
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <system_error>

#include "core/declared_capabilities.hpp"
#include "code_interpreter/logging.hpp"
#include "core/nested.hpp"
#include "core/network_policy.hpp"
#include "core/random_id.hpp"
#include "pyodide/outcome.hpp"
#include "pyodide/packages.hpp"
#include "pyodide/sandbox_impl.hpp"
#include "pyodide/snapshot.hpp"

namespace code_interpreter {

namespace fs = std::filesystem;
using detail::throw_nested;

namespace {

constexpr std::size_t kMinFrameBytes = detail::kFileChunk + (1u << 20);
constexpr std::size_t kMinMemoryLimit = std::size_t{256} << 20;
// RLIMIT_DATA while the runtime starts, above the cap: V8 reserves about 1.2 GiB of writable address space it does
// not touch (code range, thread stacks, allocator arenas), and fails to start below that. Once it is ready the
// limit is lowered to what it has mapped plus what the cap leaves (tighten_data_limit).
constexpr std::uint64_t kStartupDataHeadroom = std::uint64_t{2} << 30;

// The package directory: wheel_dir, else the default one under the cache directory. Deno's --allow-read takes a
// comma-separated list, so a comma in the path cannot be expressed.
fs::path resolve_package_dir(const PyodideOptions& options) {
  const auto given = options.wheel_dir ? options.wheel_dir : detail::default_package_dir();
  if (!given) {
    throw SandboxStartError("additional_packages need a package directory: set PyodideOptions::wheel_dir, or "
                            "XDG_CACHE_HOME or HOME to an absolute path",
                            Stage::kInstallPackages, ErrorKind::kInvalidArgument);
  }
  std::error_code ec;
  const fs::path dir = fs::canonical(*given, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    throw SandboxStartError("package directory '" + given->string() + "' is not a directory" +
                                (options.wheel_dir ? "" : ": fetch packages into it with `code-interpreter packages fetch`"),
                            Stage::kInstallPackages, ErrorKind::kNotFound);
  }
  if (dir.string().find(',') != std::string::npos) {
    throw SandboxStartError("package directory '" + dir.string() + "' contains a comma, which Deno's --allow-read "
                            "cannot express",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  return dir;
}

// A wheel of the user's own for `name` in `dir` (`<name>-<version>-<tags>.whl`, the name compared normalized);
// nullopt when there is none. Two wheels of one name are refused: which one loads must not depend on the order of
// a directory listing.
std::optional<fs::path> own_wheel(const fs::path& dir, const std::string& name) {
  const auto want = detail::normalize_distribution(name);
  std::optional<fs::path> best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto file = entry.path().filename().string();
    if (entry.path().extension() != ".whl") continue;
    const auto dash = file.find('-');
    if (dash == std::string::npos || detail::normalize_distribution(file.substr(0, dash)) != want) continue;
    if (best) {
      throw SandboxStartError("package '" + name + "' matches several wheels in '" + dir.string() + "' ('" +
                                  best->filename().string() + "', '" + entry.path().filename().string() +
                                  "'); keep one",
                              Stage::kInstallPackages, ErrorKind::kInvalidArgument);
    }
    best = entry.path();
  }
  return best;
}

std::string fetch_command(const std::vector<std::string>& names) {
  std::string command = "code-interpreter packages fetch";
  for (const auto& n : names) command += " " + n;
  return command;
}

// What the Deno process reads besides the runtime and the wheels, found by running it under Landlock: the dynamic
// loader's cache, the C libraries Deno links (its DT_NEEDED entries; the pinned Deno loads nothing else), and
// /dev/urandom (V8 seeds itself from it). Each library is looked up in the usual multiarch and lib64 folders;
// the ones that do not exist on this system are skipped by Landlock's rule builder.
std::vector<fs::path> system_readable() {
  std::vector<fs::path> files = {"/etc/ld.so.cache", "/dev/urandom"};
#if defined(__aarch64__)
  const char* const dirs[] = {"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"};
#else
  const char* const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"};
#endif
  for (const char* dir : dirs) {
    for (const char* lib : {"libdl.so.2", "libgcc_s.so.1", "librt.so.1", "libpthread.so.0", "libm.so.6", "libc.so.6"}) {
      files.push_back(fs::path(dir) / lib);
    }
  }
  return files;
}
// The ELF interpreter, executed by the kernel on execve of Deno.
std::vector<fs::path> system_executable() {
#if defined(__aarch64__)
  return {"/lib/ld-linux-aarch64.so.1"};
#else
  return {"/lib64/ld-linux-x86-64.so.2"};
#endif
}

}  // namespace

PyodideSandbox::PyodideSandbox(std::unique_ptr<Impl> impl, Language language, std::vector<std::string> packages)
    : CodeInterpreterSandbox(language, std::move(packages)), impl_(std::move(impl)) {}

fs::path PyodideSandbox::default_runtime_dir() { return detail::default_runtime_dir(); }

std::unique_ptr<PyodideSandbox> PyodideSandbox::create(PyodideOptions options) {
  if (options.language != Language::kPython) {
    throw SandboxStartError("the Pyodide sandbox runs only Python, not " + std::string(to_string(options.language)),
                            Stage::kConfigure, ErrorKind::kUnsupported);
  }
  detail::check_network_policy(options.network_policy);
  // Deno runs without network permission: none is what it has, and nothing more can be given.
  if (options.network_policy && options.network_policy->access != NetworkAccess::kNone)
    detail::refuse_network_policy("the Pyodide sandbox", options.network_policy->access,
                                  "its runtime has no network (only 'none')");
  if (options.max_frame_bytes < kMinFrameBytes) {
    throw SandboxStartError("max_frame_bytes must be at least " + std::to_string(kMinFrameBytes) +
                                " bytes (a file chunk of 8 MiB plus its header)",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (options.interrupt_grace.count() < 0) {
    throw SandboxStartError("interrupt_grace must not be negative", Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  // A grace the clock cannot add to now() would overflow into a deadline in the past (a kill at once).
  if (options.interrupt_grace > detail::kMaxRequestBudget) {
    throw SandboxStartError("interrupt_grace must be at most 24 hours", Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (options.max_download_bytes == 0) {
    throw SandboxStartError("max_download_bytes must be positive", Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (options.max_output_bytes == 0) {
    throw SandboxStartError("max_output_bytes must be positive", Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  if (options.memory_limit_bytes < kMinMemoryLimit) {
    throw SandboxStartError("memory_limit_bytes must be at least " + std::to_string(kMinMemoryLimit >> 20) +
                                " MiB (Pyodide needs about 150 MiB to start)",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  }
  auto impl = std::make_unique<Impl>("pyodide-" + detail::random_hex(8));
  auto& config = impl->host.config;
  config.runtime = detail::check_runtime(options.runtime_dir.value_or(detail::default_runtime_dir()));

  // Resolve additional_packages to files before anything starts: names the lock holds, with their dependencies,
  // checked against the lock's SHA-256; other names as a wheel of the user's own in the package directory.
  std::vector<fs::path> readable = config.runtime.readable;
  std::vector<std::string> installed;  // what the model is told it can import: the closure, then the own wheels
  if (!options.additional_packages.empty()) {
    const auto dir = resolve_package_dir(options);
    const auto lock_file = options.package_lock.value_or(detail::runtime_lock_file(config.runtime.dir));
    detail::PackageLock lock;
    try {
      lock = detail::PackageLock::read(lock_file);
    } catch (const detail::PackageLockError& e) {
      throw SandboxStartError(e.what(), Stage::kInstallPackages, ErrorKind::kInvalidArgument);
    }
    std::vector<std::string> locked, own;
    for (const auto& name : options.additional_packages) {
      if (!detail::valid_distribution_name(name)) {
        throw SandboxStartError("'" + name + "' is not a valid package name", Stage::kInstallPackages,
                                ErrorKind::kInvalidArgument);
      }
      if (lock.find(name) != nullptr) {
        locked.push_back(name);
      } else if (auto wheel = own_wheel(dir, name)) {
        config.wheels.push_back(wheel->string());
        own.push_back(name);
      } else {
        throw SandboxStartError("unknown package '" + name + "': " + lock_file.filename().string() +
                                    " does not hold it and '" + dir.string() + "' has no wheel of it",
                                Stage::kInstallPackages, ErrorKind::kNotFound);
      }
    }
    std::vector<std::string> files, hashes;
    for (const auto* p : lock.closure(locked)) {
      switch (detail::check_package_file(dir, *p)) {
        case detail::PackageFileState::kOk: break;
        case detail::PackageFileState::kMissing:
          throw SandboxStartError("package '" + p->name + "' " + p->version + " needs '" + p->file_name + "' in '" +
                                      dir.string() + "', which is missing: fetch it with `" + fetch_command(locked) +
                                      "`",
                                  Stage::kInstallPackages, ErrorKind::kNotFound);
        case detail::PackageFileState::kMismatch:
          throw SandboxStartError("package '" + p->name + "' " + p->version + ": '" + p->file_name + "' in '" +
                                      dir.string() + "' does not match the SHA-256 that " +
                                      lock_file.filename().string() + " gives; delete it and fetch it again with `" +
                                      fetch_command(locked) + "`",
                                  Stage::kInstallPackages, ErrorKind::kInvalidArgument);
      }
      files.push_back((dir / p->file_name).string());
      hashes.push_back(p->sha256);
      installed.push_back(p->name);
    }
    installed.insert(installed.end(), own.begin(), own.end());
    // Dependencies first, then the user's own wheels, which may import them.
    config.wheels.insert(config.wheels.begin(), files.begin(), files.end());
    config.wheel_sha256 = hashes;
    config.wheel_sha256.resize(config.wheels.size());  // the user's own wheels: "" (no hash to check)
    readable.push_back(dir);
  }

  // The kernel's confinement: Landlock read access to exactly the runtime's files and the wheels installed, not
  // the wheel directory (Deno's --allow-read keeps naming the directory). No right at all on the private directory
  // (see RuntimeDir).
  auto& spec = config.confinement_spec;
  spec.readable = config.runtime.readable;
  for (const auto& w : config.wheels) spec.readable.emplace_back(w);
  for (auto& p : system_readable()) spec.readable.push_back(std::move(p));
  spec.executable = system_executable();
  spec.executable.push_back(config.runtime.deno);
  spec.data_limit_bytes = options.memory_limit_bytes + kStartupDataHeadroom;
  config.test_mode = detail::test_confinement();
  if (config.test_mode == detail::TestConfinement::kRealmOnly) {
    spec.max_landlock_abi = 2;  // Debian 12's stock kernel: no TCP rules, no scoping
    spec.seccomp = false;
  }
  {
    const detail::KernelLayers probe = detail::Confinement(spec).layers();
    std::string missing;
    if (probe.landlock_abi == 0) missing = "Landlock";
    if (!probe.seccomp) missing += missing.empty() ? "seccomp" : " and seccomp";
    if (!missing.empty()) {
      if (options.require_kernel_confinement) {
        throw SandboxStartError("the kernel does not provide " + missing +
                                    ", which require_kernel_confinement asks for (docs/backends/pyodide.md)",
                                Stage::kStartRuntime, ErrorKind::kUnsupported);
      }
      logger()->warn("sandbox {}: the kernel does not provide {}; the Pyodide runtime runs with Deno's permissions "
                     "{}(see PyodideSandbox::confinement())",
                     impl->host.id(), missing, probe.landlock_abi > 0 || probe.seccomp ? "and the other kernel layer " : "");
    }
  }

  std::error_code tmp_ec;
  fs::path base = fs::temp_directory_path(tmp_ec);
  // Absolute: the runtime starts in "/", so a relative TMPDIR would name another place there.
  if (!tmp_ec) base = fs::absolute(base, tmp_ec);
  if (tmp_ec) {
    throw_nested(SandboxStartError("no usable temporary directory for the runtime's private DENO_DIR (check TMPDIR)",
                                   Stage::kStartRuntime, ErrorKind::kInternal),
                 fs::filesystem_error("temp_directory_path", tmp_ec));
  }
  detail::sweep_stale_runtime_dirs(base);
  config.temp_base = base;

  const auto deadline = detail::deadline_from(options.create_timeout, detail::kDefaultPyodideCreateTimeout);
  std::optional<fs::path> snapshot_file;
  bool installed_snapshot = false;
  bool installed_rejected = false;  // an installed image is there but does not check or failed to restore
  if (options.use_snapshot) {
    const auto key = detail::snapshot_key(config.runtime);
    const auto beside = detail::snapshot_path(config.runtime.dir, key);
    // Without a snapshot_dir of the caller's, the base image made at build time beside the runtime serves when it
    // checks (docs/backends/pyodide.md "Snapshots"); it is only ever read.
    if (!options.snapshot_dir) {
      std::error_code ec;
      if (detail::snapshot_valid(beside)) {
        snapshot_file = beside;
        installed_snapshot = true;
      } else if (fs::exists(beside, ec)) {
        installed_rejected = true;
      }
    }
    if (const auto cache = detail::snapshot_cache_dir(options.snapshot_dir); !snapshot_file && cache) {
      // A cache directory that is the runtime directory itself would rewrite the installed image: not used.
      std::error_code ec;
      const auto file = detail::snapshot_path(*cache, key);
      if (!installed_rejected || !fs::equivalent(file, beside, ec)) snapshot_file = file;
    }
    if (installed_rejected) {
      logger()->warn("sandbox {}: the snapshot installed beside the runtime, {}, does not check or failed to "
                     "restore; {}",
                     impl->host.id(), beside.string(),
                     snapshot_file ? "using the cache directory instead"
                                   : "there is no other cache directory: every runtime loads cold");
    }
    // The runtime may read the image (Deno and Landlock): named before the image exists, so that the process
    // that makes it runs with the very arguments of the ones that restore it.
    if (snapshot_file) {
      readable.push_back(*snapshot_file);
      spec.readable.push_back(*snapshot_file);
    }
  }

  std::string allow = "--allow-read=";
  for (std::size_t i = 0; i < readable.size(); ++i) {
    if (i) allow += ',';
    allow += readable[i].string();
  }
  config.deno_args = {"run",     "--no-prompt", "--no-remote", "--no-config", "--no-npm", "--no-lock",
                     allow,     "--v8-flags=--disallow-code-generation-from-strings,--no-wasm-dynamic-tiering",
                     config.runtime.host_script.string()};
  config.packages = options.additional_packages;
  config.max_frame_bytes = options.max_frame_bytes;
  config.memory_limit_bytes = options.memory_limit_bytes;
  config.interrupt_grace = options.interrupt_grace;
  impl->options = std::move(options);
  if (const int e = impl->host.open_wake(); e != 0) {
    throw_nested(SandboxStartError("cannot create an eventfd", Stage::kStartRuntime, ErrorKind::kInternal),
                 std::system_error(e, std::generic_category(), "eventfd"));
  }

  std::stop_callback on_cancel(impl->options.cancel, [p = impl.get()] { p->host.wake(); });
  if (impl->options.use_snapshot) {
    // An installed image that was rejected has had its one warning: no second one for the missing cache.
    impl->host.snapshot = installed_snapshot || (installed_rejected && !snapshot_file)
                              ? snapshot_file
                              : impl->host.find_or_make_snapshot(snapshot_file, deadline, impl->options.cancel);
    impl->host.snapshot_installed = installed_snapshot;
    if (impl->options.cancel.stop_requested()) {
      detail::throw_start_error({detail::ReadyError::kCancelled, "cancelled while the Pyodide runtime was starting"});
    }
  }
  auto cleanup = [&impl] { impl->host.kill(); };
  try {
    impl->host.spawn();
  } catch (const std::exception& e) {
    cleanup();
    std::throw_with_nested(SandboxStartError(std::string("cannot start the Pyodide runtime: ") + e.what(),
                                             Stage::kStartRuntime, ErrorKind::kUnavailable));
  }
  const auto ready = impl->host.await_ready(deadline, impl->options.cancel);
  if (ready.kind != detail::ReadyError::kNone) {
    cleanup();
    detail::throw_start_error(ready);
  }
  const Language language = impl->options.language;
  return std::unique_ptr<PyodideSandbox>(new PyodideSandbox(std::move(impl), language, std::move(installed)));
}

PyodideSandbox::~PyodideSandbox() {
  try {
    do_terminate(std::nullopt);
  } catch (const std::exception& e) {
    logger()->warn("sandbox {}: teardown failed: {}", impl_->host.id(), e.what());
  } catch (...) {
    logger()->warn("sandbox {}: teardown failed", impl_->host.id());
  }
}

std::optional<std::string> PyodideSandbox::sandbox_id() const { return impl_->host.id(); }

ConfinementReport PyodideSandbox::confinement() const { return impl_->host.report(); }

Capabilities PyodideSandbox::capabilities() const { return detail::pyodide_capabilities(PyodideOptions{}); }

Capabilities detail::pyodide_capabilities(const PyodideOptions&) {
  Capabilities c;
  c.stateful = true;
  c.shell_commands = false;
  c.file_download = true;
  c.filesystem = true;
  c.packages = true;
  c.network = false;
  c.interrupt = true;
  c.expression_results = true;
  c.streaming_output = true;
  c.languages = {Language::kPython};
  c.network_policies = {NetworkAccess::kNone};
  c.upload_dir = detail::kUploadDir;
  c.file_info = c.file_move = c.file_copy = true;
  c.interrupt_call = c.interrupt_keeps_state = true;
  c.restart = c.variables = true;
  return c;
}

void PyodideSandbox::do_set_timeout(std::chrono::seconds) {
  impl_->check_alive();  // a local runtime has no lease to renew
}

void PyodideSandbox::do_terminate(Timeout) {
  if (impl_->terminated) return;
  impl_->host.shut_down();  // ends a call in flight at once
  std::lock_guard call(impl_->call_mu);
  if (impl_->terminated) return;
  impl_->host.kill();  // the runtime's private directory goes with it
  impl_->terminated = true;
}

}  // namespace code_interpreter
