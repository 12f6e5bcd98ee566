// code-interpreter repl: an interactive session on one sandbox. Line editing and history come from libedit's
// readline-compatible API; Ctrl-C interrupts a running input through ExecuteOptions::cancel.
#include <editline/readline.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stop_token>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "repl_input.hpp"

namespace cli {
namespace {

namespace fs = std::filesystem;

// SIGINT writes a byte to this pipe. At the prompt, read_key sees it; while an input runs, a watcher thread turns it
// into a stop request (a signal handler may not touch a stop_source).
int g_interrupt_pipe[2] = {-1, -1};

extern "C" void on_sigint(int) {
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] const auto n = ::write(g_interrupt_pipe[1], &byte, 1);
  errno = saved;
}

// libedit's key reader, replaced so that a Ctrl-C at the prompt is seen whenever it comes: the default reader
// returns only if the signal interrupts its read(), and one that arrives just before that read would be lost.
// Returning EOF makes readline return nullptr; `g_prompt_interrupted` tells that apart from Ctrl-D.
bool g_prompt_interrupted = false;

int read_key(FILE*) {
  for (;;) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_interrupt_pipe[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return EOF;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      char buffer[64];
      while (::read(g_interrupt_pipe[0], buffer, sizeof buffer) > 0) {
      }
      g_prompt_interrupted = true;
      return EOF;
    }
    if (fds[0].revents != 0) {
      unsigned char c = 0;
      const ssize_t n = ::read(STDIN_FILENO, &c, 1);
      if (n == 1) return c;
      if (n < 0 && errno == EINTR) continue;
      return EOF;
    }
  }
}

void drain_interrupts() {
  char buffer[64];
  while (::read(g_interrupt_pipe[0], buffer, sizeof buffer) > 0) {
  }
}

void install_sigint_handler() {
  if (g_interrupt_pipe[0] < 0) {
    if (::pipe2(g_interrupt_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2 failed");
  }
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the prompt's read must return
  ::sigaction(SIGINT, &action, nullptr);
}

// $XDG_STATE_HOME/code_interpreter/history, else ~/.local/state/code_interpreter/history; nullopt without either.
std::optional<fs::path> history_path() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && state[0] == '/')
    return fs::path(state) / "code_interpreter" / "history";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/')
    return fs::path(home) / ".local" / "state" / "code_interpreter" / "history";
  return std::nullopt;
}

using Examples = std::map<std::string, std::string>;

// {"examples": {"NAME": "CODE", ...}}: read strictly, like the library's configuration, so a typo is reported.
Examples read_examples(const std::string& path) {
  std::ifstream file{path, std::ios::binary};
  if (!file) throw UsageError("repl", "cannot read " + path);
  std::stringstream text;
  text << file.rdbuf();
  const auto document = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  const auto refuse = [&](const std::string& why) { return UsageError("repl", path + ": " + why); };
  if (!document.is_object()) throw refuse("not a JSON object");
  Examples examples;
  for (const auto& [key, value] : document.items()) {
    if (key != "examples") throw refuse("unknown key (the file holds only \"examples\")");
    if (!value.is_object()) throw refuse("\"examples\" must be an object of NAME: CODE");
    for (const auto& [name, code] : value.items()) {
      if (!code.is_string()) throw refuse("the example '" + name + "' must be a string of code");
      examples.emplace(name, code.get<std::string>());
    }
  }
  return examples;
}

// Runs `work` with Ctrl-C turned into stop.request_stop() by a watcher thread (a signal handler may not touch a
// stop_source), and returns what it returns.
template <class Work>
auto interruptible(std::stop_source& stop, Work&& work) {
  drain_interrupts();
  std::jthread watcher([&stop](std::stop_token done) {
    pollfd fd{g_interrupt_pipe[0], POLLIN, 0};
    while (!done.stop_requested()) {
      if (::poll(&fd, 1, 50) > 0) {
        drain_interrupts();
        stop.request_stop();
      }
    }
  });
  return work();  // the jthread's destructor stops and joins the watcher, also when `work` throws
}

class Session {
 public:
  Session(ci::SandboxConfig config, ci::Timeout timeout, Examples examples)
      : config_(std::move(config)), timeout_(timeout), examples_(std::move(examples)) {}

  int run() {
    install_sigint_handler();
    sandbox_ = start();
    if (!sandbox_) return kExitCannotStart;
    std::cerr << "code-interpreter repl on " << config_.backend << " (" << ci::to_string(config_.language)
              << "); :help for help, :quit or Ctrl-D to leave\n";
    rl_getc_function = read_key;
    rl_bind_key('\t', rl_insert);  // Tab indents Python, it does not complete file names of this machine
    using_history();
    stifle_history(1000);
    history_ = history_path();
    if (history_) read_history(history_->c_str());  // absent or unreadable: start without

    std::vector<std::string> lines;
    for (;;) {
      g_prompt_interrupted = false;
      char* raw = readline(lines.empty() ? ">>> " : "... ");
      if (g_prompt_interrupted) {  // Ctrl-C at the prompt: the input typed so far is discarded
        std::free(raw);
        lines.clear();
        write_stream(stdout, "\n");
        continue;
      }
      if (raw == nullptr) {  // Ctrl-D (or the end of a piped input)
        write_stream(stdout, "\n");
        break;
      }
      std::string line(raw);
      std::free(raw);
      if (!line.empty() && line.find_first_not_of(" \t") != std::string::npos) remember(line);
      if (lines.empty()) {
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        if (line[0] == ':') {
          const auto verdict = command(line);
          if (verdict) return *verdict;
          continue;
        }
      }
      lines.push_back(std::move(line));
      if (needs_more_input(lines)) continue;
      std::string code;
      for (const auto& l : lines) code += l + "\n";
      lines.clear();
      execute(code);
    }
    finish();
    return kExitOk;
  }

 private:
  void remember(const std::string& line) {
    add_history(line.c_str());
    if (!history_) return;
    // Written after every line, so a session that is killed keeps its history. Failures are not reported: a
    // read-only home must not stop the session.
    std::error_code ec;
    fs::create_directories(history_->parent_path(), ec);
    // What was typed may include a secret: a new history file is the user's alone (write_history keeps the mode).
    if (const int fd = ::open(history_->c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600); fd >= 0) ::close(fd);
    write_history(history_->c_str());
  }

  void finish() {
    if (sandbox_) terminate_sandbox(*sandbox_);
  }

  // A ':' command. @return the exit status when the session ends, nullopt to go on.
  std::optional<int> command(const std::string& line) {
    std::istringstream words(line);
    std::string name, argument, extra;
    words >> name >> argument >> extra;
    if (name == ":quit" || name == ":q" || name == ":exit") {
      finish();
      return kExitOk;
    }
    if (name == ":help") {
      std::cout << *help_text("repl");
    } else if (name == ":files") {
      list_files(argument.empty() ? sandbox_->capabilities().upload_dir : argument);
    } else if (name == ":examples") {
      if (examples_.empty()) std::cout << "no examples (give a file with --examples FILE.json)\n";
      for (const auto& [example, code] : examples_)
        std::cout << example << "\t" << code.substr(0, code.find('\n')) << "\n";
    } else if (name == ":example") {
      const auto found = examples_.find(argument);
      if (found == examples_.end()) std::cerr << "code-interpreter: no example named '" << argument << "'\n";
      else execute(found->second);
    } else if (name == ":reset") {
      terminate_sandbox(*sandbox_);
      sandbox_.reset();
      sandbox_ = start();
      if (!sandbox_) return kExitCannotStart;
      std::cerr << "a fresh sandbox: every variable and file is gone\n";
    } else {
      std::cerr << "code-interpreter: unknown command " << name << " (:help lists them)\n";
    }
    std::cout.flush();
    return std::nullopt;
  }

  void list_files(const std::string& dir) {
    try {
      auto files = sandbox_->list_files(dir);
      std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
      for (const auto& file : files) {
        if (file.is_directory) std::cout << file.name << "/\n";
        else std::cout << file.name << "\t" << file.size << "\n";
      }
    } catch (const ci::CodeInterpreterError& e) {
      std::cerr << "code-interpreter: " << dir << ": " << e.what() << "\n";
    }
  }

  void execute(const std::string& code) {
    std::stop_source stop;
    ci::ExecuteOptions options;
    options.timeout = timeout_;
    options.cancel = stop.get_token();
    options.on_stdout = [](std::string_view text) { write_stream(stdout, text); };
    options.on_stderr = [](std::string_view text) { write_stream(stderr, text); };
    const ci::ExecutionResult result = interruptible(stop, [&] { return sandbox_->execute_code(code, options); });
    (void)report_result(result, stop.stop_requested());
    if (result.state_lost)
      write_stream(stderr, "code-interpreter: the sandbox's state was lost: the next input starts afresh\n");
  }

  // Starts (or restarts) the sandbox; Ctrl-C meanwhile cancels the start through SandboxConfig::cancel, so a cloud
  // sandbox half made is torn down by the library rather than left to its lease.
  [[nodiscard]] std::unique_ptr<ci::CodeInterpreterSandbox> start() {
    std::stop_source stop;
    ci::SandboxConfig config = config_;
    config.cancel = stop.get_token();
    return interruptible(stop, [&] { return start_sandbox("repl", config); });
  }

  ci::SandboxConfig config_;
  ci::Timeout timeout_;
  Examples examples_;
  std::unique_ptr<ci::CodeInterpreterSandbox> sandbox_;
  std::optional<fs::path> history_;
};

}  // namespace

int repl_command(std::span<const std::string> args) {
  constexpr std::string_view kName = "repl";
  SandboxFlags flags;
  ci::Timeout timeout;
  Examples examples;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (parse_sandbox_flag(kName, args, i, flags)) continue;
    if ((arg == "--timeout" || arg == "--examples") && i + 1 >= args.size())
      throw UsageError(kName, std::string(arg) + " needs a value");
    if (arg == "--timeout") {
      timeout = parse_timeout(kName, args[++i]);
    } else if (arg == "--examples") {
      examples = read_examples(args[++i]);
    } else if (arg == "-h" || arg == "--help") {
      std::cout << *help_text(kName);
      return kExitOk;
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError(kName, "unknown option " + shown(arg));
    } else {
      throw UsageError(kName, "repl takes no program: it reads its input from the terminal");
    }
  }
  return Session(build_config(kName, flags), timeout, std::move(examples)).run();
}

}  // namespace cli
