// The whole loop against real Python (Pyodide, standard library only) with the model played by the scripted LM
// server through the real invokers. One sandbox per test case (about 3 s to start).
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "code_interpreter/anthropic_invoker.hpp"
#include "code_interpreter/openai_invoker.hpp"
#include "code_interpreter/pyodide_sandbox.hpp"
#include "lm_server.hpp"

namespace ci = code_interpreter;
using ci::test::LMServer;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<ci::PyodideSandbox> make_sandbox() {
  ci::PyodideOptions options;
  options.runtime_dir = CI_TEST_RUNTIME_DIR;
  return ci::PyodideSandbox::create(options);
}

std::unique_ptr<ci::LMInvoker> make_invoker(const std::string& provider, const LMServer& server) {
  if (provider == "openai") {
    ci::OpenAIChatOptions options;
    options.base_url = server.url() + "/v1";
    options.api_key = ci::test::kOpenAIKey;
    options.model = "gpt-test";
    return std::make_unique<ci::OpenAIChatInvoker>(options);
  }
  ci::AnthropicOptions options;
  options.base_url = server.url();
  options.api_key = ci::test::kAnthropicKey;
  options.model = "claude-test";
  return std::make_unique<ci::AnthropicInvoker>(options);
}

json code_call(const std::string& code) {
  return {{"tool_calls", {{{"name", "execute_code"}, {"arguments", {{"code", code}}}}}}};
}

const std::string kReadings = "city,temp\nOslo,3.5\nLima,19.0\nCairo,25.5\nOslo,4.5\n";

const std::string kStatisticsCode =
    "import csv, statistics\n"
    "with open('/files/readings.csv', newline='') as f:\n"
    "    temps = [float(row['temp']) for row in csv.DictReader(f)]\n"
    "with open('/files/summary.csv', 'w', newline='') as f:\n"
    "    out = csv.writer(f)\n"
    "    out.writerow(['count', 'mean', 'median', 'stdev'])\n"
    "    out.writerow([len(temps), statistics.mean(temps), statistics.median(temps), round(statistics.stdev(temps), 3)])\n"
    "print(len(temps), statistics.mean(temps), statistics.median(temps))\n";

}  // namespace

TEST_CASE("a CSV goes in, statistics come back, and the linked output CSV is returned byte-exact",
          "[interpreter][pyodide]") {
  const std::string provider = GENERATE(std::string("openai"), std::string("anthropic"));
  LMServer server;
  const std::string answer =
      "Mean temperature 13.125 over 4 readings (median 11.75). Details: [summary.csv](sandbox:/files/summary.csv)";
  server.script(json::array(
      {{{"expect", {{"last_user_contains", "Summarize"}, {"system_contains", "/files/"}, {"tools", {"execute_code"}}}},
        {"reply", code_call(kStatisticsCode)}},
       {{"expect", {{"last_tool_result_equals", "4 13.125 11.75"}}}, {"reply", {{"text", answer}}}}}));
  auto sandbox = make_sandbox();
  auto invoker = make_invoker(provider, server);

  const auto result = ci::SandboxCodeInterpreter(*sandbox, *invoker)
                          .execute("Summarize the temperatures.", {ci::Attachment::from_bytes(kReadings, "readings.csv")});

  INFO(provider);
  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
  CHECK(result.stop_reason == ci::StopReason::kAnswered);
  CHECK(result.text == answer);
  CHECK(result.turns == 2);
  CHECK(result.usage == ci::LMUsage{20, 10});
  REQUIRE(result.code_exec_results.size() == 1);
  CHECK(result.code_exec_results[0].code == kStatisticsCode);
  CHECK(result.code_exec_results[0].result.status == ci::ExecutionStatus::kSuccess);
  REQUIRE(result.code_exec_results[0].output.size() == 1);
  const auto& summary = result.code_exec_results[0].output[0];
  CHECK(summary.filename == "summary.csv");
  CHECK(summary.mime_type == "text/csv");
  CHECK(summary.data == "count,mean,median,stdev\r\n4,13.125,11.75,10.873\r\n");
  CHECK(result.missing_files.empty());
  CHECK(result.refused_links.empty());
}

TEST_CASE("a code error goes back to the model, which corrects it on the next turn", "[interpreter][pyodide]") {
  LMServer server;
  const std::string broken = "print(sum(temps))";
  const std::string fixed = "temps = [3.5, 19.0, 25.5, 4.5]\nprint(sum(temps))";
  server.script(json::array(
      {{{"reply", code_call(broken)}},
       {{"expect", {{"last_tool_result_contains", "NameError: name 'temps' is not defined"}}},
        {"reply", code_call(fixed)}},
       {{"expect", {{"last_tool_result_equals", "52.5"}, {"tool_result_count", 2}}},
        {"reply", {{"text", "The sum is 52.5."}}}}}));
  auto sandbox = make_sandbox();
  auto invoker = make_invoker("openai", server);

  const auto result = ci::SandboxCodeInterpreter(*sandbox, *invoker).execute("Add the temperatures.");

  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply", "reply"});
  CHECK(result.text == "The sum is 52.5.");
  CHECK(result.turns == 3);
  REQUIRE(result.code_exec_results.size() == 2);
  CHECK(result.code_exec_results[0].code == broken);
  CHECK(result.code_exec_results[0].result.status == ci::ExecutionStatus::kError);
  REQUIRE(result.code_exec_results[0].result.code_error);
  CHECK(result.code_exec_results[0].result.code_error->name == "NameError");
  CHECK(result.code_exec_results[1].code == fixed);
  CHECK(result.code_exec_results[1].result.status == ci::ExecutionStatus::kSuccess);
}

TEST_CASE("max_turns ends the loop after that many model calls, keeping the executions", "[interpreter][pyodide]") {
  LMServer server;
  server.script(json::array({{{"reply", code_call("x = 1\nprint(x)")}},
                             {{"expect", {{"last_tool_result_equals", "1"}}}, {"reply", code_call("print(x + 1)")}},
                             {{"reply", {{"text", "never reached"}}}}}));
  auto sandbox = make_sandbox();
  auto invoker = make_invoker("anthropic", server);
  ci::InterpreterOptions options;
  options.max_turns = 2;

  const auto result = ci::SandboxCodeInterpreter(*sandbox, *invoker, options).execute("Count.");

  CHECK(result.stop_reason == ci::StopReason::kMaxTurns);
  CHECK(result.text == "[stopped: no final answer after 2 model calls (max_turns)]");
  CHECK(result.turns == 2);
  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
  REQUIRE(result.code_exec_results.size() == 1);
  CHECK(result.code_exec_results[0].result.stdout_text == "1\n");
}

TEST_CASE("a link to a file that does not exist is listed in missing_files, one outside /files refused",
          "[interpreter][pyodide]") {
  LMServer server;
  const std::string answer =
      "Files: [real](sandbox:/files/real.txt), [ghost](sandbox:/files/ghost.csv), "
      "[secret](sandbox:/files/../etc/passwd)";
  server.script(json::array({{{"reply", code_call("open('/files/real.txt', 'w').write('here')")}},
                             {{"reply", {{"text", answer}}}}}));
  auto sandbox = make_sandbox();
  auto invoker = make_invoker("openai", server);

  const auto result = ci::SandboxCodeInterpreter(*sandbox, *invoker).execute("Write a file.");

  CHECK(result.text == answer);
  CHECK(result.missing_files == std::vector<std::string>{"/files/ghost.csv"});
  CHECK(result.refused_links == std::vector<std::string>{"/files/../etc/passwd"});
  REQUIRE(result.code_exec_results.size() == 1);
  REQUIRE(result.code_exec_results[0].output.size() == 1);
  CHECK(result.code_exec_results[0].output[0].filename == "real.txt");
  CHECK(result.code_exec_results[0].output[0].data == "here");
}

TEST_CASE("cancelling mid-loop stops the running code and makes no further model call",
          "[interpreter][pyodide][concurrency]") {
  LMServer server;
  server.script(json::array({{{"reply", code_call("while True:\n    pass")}}, {{"reply", {{"text", "never"}}}}}));
  auto sandbox = make_sandbox();
  auto invoker = make_invoker("openai", server);
  std::stop_source stop;
  std::jthread canceller([&] {
    std::this_thread::sleep_for(1500ms);
    stop.request_stop();
  });

  const auto start = std::chrono::steady_clock::now();
  const auto result = ci::SandboxCodeInterpreter(*sandbox, *invoker).execute("Loop forever.", {}, stop.get_token());
  const auto elapsed = std::chrono::steady_clock::now() - start;

  CHECK(result.stop_reason == ci::StopReason::kCancelled);
  CHECK(result.text == "[stopped: cancelled]");
  CHECK(elapsed < 15s);
  CHECK(server.outcomes() == std::vector<std::string>{"reply"});
  REQUIRE(result.code_exec_results.size() == 1);
  const auto& cancelled = result.code_exec_results[0].result;
  CHECK(cancelled.status == ci::ExecutionStatus::kUnknown);
  REQUIRE(cancelled.failure);
  CHECK(cancelled.failure->exception_type == "cancelled");
  // The sandbox is still usable afterwards.
  CHECK(sandbox->execute_code("print(1 + 1)").stdout_text == "2\n");
}

namespace {

// A real Pyodide sandbox seen through a listing that claims every file is 10 bytes long: what a program that
// reached the host's listing could make it say. Everything else goes to the real sandbox.
class LyingPyodide final : public ci::CodeInterpreterSandbox {
 public:
  explicit LyingPyodide(ci::PyodideSandbox& real) : CodeInterpreterSandbox(ci::Language::kPython, {}), real_(real) {}
  [[nodiscard]] std::optional<std::string> sandbox_id() const override { return real_.sandbox_id(); }
  [[nodiscard]] ci::Capabilities capabilities() const override { return real_.capabilities(); }

 protected:
  ci::ExecutionResult do_execute_code(std::string_view code, const ci::ExecuteOptions& o) override {
    return real_.execute_code(code, o);
  }
  ci::ExecutionResult do_execute_command(std::string_view command, const ci::CommandOptions& o) override {
    return real_.execute_command(command, o);
  }
  void do_set_timeout(std::chrono::seconds lease) override { real_.set_timeout(lease); }
  void do_write_file(std::string_view path, std::string_view data) override { real_.write_file(path, data); }
  std::string do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) override {
    return real_.read_file(path, max_bytes);
  }
  std::vector<ci::FileInfo> do_list_files(std::string_view dir) override {
    auto entries = real_.list_files(dir);
    for (auto& e : entries) e.size = 10;
    return entries;
  }
  void do_remove_file(std::string_view path) override { real_.remove_file(path); }
  void do_make_dir(std::string_view path) override { real_.make_dir(path); }
  bool do_download_file_to(std::string_view path, const std::filesystem::path& destination, ci::Timeout timeout,
                           std::optional<std::uint64_t> max_bytes) override {
    return real_.download_file_to(path, destination, timeout, max_bytes);
  }
  std::optional<std::string> do_download_file(std::string_view path, ci::Timeout timeout,
                                              std::optional<std::uint64_t> max_bytes) override {
    return real_.download_file(path, timeout, max_bytes);
  }
  void do_terminate(ci::Timeout timeout) override { real_.terminate(timeout); }

 private:
  ci::PyodideSandbox& real_;
};

}  // namespace

TEST_CASE("a real file whose listed size lies is capped at max_file_bytes on the bytes downloaded",
          "[interpreter][pyodide][guards]") {
  LMServer server;
  const std::string answer = "Files: [big](sandbox:/files/big.bin) [small](sandbox:/files/small.txt)";
  server.script(json::array(
      {{{"reply", code_call("open('/files/big.bin', 'wb').write(b'x' * (3 << 20))\n"
                            "open('/files/small.txt', 'w').write('fits')")}},
       {{"reply", {{"text", answer}}}}}));
  auto real = make_sandbox();
  LyingPyodide sandbox(*real);
  auto invoker = make_invoker("openai", server);
  ci::InterpreterOptions options;
  options.max_file_bytes = 1u << 20;

  const auto result = ci::SandboxCodeInterpreter(sandbox, *invoker, options).execute("Write two files.");

  CHECK(sandbox.list_files("/files").at(0).size == 10);  // the lie
  CHECK(result.text == answer);
  CHECK(result.missing_files == std::vector<std::string>{"/files/big.bin"});
  REQUIRE(result.code_exec_results.size() == 1);
  REQUIRE(result.code_exec_results[0].output.size() == 1);
  CHECK(result.code_exec_results[0].output[0].filename == "small.txt");
  CHECK(result.code_exec_results[0].output[0].data == "fits");
}
