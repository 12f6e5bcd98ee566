// The parts of the battery that use the API added with the confinement work: the confinement report
// (PyodideSandbox::confinement), the memory cap (PyodideOptions::memory_limit_bytes) and the byte caps of the file
// guards (max_bytes, PyodideOptions::max_download_bytes).
#include <sys/syscall.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "pyodide_test_support.hpp"
#include "security_support.hpp"

using security::fresh;
using security::kPrelude;
using security::run;
namespace fs = std::filesystem;

namespace {

// The Landlock ABI this kernel offers (0: none), asked the way the kernel documents it.
int kernel_landlock_abi() {
#ifdef SYS_landlock_create_ruleset
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */);
  return abi > 0 ? static_cast<int>(abi) : 0;
#else
  return 0;
#endif
}

bool kernel_has_seccomp() { return !security::proc_status(::getpid(), "Seccomp").empty(); }

long rss_kib(pid_t pid) {
  const auto v = security::proc_status(pid, "VmRSS");
  return v.empty() ? 0 : std::stol(v);
}

// Samples the runtime's resident memory while a call runs; the largest value seen, in KiB.
class PeakRss {
 public:
  explicit PeakRss(pid_t pid) : pid_(pid), thread_([this] {
    while (!stop_) {
      peak_ = std::max(peak_.load(), rss_kib(pid_));
      std::this_thread::sleep_for(10ms);
    }
  }) {}
  ~PeakRss() { finish(); }
  long finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return peak_;
  }

 private:
  pid_t pid_;
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_{0};
  std::thread thread_;
};

constexpr std::size_t kCap = std::size_t{512} << 20;

ci::PyodideOptions capped() {
  ci::PyodideOptions o;
  o.memory_limit_bytes = kCap;
  return o;
}

// The two outcomes the cap allows (docs/errors.md): Python's own exception with the state kept (MemoryError; a
// JavaScript buffer that cannot be allocated is Pyodide's ConversionError), or the runtime killed with a MemoryError
// naming the cap, the state lost, and a fresh runtime for the next call.
void check_cap_outcome(ci::PyodideSandbox& sb, const ci::ExecutionResult& r, const std::string& kept_state_error) {
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == (r.state_lost ? "MemoryError" : kept_state_error));
  CHECK_FALSE(r.timeout_kind.has_value());
  ci::ExecuteOptions o;
  o.timeout = std::chrono::seconds(120);
  const auto next = sb.execute_code("kept", o);
  if (r.state_lost) {
    CHECK(r.code_error->value == "the runtime exceeded its memory limit of 512 MiB");
    REQUIRE(next.code_error.has_value());
    CHECK(next.code_error->name == "NameError");
  } else if (next.state_lost) {
    // The program's allocation failed inside Python, but what it still holds plus the runtime's own growth since
    // the data limit was set (V8 compiles as a restored runtime starts) passed the cap a moment later: the watchdog
    // ended the runtime then, the cap's other outcome, exactly.
    CHECK(next.status == ci::ExecutionStatus::kError);
    REQUIRE(next.code_error.has_value());
    CHECK(next.code_error->name == "MemoryError");
    CHECK(next.code_error->value == "the runtime exceeded its memory limit of 512 MiB");
  } else {
    CHECK(security::value_of(next) == "'state'");
  }
  CHECK(security::value_of(sb.execute_code("6 * 7", o)) == "42");
}

// Runs `program` against a sandbox capped at 512 MiB and checks the outcome and the runtime's peak memory.
void exceed_cap_through(const std::string& program, const std::string& kept_state_error = "MemoryError") {
  auto sb = fresh(capped());
  REQUIRE(run(*sb, kPrelude + "kept = 'state'").status == ci::ExecutionStatus::kSuccess);
  const long host_before = rss_kib(::getpid());
  PeakRss peak(security::runtime_pid());
  ci::ExecuteOptions o;
  o.timeout = std::chrono::seconds(120);
  const auto r = sb->execute_code(program, o);
  const long peak_kib = peak.finish();
  INFO("runtime peak RSS " << peak_kib / 1024 << " MiB");
  CHECK(peak_kib <= static_cast<long>(kCap / 1024) * 3 / 2);
  CHECK(rss_kib(::getpid()) - host_before < 64 * 1024);
  check_cap_outcome(*sb, r, kept_state_error);
}

}  // namespace

TEST_CASE("the confinement report says what the mode of the run promises", "[host][confinement]") {
  auto sb = fresh();
  const ci::ConfinementReport c = sb->confinement();
  const std::string mode = security::confinement_mode();
  const int abi = kernel_landlock_abi();
  INFO("mode " << mode << ", kernel Landlock ABI " << abi);
  CHECK(c.no_new_privs);
  if (mode == "realm-only") {
    CHECK(c.realm);
    CHECK(c.landlock_abi == std::min(abi, 2));
    CHECK_FALSE(c.landlock_network);
    CHECK_FALSE(c.landlock_scoped);
    CHECK_FALSE(c.seccomp);
  } else {
    REQUIRE((mode == "full" || mode == "kernel-only"));
    CHECK(c.realm == (mode == "full"));
    if (abi > 0) {
      CHECK(c.landlock_abi >= std::min(abi, 6));
      CHECK(c.landlock_abi <= abi);
    } else {
      CHECK(c.landlock_abi == 0);
    }
    CHECK(c.landlock_network == (c.landlock_abi >= 4));
    CHECK(c.landlock_scoped == (c.landlock_abi >= 6));
    CHECK(c.seccomp == kernel_has_seccomp());
  }
}

TEST_CASE("the confinement report tells the truth: it matches the runtime process's /proc status",
          "[host][confinement]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "1").status == ci::ExecutionStatus::kSuccess);
  const auto c = sb->confinement();
  const auto pid = security::runtime_pid();
  CHECK(security::proc_status(pid, "NoNewPrivs") == (c.no_new_privs ? "1" : "0"));
  CHECK(security::proc_status(pid, "Seccomp") == (c.seccomp ? "2" : "0"));
}

TEST_CASE("the confinement report holds for a respawned runtime too", "[host][confinement]") {
  ci::PyodideOptions o;
  o.interrupt_grace = 200ms;
  auto sb = fresh(o);
  const auto before = sb->confinement();
  ci::ExecuteOptions kill;
  kill.timeout = 500ms;
  REQUIRE(sb->execute_code(test_support::kUnstoppable, kill).state_lost);
  ci::ExecuteOptions wait;
  wait.timeout = std::chrono::seconds(120);
  REQUIRE(sb->execute_code("1", wait).status == ci::ExecutionStatus::kSuccess);
  const auto after = sb->confinement();
  CHECK(after.realm == before.realm);
  CHECK(after.landlock_abi == before.landlock_abi);
  CHECK(after.seccomp == before.seccomp);
  CHECK(security::proc_status(security::runtime_pid(), "Seccomp") == (after.seccomp ? "2" : "0"));
}

TEST_CASE("the memory cap holds against the wasm heap", "[memory]") {
  exceed_cap_through(R"PY(
chunks = []
for i in range(64):
    chunks.append(b'\x01' * (32 << 20))
)PY");
}

TEST_CASE("the memory cap holds against files in the in-memory filesystem", "[memory]") {
  exceed_cap_through(R"PY(
block = b'\x01' * (32 << 20)
for i in range(64):
    with open('/tmp/fill%d.bin' % i, 'wb') as f:
        f.write(block)
)PY");
}

TEST_CASE("the memory cap holds against JavaScript buffers made from Python", "[memory]") {
  exceed_cap_through(R"PY(
block = b'\x01' * (32 << 20)
keep = []
for i in range(64):
    keep.append(_to_js(block))
)PY", "ConversionError");
}

TEST_CASE("the memory cap holds against JavaScript buffers of the host realm", "[memory]") {
  // With the realm closed the program falls back to buffers it can make itself, which the cap also counts.
  exceed_cap_through(R"PY(
g = await find_global()
keep = []
for i in range(64):
    try:
        b = need(g).Uint8Array.new(32 << 20)
        b.fill(1)
    except BaseException:
        b = _to_js(b'\x01' * (32 << 20))
    keep.append(b)
)PY", "ConversionError");
}

TEST_CASE("a sandbox under its memory cap works normally", "[memory]") {
  auto sb = fresh(capped());
  const auto r = run(*sb, "data = b'\\x01' * (64 << 20)\nlen(data)");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(security::value_of(r) == "67108864");
}

TEST_CASE("download_file stops at max_bytes counted on the bytes read, not on the size the runtime claims",
          "[guards]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "open('/files/big.bin', 'wb').write(b'\\x02' * (48 << 20))").status ==
          ci::ExecutionStatus::kSuccess);
  // The program makes the runtime claim the file is 10 bytes long.
  REQUIRE(run(*sb, kPrelude + R"PY(
real_stat = _pjs.FS.stat
def stat(path, *a):
    st = real_stat(path)
    try:
        st.size = 10
    except BaseException:
        pass
    return st
try:
    _pjs.FS.stat = _proxy(stat)
except BaseException:
    pass
None
)PY").status == ci::ExecutionStatus::kSuccess);
  // The program owns its files' answers (docs/security.md): it can make the runtime send fewer bytes than the file
  // holds, never make the host take more than the cap. What arrives is what was sent, counted on the bytes.
  const long host_before = rss_kib(::getpid());
  const auto got = sb->download_file("/files/big.bin", std::nullopt, std::uint64_t{1} << 20);
  CHECK(rss_kib(::getpid()) - host_before < 32 * 1024);
  REQUIRE(got.has_value());
  CHECK(*got == std::string(10, '\x02'));
  CHECK(sb->read_file("/files/big.bin", std::uint64_t{1} << 20) == std::string(10, '\x02'));
  security::Scratch scratch;
  const auto dest = scratch.dir() / "big.bin";
  CHECK(sb->download_file_to("/files/big.bin", dest, std::nullopt, std::uint64_t{1} << 20));
  CHECK(fs::file_size(dest) == 10u);
  // A fresh sandbox, whose runtime does not lie, is held to the cap on the real bytes.
  auto honest = fresh();
  REQUIRE(run(*honest, "open('/files/big.bin', 'wb').write(b'\\x02' * (48 << 20))").status ==
          ci::ExecutionStatus::kSuccess);
  CHECK_FALSE(honest->download_file("/files/big.bin", std::nullopt, std::uint64_t{1} << 20).has_value());
  CHECK_THROWS_AS(honest->read_file("/files/big.bin", std::uint64_t{1} << 20), ci::SandboxExecutionError);
  const auto dest2 = scratch.dir() / "big2.bin";
  CHECK_FALSE(honest->download_file_to("/files/big.bin", dest2, std::nullopt, std::uint64_t{1} << 20));
  CHECK_FALSE(fs::exists(dest2));
}

TEST_CASE("the default download cap of the options applies when no max_bytes is given", "[guards]") {
  ci::PyodideOptions o;
  o.max_download_bytes = std::uint64_t{1} << 20;
  auto sb = fresh(o);
  REQUIRE(run(*sb, "open('/files/big.bin', 'wb').write(b'\\x02' * (4 << 20))").status ==
          ci::ExecutionStatus::kSuccess);
  CHECK_FALSE(sb->download_file("/files/big.bin").has_value());
  CHECK_THROWS_AS(sb->read_file("/files/big.bin"), ci::SandboxExecutionError);
}
