// run_code: runs a Python program in a sandbox and streams its output.
//
//   run_code [--config FILE.json] [--backend pyodide|e2b|bedrock] [--template NAME] [--interpreter ID]
//            [--timeout SECONDS] (-c CODE | FILE | -)
//
// The program's stdout goes to stdout and its stderr to stderr, line by line as they are produced; the library's
// own messages (an error, a traceback, a timeout) go to stderr only. Exit status: 0 SUCCESS, 1 ERROR, 2 TIMEOUT,
// 3 UNKNOWN, 4 the sandbox could not start, 64 bad usage (a configuration the factory refuses included). --timeout 0
// means no limit.
//
// The sandbox comes from create_sandbox (include/code_interpreter/factory.hpp): --config reads a JSON configuration
// (its shape: docs/backends.md); --template and --interpreter override what it says, and --backend may repeat its
// backend but not name another.
//
// --backend pyodide (the default) runs locally. --backend e2b creates an E2B sandbox from the environment:
// E2B_API_KEY (required), and optionally E2B_DOMAIN, E2B_API_URL and E2B_SANDBOX_URL; --template names the
// sandbox template (default code-interpreter-v1). --backend bedrock starts an AWS Bedrock AgentCore Code
// Interpreter session from the AWS_* environment (credentials, region, endpoint, profile: see
// docs/backends/bedrock.md); --interpreter names the code interpreter (default aws.codeinterpreter.v1). The sandbox
// is terminated before the program exits, whatever the outcome, so no cloud sandbox or session is left running
// until its lease ends.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "code_interpreter/code_interpreter.hpp"

namespace ci = code_interpreter;

namespace {

constexpr std::string_view kUsage =
    "usage: run_code [--config FILE.json] [--backend pyodide|e2b|bedrock] [--template NAME] [--interpreter ID]\n"
    "                [--timeout SECONDS] (-c CODE | FILE | -)\n";

int usage(const char* message) {
  std::cerr << "run_code: " << message << "\n" << kUsage;
  return 64;
}

void write_stream(std::FILE* stream, std::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stream);
  std::fflush(stream);
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> config_file;
  std::optional<std::string> backend;
  std::optional<std::string> template_id;
  std::optional<std::string> interpreter_id;
  ci::Timeout timeout;
  std::optional<std::string> code;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--config" || arg == "--backend" || arg == "--template" || arg == "--interpreter" ||
         arg == "--timeout" || arg == "-c") &&
        i + 1 >= argc) {
      return usage((std::string(arg) + " needs a value").c_str());
    }
    if (arg == "--config") {
      config_file = argv[++i];
    } else if (arg == "--backend") {
      backend = argv[++i];
    } else if (arg == "--template") {
      template_id = argv[++i];
    } else if (arg == "--interpreter") {
      interpreter_id = argv[++i];
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
      std::cout << kUsage
                << "  --config FILE.json reads a sandbox configuration (docs/backends.md); --template and\n"
                   "  --interpreter override what it says; --backend must name the same backend.\n"
                   "  --backend e2b reads E2B_API_KEY (required), E2B_DOMAIN, E2B_API_URL and E2B_SANDBOX_URL;\n"
                   "  --template NAME picks its sandbox template (default code-interpreter-v1).\n"
                   "  --backend bedrock reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,\n"
                   "  AWS_PROFILE, AWS_REGION, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_BEDROCK_AGENTCORE and\n"
                   "  AWS_ENDPOINT_URL;\n"
                   "  --interpreter ID picks its code interpreter (default aws.codeinterpreter.v1).\n";
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage(("unknown option " + std::string(arg)).c_str());
    } else {
      if (code) return usage("give the code once");
      std::error_code ec;
      const auto type = std::filesystem::status(std::string(arg), ec).type();
      if (type == std::filesystem::file_type::not_found)
        return usage(("cannot read " + std::string(arg) + ": no such file").c_str());
      if (type != std::filesystem::file_type::regular)
        return usage(("cannot read " + std::string(arg) + ": not a regular file").c_str());
      std::ifstream file{std::string(arg), std::ios::binary};
      if (!file) return usage(("cannot read " + std::string(arg)).c_str());
      std::stringstream in;
      in << file.rdbuf();
      code = in.str();
    }
  }
  if (!code) return usage("no code given");
  ci::SandboxConfig config;
  try {
    if (config_file) {
      std::ifstream file{*config_file, std::ios::binary};
      if (!file) return usage(("cannot read " + *config_file).c_str());
      std::stringstream text;
      text << file.rdbuf();
      config = ci::sandbox_config_from_json(text.str());
    }
    // The document's sections were checked against its own backend: another one would leave them unread.
    if (backend && config_file && *backend != config.backend)
      return usage(("--backend " + *backend + " differs from the configuration's backend " + config.backend).c_str());
    if (backend) config.backend = *backend;
    if (template_id && config.backend != "e2b") return usage("--template applies only to --backend e2b");
    if (interpreter_id && config.backend != "bedrock") return usage("--interpreter applies only to --backend bedrock");
    // The API key and URLs come from the E2B_* environment; AWS credentials, region and endpoint from the AWS_*
    // environment and files.
    if (template_id) config.e2b.template_id = *template_id;
    if (interpreter_id) config.bedrock.code_interpreter_identifier = *interpreter_id;
  } catch (const ci::SandboxStartError& e) {
    return usage(e.what());  // the configuration document was refused
  }

  std::unique_ptr<ci::CodeInterpreterSandbox> sandbox;
  try {
    sandbox = ci::create_sandbox(config);
  } catch (const ci::CodeInterpreterError& e) {
    // A backend name or setting the factory refuses is a usage error, like any other bad argument.
    if (e.stage() == ci::Stage::kConfigure && std::string_view(e.what()).rfind("configuration: ", 0) == 0)
      return usage(e.what());
    std::cerr << "run_code: the sandbox could not start (" << ci::to_string(e.stage()) << "): " << e.what() << "\n";
    return 4;
  }

  ci::ExecuteOptions options;
  options.timeout = timeout;
  options.on_stdout = [](std::string_view line) { write_stream(stdout, line); };
  options.on_stderr = [](std::string_view line) { write_stream(stderr, line); };
  const ci::ExecutionResult result = sandbox->execute_code(*code, options);

  int status = 3;
  switch (result.status) {
    case ci::ExecutionStatus::kSuccess:
      status = 0;
      break;
    case ci::ExecutionStatus::kError:
      // Where a backend's error is the program's stderr (Bedrock), that was already streamed.
      if (result.error != result.stderr_text) std::cerr << result.error << "\n";
      status = 1;
      break;
    case ci::ExecutionStatus::kTimeout:
      std::cerr << "run_code: TIMEOUT (" << ci::to_string(*result.timeout_kind) << "): " << result.error << "\n";
      status = 2;
      break;
    case ci::ExecutionStatus::kUnknown:
      std::cerr << "run_code: UNKNOWN (" << (result.failure ? result.failure->exception_type : "") << "): "
                << result.error << "\n";
      status = 3;
      break;
  }

  // A cloud sandbox keeps running (and billing) until its lease ends unless it is killed, so terminate explicitly
  // rather than rely on the destructor's best effort. A failure is reported but does not change the exit status,
  // which describes the program's run.
  try {
    sandbox->terminate();
  } catch (const ci::CodeInterpreterError& e) {
    std::cerr << "run_code: could not terminate sandbox " << sandbox->sandbox_id().value_or("?") << ": " << e.what()
              << "\n";
  }
  return status;
}
