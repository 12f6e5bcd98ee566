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
#include <memory>

#include "bench_support.hpp"
#include "code_interpreter/e2b_sandbox.hpp"
#include "node_server.hpp"

namespace ci = code_interpreter;

int main(int argc, char** argv) {
  int calls = 2000, concurrent_calls = 100;
  const int concurrency = 32;
  ci::bench::parse_args(argc, argv, calls, concurrent_calls);
  try {
    ci::bench::Figures ours, js;
    {
      ci::test::NodeServer server("servers/e2b/server.mjs", {"--bench"});
      ci::E2BOptions options;
      options.api_key = "e2b_" + std::string(40, '0');
      options.api_url = server.url("api_url");
      options.sandbox_url = server.url("sandbox_url");
      std::vector<std::unique_ptr<ci::E2BSandbox>> pool;
      ci::bench::Client client{
          [&](int n) {
            for (int i = 0; i < n; ++i) pool.push_back(ci::E2BSandbox::create(options));
          },
          [&](int s) { return pool[s]->execute_code("x").status == ci::ExecutionStatus::kSuccess; },
          [&] {
            for (auto& s : pool) s->terminate();
          }};
      ours = ci::bench::measure(client, server.pid(), calls, concurrency, concurrent_calls);
    }
    {
      ci::test::NodeServer server("servers/e2b/server.mjs", {"--bench"});
      js = ci::bench::run_js(std::string(CI_TEST_NODE) + " " + CI_TEST_NODE_DIR + "/bench/e2b_bench_js.mjs --api-url " +
                             server.url("api_url") + " --sandbox-url " + server.url("sandbox_url") + " --calls " +
                             std::to_string(calls) + " --concurrency " + std::to_string(concurrency) +
                             " --concurrent-calls " + std::to_string(concurrent_calls) + " --server-pid " +
                             std::to_string(server.pid()));
    }
    ci::bench::print_table("e2b_bench", "official JS", ours, js, calls, concurrency, concurrent_calls);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "e2b_bench: " << e.what() << "\n";
    return 1;
  }
}
