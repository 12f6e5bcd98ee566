// run_code: runs a Python program in a sandbox and streams its output.
//
//   run_code [--backend pyodide] [--timeout SECONDS] (-c CODE | FILE | -)
//
// The program's stdout goes to stdout and its stderr to stderr, line by line as they are produced; the library's
// own messages (an error, a traceback, a timeout) go to stderr only. Exit status: 0 SUCCESS, 1 ERROR, 2 TIMEOUT,
// 3 UNKNOWN, 4 the sandbox could not start, 64 bad usage. --timeout 0 means no limit.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

#include "code_interpreter/code_interpreter.hpp"

namespace ci = code_interpreter;

namespace {

int usage(const char* message) {
  std::cerr << "run_code: " << message << "\n"
            << "usage: run_code [--backend pyodide] [--timeout SECONDS] (-c CODE | FILE | -)\n";
  return 64;
}

void write_stream(std::FILE* stream, std::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stream);
  std::fflush(stream);
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "pyodide";
  ci::Timeout timeout;
  std::optional<std::string> code;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--backend" || arg == "--timeout" || arg == "-c") && i + 1 >= argc) {
      return usage((std::string(arg) + " needs a value").c_str());
    }
    if (arg == "--backend") {
      backend = argv[++i];
    } else if (arg == "--timeout") {
      const std::string_view text = argv[++i];
      double seconds = 0;
      try {
        std::size_t used = 0;
        seconds = std::stod(std::string(text), &used);
        if (used != text.size()) return usage("--timeout takes a number of seconds");
      } catch (const std::exception&) {
        return usage("--timeout takes a number of seconds");
      }
      // 0 means no limit; anything else must be a whole number of milliseconds the library can hold.
      if (!(seconds == 0 || (seconds >= 0.001 && seconds <= 1e6))) {
        return usage("--timeout takes 0 (no limit) or 0.001 to 1000000 seconds");
      }
      timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    } else if (arg == "-c") {
      if (code) return usage("give the code once");
      code = argv[++i];
    } else if (arg == "-") {
      if (code) return usage("give the code once");
      std::stringstream in;
      in << std::cin.rdbuf();
      code = in.str();
    } else if (arg == "-h" || arg == "--help") {
      std::cout << "usage: run_code [--backend pyodide] [--timeout SECONDS] (-c CODE | FILE | -)\n";
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage(("unknown option " + std::string(arg)).c_str());
    } else {
      if (code) return usage("give the code once");
      std::error_code ec;
      if (!std::filesystem::is_regular_file(std::string(arg), ec)) {
        return usage(("cannot read " + std::string(arg) + ": not a regular file").c_str());
      }
      std::ifstream file{std::string(arg), std::ios::binary};
      if (!file) return usage(("cannot read " + std::string(arg)).c_str());
      std::stringstream in;
      in << file.rdbuf();
      code = in.str();
    }
  }
  if (!code) return usage("no code given");
  if (backend != "pyodide") {
    return usage(("backend '" + backend + "' is not available in this build (available: pyodide)").c_str());
  }

  std::unique_ptr<ci::CodeInterpreterSandbox> sandbox;
  try {
    sandbox = ci::PyodideSandbox::create();
  } catch (const ci::CodeInterpreterError& e) {
    std::cerr << "run_code: the sandbox could not start (" << ci::to_string(e.stage()) << "): " << e.what() << "\n";
    return 4;
  }

  ci::ExecuteOptions options;
  options.timeout = timeout;
  options.on_stdout = [](std::string_view line) { write_stream(stdout, line); };
  options.on_stderr = [](std::string_view line) { write_stream(stderr, line); };
  const ci::ExecutionResult result = sandbox->execute_code(*code, options);

  switch (result.status) {
    case ci::ExecutionStatus::kSuccess:
      return 0;
    case ci::ExecutionStatus::kError:
      std::cerr << result.error << "\n";
      return 1;
    case ci::ExecutionStatus::kTimeout:
      std::cerr << "run_code: TIMEOUT (" << ci::to_string(*result.timeout_kind) << "): " << result.error << "\n";
      return 2;
    case ci::ExecutionStatus::kUnknown:
      std::cerr << "run_code: UNKNOWN (" << (result.failure ? result.failure->exception_type : "") << "): "
                << result.error << "\n";
      return 3;
  }
  return 3;
}
