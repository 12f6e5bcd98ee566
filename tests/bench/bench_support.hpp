// The measuring harness shared by the client benchmarks (e2b_bench, bedrock_bench): our client and the official
// JS client against the same local server in bench mode, the same figures for both, and the ratios.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace code_interpreter::bench {

using Clock = std::chrono::steady_clock;

/// User + system CPU of this process, all threads, in seconds.
inline double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

inline long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

/// utime + stime of another process, in seconds (/proc/<pid>/stat fields 14 and 15).
inline double process_cpu_seconds(pid_t pid) {
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

inline double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(std::max(0.0, std::ceil(p / 100.0 * values.size()) - 1));
  return values[std::min(index, values.size() - 1)];
}

struct Figures {
  double cpu_us_per_call = 0, rtt_median_ms = 0, rtt_p99_ms = 0, throughput_per_s = 0, server_cpu_share = 0;
  long peak_rss_kib = 0;
};

/// Measures our client: `call(i)` runs one call on sandbox 0 (sequential part) or on sandbox `i` (concurrent
/// part); it returns false on an unexpected result.
struct Client {
  std::function<void(int count)> open;        ///< creates `count` sandboxes
  std::function<bool(int sandbox)> call;      ///< one execute on that sandbox
  std::function<void()> close;                ///< terminates them all
};

inline Figures measure(Client& client, pid_t server, int calls, int concurrency, int concurrent_calls) {
  Figures f;
  client.open(concurrency);
  for (int i = 0; i < 50; ++i) (void)client.call(0);  // warm-up: the connection
  std::vector<double> rtts;
  rtts.reserve(calls);
  const double cpu0 = cpu_seconds();
  for (int i = 0; i < calls; ++i) {
    const auto t0 = Clock::now();
    if (!client.call(0)) throw std::runtime_error("an unexpected result in the sequential run");
    rtts.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  f.cpu_us_per_call = (cpu_seconds() - cpu0) * 1e6 / calls;
  f.rtt_median_ms = percentile(rtts, 50);
  f.rtt_p99_ms = percentile(rtts, 99);

  for (int s = 0; s < concurrency; ++s) (void)client.call(s);  // every sandbox's connection is warm
  std::atomic<int> failures{0};
  const double server0 = process_cpu_seconds(server);
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int s = 0; s < concurrency; ++s)
    threads.emplace_back([&, s] {
      for (int i = 0; i < concurrent_calls; ++i)
        if (!client.call(s)) ++failures;
    });
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  f.server_cpu_share = (process_cpu_seconds(server) - server0) / seconds;
  f.throughput_per_s = concurrency * concurrent_calls / seconds;
  if (failures) throw std::runtime_error(std::to_string(failures.load()) + " concurrent calls failed");
  client.close();
  f.peak_rss_kib = peak_rss_kib();
  return f;
}

/// Runs the JS half (`command` prints one JSON line with the same fields) and reads its figures.
inline Figures run_js(const std::string& command) {
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
  f.server_cpu_share = j.value("server_cpu_share", 0.0);
  return f;
}

inline void print_table(const char* name, const char* peer, const Figures& ours, const Figures& js, int calls,
                        int concurrency, int concurrent_calls) {
  std::printf("%s: %d sequential execute_code calls; %d sandboxes x %d calls concurrently\n", name, calls, concurrency,
              concurrent_calls);
  std::printf("%-30s %14s %14s %10s  %s\n", "", "ours (C++)", peer, "ratio", "target");
  std::printf("%-30s %14.1f %14.1f %9.2fx  <= 0.5x\n", "CPU per call (us)", ours.cpu_us_per_call, js.cpu_us_per_call,
              ours.cpu_us_per_call / js.cpu_us_per_call);
  std::printf("%-30s %14.3f %14.3f %9.2fx  <= 0.5x\n", "round trip median (ms)", ours.rtt_median_ms, js.rtt_median_ms,
              ours.rtt_median_ms / js.rtt_median_ms);
  std::printf("%-30s %14.3f %14.3f %9.2fx  <= 0.5x\n", "round trip p99 (ms)", ours.rtt_p99_ms, js.rtt_p99_ms,
              ours.rtt_p99_ms / js.rtt_p99_ms);
  std::printf("%-30s %14.0f %14.0f %9.2fx  >= 2x\n", "throughput, 32 sandboxes (/s)", ours.throughput_per_s,
              js.throughput_per_s, ours.throughput_per_s / js.throughput_per_s);
  std::printf("%-30s %14ld %14ld %9.2fx  <= 0.25x\n", "peak RSS (KiB)", ours.peak_rss_kib, js.peak_rss_kib,
              static_cast<double>(ours.peak_rss_kib) / js.peak_rss_kib);
  for (const auto& [who, share] : {std::pair{"ours", ours.server_cpu_share}, std::pair{"JS", js.server_cpu_share}})
    std::printf("server CPU during the %s throughput run: %.0f%% of one core%s\n", who, share * 100,
                share > 0.85 ? " (the server is the bottleneck there)" : "");
}

inline void parse_args(int argc, char** argv, int& calls, int& concurrent_calls) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--calls") calls = std::max(10, std::atoi(argv[i + 1]));
    else if (arg == "--concurrent-calls") concurrent_calls = std::max(1, std::atoi(argv[i + 1]));
  }
}

}  // namespace code_interpreter::bench
