// Configuration from flags, sandbox start with a progress indicator, and output helpers shared by run and repl.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli.hpp"

namespace cli {

std::string shown(std::string_view arg) {
  std::string out;
  for (char c : arg.substr(0, 32)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (arg.size() > 32) out += "...";
  return out;
}

bool parse_sandbox_flag(std::string_view subcommand, std::span<const std::string> args, std::size_t& i,
                        SandboxFlags& flags) {
  const std::string_view arg = args[i];
  std::optional<std::string>* target = nullptr;
  if (arg == "--config") target = &flags.config_file;
  else if (arg == "--backend") target = &flags.backend;
  else if (arg == "--template") target = &flags.template_id;
  else if (arg == "--interpreter") target = &flags.interpreter_id;
  else return false;
  if (i + 1 >= args.size()) throw UsageError(subcommand, std::string(arg) + " needs a value");
  *target = args[++i];
  return true;
}

ci::SandboxConfig build_config(std::string_view subcommand, const SandboxFlags& flags) {
  ci::SandboxConfig config;
  try {
    if (flags.config_file) {
      std::ifstream file{*flags.config_file, std::ios::binary};
      if (!file) throw UsageError(subcommand, "cannot read " + *flags.config_file);
      std::stringstream text;
      text << file.rdbuf();
      config = ci::sandbox_config_from_json(text.str());
    }
  } catch (const ci::SandboxStartError& e) {
    throw UsageError(subcommand, e.what());  // the configuration document was refused
  }
  // The document's sections were checked against its own backend: another one would leave them unread.
  if (flags.backend && flags.config_file && *flags.backend != config.backend)
    throw UsageError(subcommand, "--backend " + shown(*flags.backend) + " differs from the configuration's backend " +
                                     config.backend);
  if (flags.backend) config.backend = *flags.backend;
  if (flags.template_id && config.backend != "e2b")
    throw UsageError(subcommand, "--template applies only to --backend e2b");
  if (flags.interpreter_id && config.backend != "bedrock")
    throw UsageError(subcommand, "--interpreter applies only to --backend bedrock");
  // The API key and URLs come from the E2B_* environment; AWS credentials, region and endpoint from the AWS_*
  // environment and files: never from flags, which other users of the machine can read.
  if (flags.template_id) config.e2b.template_id = *flags.template_id;
  if (flags.interpreter_id) config.bedrock.code_interpreter_identifier = *flags.interpreter_id;
  return config;
}

ci::Timeout parse_timeout(std::string_view subcommand, std::string_view text) {
  double seconds = 0;
  try {
    std::size_t used = 0;
    seconds = std::stod(std::string(text), &used);
    if (used != text.size()) throw UsageError(subcommand, "--timeout takes a number of seconds");
  } catch (const std::logic_error&) {  // std::stod's invalid_argument and out_of_range
    throw UsageError(subcommand, "--timeout takes a number of seconds");
  }
  // 0 means no limit; anything else must be a whole number of milliseconds the library can hold.
  if (!(seconds == 0 || (seconds >= 0.001 && seconds <= 1e6)))
    throw UsageError(subcommand, "--timeout takes 0 (no limit) or 0.001 to 1000000 seconds");
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

namespace {

// A spinner on stderr while a sandbox starts (a cloud sandbox takes seconds; Pyodide about one). Only on a
// terminal: in a pipe or a log file the carriage returns would be noise.
class Progress {
 public:
  explicit Progress(std::string label) {
    if (::isatty(STDERR_FILENO) == 0) return;
    thread_ = std::jthread([this, label = std::move(label)](std::stop_token stop) {
      static constexpr char kFrames[] = {'|', '/', '-', '\\'};
      std::mutex m;
      std::condition_variable_any cv;
      for (std::size_t frame = 0; !stop.stop_requested(); ++frame) {
        std::fprintf(stderr, "\r%s %c", label.c_str(), kFrames[frame % 4]);
        std::fflush(stderr);
        std::unique_lock lock(m);
        cv.wait_for(lock, stop, std::chrono::milliseconds(100), [] { return false; });
      }
      std::fputs("\r\033[K", stderr);  // erase the line: what follows starts on a clean one
      std::fflush(stderr);
    });
  }
  ~Progress() = default;  // the jthread asks its loop to stop, and joins it
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void done() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }

 private:
  std::jthread thread_;
};

}  // namespace

std::unique_ptr<ci::CodeInterpreterSandbox> start_sandbox(std::string_view subcommand,
                                                          const ci::SandboxConfig& config) {
  Progress progress("starting the " + config.backend + " sandbox");
  try {
    auto sandbox = ci::create_sandbox(config);
    progress.done();
    return sandbox;
  } catch (const ci::CodeInterpreterError& e) {
    progress.done();
    // A backend name or setting the factory refuses is a usage error, like any other bad argument.
    if (e.stage() == ci::Stage::kConfigure && std::string_view(e.what()).rfind("configuration: ", 0) == 0)
      throw UsageError(subcommand, e.what());
    std::cerr << "code-interpreter: the sandbox could not start (" << ci::to_string(e.stage()) << "): " << e.what()
              << "\n";
    return nullptr;
  }
}

void write_stream(std::FILE* stream, std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fflush(stream);
}

void terminate_sandbox(ci::CodeInterpreterSandbox& sandbox) {
  // A cloud sandbox keeps running (and billing) until its lease ends unless it is killed, so terminate explicitly
  // rather than rely on the destructor's best effort.
  try {
    sandbox.terminate();
  } catch (const ci::CodeInterpreterError& e) {
    std::cerr << "code-interpreter: could not terminate sandbox " << sandbox.sandbox_id().value_or("?") << ": "
              << e.what() << "\n";
  }
}

namespace {

// sys.exit(3) and sys.exit() print nothing; sys.exit("why") prints "why" (CPython's handling of SystemExit).
bool is_exit_status(const std::string& value) {
  // sys.exit(True) exits 1 and prints nothing; a string "True" cannot be told from it by its text.
  if (value.empty() || value == "None" || value == "True" || value == "False") return true;
  std::size_t i = value[0] == '-' ? 1 : 0;
  if (i == value.size()) return false;
  for (; i < value.size(); ++i)
    if (value[i] < '0' || value[i] > '9') return false;
  return true;
}

}  // namespace

int report_result(const ci::ExecutionResult& result, bool interrupted) {
  for (const auto& rich : result.results) {
    if (const auto text = rich.data.find("text/plain"); text != rich.data.end())
      write_stream(stdout, text->second + "\n");
  }
  switch (result.status) {
    case ci::ExecutionStatus::kSuccess:
      return kExitOk;
    case ci::ExecutionStatus::kError:
      if (result.code_error && result.code_error->name == "SystemExit") {
        if (!is_exit_status(result.code_error->value)) write_stream(stderr, result.code_error->value + "\n");
      } else if (result.error != result.stderr_text) {
        // Where a backend's error is the program's stderr (Bedrock), that was already streamed.
        write_stream(stderr, result.error + "\n");
      }
      return kExitError;
    case ci::ExecutionStatus::kTimeout:
      write_stream(stderr, "code-interpreter: TIMEOUT (" +
                               std::string(result.timeout_kind ? ci::to_string(*result.timeout_kind) : "?") +
                               "): " + result.error + "\n");
      return kExitTimeout;
    case ci::ExecutionStatus::kUnknown:
      // Ctrl-C: on Pyodide the cell got KeyboardInterrupt and the state is kept (state_lost says otherwise).
      if (interrupted && result.failure && result.failure->exception_type == "cancelled") {
        write_stream(stderr, "KeyboardInterrupt\n");
        return kExitUnknown;
      }
      write_stream(stderr, "code-interpreter: UNKNOWN (" + (result.failure ? result.failure->exception_type : "") +
                               "): " + result.error + "\n");
      return kExitUnknown;
  }
  return kExitUnknown;
}

}  // namespace cli
