// Layer 2 of the local sandbox: the kernel confines the Deno child whatever Deno does (docs/architecture.md,
// docs/backends/pyodide.md "Process limits"). Landlock limits the files it may open and the TCP ports it may use,
// a seccomp filter limits the system calls it may make, no_new_privs keeps both across execve, and rlimits bound
// core dumps, file sizes, descriptors and writable memory.
//
// Everything that allocates or may fail in interesting ways (the Landlock ruleset, the BPF program compiled by
// libseccomp, which is not async-signal-safe) is prepared in the parent before fork; the child only issues the
// raw system calls of apply_in_child().
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace code_interpreter::detail {

/// What holds a runtime, as reported by PyodideSandbox::confinement() (the kernel part of ConfinementReport).
struct KernelLayers {
  int landlock_abi = 0;           ///< the Landlock ABI whose rules are in force; 0: none
  bool landlock_network = false;  ///< TCP bind/connect denied by Landlock (ABI >= 4)
  bool landlock_scoped = false;   ///< signals and abstract Unix sockets scoped to the domain (ABI >= 6)
  bool seccomp = false;           ///< the seccomp filter is installed
  bool no_new_privs = false;
};

/// What the confined process may touch.
struct ConfinementSpec {
  std::vector<std::filesystem::path> readable;    ///< files or directories opened read-only
  std::vector<std::filesystem::path> executable;  ///< files that may be read and executed
  std::vector<std::filesystem::path> writable;    ///< directories with every file access right
  /// Highest Landlock ABI to use, below the kernel's (the test switch "realm-only" passes 2). 0: no Landlock.
  int max_landlock_abi = 1 << 20;
  bool seccomp = true;
  std::uint64_t data_limit_bytes = 0;  ///< RLIMIT_DATA; 0: unchanged
  std::uint64_t file_size_limit_bytes = 64u << 20;  ///< RLIMIT_FSIZE
  std::uint64_t open_files_limit = 1024;            ///< RLIMIT_NOFILE
};

/// The Landlock ABI this kernel supports (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION); 0 when
/// the kernel has no Landlock or it is disabled.
int landlock_abi() noexcept;

/// The seccomp filter of the runtime as a classic BPF program, compiled by libseccomp.
/// @throws std::system_error if libseccomp fails.
std::vector<sock_filter> runtime_seccomp_program();

/// A prepared confinement. Not copyable (it owns the Landlock ruleset descriptor).
class Confinement {
 public:
  /// Builds the Landlock ruleset (paths that do not exist are skipped) and the seccomp program. A kernel without
  /// Landlock or seccomp yields a confinement without that layer, as layers() says; other failures throw.
  /// @throws std::system_error
  explicit Confinement(const ConfinementSpec& spec);
  ~Confinement();
  Confinement(const Confinement&) = delete;
  Confinement& operator=(const Confinement&) = delete;

  /// The layers apply_in_child() puts in force.
  [[nodiscard]] const KernelLayers& layers() const noexcept { return layers_; }

  /// In a forked child, before execve: rlimits, no_new_privs, Landlock, seccomp, in that order. Only raw system
  /// calls (async-signal-safe). Returns 0, or the errno of the step that failed with that step's number (1
  /// rlimits, 2 no_new_privs, 3 Landlock, 4 seccomp) in *failed_step.
  int apply_in_child(int* failed_step) const noexcept;

  /// The ruleset descriptor, which the child must keep open until apply_in_child() (-1: no Landlock).
  [[nodiscard]] int ruleset_fd() const noexcept { return ruleset_fd_; }

 private:
  KernelLayers layers_;
  int ruleset_fd_ = -1;
  std::vector<sock_filter> program_;
  sock_fprog fprog_{};
  struct Limit {
    int resource;
    rlimit value;
  };
  std::vector<Limit> limits_;
};

}  // namespace code_interpreter::detail
