#include "pyodide/confinement.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace code_interpreter::detail {

namespace {

// Landlock's user interface (linux/landlock.h). Debian 12's headers stop at ABI 2, so the structures and every
// constant are spelled here, with the ABI that introduced each.
struct LandlockRulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;  // ABI 4
  std::uint64_t scoped;              // ABI 6
};
struct __attribute__((packed)) LandlockPathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};
constexpr std::uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;
constexpr std::uint64_t kFsExecute = 1ull << 0;
constexpr std::uint64_t kFsWriteFile = 1ull << 1;
constexpr std::uint64_t kFsReadFile = 1ull << 2;
constexpr std::uint64_t kFsReadDir = 1ull << 3;
constexpr std::uint64_t kFsAbi1 = (1ull << 13) - 1;  // EXECUTE .. MAKE_SYM
constexpr std::uint64_t kFsRefer = 1ull << 13;       // ABI 2
constexpr std::uint64_t kFsTruncate = 1ull << 14;    // ABI 3
constexpr std::uint64_t kFsIoctlDev = 1ull << 15;    // ABI 5
constexpr std::uint64_t kNetBindTcp = 1ull << 0;     // ABI 4
constexpr std::uint64_t kNetConnectTcp = 1ull << 1;  // ABI 4
constexpr std::uint64_t kScopeAbstractUnixSocket = 1ull << 0;  // ABI 6
constexpr std::uint64_t kScopeSignal = 1ull << 1;              // ABI 6
// The rights a rule on a file (rather than a directory) may carry.
constexpr std::uint64_t kFileRights = kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

std::uint64_t fs_rights(int abi) {
  std::uint64_t rights = kFsAbi1;
  if (abi >= 2) rights |= kFsRefer;
  if (abi >= 3) rights |= kFsTruncate;
  if (abi >= 5) rights |= kFsIoctlDev;
  return rights;
}

[[noreturn]] void throw_errno(int e, const char* what) { throw std::system_error(e, std::generic_category(), what); }

// Adds one path-beneath rule; a path that does not exist (or cannot be opened) is skipped: the process then
// simply cannot reach it.
void add_path_rule(int ruleset, const std::filesystem::path& path, std::uint64_t rights) {
  const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return;
  }
  if (!S_ISDIR(st.st_mode)) rights &= kFileRights;
  LandlockPathBeneathAttr attr{rights, fd};
  const long rc = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &attr, 0);
  const int e = errno;
  ::close(fd);
  if (rc != 0) throw_errno(e, "landlock_add_rule");
}

bool seccomp_available() {
  // SECCOMP_GET_ACTION_AVAIL answers 0 when filters (and errno returns) are supported.
  const std::uint32_t action = SECCOMP_RET_ERRNO;
  return ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

class SeccompContext {
 public:
  explicit SeccompContext(std::uint32_t default_action) : ctx_(seccomp_init(default_action)) {
    if (ctx_ == nullptr) throw_errno(ENOMEM, "seccomp_init");
  }
  ~SeccompContext() { seccomp_release(ctx_); }
  SeccompContext(const SeccompContext&) = delete;
  SeccompContext& operator=(const SeccompContext&) = delete;
  scmp_filter_ctx get() const { return ctx_; }

  // A rule on a system call this architecture does not have is skipped (fork and vfork on arm64, say).
  template <typename... Cmp>
  void rule(std::uint32_t action, const char* name, Cmp... cmp) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;
    const int rc = seccomp_rule_add(ctx_, action, nr, sizeof...(Cmp), cmp...);
    if (rc < 0) throw_errno(-rc, name);
  }

 private:
  scmp_filter_ctx ctx_;
};

}  // namespace

int landlock_abi() noexcept {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

std::vector<sock_filter> runtime_seccomp_program() {
  // A denylist: everything Deno, V8 and tokio use is allowed, the calls that reach past the process (other
  // processes, the kernel's keyrings, namespaces, mounts, modules, BPF, the network) are refused. What Deno needs
  // was found by running the real host script under the filter (tests/integration/pyodide_confinement_test.cpp).
  SeccompContext ctx(SCMP_ACT_ALLOW);
  // no_new_privs is set by apply_in_child itself, before Landlock, which needs it too.
  if (const int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc < 0) throw_errno(-rc, "seccomp_attr_set");
  const auto deny = SCMP_ACT_ERRNO(EPERM);

  // No socket of any family: Deno's own channels are socketpair(AF_UNIX), which stays.
  ctx.rule(deny, "socket");
  ctx.rule(deny, "socketpair", SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  // clone3 passes its flags in memory the filter cannot read: answered ENOSYS, glibc falls back to clone, whose
  // flags are an argument. Threads (CLONE_THREAD) are allowed; a new process or a new namespace is not.
  ctx.rule(SCMP_ACT_ERRNO(ENOSYS), "clone3");
  ctx.rule(deny, "clone", SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  for (const unsigned long flag : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                                   CLONE_NEWPID, CLONE_NEWNET}) {
    ctx.rule(deny, "clone", SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
  }
  // Terminal input injection, should a descriptor of a terminal ever reach the process.
  ctx.rule(deny, "ioctl", SCMP_A1(SCMP_CMP_EQ, TIOCSTI));
  ctx.rule(deny, "ioctl", SCMP_A1(SCMP_CMP_EQ, TIOCLINUX));
  // personality: no flag that weakens the address space (no ASLR, executable data, page zero, old layouts).
  for (const unsigned long flag : {0x0040000ul /* ADDR_NO_RANDOMIZE */, 0x0100000ul /* MMAP_PAGE_ZERO */,
                                   0x0200000ul /* ADDR_COMPAT_LAYOUT */, 0x0400000ul /* READ_IMPLIES_EXEC */,
                                   0x0800000ul /* ADDR_LIMIT_32BIT */, 0x8000000ul /* ADDR_LIMIT_3GB */}) {
    ctx.rule(deny, "personality", SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
  }
  for (const char* name : {
           "fork", "vfork",
           // a program from memory: Landlock's execute right is about paths, and a memfd has none
           "execveat", "memfd_create", "memfd_secret",
           // other processes' memory and descriptors
           "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
           // the kernel's keyrings
           "keyctl", "add_key", "request_key",
           // BPF, performance counters, io_uring, userfaultfd
           "bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
           // namespaces, mounts and the root
           "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
           "fspick", "move_mount", "open_tree", "mount_setattr", "name_to_handle_at", "open_by_handle_at",
           // modules and kexec
           "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
           // the machine: clocks, names, swap, accounting, quotas, the kernel log, I/O ports
           "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "settimeofday",
           "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm",
           "vhangup", "uselib", "lookup_dcookie", "fanotify_init", "nfsservctl",
           // other processes' memory placement
           "move_pages", "migrate_pages",
       }) {
    ctx.rule(deny, name);
  }

  // libseccomp 2.5 exports only into a descriptor: a memfd, read back.
  const int fd = ::memfd_create("code_interpreter-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw_errno(errno, "memfd_create");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (const int rc = seccomp_export_bpf(ctx.get(), fd); rc < 0) throw_errno(-rc, "seccomp_export_bpf");
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) throw_errno(EINVAL, "seccomp_export_bpf");
  std::vector<sock_filter> program(static_cast<std::size_t>(size) / sizeof(sock_filter));
  if (::pread(fd, program.data(), static_cast<std::size_t>(size), 0) != size) throw_errno(EIO, "pread");
  return program;
}

Confinement::Confinement(const ConfinementSpec& spec) {
  const auto limit = [&](int resource, std::uint64_t value) {
    limits_.push_back({resource, rlimit{static_cast<rlim_t>(value), static_cast<rlim_t>(value)}});
  };
  limit(RLIMIT_CORE, 0);
  limit(RLIMIT_FSIZE, spec.file_size_limit_bytes);
  limit(RLIMIT_NOFILE, spec.open_files_limit);
  if (spec.data_limit_bytes > 0) limit(RLIMIT_DATA, spec.data_limit_bytes);
  layers_.no_new_privs = true;

  const int abi = std::min(landlock_abi(), spec.max_landlock_abi);
  if (abi > 0) {
    const std::uint64_t all = fs_rights(abi);
    LandlockRulesetAttr attr{all, 0, 0};
    if (abi >= 4) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    if (abi >= 6) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    // The size tells the kernel which fields exist: ABI 1-3 know only the first, 4-5 the first two.
    const std::size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(std::uint64_t) : sizeof(std::uint64_t);
    const long fd = ::syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0) throw_errno(errno, "landlock_create_ruleset");
    ruleset_fd_ = static_cast<int>(fd);
    try {
      for (const auto& p : spec.readable) add_path_rule(ruleset_fd_, p, kFsReadFile | kFsReadDir);
      for (const auto& p : spec.executable) add_path_rule(ruleset_fd_, p, kFsReadFile | kFsExecute);
      for (const auto& p : spec.writable) add_path_rule(ruleset_fd_, p, all);
    } catch (...) {
      ::close(ruleset_fd_);
      throw;
    }
    // No TCP rule is added: with the network rights handled, every bind and connect is refused.
    layers_.landlock_abi = abi;
    layers_.landlock_network = abi >= 4;
    layers_.landlock_scoped = abi >= 6;
  }

  if (spec.seccomp && seccomp_available()) {
    program_ = runtime_seccomp_program();
    fprog_.len = static_cast<unsigned short>(program_.size());
    fprog_.filter = program_.data();
    layers_.seccomp = true;
  }
}

Confinement::~Confinement() {
  if (ruleset_fd_ >= 0) ::close(ruleset_fd_);
}

int Confinement::apply_in_child(int* failed_step) const noexcept {
  const auto fail = [&](int step) {
    if (failed_step != nullptr) *failed_step = step;
    return errno;
  };
  for (const auto& l : limits_) {
    if (::syscall(SYS_prlimit64, 0, l.resource, &l.value, nullptr) != 0) return fail(1);
  }
  if (::syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1ul, 0ul, 0ul, 0ul) != 0) return fail(2);
  if (ruleset_fd_ >= 0 && ::syscall(SYS_landlock_restrict_self, ruleset_fd_, 0u) != 0) return fail(3);
  if (layers_.seccomp && ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0u, &fprog_) != 0) return fail(4);
  return 0;
}

}  // namespace code_interpreter::detail
