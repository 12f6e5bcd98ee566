// Starts one of the local protocol servers (tests/servers/*, staged with its npm packages into the build tree)
// for the life of a test: `node <script> <args>`; the server prints one JSON line with its URLs when it listens,
// and exits when its stdin closes, so a crashed test process never leaves it behind.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace code_interpreter::test {

class NodeServer {
 public:
  /// `script` is relative to the staged Node directory (CI_TEST_NODE_DIR), e.g. "servers/e2b/server.mjs".
  explicit NodeServer(const std::string& script, std::vector<std::string> args = {},
                      std::chrono::milliseconds startup = std::chrono::seconds(30)) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<std::string> argv_strings{CI_TEST_NODE, std::string(CI_TEST_NODE_DIR) + "/" + script};
    for (auto& a : args) argv_strings.push_back(std::move(a));
    std::vector<char*> argv;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, CI_TEST_NODE, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    stdin_fd_ = in[1];
    stdout_fd_ = out[0];
    if (rc != 0) throw std::runtime_error("cannot start node");

    // The first stdout line is the server's address record.
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + startup;
    while (line.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{stdout_fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        stop();
        throw std::runtime_error("node server " + script + " did not start");
      }
      char buffer[512];
      const ssize_t n = ::read(stdout_fd_, buffer, sizeof buffer);
      if (n <= 0) {
        stop();
        throw std::runtime_error("node server " + script + " exited before listening");
      }
      line.append(buffer, static_cast<std::size_t>(n));
    }
    info_ = nlohmann::json::parse(line.substr(0, line.find('\n')));
  }

  ~NodeServer() { stop(); }
  NodeServer(const NodeServer&) = delete;
  NodeServer& operator=(const NodeServer&) = delete;

  /// The address record the server printed, e.g. {"api_url": ..., "sandbox_url": ...}.
  [[nodiscard]] const nlohmann::json& info() const { return info_; }
  [[nodiscard]] std::string url(const char* key) const { return info_.at(key).get<std::string>(); }
  [[nodiscard]] pid_t pid() const { return pid_; }

  /// Ends the server: stdin EOF, then SIGTERM, then SIGKILL; waits for it.
  void stop() {
    if (pid_ <= 0) return;
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    stdin_fd_ = -1;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      if (i == 50) ::kill(pid_, SIGTERM);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
    stdout_fd_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  nlohmann::json info_;
};

}  // namespace code_interpreter::test
