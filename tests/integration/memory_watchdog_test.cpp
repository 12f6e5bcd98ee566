// The host-side half of the memory cap (src/pyodide/memory_watchdog.hpp) against real child processes.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "pyodide/memory_watchdog.hpp"

using code_interpreter::detail::MemoryWatchdog;
using namespace std::chrono_literals;

namespace {

// A child that waits for one byte on a pipe, then maps `bytes` of private memory that the kernel fills in at once
// (exit 0, or 1 if the mapping failed) and then sleeps until killed. MAP_POPULATE, not a memset: under
// ThreadSanitizer a memset also fills in shadow memory, twice the size of what it writes, so the child would hold
// three times what it allocated.
struct Allocator {
  explicit Allocator(std::size_t bytes) {
    int p[2];
    REQUIRE(::pipe(p) == 0);
    pid = ::fork();
    if (pid == 0) {
      ::close(p[1]);
      char c;
      if (::read(p[0], &c, 1) != 1) ::_exit(2);
      void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
      if (m == MAP_FAILED) ::_exit(1);
      ::pause();
      ::_exit(0);
    }
    ::close(p[0]);
    go_fd = p[1];
  }
  ~Allocator() {
    if (pid > 0) {  // never kill(-1): that would signal every process of the user
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    ::close(go_fd);
  }
  void go() const { REQUIRE(::write(go_fd, "x", 1) == 1); }
  int wait_status() const {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }
  pid_t pid = -1;
  int go_fd = -1;
};

}  // namespace

TEST_CASE("the watchdog kills a process whose resident memory passes the limit, once", "[watchdog][concurrency]") {
  Allocator a(std::size_t{256} << 20);
  std::atomic<int> calls{0};
  const pid_t child = a.pid;
  MemoryWatchdog w(child, std::uint64_t{64} << 20, 20ms, [&calls, child] {
    ++calls;
    ::kill(child, SIGKILL);
  });
  a.go();
  const int status = a.wait_status();
  a.pid = -1;
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  std::this_thread::sleep_for(100ms);
  CHECK(w.exceeded());
  CHECK(calls == 1);
}

TEST_CASE("the watchdog leaves a process under the limit alone", "[watchdog][concurrency]") {
  Allocator a(std::size_t{16} << 20);
  std::atomic<int> calls{0};
  {
    MemoryWatchdog w(a.pid, std::uint64_t{256} << 20, 20ms, [&] { ++calls; });
    a.go();
    std::this_thread::sleep_for(300ms);
    CHECK_FALSE(w.exceeded());
  }
  CHECK(calls == 0);
  const auto used = code_interpreter::detail::resident_memory(a.pid);
  REQUIRE(used.has_value());
  CHECK(*used >= (std::uint64_t{16} << 20));
  CHECK(*used < (std::uint64_t{64} << 20));
}

TEST_CASE("a tightened data limit makes a later allocation past the cap fail", "[watchdog]") {
  Allocator a(std::size_t{256} << 20);
  REQUIRE(code_interpreter::detail::tighten_data_limit(a.pid, std::uint64_t{128} << 20));
  a.go();
  const int status = a.wait_status();
  a.pid = -1;
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);  // the 256 MiB mapping failed
}

TEST_CASE("a tightened data limit still allows what the cap leaves", "[watchdog]") {
  Allocator a(std::size_t{32} << 20);
  REQUIRE(code_interpreter::detail::tighten_data_limit(a.pid, std::uint64_t{128} << 20));
  a.go();
  std::this_thread::sleep_for(300ms);
  int status = 0;
  CHECK(::waitpid(a.pid, &status, WNOHANG) == 0);  // still running: the mapping succeeded
}

TEST_CASE("resident_memory of a process that is gone is nullopt", "[watchdog]") {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  CHECK_FALSE(code_interpreter::detail::resident_memory(pid).has_value());
  CHECK_FALSE(code_interpreter::detail::tighten_data_limit(pid, 1));
}
