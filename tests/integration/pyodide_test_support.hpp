// Helpers shared by the Pyodide integration tests.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <string>
#include <stdexcept>
#include <vector>

#include "code_interpreter/code_interpreter.hpp"
#include "../support/scoped_env.hpp"
#include "../support/temp_files.hpp"

namespace ci = code_interpreter;
using namespace std::chrono_literals;

namespace test_support {

// A program no interrupt stops (it swallows every KeyboardInterrupt and CancelledError): a timeout ends it only by
// killing the runtime after interrupt_grace, the way to force a respawn.
inline constexpr std::string_view kUnstoppable =
    "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass\n";

// Runs kUnstoppable with `timeout`, so that the runtime is killed once the sandbox's interrupt_grace is over, and
// replaced. Throws std::runtime_error, with the reason, if the call did not end that way (kTimeout, state lost).
inline void force_respawn(ci::PyodideSandbox& sandbox, std::chrono::milliseconds timeout) {
  ci::ExecuteOptions o;
  o.timeout = timeout;
  const auto r = sandbox.execute_code(kUnstoppable, o);
  if (r.status != ci::ExecutionStatus::kTimeout || !r.state_lost) {
    throw std::runtime_error("the unstoppable program's runtime was not killed (status " +
                             std::to_string(static_cast<int>(r.status)) + "): " + r.error);
  }
}

// The pids of this process's direct children whose executable is Deno.
inline std::vector<pid_t> deno_children() {
  std::vector<pid_t> pids;
  const pid_t self = ::getpid();
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    const auto open = line.find('(');
    if (close == std::string::npos || open == std::string::npos) continue;
    const std::string comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid == self && comm == "deno") pids.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return pids;
}

// utime + stime of a process and its threads, in clock ticks (/proc/<pid>/stat fields 14 and 15); -1 when the
// process is gone.
inline long cpu_ticks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

// A runtime restored from a snapshot goes on compiling Pyodide's code in V8's background threads for a few seconds
// after it is ready (docs/backends/pyodide.md "Snapshots": about 1.2 s of CPU over 4 s, measured). Waits until
// `pid` used at most one tick in a 500 ms window, for at most `limit`; false if it never did. Tests of what a
// program leaves running call it first, so that they measure the program, not the runtime's own start.
inline bool await_runtime_settled(pid_t pid, std::chrono::milliseconds limit = 15s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  long before = cpu_ticks(pid);
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(500ms);
    const long now = cpu_ticks(pid);
    if (now < 0) return false;
    if (now - before <= 1) return true;
    before = now;
  }
  return false;
}

// Waits up to `limit` for this process to have no Deno child left (a killed child is reaped asynchronously).
inline bool no_deno_children(std::chrono::milliseconds limit = 3000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!deno_children().empty()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

using code_interpreter::test_support::read_text;
using code_interpreter::test_support::write_text;

// The base snapshot image the build made in `runtime_dir` (tools/make_snapshot.cpp); empty when there is none.
inline std::filesystem::path installed_snapshot(const std::filesystem::path& runtime_dir) {
  for (const auto& e : std::filesystem::directory_iterator(runtime_dir)) {
    const auto name = e.path().filename().string();
    if (name.rfind("snapshot-", 0) == 0 && e.path().extension() == ".bin") return e.path();
  }
  return {};
}

// A private copy of the built runtime that a test may alter. Large files are hard-linked, not copied. The copy is
// the new temporary directory top(), or `below` inside it.
class RuntimeCopy {
 public:
  explicit RuntimeCopy(const std::filesystem::path& below = {}) {
    namespace fs = std::filesystem;
    char pattern[] = "/tmp/ci-runtime-copy-XXXXXX";
    top_ = ::mkdtemp(pattern);
    dir_ = below.empty() ? top_ : top_ / below;
    fs::create_directories(dir_);
    const fs::path src = CI_TEST_RUNTIME_DIR;
    for (const auto& entry : fs::recursive_directory_iterator(src)) {
      // Symlinks (node_modules/.bin) are recreated as symlinks; directories below them are not followed.
      const auto rel = entry.path().lexically_relative(src);
      const auto dst = dir_ / rel;
      if (entry.is_symlink()) {
        fs::copy_symlink(entry.path(), dst);
      } else if (entry.is_directory()) {
        fs::create_directories(dst);
      } else if (entry.is_regular_file()) {
        std::error_code ec;
        fs::create_hard_link(entry.path(), dst, ec);
        if (ec) fs::copy_file(entry.path(), dst);
      }
    }
  }
  ~RuntimeCopy() {
    std::error_code ec;
    std::filesystem::remove_all(top_, ec);
  }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  [[nodiscard]] const std::filesystem::path& top() const { return top_; }

  // Replaces a file by a fresh copy (never writing through a hard link into the shared runtime).
  void rewrite(const std::filesystem::path& rel, const std::string& text) {
    std::filesystem::remove(dir_ / rel);
    write_text(dir_ / rel, text);
  }

 private:
  std::filesystem::path top_;
  std::filesystem::path dir_;
};

// The text/plain value of a result that succeeded with exactly one rich result holding one; otherwise it throws
// std::runtime_error naming the status, the error and both streams (the test then fails with that message).
inline std::string text_of(const ci::ExecutionResult& r) {
  if (r.status != ci::ExecutionStatus::kSuccess || r.results.size() != 1 ||
      r.results.front().data.count("text/plain") == 0) {
    throw std::runtime_error("expected a success with one text/plain result; status " +
                             std::string(ci::to_string(r.status)) + ", " + std::to_string(r.results.size()) +
                             " results; error: " + r.error + "; stdout: " + r.stdout_text + "; stderr: " +
                             r.stderr_text);
  }
  return r.results.front().data.at("text/plain");
}

inline std::unique_ptr<ci::PyodideSandbox> make_sandbox(ci::PyodideOptions options = {}) {
  return ci::PyodideSandbox::create(std::move(options));
}

}  // namespace test_support
