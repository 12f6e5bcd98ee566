// Runs code-interpreter (CI_TEST_CLI) as a user runs it: given arguments, exactly the given environment (plus
// PATH), stdin from /dev/null; its exit status, stdout and stderr are returned for exact checks.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cli_test {

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline Run run_cli(const std::vector<std::string>& args, std::vector<std::string> env) {
  char pattern[] = "/tmp/ci-cli-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::filesystem::path dir = pattern, out = dir / "stdout", err = dir / "stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> argv_strings{CI_TEST_CLI};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  env.push_back("PATH=/usr/bin:/bin");
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, CI_TEST_CLI, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  Run run;
  if (rc == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const auto slurp = [](const std::filesystem::path& path) {
      std::ifstream in(path, std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      return s.str();
    };
    run.out = slurp(out);
    run.err = slurp(err);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return run;
}

}  // namespace cli_test
