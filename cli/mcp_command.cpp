// code-interpreter mcp: the sandbox as a Model Context Protocol server on standard input and output, for any MCP
// client (docs/agents.md). Only protocol messages go to stdout; the library's log goes to stderr.
#include <csignal>
#include <iostream>
#include <limits>

#include "cli.hpp"

namespace cli {
namespace {

// A whole number in [low, high]. @throws UsageError.
std::size_t parse_count(std::string_view subcommand, std::string_view flag, std::string_view text, std::size_t low,
                        std::size_t high) {
  std::size_t value = 0;
  const bool digits = !text.empty() && text.size() <= 12 &&
                      text.find_first_not_of("0123456789") == std::string_view::npos;
  if (digits) value = std::stoull(std::string(text));
  if (!digits || value < low || value > high)
    throw UsageError(subcommand, std::string(flag) + " takes a whole number from " + std::to_string(low) + " to " +
                                     std::to_string(high));
  return value;
}

}  // namespace

int mcp_command(std::span<const std::string> args) {
  constexpr std::string_view kName = "mcp";
  SandboxFlags flags;
  ci::McpServerOptions options;
  options.server_version = CODE_INTERPRETER_CLI_VERSION;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (parse_sandbox_flag(kName, args, i, flags)) continue;
    if (arg == "-h" || arg == "--help") {
      std::cout << *help_text(kName);
      return kExitOk;
    }
    const bool takes_value =
        arg == "--timeout" || arg == "--max-timeout" || arg == "--max-sandboxes" || arg == "--max-message-bytes";
    if (!takes_value) throw UsageError(kName, "unknown option " + shown(arg));
    if (i + 1 >= args.size()) throw UsageError(kName, std::string(arg) + " needs a value");
    const std::string_view value = args[++i];
    if (arg == "--timeout") {
      options.tool.execution_timeout = parse_timeout(kName, value);
    } else if (arg == "--max-timeout") {
      options.tool.max_timeout = std::chrono::seconds(parse_count(kName, arg, value, 1, 86400));
    } else if (arg == "--max-sandboxes") {
      options.max_sandboxes = static_cast<int>(parse_count(kName, arg, value, 1, 1000));
    } else {
      options.max_message_bytes = parse_count(kName, arg, value, 1024, std::size_t{1} << 30);
    }
  }
  const auto& tool = options.tool;
  if (tool.max_timeout && tool.execution_timeout && *tool.execution_timeout > *tool.max_timeout) {
    throw UsageError(kName, "--timeout must not be more than --max-timeout");
  }
  options.sandbox = build_config(kName, flags);
  try {
    (void)ci::declared_capabilities(options.sandbox);
  } catch (const ci::SandboxStartError& e) {
    throw UsageError(kName, e.what());
  }
  // serve_mcp never lets a write to a client that has gone raise SIGPIPE; the logger writes to stderr, which a
  // client may close too.
  std::signal(SIGPIPE, SIG_IGN);
  return ci::serve_mcp(0, 1, options);
}

}  // namespace cli
