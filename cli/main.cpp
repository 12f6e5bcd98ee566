// code-interpreter: runs Python in a sandbox from the command line (docs/cli.md). Dispatches to a subcommand and
// turns bad usage and unexpected exceptions into the documented exit statuses.
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"

#ifndef CODE_INTERPRETER_CLI_VERSION
#error "the build defines CODE_INTERPRETER_CLI_VERSION (the project's version)"
#endif

namespace {

int dispatch(const std::vector<std::string>& args) {
  using namespace cli;
  if (args.empty()) throw UsageError("", "no subcommand given");
  const std::string& first = args[0];
  const std::span<const std::string> rest(args.data() + 1, args.size() - 1);
  if (first == "--help" || first == "-h") {
    std::cout << *help_text("");
    return kExitOk;
  }
  if (first == "--version") {
    std::cout << "code-interpreter " << CODE_INTERPRETER_CLI_VERSION << "\n";
    return kExitOk;
  }
  if (first == "help") {
    if (rest.size() > 1) throw UsageError("help", "help takes one subcommand");
    const std::string name = rest.empty() ? "" : rest[0];
    const auto text = help_text(name);
    if (!text) throw UsageError("help", "unknown subcommand '" + shown(name) + "'");
    std::cout << *text;
    return kExitOk;
  }
  if (first == "run") return run_command(rest);
  if (first == "repl") return repl_command(rest);
  if (first == "backends") return backends_command(rest);
  if (first == "list") return list_command(rest);
  if (first == "kill") return kill_command(rest);
  if (first == "sweep") return sweep_command(rest);
  if (first == "packages") return packages_command(rest);
  if (first == "mcp") return mcp_command(rest);
  if (!first.empty() && first[0] == '-') throw UsageError("", "unknown option " + shown(first));
  throw UsageError("", "unknown subcommand '" + shown(first) + "'");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return dispatch(args);
  } catch (const cli::UsageError& e) {
    std::cerr << "code-interpreter: " << e.what() << "\n" << cli::synopsis(e.subcommand());
    if (!e.subcommand().empty())
      std::cerr << "'code-interpreter help " << e.subcommand() << "' describes it.\n";
    return cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "code-interpreter: internal error: " << e.what() << "\n";
    return cli::kExitInternal;
  }
}
