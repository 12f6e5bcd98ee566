// bedrock_bench: our Bedrock AgentCore client against the official AWS JS client
// (@aws-sdk/client-bedrock-agentcore), both against the same local server in bench mode (it answers every invoke
// at once with one pre-encoded result frame: no signature check, no code run), so the figures are each client's
// own cost: SigV4 signing, HTTP and event-stream decoding. A program to run by hand, not a test:
//
//   build/tests/bench/bedrock_bench [--calls N] [--concurrent-calls M]
//
// Prints the same figures as e2b_bench (CPU per executeCode call, round trip median / p99, throughput with 32
// sessions executing concurrently, peak RSS, ratios, the server's CPU share during each throughput run).
#include <memory>

#include "bench_support.hpp"
#include "code_interpreter/bedrock_sandbox.hpp"
#include "node_server.hpp"

namespace ci = code_interpreter;

int main(int argc, char** argv) {
  int calls = 2000, concurrent_calls = 100;
  const int concurrency = 32;
  ci::bench::parse_args(argc, argv, calls, concurrent_calls);
  try {
    ci::bench::Figures ours, js;
    {
      ci::test::NodeServer server("servers/bedrock/server.mjs", {"--bench"});
      ci::BedrockOptions options;
      options.region = "us-east-1";
      options.endpoint_url = server.url("url");
      options.credentials = ci::AwsCredentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
      std::vector<std::unique_ptr<ci::BedrockAgentCoreSandbox>> pool;
      ci::bench::Client client{
          [&](int n) {
            for (int i = 0; i < n; ++i) pool.push_back(ci::BedrockAgentCoreSandbox::create(options));
          },
          [&](int s) { return pool[s]->execute_code("x").status == ci::ExecutionStatus::kSuccess; },
          [&] {
            for (auto& s : pool) s->terminate();
          }};
      ours = ci::bench::measure(client, server.pid(), calls, concurrency, concurrent_calls);
    }
    {
      ci::test::NodeServer server("servers/bedrock/server.mjs", {"--bench"});
      js = ci::bench::run_js(std::string(CI_TEST_NODE) + " " + CI_TEST_NODE_DIR + "/bench/bedrock_bench_js.mjs --url " +
                             server.url("url") + " --calls " + std::to_string(calls) + " --concurrency " +
                             std::to_string(concurrency) + " --concurrent-calls " + std::to_string(concurrent_calls) +
                             " --server-pid " + std::to_string(server.pid()));
    }
    ci::bench::print_table("bedrock_bench", "official JS", ours, js, calls, concurrency, concurrent_calls);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bedrock_bench: " << e.what() << "\n";
    return 1;
  }
}
