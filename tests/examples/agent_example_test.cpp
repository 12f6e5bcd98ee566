// examples/agent run as a user runs it: against the scripted LM server and a real Pyodide sandbox, checking its
// output and the bytes of the files it saves.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lm_server.hpp"

namespace fs = std::filesystem;
using code_interpreter::test::LMServer;
using nlohmann::json;

namespace {

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/ci-agent-test-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs the agent binary with `args`, in `cwd`, with the test API keys in its environment.
Run run_agent(const std::vector<std::string>& args, const fs::path& cwd) {
  const fs::path out = cwd / ".stdout", err = cwd / ".stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<std::string> argv_strings{CI_TEST_AGENT};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string openai_key = std::string("OPENAI_API_KEY=") + code_interpreter::test::kOpenAIKey;
  std::string anthropic_key = std::string("ANTHROPIC_API_KEY=") + code_interpreter::test::kAnthropicKey;
  std::string path = "PATH=/usr/bin:/bin";
  std::string home = "HOME=" + cwd.string();
  std::vector<char*> env{openai_key.data(), anthropic_key.data(), path.data(), home.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, CI_TEST_AGENT, &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  Run run;
  if (rc != 0) return run;
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_file(out);
  run.err = read_file(err);
  return run;
}

json code_call(const std::string& code) {
  return {{"tool_calls", {{{"name", "execute_code"}, {"arguments", {{"code", code}}}}}}};
}

}  // namespace

TEST_CASE("agent answers, saves the linked file byte-exact under its base name, and lists the rest",
          "[interpreter][pyodide][example]") {
  const std::string provider = GENERATE(std::string("openai"), std::string("anthropic"));
  LMServer server;
  TempDir dir;
  {
    std::ofstream(dir.path() / "sales.csv", std::ios::binary) << "region,amount\nnorth,120\nsouth,80\nnorth,40\n";
  }
  const std::string code =
      "import csv, os\n"
      "totals = {}\n"
      "for row in csv.DictReader(open('/files/sales.csv')):\n"
      "    totals[row['region']] = totals.get(row['region'], 0) + int(row['amount'])\n"
      "os.makedirs('/files/out', exist_ok=True)\n"
      "with open('/files/out/totals.csv', 'w', newline='') as f:\n"
      "    w = csv.writer(f, lineterminator='\\n')\n"
      "    w.writerow(['region', 'total'])\n"
      "    for region in sorted(totals):\n"
      "        w.writerow([region, totals[region]])\n"
      "print(totals)\n";
  const std::string answer =
      "North sold 160 and south 80. Totals: [totals.csv](sandbox:/files/out/totals.csv); "
      "also [chart](sandbox:/files/chart.png) and [escape](sandbox:/files/../../etc/passwd).";
  server.script(json::array(
      {{{"expect", {{"last_user_contains", "Total the sales by region"}}}, {"reply", code_call(code)}},
       {{"expect", {{"last_tool_result_equals", "{'north': 160, 'south': 80}"}}}, {"reply", {{"text", answer}}}}}));

  const std::string base_url = provider == "openai" ? server.url() + "/v1" : server.url();
  const auto run = run_agent({"Total the sales by region", "--file", (dir.path() / "sales.csv").string(), "--provider",
                              provider, "--base-url", base_url, "--model", "test-model", "--output-dir", "saved"},
                             dir.path());

  INFO(provider << "\nstderr:\n" << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == answer + "\n" +
                       "saved saved/totals.csv (32 bytes)\n"
                       "missing /files/chart.png\n"
                       "refused /files/../../etc/passwd\n");
  CHECK(read_file(dir.path() / "saved" / "totals.csv") == "region,total\nnorth,160\nsouth,80\n");
  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
  // Only the one file was written, and nothing outside the output directory.
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir.path() / "saved")) entries.push_back(entry.path().filename());
  CHECK(entries == std::vector<std::string>{"totals.csv"});
}

TEST_CASE("agent saves the images the code showed, byte-exact, and sends them to the model",
          "[interpreter][pyodide][example]") {
  LMServer server;
  TempDir dir;
  const std::string code =
      "from IPython.display import display, Image\n"
      "display(Image(b'\\x89PNG\\r\\n\\x1a\\nchart'))\n"
      "print('drawn')\n";
  server.script(json::array(
      {{{"reply", code_call(code)}},
       {{"expect", {{"last_tool_result_equals", "drawn"}}}, {"reply", {{"text", "Here is the chart."}}}}}));
  const auto run = run_agent({"Draw it", "--provider", "anthropic", "--base-url", server.url(), "--model", "test-model",
                              "--output-dir", "saved"},
                             dir.path());
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "Here is the chart.\nsaved saved/image-1-1.png (13 bytes)\n");
  CHECK(read_file(dir.path() / "saved" / "image-1-1.png") == std::string("\x89PNG\r\n\x1a\nchart", 13));
  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
  CHECK(server.log()["calls"][1]["body"]["messages"][2]["content"][0]["content"][1] ==
        json::parse(R"j({"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgpjaGFydA=="}})j"));
}

TEST_CASE("agent never writes through a symlink or file waiting at a predictable temporary name",
          "[interpreter][pyodide][example]") {
  // Someone who can write to the output directory (a shared /tmp/out, say) plants ".out.txt.partial" pointing at
  // the victim's file, and a file the model returns earlier in the run may carry that name too.
  LMServer server;
  TempDir dir;
  fs::create_directories(dir.path() / "saved");
  { std::ofstream(dir.path() / "victim.txt", std::ios::binary) << "keep"; }
  fs::create_symlink(dir.path() / "victim.txt", dir.path() / "saved" / ".out.txt.partial");
  const std::string code =
      "open('/files/.b.txt.partial', 'w').write('first')\n"
      "open('/files/b.txt', 'w').write('second')\n"
      "open('/files/out.txt', 'w').write('new')\n";
  const std::string answer =
      "[a](sandbox:/files/.b.txt.partial) [b](sandbox:/files/b.txt) [out](sandbox:/files/out.txt)";
  server.script(json::array({{{"reply", code_call(code)}}, {{"reply", {{"text", answer}}}}}));
  const auto run = run_agent({"write", "--base-url", server.url() + "/v1", "--model", "m", "--output-dir", "saved"},
                             dir.path());
  INFO("stderr:\n" << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == answer + "\n" +
                       "saved saved/.b.txt.partial (5 bytes)\n"
                       "saved saved/b.txt (6 bytes)\n"
                       "saved saved/out.txt (3 bytes)\n");
  CHECK(read_file(dir.path() / "victim.txt") == "keep");
  CHECK(read_file(dir.path() / "saved" / ".b.txt.partial") == "first");
  CHECK(read_file(dir.path() / "saved" / "b.txt") == "second");
  CHECK(read_file(dir.path() / "saved" / "out.txt") == "new");
  CHECK_FALSE(fs::is_symlink(dir.path() / "saved" / "out.txt"));
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir.path() / "saved")) entries.push_back(entry.path().filename());
  std::sort(entries.begin(), entries.end());
  CHECK(entries == std::vector<std::string>{".b.txt.partial", ".out.txt.partial", "b.txt", "out.txt"});
}

TEST_CASE("agent --backend bedrock without AWS credentials cannot start its sandbox: exit 4, nothing sent",
          "[interpreter][example]") {
  TempDir dir;
  // The agent's environment has no AWS_* variable, and HOME (the temporary directory) has no ~/.aws files.
  const auto run = run_agent({"hello", "--backend", "bedrock", "--base-url", "http://127.0.0.1:9"}, dir.path());
  CHECK(run.exit_code == 4);
  CHECK(run.out.empty());
  CHECK(run.err ==
        "agent: the sandbox could not start (configure): no AWS credentials: set BedrockOptions::credentials, "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or profile 'default' in the shared credentials file\n");
}

TEST_CASE("agent --backend e2b without E2B_API_KEY cannot start its sandbox: exit 4, nothing sent",
          "[interpreter][example]") {
  TempDir dir;
  const auto run = run_agent({"hello", "--backend", "e2b", "--base-url", "http://127.0.0.1:9"}, dir.path());
  CHECK(run.exit_code == 4);
  CHECK(run.out.empty());
  CHECK(run.err.find("agent: the sandbox could not start (configure): no E2B API key") == 0);
}

TEST_CASE("agent without a request prints its usage and exits 64", "[interpreter][example]") {
  TempDir dir;
  const auto run = run_agent({}, dir.path());
  CHECK(run.exit_code == 64);
  CHECK(run.err.find("agent: no request given\nusage: agent \"REQUEST\"") == 0);
}
