// e2b_bench: our E2B client against the official JS client (@e2b/code-interpreter), both against the same local
// server in bench mode (it answers every /execute at once with pre-built bytes: no code runs, no checks), so the
// figures are each client's own cost. A program to run by hand, not a test:
//
//   build/tests/bench/e2b_bench [--calls N] [--concurrent-calls M]
//
// Prints, for both clients: CPU time per execute_code call (getrusage / process.cpuUsage, user + system, all
// threads), round trip median and p99, throughput with 32 sandboxes executing concurrently, peak RSS, the ratios,
// and the server's own CPU use during each throughput run (near 100% of a core means the server was the
// bottleneck there, since Node serves on one thread).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/e2b_sandbox.hpp"
#include "node_server.hpp"

namespace ci = code_interpreter;
using Clock = std::chrono::steady_clock;

namespace {

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// utime + stime of another process, in seconds (/proc/<pid>/stat fields 14 and 15).
double process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(std::max(0.0, std::ceil(p / 100.0 * values.size()) - 1));
  return values[std::min(index, values.size() - 1)];
}

struct Figures {
  double cpu_us_per_call = 0, rtt_median_ms = 0, rtt_p99_ms = 0, throughput_per_s = 0, server_cpu_share = 0;
  long peak_rss_kib = 0;
};

Figures run_ours(ci::test::NodeServer& server, int calls, int concurrency, int concurrent_calls) {
  ci::E2BOptions options;
  options.api_key = "e2b_" + std::string(40, '0');
  options.api_url = server.url("api_url");
  options.sandbox_url = server.url("sandbox_url");
  auto sandbox = ci::E2BSandbox::create(options);
  for (int i = 0; i < 50; ++i) (void)sandbox->execute_code("x");  // warm-up: the connection

  Figures f;
  std::vector<double> rtts;
  rtts.reserve(calls);
  const double cpu0 = cpu_seconds();
  for (int i = 0; i < calls; ++i) {
    const auto t0 = Clock::now();
    const auto r = sandbox->execute_code("x");
    rtts.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (r.status != ci::ExecutionStatus::kSuccess) {
      std::cerr << "e2b_bench: unexpected result " << ci::to_string(r.status) << ": " << r.error << "\n";
      std::exit(1);
    }
  }
  f.cpu_us_per_call = (cpu_seconds() - cpu0) * 1e6 / calls;
  f.rtt_median_ms = percentile(rtts, 50);
  f.rtt_p99_ms = percentile(rtts, 99);
  sandbox->terminate();

  std::vector<std::unique_ptr<ci::E2BSandbox>> pool;
  for (int i = 0; i < concurrency; ++i) pool.push_back(ci::E2BSandbox::create(options));
  for (auto& s : pool) (void)s->execute_code("x");
  std::atomic<int> failures{0};
  const double server0 = process_cpu_seconds(server.pid());
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (auto& s : pool) {
    threads.emplace_back([&, sandbox = s.get()] {
      for (int i = 0; i < concurrent_calls; ++i)
        if (sandbox->execute_code("x").status != ci::ExecutionStatus::kSuccess) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  f.server_cpu_share = (process_cpu_seconds(server.pid()) - server0) / seconds;
  f.throughput_per_s = concurrency * concurrent_calls / seconds;
  if (failures) std::cerr << "e2b_bench: " << failures << " concurrent calls failed\n";
  for (auto& s : pool) s->terminate();
  f.peak_rss_kib = peak_rss_kib();
  return f;
}

Figures run_js(ci::test::NodeServer& server, int calls, int concurrency, int concurrent_calls) {
  const std::string command = std::string(CI_TEST_NODE) + " " + CI_TEST_NODE_DIR + "/bench/e2b_bench_js.mjs --api-url " +
                              server.url("api_url") + " --sandbox-url " + server.url("sandbox_url") + " --calls " +
                              std::to_string(calls) + " --concurrency " + std::to_string(concurrency) +
                              " --concurrent-calls " + std::to_string(concurrent_calls) + " --server-pid " +
                              std::to_string(server.pid());
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run the JS bench");
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  if (::pclose(pipe) != 0) throw std::runtime_error("the JS bench failed: " + output);
  const auto j = nlohmann::json::parse(output.substr(0, output.find('\n')));
  Figures f;
  f.cpu_us_per_call = j.at("cpu_us_per_call").get<double>();
  f.rtt_median_ms = j.at("rtt_median_ms").get<double>();
  f.rtt_p99_ms = j.at("rtt_p99_ms").get<double>();
  f.throughput_per_s = j.at("throughput_per_s").get<double>();
  f.peak_rss_kib = j.at("peak_rss_kib").get<long>();
  f.server_cpu_share = j.at("server_cpu_share").get<double>();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 2000, concurrent_calls = 100;
  const int concurrency = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--calls") calls = std::max(10, std::atoi(argv[i + 1]));
    else if (arg == "--concurrent-calls") concurrent_calls = std::max(1, std::atoi(argv[i + 1]));
  }
  try {
    Figures ours, js;
    {
      ci::test::NodeServer server("servers/e2b/server.mjs", {"--bench"});
      ours = run_ours(server, calls, concurrency, concurrent_calls);
    }
    {
      ci::test::NodeServer server("servers/e2b/server.mjs", {"--bench"});
      js = run_js(server, calls, concurrency, concurrent_calls);
    }
    std::printf("e2b_bench: %d sequential execute_code calls; %d sandboxes x %d calls concurrently\n", calls,
                concurrency, concurrent_calls);
    std::printf("%-28s %14s %14s %10s  %s\n", "", "ours (C++)", "official JS", "ratio", "target");
    std::printf("%-28s %14.1f %14.1f %9.2fx  <= 0.5x\n", "CPU per call (us)", ours.cpu_us_per_call, js.cpu_us_per_call,
                ours.cpu_us_per_call / js.cpu_us_per_call);
    std::printf("%-28s %14.3f %14.3f %9.2fx  <= 0.5x\n", "round trip median (ms)", ours.rtt_median_ms,
                js.rtt_median_ms, ours.rtt_median_ms / js.rtt_median_ms);
    std::printf("%-28s %14.3f %14.3f %9.2fx  <= 0.5x\n", "round trip p99 (ms)", ours.rtt_p99_ms, js.rtt_p99_ms,
                ours.rtt_p99_ms / js.rtt_p99_ms);
    std::printf("%-28s %14.0f %14.0f %9.2fx  >= 2x\n", "throughput, 32 sandboxes (/s)", ours.throughput_per_s,
                js.throughput_per_s, ours.throughput_per_s / js.throughput_per_s);
    std::printf("%-28s %14ld %14ld %9.2fx  <= 0.25x\n", "peak RSS (KiB)", ours.peak_rss_kib, js.peak_rss_kib,
                static_cast<double>(ours.peak_rss_kib) / js.peak_rss_kib);
    for (const auto& [who, share] : {std::pair{"ours", ours.server_cpu_share}, std::pair{"JS", js.server_cpu_share}})
      std::printf("server CPU during the %s throughput run: %.0f%% of one core%s\n", who, share * 100,
                  share > 0.85 ? " (the server is the bottleneck there)" : "");
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "e2b_bench: " << e.what() << "\n";
    return 1;
  }
}
