// A Model Context Protocol server over stdio (JSON-RPC 2.0, one message per line) that offers the sandbox as a tool
// (SandboxTool) to any MCP client: `code-interpreter mcp`. Guide: docs/agents.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "code_interpreter/export.hpp"
#include "code_interpreter/factory.hpp"
#include "code_interpreter/tool.hpp"

namespace code_interpreter {

/// The MCP protocol revisions the server speaks, newest first (modelcontextprotocol.io specification). `initialize`
/// answers with the client's revision when it is one of these, else with the first.
inline constexpr std::string_view kMcpProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

/// The execute_code tool as the server offers it by default: a call runs for at most 30 s, `timeout` may ask for up
/// to 300 s, `files` names files already in the upload directory, and files written stay in the sandbox (an MCP
/// client cannot follow a sandbox link).
[[nodiscard]] inline SandboxToolOptions mcp_tool_options() {
  SandboxToolOptions o;
  o.execution_timeout = std::chrono::seconds(30);
  o.max_timeout = std::chrono::seconds(300);
  o.file_arguments = true;
  o.returns_linked_files = false;
  return o;
}

struct McpServerOptions {
  /// What each session's sandbox is made from (Pyodide by default).
  SandboxConfig sandbox;
  /// Makes a sandbox; empty: create_sandbox. Tests give one that returns testing::FakeSandbox.
  std::function<std::unique_ptr<CodeInterpreterSandbox>(const SandboxConfig&)> create;
  /// What the tool's description is written from before any sandbox exists; nullopt: declared_capabilities(sandbox)
  /// with the configuration's language and packages.
  std::optional<SandboxProfile> profile;
  /// The execute_code tool as offered (mcp_tool_options()).
  SandboxToolOptions tool = mcp_tool_options();
  /// Sandboxes one session may create, the first included; above 1 the reset_sandbox tool is offered.
  int max_sandboxes = 3;
  /// Largest message read from the client, in bytes (its line without the newline); a longer one is answered with
  /// -32600 and skipped. The arguments of the tools/call requests waiting behind the running one total at most 4 times
  /// this (as compact JSON text); a call past that is answered -32000 (server busy), as is a 17th waiting call.
  std::size_t max_message_bytes = std::size_t{4} << 20;
  /// The version the server gives as serverInfo.version in its initialize result (the CLI passes its own version).
  std::string server_version = "0";
};

/// Serves one MCP session: reads JSON-RPC messages from `in_fd`, writes only protocol messages to `out_fd`, until
/// `in_fd` reaches end of file; then cancels a call in flight, terminates the session's sandbox and returns.
///
/// Methods: initialize, ping, tools/list, tools/call, logging/setLevel; notifications: initialized, cancelled (a
/// cancelled tools/call is stopped and gets no answer). `initialize` and `tools/list` never create a sandbox: the
/// first tools/call does (with progress notifications while it starts when the request carries a progressToken).
/// Client input is hostile: an oversize line or a batch is answered with -32600, text that is not JSON with -32700, an
/// invalid request with -32600, an unknown method with -32601, bad params with -32602; a notification is never
/// answered. Tool calls run one at a time on a worker thread, so cancellations and pings are read while one runs.
/// Logs go to the library's logger (stderr; warning and above at its default level) and, at the level the client set
/// (default info), as notifications/message; neither carries a secret.
/// A write to a client that has gone fails without raising SIGPIPE in the host program (the signal is blocked for the
/// writing thread and consumed); the server then serves until end of input.
/// @return 0 after end of file.
/// @throws std::invalid_argument for options the tool refuses (SandboxToolOptions) or max_sandboxes < 1.
/// @throws SandboxStartError for a sandbox configuration the factory refuses (declared_capabilities), unless
///         `profile` is set.
CODE_INTERPRETER_EXPORT int serve_mcp(int in_fd, int out_fd, const McpServerOptions& options = {});

}  // namespace code_interpreter
