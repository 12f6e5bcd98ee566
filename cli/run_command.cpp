// code-interpreter run: one program in a fresh sandbox, its output streamed, its status as the exit status. The
// behaviour, flags and exit statuses of the former examples/run_code, kept.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.hpp"

namespace cli {

int run_command(std::span<const std::string> args) {
  constexpr std::string_view kName = "run";
  SandboxFlags flags;
  ci::Timeout timeout;
  std::optional<std::string> code;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (parse_sandbox_flag(kName, args, i, flags)) continue;
    if ((arg == "--timeout" || arg == "-c") && i + 1 >= args.size())
      throw UsageError(kName, std::string(arg) + " needs a value");
    if (arg == "--timeout") {
      timeout = parse_timeout(kName, args[++i]);
    } else if (arg == "-c") {
      if (code) throw UsageError(kName, "give the code once");
      code = args[++i];
    } else if (arg == "-") {
      if (code) throw UsageError(kName, "give the code once");
      std::stringstream in;
      in << std::cin.rdbuf();
      code = in.str();
    } else if (arg == "-h" || arg == "--help") {
      std::cout << *help_text(kName);
      return kExitOk;
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError(kName, "unknown option " + shown(arg));
    } else {
      if (code) throw UsageError(kName, "give the code once");
      std::error_code ec;
      const auto type = std::filesystem::status(std::string(arg), ec).type();
      if (type == std::filesystem::file_type::not_found)
        throw UsageError(kName, "cannot read " + std::string(arg) + ": no such file");
      if (type != std::filesystem::file_type::regular)
        throw UsageError(kName, "cannot read " + std::string(arg) + ": not a regular file");
      std::ifstream file{std::string(arg), std::ios::binary};
      if (!file) throw UsageError(kName, "cannot read " + std::string(arg));
      std::stringstream in;
      in << file.rdbuf();
      code = in.str();
    }
  }
  if (!code) throw UsageError(kName, "no code given");
  const ci::SandboxConfig config = build_config(kName, flags);
  const auto sandbox = start_sandbox(kName, config);
  if (!sandbox) return kExitCannotStart;

  ci::ExecuteOptions options;
  options.timeout = timeout;
  options.on_stdout = [](std::string_view line) { write_stream(stdout, line); };
  options.on_stderr = [](std::string_view line) { write_stream(stderr, line); };
  const ci::ExecutionResult result = sandbox->execute_code(*code, options);

  const int status = report_result(result, false);
  // A failure to terminate is reported but does not change the exit status, which describes the program's run.
  terminate_sandbox(*sandbox);
  return status;
}

}  // namespace cli
