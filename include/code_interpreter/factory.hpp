// Choosing a backend by name: one configuration for every backend, read from C++ or from a JSON document, and the
// factory that creates the sandbox it names (docs/backends.md).
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/bedrock_sandbox.hpp"
#include "code_interpreter/e2b_sandbox.hpp"
#include "code_interpreter/export.hpp"
#include "code_interpreter/pyodide_sandbox.hpp"
#include "code_interpreter/sandbox.hpp"

namespace code_interpreter {

/// The backend names create_sandbox accepts, in the order available_backends() reports them.
inline constexpr std::string_view kBackendNames[] = {"pyodide", "e2b", "bedrock"};

/// Which backend to create, the settings every backend shares, and each backend's own options.
///
/// The common settings are copied over the same fields of the chosen backend's own options (`language`,
/// `additional_packages`, `create_timeout`, `cancel`, and where the backend has them the lifetime, environment,
/// metadata and name). A common setting the chosen backend cannot honour is refused, never ignored: Pyodide has no
/// lifetime, environment of its own, metadata or name and runs only Python; E2B has no name; Bedrock AgentCore has
/// no environment of its own or metadata, and runs Python, JavaScript and TypeScript.
struct SandboxConfig {
  std::string backend = "pyodide";  ///< "pyodide", "e2b" or "bedrock" (kBackendNames)
  Language language = Language::kPython;
  std::vector<std::string> packages;  ///< the backend's additional_packages
  /// How long the sandbox may live: E2BOptions::lifetime (renewable), BedrockOptions::session_timeout (fixed).
  std::optional<std::chrono::seconds> lifetime;
  std::map<std::string, std::string> env;       ///< environment of every process: E2BOptions::env_vars
  std::map<std::string, std::string> metadata;  ///< E2BOptions::metadata, listed with the sandbox
  std::optional<std::string> name;              ///< BedrockOptions::session_name
  /// The tag sweep finds the sandbox by (E2BOptions::tag, BedrockOptions::tag; management.hpp): 1..32 bytes of
  /// [A-Za-z0-9_], else kInvalidArgument. nullopt: process_sandbox_tag(). Pyodide has no tags (kUnsupported).
  std::optional<std::string> tag;
  /// The network the code may reach (each backend's network_policy; docs/backends.md "Network policy"). A policy
  /// the backend cannot honour is refused by its create (SandboxStartError, stage configure, kUnsupported).
  std::optional<NetworkPolicy> network_policy;
  Timeout create_timeout;                       ///< bound on create; nullopt: the backend's default
  std::stop_token cancel;                       ///< cancels create

  PyodideOptions pyodide;  ///< used when backend is "pyodide"
  E2BOptions e2b;          ///< used when backend is "e2b"
  BedrockOptions bedrock;  ///< used when backend is "bedrock"
};

/// Reads a SandboxConfig from a JSON document (a configuration file, a command line's argument).
///
/// Shape (every key optional; durations are integers in the unit their name says):
/// ```json
/// {"backend": "e2b", "language": "python", "packages": ["numpy"], "lifetime_seconds": 600,
///  "env": {"NAME": "value"}, "metadata": {"run": "42"}, "name": "nightly", "create_timeout_ms": 60000,
///  "tag": "nightly_2", "network": "none",
///  "pyodide": {"runtime_dir": "...", "wheel_dir": "...", "snapshot_dir": "...", "use_snapshot": true,
///              "interrupt_grace_ms": 2000, "max_output_bytes": 10485760, "max_frame_bytes": 16777216,
///              "max_download_bytes": 536870912, "memory_limit_bytes": 2147483648,
///              "require_kernel_confinement": false},
///  "e2b": {"domain": "...", "api_url": "...", "sandbox_url": "...", "template": "code-interpreter-v1",
///          "request_timeout_ms": 60000, "max_output_bytes": 10485760, "max_line_bytes": 16777216,
///          "max_download_bytes": 536870912},
///  "bedrock": {"region": "us-east-1", "endpoint_url": "...", "profile": "...",
///              "code_interpreter_identifier": "aws.codeinterpreter.v1", "interpreter_network_mode": "SANDBOX",
///              "request_timeout_ms": 60000,
///              "max_output_bytes": 10485760, "max_message_bytes": 16777216, "max_download_bytes": 536870912}}
/// ```
/// "network" is "none", "all" or {"allow": ["pypi.org", "10.0.0.0/8"]} (NetworkPolicy::none / all / allowlist;
/// each host checked as NetworkPolicy says, a bad one named by its index, never quoted).
/// Secrets (E2B's API key, AWS keys) are not read from the document: they come from the environment or the AWS
/// files, as without a configuration. Languages are the names of to_string(Language).
///
/// @throws SandboxStartError, stage kConfigure, naming the key and never its value:
///         kInvalidArgument for text that is not JSON or not an object, a key that appears twice in one object (a
///         JSON parser keeps the last one silently), an unknown key, a value of the wrong type or out of range, or an
///         unknown backend or language; kUnsupported for a setting the chosen backend cannot honour, a section of
///         another backend among them.
[[nodiscard]] CODE_INTERPRETER_EXPORT SandboxConfig sandbox_config_from_json(std::string_view json_text);

/// Creates the sandbox `config` names, with the common settings applied to that backend's options.
/// @throws SandboxStartError, stage kConfigure: kInvalidArgument for an unknown backend name, kUnsupported for a
///         common setting the backend cannot honour (as sandbox_config_from_json); otherwise whatever that backend's
///         create throws (TemplateBuildError, SandboxStartError).
[[nodiscard]] CODE_INTERPRETER_EXPORT std::unique_ptr<CodeInterpreterSandbox> create_sandbox(const SandboxConfig& config);

/// The Capabilities a sandbox created from `config` reports, known without creating it (nothing is started, read
/// or sent): what a tool's description is written from before its sandbox exists (tool.hpp, the MCP server).
/// @throws SandboxStartError, stage kConfigure, as create_sandbox for an unknown backend or a setting it refuses.
[[nodiscard]] CODE_INTERPRETER_EXPORT Capabilities declared_capabilities(const SandboxConfig& config);

/// What one backend needs before it can run here, as available_backends() finds it.
struct BackendStatus {
  std::string name;                  ///< "pyodide", "e2b" or "bedrock"
  bool available = false;            ///< everything it needs was found
  std::vector<std::string> missing;  ///< what was not: file paths, environment variable names (never values)
  std::string how;                   ///< how to get what is missing; empty when available
};

/// Reports, for each backend in kBackendNames order, whether it can run on this machine: Pyodide's runtime files
/// beside the library (or at `pyodide_runtime_dir`), E2B's API key in the environment, AWS credentials and a region
/// for Bedrock AgentCore (environment, then the AWS config and credentials files). It makes no network call, and no
/// secret's value is read into what it returns or logs.
[[nodiscard]] CODE_INTERPRETER_EXPORT std::vector<BackendStatus> available_backends(
    const std::optional<std::filesystem::path>& pyodide_runtime_dir = std::nullopt);

}  // namespace code_interpreter
