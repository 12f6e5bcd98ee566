// pyodide_bench: how much the Pyodide sandbox adds on top of Pyodide itself.
//
//   pyodide_bench [--cold N] [--warm M] [--runtime DIR] [--raw-script FILE] [--raw-interrupt-buffer]
//
// cold: from PyodideSandbox::create() until execute_code("1+1") returns "2", against raw_pyodide.mjs's
//       performance.now() when its first runner.run("1+1") resolves (same Deno, flags, permissions, runner.py).
// warm: one execute_code("1+1") round trip after kWarmup calls, against one `await runner.run("1+1", "{}")` inside
//       Deno. The difference is the C++ <-> Deno frame transport, the stdin worker and the result handling.
//
// snapshot: create() restoring the memory snapshot, against a new Deno restoring the same image (fresh DENO_DIR,
//       timed from spawn). pool: PyodidePool::acquire() plus execute_code("1+1") with a ready runtime waiting, and the
//       runtimes per second a drained pool refills. respawn: from the return of a call whose runtime was killed
//       (interrupt_grace 0) to the next call's result: a sandbox of its own restoring the snapshot, and one from a
//       pool taking the pool's ready runtime. idle RSS: a restored runtime's resident memory, idle.
//
// Cold runs of the two sides alternate so that drift of a shared machine affects both alike. The last cold sandbox
// and the last raw process go on to the warm phase, which saves two runtime starts; each cold figure is taken before
// any warm call runs. Exit status: 0 when every measurement ran (whether or not the targets are met), 1 when a run
// failed, 64 for bad usage.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/code_interpreter.hpp"
#include "pyodide_test_support.hpp"

namespace ci = code_interpreter;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kWarmup = 50;
// Targets of docs/benchmarks.md: containment costs no speed; a snapshot start is close to raw Pyodide restoring the
// same image and a quarter of a cold one.
constexpr double kColdTarget = 1.0;
constexpr double kWarmTarget = 1.2;
constexpr double kWarmP99Target = 1.5;
constexpr double kSnapshotTarget = 1.2;
constexpr double kSnapshotColdTarget = 0.25;
constexpr double kRespawnColdTarget = 0.25;
constexpr double kPoolTargetMs = 5.0;
constexpr double kIdleRssBeforeMiB = 198.0;  // idle RSS per sandbox before snapshots (193-203 MiB measured)
constexpr double kIdleRssTarget = 0.6;
// A raw run that says nothing for this long is stuck; the bench fails rather than hanging.
constexpr int kRawTimeoutMs = 300'000;

struct Args {
  int cold = 5;
  int warm = 2000;
  fs::path runtime = CI_BENCH_RUNTIME_DIR;
  fs::path raw_script = CI_BENCH_RAW_SCRIPT;
  bool raw_interrupt_buffer = false;
};

double ms_since(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

struct Stats {
  double median = 0;
  double p99 = 0;
  double min = 0;
};

// Median (mean of the two middle values for an even count) and nearest-rank p99, the same for both columns.
Stats stats_of(std::vector<double> v) {
  if (v.empty()) throw std::runtime_error("no samples");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  Stats s;
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.p99 = v[static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n))) - 1];
  s.min = v.front();
  return s;
}

// The machine's CPU pressure (share of time some runnable task waited for a CPU, last 10 s): start-up and round trip
// latencies of a multi-threaded runtime suffer far more from a busy machine than the single-threaded baseline does.
std::string cpu_pressure() {
  std::ifstream psi("/proc/pressure/cpu");
  std::string line;
  if (!std::getline(psi, line)) return "unavailable";
  const auto at = line.find("avg10=");
  if (at == std::string::npos) return "unavailable";
  return line.substr(at + 6, line.find(' ', at) - at - 6) + "%";
}

std::string load_average() {
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) != 3) return "unavailable";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return buf;
}

// The kernel's running DAMON monitors (/sys/kernel/mm/damon/admin/kdamonds): each samples pages' accessed bits,
// every few hundred ms, and may page out what it finds cold. Under a hypervisor that keeps shadow page tables, a
// page whose accessed bit was cleared faults into the hypervisor at its next touch: a thread that was idle for a
// second pays for its whole working set again, so the figures of first calls after a pause depend on it.
std::string damon_monitors() {
  std::error_code ec;
  const fs::path base = "/sys/kernel/mm/damon/admin/kdamonds";
  if (!fs::is_directory(base, ec)) return "none";
  int on = 0;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    std::ifstream state(entry.path() / "state");
    std::string word;
    if (state >> word && word == "on") ++on;
  }
  return on ? std::to_string(on) + " running" : "none running";
}

void print_machine_facts() {
  std::string model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  std::printf("machine: nproc %ld, CPU %s, DAMON monitors: %s\n", ::sysconf(_SC_NPROCESSORS_ONLN), model.c_str(),
              damon_monitors().c_str());
  std::printf("before: load average %s, CPU pressure avg10 %s\n", load_average().c_str(), cpu_pressure().c_str());
  std::fflush(stdout);  // progress goes to stderr; keep the two in order on a terminal
}

// Reads the runtime's large files once, so the first timed start of either side does not pay for the disk.
void prime_page_cache(const fs::path& runtime) {
  const fs::path pyodide = runtime / "node_modules" / "pyodide";
  std::vector<char> buf(1 << 20);
  for (const fs::path& f : {runtime / "node_modules" / "@deno" / "linux-x64-glibc" / "deno",
                            pyodide / "pyodide.asm.wasm", pyodide / "python_stdlib.zip", pyodide / "pyodide.asm.mjs",
                            pyodide / "pyodide.mjs", pyodide / "pyodide-lock.json"}) {
    std::ifstream in(f, std::ios::binary);
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    }
  }
}

// ---- our side ----

struct OursCold {
  double total_ms = 0;   // create() called -> execute_code("1+1") returned
  double create_ms = 0;  // of which create()
};

void check_two(const ci::ExecutionResult& r, const char* when) {
  const bool ok = r.status == ci::ExecutionStatus::kSuccess && r.results.size() == 1 && r.results[0].is_main_result &&
                  r.results[0].data.count("text/plain") && r.results[0].data.at("text/plain") == "2";
  if (!ok) {
    throw std::runtime_error(std::string("execute_code(\"1+1\") ") + when + " did not return 2: " +
                             std::string(ci::to_string(r.status)) + " " + r.text());
  }
}

// create() -> first result; cold (no snapshot) unless `snapshot_dir` is given.
OursCold ours_cold(const fs::path& runtime, std::unique_ptr<ci::PyodideSandbox>& keep,
                   const std::optional<fs::path>& snapshot_dir = std::nullopt) {
  ci::PyodideOptions options;
  options.runtime_dir = runtime;
  options.use_snapshot = snapshot_dir.has_value();
  options.snapshot_dir = snapshot_dir;
  const auto t0 = Clock::now();
  auto sandbox = ci::PyodideSandbox::create(std::move(options));
  const auto t1 = Clock::now();
  const auto r = sandbox->execute_code("1+1");
  const auto t2 = Clock::now();
  check_two(r, "after create");
  keep = std::move(sandbox);
  return {ms_since(t0, t2), ms_since(t0, t1)};
}

std::vector<double> ours_warm(ci::PyodideSandbox& sandbox, int count) {
  for (int i = 0; i < kWarmup; ++i) check_two(sandbox.execute_code("1+1"), "during warm-up");
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    const auto r = sandbox.execute_code("1+1");
    const auto t1 = Clock::now();
    check_two(r, "while timed");
    samples.push_back(ms_since(t0, t1));
  }
  return samples;
}

// The pid of this process's one Deno child (the sandbox's runtime), or -1.
pid_t runtime_pid() {
  const auto pids = test_support::deno_children();
  return pids.size() == 1 ? pids[0] : -1;
}

// VmRSS of `pid` in MiB (/proc/<pid>/status), and RssAnon beside it.
std::pair<double, double> rss_mib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  double rss = 0, anon = 0;
  for (std::string line; std::getline(status, line);) {
    long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %ld kB", &kb) == 1) rss = static_cast<double>(kb) / 1024;
    if (std::sscanf(line.c_str(), "RssAnon: %ld kB", &kb) == 1) anon = static_cast<double>(kb) / 1024;
  }
  return {rss, anon};
}

ci::PyodideOptions snapshot_options(const fs::path& runtime, const fs::path& snapshot_dir) {
  ci::PyodideOptions options;
  options.runtime_dir = runtime;
  options.snapshot_dir = snapshot_dir;
  return options;
}

// acquire() + execute_code("1+1"), each with a ready runtime waiting in a pool of one; the sandbox is destroyed
// (untimed) and the pool refilled before the next sample. `settled`: the waiting runtime has also finished its
// background compilation; otherwise it is taken the moment it is ready.
std::vector<double> pool_acquire(const fs::path& runtime, const fs::path& snapshot_dir, int count, bool settled) {
  ci::PyodidePool pool(1, snapshot_options(runtime, snapshot_dir));
  std::vector<double> samples;
  for (int i = 0; i < count; ++i) {
    while (pool.ready() < 1) ::usleep(1000);
    // A restored runtime goes on compiling in V8's background threads for a few seconds after it is ready.
    if (settled) test_support::await_runtime_settled(runtime_pid());
    const auto t0 = Clock::now();
    auto sandbox = pool.acquire();
    const auto r = sandbox->execute_code("1+1");
    const auto t1 = Clock::now();
    check_two(r, "after acquire");
    samples.push_back(ms_since(t0, t1));
  }
  return samples;
}

// Runtimes per second: a full pool of `size` is drained, and timed until it is full again.
double pool_refill_rate(const fs::path& runtime, const fs::path& snapshot_dir, int size) {
  ci::PyodidePool pool(static_cast<std::size_t>(size), snapshot_options(runtime, snapshot_dir));
  while (pool.ready() < static_cast<std::size_t>(size)) ::usleep(1000);
  for (int i = 0; i < size; ++i) (void)pool.acquire();
  const auto t0 = Clock::now();
  while (pool.ready() < static_cast<std::size_t>(size)) ::usleep(1000);
  return size / (ms_since(t0, Clock::now()) / 1000);
}

// From the return of a call whose runtime was killed to the next call's result, `count` times on one sandbox.
// `pooled`: the sandbox comes from a pool of one, whose ready runtime replaces the killed one; before each kill the
// pool holds a ready runtime again, settled (its background compilation over).
std::vector<double> respawn_after_kill(const fs::path& runtime, const fs::path& snapshot_dir, int count,
                                       bool pooled) {
  auto options = snapshot_options(runtime, snapshot_dir);
  options.interrupt_grace = std::chrono::milliseconds(0);
  std::optional<ci::PyodidePool> pool;
  std::unique_ptr<ci::PyodideSandbox> sandbox;
  if (pooled) {
    pool.emplace(1, options);
    sandbox = pool->acquire();
  } else {
    sandbox = ci::PyodideSandbox::create(options);
  }
  check_two(sandbox->execute_code("1+1"), "after create");
  std::vector<double> samples;
  for (int i = 0; i < count; ++i) {
    if (pool) {
      while (pool->ready() < 1) ::usleep(1000);
      for (const pid_t pid : test_support::deno_children()) test_support::await_runtime_settled(pid);
    }
    test_support::force_respawn(*sandbox, std::chrono::milliseconds(100));
    const auto t0 = Clock::now();
    const auto r = sandbox->execute_code("1+1");
    const auto t1 = Clock::now();
    check_two(r, "after the kill");
    samples.push_back(ms_since(t0, t1));
  }
  return samples;
}

// ---- the raw side ----

struct RawRun {
  double cold_ms = 0;           // performance.now() inside Deno when the first run("1+1") resolved
  double spawn_to_line_ms = 0;  // measured here: spawn -> the JSON line arrived (includes Deno's own boot)
  std::vector<double> warm_ms;
  std::string pyodide_version;
  std::string deno_version;
  double rss_mib = 0;  // with idle_ms: resident memory after that long idle
};

// Runs raw_pyodide.mjs in the runtime's Deno with the flags, permissions and environment PyodideSandbox uses,
// plus read access to the script itself.
RawRun raw_run(const Args& args, int warm_calls, const std::optional<fs::path>& snapshot = std::nullopt,
              int idle_ms = -1) {
  const fs::path runtime = fs::canonical(args.runtime);
  const fs::path script = fs::canonical(args.raw_script);
  const fs::path deno = runtime / "node_modules" / "@deno" / "linux-x64-glibc" / "deno";
  std::string allow = "--allow-read=";
  for (const char* f : {"host.mjs", "frames.mjs", "stdin_worker.mjs", "runner.py"}) allow += (runtime / f).string() + ",";
  allow += (runtime / "node_modules" / "pyodide").string() + "," + script.string();
  if (snapshot) allow += "," + snapshot->string();

  std::string deno_dir = (fs::temp_directory_path() / "pyodide_bench-deno-XXXXXX").string();
  if (::mkdtemp(deno_dir.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_dir{deno_dir};

  std::vector<std::string> argv_s = {deno.string(),
                                     "run",
                                     "--no-prompt",
                                     "--no-remote",
                                     "--no-config",
                                     "--no-npm",
                                     "--no-lock",
                                     allow,
                                     "--v8-flags=--disallow-code-generation-from-strings,--no-wasm-dynamic-tiering",
                                     script.string(),
                                     runtime.string(),
                                     std::to_string(warm_calls > 0 ? kWarmup : 0),
                                     std::to_string(warm_calls)};
  if (args.raw_interrupt_buffer) argv_s.push_back("--interrupt-buffer");
  if (snapshot) {
    argv_s.push_back("--snapshot");
    argv_s.push_back(snapshot->string());
  }
  if (idle_ms >= 0) {
    argv_s.push_back("--idle-ms");
    argv_s.push_back(std::to_string(idle_ms));
  }
  std::vector<std::string> env_s = {"DENO_DIR=" + deno_dir, "NO_COLOR=1", "DENO_NO_UPDATE_CHECK=1",
                                    "DENO_NO_PROMPT=1"};
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);  // stderr stays ours, so a failure is visible
  pid_t pid = -1;
  const auto started = Clock::now();
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    throw std::runtime_error("posix_spawn of Deno failed: " + std::string(std::strerror(rc)));
  }

  std::string text;
  std::optional<Clock::time_point> line_at;
  bool timed_out = false;
  for (;;) {
    pollfd p{out[0], POLLIN, 0};
    const int n = ::poll(&p, 1, kRawTimeoutMs);
    if (n == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    char buf[1 << 16];
    const ssize_t got = ::read(out[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buf, static_cast<std::size_t>(got));
    if (!line_at && text.find('\n') != std::string::npos) line_at = Clock::now();
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) throw std::runtime_error("raw_pyodide.mjs produced nothing for " + std::to_string(kRawTimeoutMs) + " ms");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !line_at) {
    throw std::runtime_error("raw_pyodide.mjs failed (status " + std::to_string(status) + "): " + text);
  }

  const auto j = nlohmann::json::parse(text.substr(0, text.find('\n')));
  RawRun r;
  r.cold_ms = j.at("cold_ms").get<double>();
  r.spawn_to_line_ms = ms_since(started, *line_at);
  r.warm_ms = j.at("warm_ms").get<std::vector<double>>();
  r.pyodide_version = j.at("pyodide").get<std::string>();
  r.deno_version = j.at("deno").get<std::string>();
  if (idle_ms >= 0) r.rss_mib = j.at("rss_mib").get<double>();
  if (static_cast<int>(r.warm_ms.size()) != warm_calls) throw std::runtime_error("raw_pyodide.mjs: wrong sample count");
  return r;
}

// ---- report ----

void print_row(const char* metric, const std::string& ours, const std::string& raw, std::optional<double> ratio,
               std::optional<double> target) {
  std::string ratio_text;
  char buf[32];
  if (ratio) {
    std::snprintf(buf, sizeof buf, "%.2f", *ratio);
    ratio_text = buf;
  }
  std::string target_text;
  if (target && ratio) {
    std::snprintf(buf, sizeof buf, "<= %.2f ", *target);
    target_text = std::string(buf) + (*ratio <= *target ? "met" : "NOT met");
  }
  std::printf("%-36s %12s %12s %6s  %s\n", metric, ours.c_str(), raw.c_str(), ratio_text.c_str(),
              target_text.c_str());
}

std::string fmt_ms(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f ms", decimals, v);
  return buf;
}

int usage(const char* message) {
  std::fprintf(stderr,
               "pyodide_bench: %s\nusage: pyodide_bench [--cold N] [--warm M] [--runtime DIR] [--raw-script FILE] "
               "[--raw-interrupt-buffer]\n",
               message);
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto positive = [&](int& into) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 1 || v > 1'000'000) return false;
      into = static_cast<int>(v);
      return true;
    };
    if (a == "--cold") {
      if (!positive(args.cold)) return usage("--cold takes a positive count");
    } else if (a == "--warm") {
      if (!positive(args.warm)) return usage("--warm takes a positive count");
    } else if (a == "--runtime" && i + 1 < argc) {
      args.runtime = argv[++i];
    } else if (a == "--raw-script" && i + 1 < argc) {
      args.raw_script = argv[++i];
    } else if (a == "--raw-interrupt-buffer") {
      args.raw_interrupt_buffer = true;
    } else {
      return usage("unknown argument");
    }
  }

  try {
    print_machine_facts();
    prime_page_cache(args.runtime);

    std::vector<double> ours_cold_ms, ours_create_ms, ours_first_exec_ms, raw_cold_ms, raw_unclocked_ms;
    std::unique_ptr<ci::PyodideSandbox> sandbox;
    RawRun raw_warm_run;
    for (int i = 0; i < args.cold; ++i) {
      const bool last = i + 1 == args.cold;
      sandbox.reset();  // no runtime of ours is alive while the baseline starts
      RawRun raw = raw_run(args, last ? args.warm : 0);
      raw_cold_ms.push_back(raw.cold_ms);
      // What Deno's clock misses: exec and runtime boot before performance.now()'s origin (plus printing the line).
      // The last raw run's line comes only after its warm calls, so it says nothing about the start.
      if (!last) raw_unclocked_ms.push_back(raw.spawn_to_line_ms - raw.cold_ms);
      if (last) raw_warm_run = std::move(raw);

      const OursCold c = ours_cold(args.runtime, sandbox);
      ours_cold_ms.push_back(c.total_ms);
      ours_create_ms.push_back(c.create_ms);
      ours_first_exec_ms.push_back(c.total_ms - c.create_ms);
      std::fprintf(stderr, "cold run %d/%d: ours %.0f ms (create %.0f ms), raw %.0f ms\n", i + 1, args.cold,
                   c.total_ms, c.create_ms, raw_cold_ms.back());
    }
    const std::vector<double> ours_warm_ms = ours_warm(*sandbox, args.warm);
    sandbox.reset();

    // Snapshots: one untimed create makes the image in a directory of this run; then each round restores it once
    // on each side (raw: a new Deno restoring the same image with a fresh DENO_DIR, timed from spawn).
    std::string snap_dir = (fs::temp_directory_path() / "pyodide_bench-snapshot-XXXXXX").string();
    if (::mkdtemp(snap_dir.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    struct RemoveSnapDir {
      std::string dir;
      ~RemoveSnapDir() {
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
    } remove_snap_dir{snap_dir};
    const OursCold made = ours_cold(args.runtime, sandbox, fs::path(snap_dir));
    sandbox.reset();
    std::optional<fs::path> image;
    for (const auto& e : fs::directory_iterator(snap_dir)) image = e.path();
    if (!image) throw std::runtime_error("create() made no snapshot in " + snap_dir);
    std::vector<double> ours_snap_ms, raw_snap_ms;
    for (int i = 0; i < args.cold; ++i) {
      raw_snap_ms.push_back(raw_run(args, 0, image).spawn_to_line_ms);
      ours_snap_ms.push_back(ours_cold(args.runtime, sandbox, fs::path(snap_dir)).total_ms);
      sandbox.reset();
      std::fprintf(stderr, "snapshot run %d/%d: ours %.0f ms, raw %.0f ms\n", i + 1, args.cold, ours_snap_ms.back(),
                   raw_snap_ms.back());
    }
    // Idle resident memory of a restored runtime, after one call and a settling pause.
    std::pair<double, double> idle_rss;
    {
      auto idle = ci::PyodideSandbox::create(snapshot_options(args.runtime, snap_dir));
      check_two(idle->execute_code("1+1"), "after create");
      ::sleep(3);
      const pid_t pid = runtime_pid();
      if (pid < 0) throw std::runtime_error("no runtime process found for the idle RSS");
      idle_rss = rss_mib(pid);
    }
    const double raw_idle_rss = raw_run(args, 0, image, 3000).rss_mib;
    const std::vector<double> pool_ms = pool_acquire(args.runtime, snap_dir, args.cold * 3, true);
    const std::vector<double> pool_unsettled_ms = pool_acquire(args.runtime, snap_dir, args.cold * 3, false);
    const double refill_rate = pool_refill_rate(args.runtime, snap_dir, 3);
    const std::vector<double> respawn_ms = respawn_after_kill(args.runtime, snap_dir, args.cold, false);
    const std::vector<double> pooled_respawn_ms = respawn_after_kill(args.runtime, snap_dir, args.cold, true);
    const std::string pressure_after = cpu_pressure();

    std::printf("runtime: %s (Pyodide %s, Deno %s)\n", fs::canonical(args.runtime).c_str(),
                raw_warm_run.pyodide_version.c_str(), raw_warm_run.deno_version.c_str());
    std::printf("runs: %d cold each side, %d warm calls after %d warm-up%s\n\n", args.cold, args.warm, kWarmup,
                args.raw_interrupt_buffer ? "; raw side with an interrupt buffer" : "");

    const Stats oc = stats_of(ours_cold_ms), rc = stats_of(raw_cold_ms);
    const Stats ow = stats_of(ours_warm_ms), rw = stats_of(raw_warm_run.warm_ms);
    std::printf("%-36s %12s %12s %6s  %s\n", "metric", "ours", "raw", "ratio", "target");
    print_row("cold create->result median", fmt_ms(oc.median, 0), fmt_ms(rc.median, 0), oc.median / rc.median,
              kColdTarget);
    print_row("cold create->result min", fmt_ms(oc.min, 0), fmt_ms(rc.min, 0), oc.min / rc.min, std::nullopt);
    const Stats os = stats_of(ours_snap_ms), rs = stats_of(raw_snap_ms);
    print_row("snapshot create->result median", fmt_ms(os.median, 0), fmt_ms(rs.median, 0), os.median / rs.median,
              kSnapshotTarget);
    print_row("snapshot vs cold create", fmt_ms(os.median, 0), fmt_ms(oc.median, 0), os.median / oc.median,
              kSnapshotColdTarget);
    print_row("raw snapshot restore->result median", "", fmt_ms(rs.median, 0), std::nullopt, std::nullopt);
    const Stats pa = stats_of(pool_ms);
    std::printf("%-36s %12s %12s %6s  <= %.1f ms %s\n", "pool acquire->result median", fmt_ms(pa.median, 3).c_str(),
                "", "", kPoolTargetMs, pa.median <= kPoolTargetMs ? "met" : "NOT met");
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.2f /s", refill_rate);
    print_row("pool refill rate", rate, "", std::nullopt, std::nullopt);
    const Stats rp = stats_of(respawn_ms);
    print_row("respawn after hard kill median", fmt_ms(rp.median, 0), fmt_ms(oc.median, 0), rp.median / oc.median,
              kRespawnColdTarget);
    const Stats pr = stats_of(pooled_respawn_ms);
    print_row("respawn from a pool median", fmt_ms(pr.median, 1), fmt_ms(oc.median, 0), pr.median / oc.median,
              kRespawnColdTarget);
    print_row("warm 1+1 median", fmt_ms(ow.median, 3), fmt_ms(rw.median, 3), ow.median / rw.median, kWarmTarget);
    print_row("warm 1+1 p99", fmt_ms(ow.p99, 3), fmt_ms(rw.p99, 3), ow.p99 / rw.p99, kWarmP99Target);
    char rss[32], before[32];
    std::snprintf(rss, sizeof rss, "%.0f MiB", idle_rss.first);
    std::snprintf(before, sizeof before, "%.0f MiB", kIdleRssBeforeMiB);
    print_row("idle RSS per sandbox", rss, before, idle_rss.first / kIdleRssBeforeMiB, kIdleRssTarget);
    char raw_rss[32];
    std::snprintf(raw_rss, sizeof raw_rss, "%.0f MiB", raw_idle_rss);
    print_row("idle RSS vs raw restored", rss, raw_rss, idle_rss.first / raw_idle_rss, std::nullopt);
    std::printf("\n");
    std::printf("ours: create() alone, median %.0f ms; first execute_code after create, median %.0f ms\n",
                stats_of(ours_create_ms).median, stats_of(ours_first_exec_ms).median);
    if (!raw_unclocked_ms.empty()) {
      std::printf("raw: spawn -> JSON line, measured here, exceeds Deno's own cold figure by a median %.0f ms (process "
                  "start before Deno's clock origin; ours includes it)\n",
                  stats_of(raw_unclocked_ms).median);
    }
    std::printf("warm min: ours %.3f ms, raw %.3f ms\n", ow.min, rw.min);
    std::printf("snapshot: made by the first create in %.0f ms (create -> result, untimed above); the raw column of "
                "'snapshot vs cold create' is our cold create\n",
                made.total_ms);
    std::printf("idle RSS: %.0f MiB anonymous of %.0f MiB, 3 s after its first call; the raw column of 'idle RSS "
                "per sandbox' is the figure before snapshots (193-203 MiB), of 'idle RSS vs raw restored' one Deno "
                "restoring the same image alone in its process, after the same pause; the raw column of the two "
                "respawn lines is our cold create: 'after hard kill' restores the snapshot, 'from a pool' takes the "
                "ready runtime of the pool the sandbox came from\n",
                idle_rss.second, idle_rss.first);
    std::printf("pool: %zu acquire samples with the waiting runtime settled (no CPU for 500 ms), p99 %.3f ms; taken "
                "the moment it is ready instead, median %.3f ms; refill rate of a drained pool of 3\n",
                pool_ms.size(), pa.p99, stats_of(pool_unsettled_ms).median);
    std::printf("after: load average %s, CPU pressure avg10 %s (our own runs add to both)\n", load_average().c_str(),
                pressure_after.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pyodide_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
