// The AWS Bedrock AgentCore Code Interpreter sandbox: a managed microVM session reached over the AgentCore data
// plane (restJson1, SigV4-signed; InvokeCodeInterpreter answers with an AWS event stream).
// Guide: docs/backends/bedrock.md. Wire format: the AgentCore API (2024-02-28) as summarised in the project's
// Bedrock protocol notes.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/sandbox.hpp"

namespace code_interpreter {

/// Static AWS credentials. Secrets: never logged, never in an error message.
struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  ///< empty for long-term credentials
};

struct BedrockOptions {
  Language language = Language::kPython;  ///< python, javascript or typescript
  std::vector<std::string> additional_packages;  ///< pip-installed through a command right after start
  /// Else AWS_REGION, else AWS_DEFAULT_REGION, else the profile's `region` in the shared config file.
  std::optional<std::string> region;
  /// Else AWS_ENDPOINT_URL_BEDROCK_AGENTCORE, else AWS_ENDPOINT_URL, else https://bedrock-agentcore.\<region\>.amazonaws.com
  std::optional<std::string> endpoint_url;
  /// Else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the shared credentials file
  /// (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials) and config file (AWS_CONFIG_FILE or ~/.aws/config) for
  /// `profile`.
  std::optional<AwsCredentials> credentials;
  /// Else AWS_PROFILE, else "default". Set here (like the CLI's --profile), it also skips the AWS_* key variables.
  std::optional<std::string> profile;
  /// The code interpreter to start a session of. Only identifiers made of letters, digits, '.', '-', '_' and
  /// '~' are accepted (an ARN is refused: pass the interpreter id).
  std::string code_interpreter_identifier = "aws.codeinterpreter.v1";
  /// 1..100 characters together with the tag's prefix: the session's name on the service is
  /// "ci.<tag>.<session_name>" ("ci.<tag>" without one), so session_name may have at most 96 - tag length
  /// characters (docs/backends/bedrock.md "Tags and session names").
  std::optional<std::string> session_name;
  /// The tag the session carries as the prefix of its name (management.hpp: 1..32 bytes of [A-Za-z0-9_];
  /// SandboxManager::sweep stops by it). nullopt: process_sandbox_tag().
  std::optional<std::string> tag;
  /// The network mode of the interpreter `code_interpreter_identifier` names; the service fixes it when the
  /// interpreter is made (the control plane), so this states it rather than choosing it: "SANDBOX" (the built-in
  /// aws.codeinterpreter.v1: S3 and DNS only), "PUBLIC" (the internet) or "VPC" (the customer's VPC). It decides
  /// which network_policy create accepts (docs/backends/bedrock.md "Network policy").
  std::string interpreter_network_mode = "SANDBOX";
  /// nullopt: whatever the interpreter's network mode gives. all(): only with interpreter_network_mode "PUBLIC".
  /// none() and allowlist() are refused (SandboxStartError, stage configure, kUnsupported): SANDBOX mode still
  /// reaches S3 and DNS, and no mode restricts the network to a list of hosts the session could be held to.
  std::optional<NetworkPolicy> network_policy;
  std::chrono::seconds session_timeout{900};  ///< the session's fixed lifetime, 1..28800 s; it cannot be extended
  Timeout create_timeout;  ///< bound on start (retries and package installation included); nullopt: 5 minutes
  std::chrono::milliseconds request_timeout{std::chrono::seconds(60)};  ///< per start/stop/file request
  std::size_t max_output_bytes = std::size_t{10} << 20;   ///< per-stream cap of stdout_text / stderr_text
  std::size_t max_message_bytes = std::size_t{16} << 20;  ///< a larger event-stream message is hostile
  /// Default cap of read_file / download_file / download_file_to (their `max_bytes`), in bytes, counted on the
  /// bytes received. Default 512 MiB; 0 is refused (SandboxStartError, stage configure).
  std::uint64_t max_download_bytes = std::uint64_t{512} << 20;
  std::stop_token cancel;  ///< cancels create
};

/// An AgentCore code interpreter session. Thread-safe; executions on one session are serialized.
///
/// What the service cannot do, and what this class does instead: an executeCode cannot be stopped, so a timeout
/// answers kTimeout while the code may still run in the session; the session's lifetime cannot be extended
/// (set_timeout is a no-op); output is not streamed (on_stdout / on_stderr are called per line after the answer).
class CODE_INTERPRETER_EXPORT BedrockAgentCoreSandbox final : public CodeInterpreterSandbox {
 public:
  /// Starts a session (StartCodeInterpreterSession, one clientToken reused across retries), then installs
  /// additional_packages with pip through a command.
  /// @throws SandboxStartError (stage configure: no credentials, no region, a bad identifier — before any
  ///         request; stage create: the service refused, kind from its error; stage install_packages).
  [[nodiscard]] static std::unique_ptr<BedrockAgentCoreSandbox> create(BedrockOptions options = {});

  ~BedrockAgentCoreSandbox() override;

  [[nodiscard]] std::optional<std::string> sandbox_id() const override;  ///< the session id
  [[nodiscard]] Capabilities capabilities() const override;

  /// The session's status from GetCodeInterpreterSession ("READY", "TERMINATED", ...).
  /// @throws SandboxExecutionError (stage execute).
  [[nodiscard]] std::string session_status();

 protected:
  ExecutionResult do_execute_code(std::string_view code, const ExecuteOptions& options) override;
  ExecutionResult do_execute_command(std::string_view command, const CommandOptions& options) override;
  void do_set_timeout(std::chrono::seconds lease) override;
  void do_write_file(std::string_view path, std::string_view data) override;
  std::string do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) override;
  std::vector<FileInfo> do_list_files(std::string_view dir) override;
  void do_remove_file(std::string_view path) override;
  void do_make_dir(std::string_view path) override;
  bool do_download_file_to(std::string_view path, const std::filesystem::path& destination,
                           Timeout timeout, std::optional<std::uint64_t> max_bytes) override;
  std::optional<std::string> do_download_file(std::string_view path, Timeout timeout,
                                              std::optional<std::uint64_t> max_bytes) override;
  void do_terminate(Timeout timeout) override;
  // processes
  ProcessHandle do_spawn(std::string_view command, const SpawnOptions& options) override;
  ProcessHandle do_connect_process(std::string_view id, const ProcessConnectOptions& options) override;
  // filesystem, restart, variables (interrupt: refused, an executeCode cannot be stopped)
  bool do_exists(std::string_view path) override;
  FileInfo do_get_info(std::string_view path) override;
  void do_copy(std::string_view from, std::string_view to) override;
  void do_move(std::string_view from, std::string_view to) override;
  void do_restart() override;
  void do_set_variable(std::string_view name, const std::string& value_json) override;
  nlohmann::json do_get_variable(std::string_view name) override;

 private:
  struct Impl;
  explicit BedrockAgentCoreSandbox(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace code_interpreter
