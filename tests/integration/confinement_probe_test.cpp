// The kernel layer on its own (src/pyodide/confinement.hpp): a forked child confined exactly as the Deno runtime
// is tries the host's files, the network, other processes and privileges with raw system calls, so what these
// tests see is the kernel's answer, with no Deno permission check in front of it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/prctl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "pyodide/confinement.hpp"

namespace fs = std::filesystem;
using code_interpreter::detail::Confinement;
using code_interpreter::detail::ConfinementSpec;

namespace {

// Runs `probe` in a child confined by `spec` and returns what it returned (an errno value, 0 for success), or
// -1000 - step if the confinement could not be applied, or -2000 - signal if the child died of a signal.
template <typename Probe>
int confined(const ConfinementSpec& spec, Probe probe) {
  const Confinement confinement(spec);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int step = 0;
    if (confinement.apply_in_child(&step) != 0) ::_exit(100 + step);
    ::_exit(probe());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return -2000 - WTERMSIG(status);
  const int code = WEXITSTATUS(status);
  return code >= 100 && code < 110 ? -1000 - (code - 100) : code;
}

int errno_of(long rc) { return rc < 0 ? errno : 0; }

// A private folder with a readable file, for the rules that must allow something.
struct Scratch {
  Scratch() {
    char pattern[] = "/tmp/ci-confinement-XXXXXX";
    dir = ::mkdtemp(pattern);
    std::ofstream(dir / "allowed.txt") << "allowed\n";
    std::ofstream(dir / "other.txt") << "other\n";
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path dir;
};

ConfinementSpec spec_for(const Scratch& s) {
  ConfinementSpec spec;
  spec.readable = {s.dir / "allowed.txt"};
  return spec;
}

bool kernel_has_landlock(int abi) { return code_interpreter::detail::landlock_abi() >= abi; }

}  // namespace

TEST_CASE("this machine's kernel gives the runtime Landlock with TCP rules and scoping, and seccomp",
          "[confinement]") {
  const Confinement c(ConfinementSpec{});
  INFO("Landlock ABI " << c.layers().landlock_abi);
  CHECK(c.layers().landlock_abi == code_interpreter::detail::landlock_abi());
  CHECK(c.layers().landlock_abi >= 4);
  CHECK(c.layers().landlock_network);
  CHECK(c.layers().landlock_scoped == (c.layers().landlock_abi >= 6));
  CHECK(c.layers().seccomp);
  CHECK(c.layers().no_new_privs);
}

TEST_CASE("a confined process reads the file it is given and nothing else of the host", "[confinement]") {
  Scratch s;
  const auto spec = spec_for(s);
  const auto allowed = s.dir / "allowed.txt";
  const auto other = s.dir / "other.txt";
  CHECK(confined(spec, [&] { return errno_of(::open(allowed.c_str(), O_RDONLY)); }) == 0);
  CHECK(confined(spec, [&] { return errno_of(::open(other.c_str(), O_RDONLY)); }) == EACCES);
  CHECK(confined(spec, [] { return errno_of(::open("/etc/passwd", O_RDONLY)); }) == EACCES);
  CHECK(confined(spec, [] { return errno_of(::open("/etc/hostname", O_RDONLY)); }) == EACCES);
  CHECK(confined(spec, [] { return errno_of(::open("/proc/1/environ", O_RDONLY)); }) == EACCES);
  CHECK(confined(spec, [] { return errno_of(::open("/proc/self/mem", O_RDWR)); }) == EACCES);
  CHECK(confined(spec, [] { return errno_of(::open("/sys/kernel/uevent_seqnum", O_RDONLY)); }) == EACCES);
  CHECK(confined(spec, [] { return errno_of(::open("/", O_RDONLY | O_DIRECTORY)); }) == EACCES);
}

TEST_CASE("a confined process writes nowhere: not even the file it may read, nor a new file", "[confinement]") {
  Scratch s;
  const auto spec = spec_for(s);
  const auto allowed = s.dir / "allowed.txt";
  const auto fresh = s.dir / "fresh.txt";
  CHECK(confined(spec, [&] { return errno_of(::open(allowed.c_str(), O_WRONLY)); }) == EACCES);
  CHECK(confined(spec, [&] { return errno_of(::open(fresh.c_str(), O_WRONLY | O_CREAT, 0600)); }) == EACCES);
  CHECK(confined(spec, [&] { return errno_of(::unlink(allowed.c_str())); }) == EACCES);
  CHECK(confined(spec, [] { return errno_of(::mkdir("/tmp/ci-confinement-escape", 0700)); }) == EACCES);
  CHECK(fs::exists(allowed));
  CHECK_FALSE(fs::exists(fresh));
  CHECK_FALSE(fs::exists("/tmp/ci-confinement-escape"));
}

TEST_CASE("a confined process writes inside its writable folder only", "[confinement]") {
  Scratch s;
  auto spec = spec_for(s);
  fs::create_directory(s.dir / "private");
  spec.writable = {s.dir / "private"};
  const auto inside = s.dir / "private" / "f";
  const auto outside = s.dir / "g";
  CHECK(confined(spec, [&] { return errno_of(::open(inside.c_str(), O_WRONLY | O_CREAT, 0600)); }) == 0);
  CHECK(confined(spec, [&] { return errno_of(::open(outside.c_str(), O_WRONLY | O_CREAT, 0600)); }) == EACCES);
  CHECK(fs::exists(inside));
  CHECK_FALSE(fs::exists(outside));
}

TEST_CASE("a confined process executes nothing but what it is given", "[confinement]") {
  Scratch s;
  const auto spec = spec_for(s);
  CHECK(confined(spec, [] {
          char* const argv[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"), const_cast<char*>("true"),
                                nullptr};
          ::execve("/bin/sh", argv, nullptr);
          return errno;
        }) == EACCES);
  // Nor a program from memory, which has no path for Landlock to judge.
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_memfd_create, "x", 0)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_execveat, 0, "", nullptr, nullptr, 0x1000)); }) == EPERM);
}

TEST_CASE("a confined process opens no socket of any family, and socketpair(AF_UNIX) stays", "[confinement]") {
  Scratch s;
  const auto spec = spec_for(s);
  for (const int family : {AF_INET, AF_INET6, AF_UNIX, AF_NETLINK, AF_PACKET}) {
    INFO("family " << family);
    CHECK(confined(spec, [&] { return errno_of(::socket(family, SOCK_STREAM, 0)); }) == EPERM);
    CHECK(confined(spec, [&] { return errno_of(::socket(family, SOCK_DGRAM, 0)); }) == EPERM);
  }
  CHECK(confined(spec, [] {
          int sv[2];
          return errno_of(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        }) == 0);
  CHECK(confined(spec, [] {
          int sv[2];
          return errno_of(::socketpair(AF_INET, SOCK_STREAM, 0, sv));
        }) == EPERM);
}

TEST_CASE("without seccomp, Landlock alone refuses TCP connect and bind (ABI >= 4)", "[confinement]") {
  if (!kernel_has_landlock(4)) {
    WARN("the kernel's Landlock has no TCP rules");
    return;
  }
  Scratch s;
  auto spec = spec_for(s);
  spec.seccomp = false;
  // A listener of the host's on loopback: the confined process must not reach it.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 1) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  CHECK(confined(spec, [&] {
          const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
          if (fd < 0) return 200;
          return errno_of(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr));
        }) == EACCES);
  CHECK(confined(spec, [] {
          const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
          if (fd < 0) return 200;
          sockaddr_in any{};
          any.sin_family = AF_INET;
          any.sin_port = htons(38123);
          return errno_of(::bind(fd, reinterpret_cast<const sockaddr*>(&any), sizeof any));
        }) == EACCES);
  ::close(listener);
}

TEST_CASE("without seccomp, Landlock scoping refuses the host's abstract Unix sockets and signals (ABI >= 6)",
          "[confinement]") {
  if (!kernel_has_landlock(6)) {
    WARN("the kernel's Landlock has no scoping");
    return;
  }
  Scratch s;
  auto spec = spec_for(s);
  spec.seccomp = false;
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "ci-confinement-" + std::to_string(::getpid());
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), addr_len) == 0);
  REQUIRE(::listen(listener, 1) == 0);
  CHECK(confined(spec, [&] {
          const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
          if (fd < 0) return 200;
          return errno_of(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), addr_len));
        }) == EPERM);
  ::close(listener);
  const pid_t parent = ::getpid();
  CHECK(confined(spec, [&] { return errno_of(::kill(parent, 0)); }) == EPERM);
  CHECK(confined(spec, [&] { return errno_of(::kill(parent, SIGTERM)); }) == EPERM);
}

TEST_CASE("a confined process starts threads but no process, and reaches no other process", "[confinement]") {
  Scratch s;
  const auto spec = spec_for(s);
  CHECK(confined(spec, [] {
          pthread_t t;
          const int rc = ::pthread_create(&t, nullptr, [](void*) -> void* { return nullptr; }, nullptr);
          if (rc != 0) return rc;
          return ::pthread_join(t, nullptr);
        }) == 0);
  CHECK(confined(spec, [] {
          const pid_t child = ::fork();
          if (child == 0) ::_exit(0);
          return child < 0 ? errno : 0;
        }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_vfork)); }) == EPERM);
  const pid_t parent = ::getpid();
  CHECK(confined(spec, [&] { return errno_of(::ptrace(PTRACE_ATTACH, parent, nullptr, nullptr)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)); }) == EPERM);
  CHECK(confined(spec, [&] {
          char buf[8];
          iovec local{buf, sizeof buf}, remote{buf, sizeof buf};
          return errno_of(::process_vm_readv(parent, &local, 1, &remote, 1, 0));
        }) == EPERM);
  CHECK(confined(spec, [&] {
          const long pidfd = ::syscall(SYS_pidfd_open, parent, 0);
          if (pidfd < 0) return 200;
          return errno_of(::syscall(SYS_pidfd_getfd, pidfd, 0, 0));
        }) == EPERM);
}

TEST_CASE("a confined process makes no namespace, mount, keyring, BPF or io_uring call", "[confinement]") {
  Scratch s;
  const auto spec = spec_for(s);
  CHECK(confined(spec, [] { return errno_of(::unshare(CLONE_NEWUSER)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::unshare(CLONE_NEWNET)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_clone3, nullptr, 0)); }) == ENOSYS);
  CHECK(confined(spec, [] { return errno_of(::setns(0, 0)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, nullptr)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::chroot("/tmp")); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_keyctl, 0, 0, 0, 0, 0)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_add_key, "user", "k", "v", 1, 0)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_bpf, 0, nullptr, 0)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_io_uring_setup, 1, nullptr)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_userfaultfd, 0)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_personality, 0x0040000ul)); }) == EPERM);
  CHECK(confined(spec, [] { return errno_of(::syscall(SYS_init_module, nullptr, 0, "")); }) == EPERM);
}

TEST_CASE("a confined process has no_new_privs, no core dumps and bounded files, descriptors and data",
          "[confinement]") {
  Scratch s;
  auto spec = spec_for(s);
  spec.data_limit_bytes = std::uint64_t{3} << 30;
  CHECK(confined(spec, [] { return ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); }) == 1);
  CHECK(confined(spec, [] { return ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0); }) == 2);
  const auto limit_is = [&](int resource, std::uint64_t want) {
    return confined(spec, [&] {
      rlimit l{};
      ::getrlimit(resource, &l);
      return l.rlim_cur == want && l.rlim_max == want ? 0 : 1;
    });
  };
  CHECK(limit_is(RLIMIT_CORE, 0) == 0);
  CHECK(limit_is(RLIMIT_FSIZE, 64u << 20) == 0);
  CHECK(limit_is(RLIMIT_NOFILE, 1024) == 0);
  CHECK(limit_is(RLIMIT_DATA, std::uint64_t{3} << 30) == 0);
  // RLIMIT_DATA counts private writable mappings: 4 GiB of them fail at once.
  CHECK(confined(spec, [] {
          void* p = ::mmap(nullptr, std::size_t{4} << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
          return p == MAP_FAILED ? errno : 0;
        }) == ENOMEM);
}

TEST_CASE("the realm-only test mode's limits: Landlock ABI 2 and no seccomp leave TCP to Deno alone",
          "[confinement]") {
  ConfinementSpec spec;
  spec.max_landlock_abi = 2;
  spec.seccomp = false;
  const Confinement c(spec);
  CHECK(c.layers().landlock_abi == std::min(2, code_interpreter::detail::landlock_abi()));
  CHECK_FALSE(c.layers().landlock_network);
  CHECK_FALSE(c.layers().landlock_scoped);
  CHECK_FALSE(c.layers().seccomp);
  CHECK(confined(spec, [] { return ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0); }) == 0);
  CHECK(confined(spec, [] { return errno_of(::open("/etc/passwd", O_RDONLY)); }) == EACCES);
}
