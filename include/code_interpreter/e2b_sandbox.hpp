// The E2B sandbox: a cloud microVM reached over three HTTP surfaces — the control plane (create, lease, kill),
// envd (files, commands over Connect-RPC) and the code interpreter (/execute, a streamed NDJSON answer).
// Guide: docs/backends/e2b.md. Wire format: E2B's OpenAPI spec, envd's process/filesystem protos and the
// code-interpreter server, as summarised in the project's E2B protocol notes.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/sandbox.hpp"

namespace code_interpreter {

/// Options for E2BSandbox::create and E2BSandbox::connect. Unset strings fall back to the environment, then to
/// E2B's defaults.
struct E2BOptions {
  Language language = Language::kPython;    ///< selects the code interpreter's default context for execute_code
  std::vector<std::string> additional_packages;  ///< pip-installed through execute_code right after creation
  std::optional<std::string> api_key;       ///< else E2B_API_KEY; required (a secret: never logged)
  std::optional<std::string> domain;        ///< else E2B_DOMAIN, else "e2b.app"
  std::optional<std::string> api_url;       ///< else E2B_API_URL, else "https://api.<domain>"
  /// Else E2B_SANDBOX_URL. When set, envd and the code interpreter share this base URL and requests are routed
  /// by the E2b-Sandbox-Id / E2b-Sandbox-Port headers; otherwise "https://<port>-<sandbox id>.<domain>".
  std::optional<std::string> sandbox_url;
  std::string template_id = "code-interpreter-v1";
  std::chrono::seconds lifetime{300};       ///< the sandbox's lease; renew with set_timeout
  /// Listed with the sandbox by E2B. The key kTagMetadataKey ("code_interpreter.tag") is the library's: a
  /// metadata map holding it is refused (SandboxStartError, stage configure, kInvalidArgument); set `tag` instead.
  std::map<std::string, std::string> metadata;
  /// The tag the sandbox carries in its metadata under kTagMetadataKey (management.hpp: 1..32 bytes of
  /// [A-Za-z0-9_]; SandboxManager::sweep kills by it). nullopt: process_sandbox_tag().
  std::optional<std::string> tag;
  /// The network the code may reach (docs/backends/e2b.md "Network policy"). nullopt or all(): E2B's default, the
  /// whole internet (nothing is sent); none(): `allow_internet_access: false`; allowlist(hosts): `network:
  /// {allowOut: hosts, denyOut: ["0.0.0.0/0"]}`, as the official JS SDK sends them. A malformed allowlist is
  /// refused (SandboxStartError, stage configure, kInvalidArgument).
  std::optional<NetworkPolicy> network_policy;
  std::map<std::string, std::string> env_vars;  ///< environment of every process in the sandbox
  /// Bound on the whole of create/connect, retries and package installation included. nullopt: 5 minutes;
  /// <= 0: none.
  Timeout create_timeout;
  std::chrono::milliseconds request_timeout{std::chrono::seconds(60)};  ///< per control-plane / file request
  /// Per-stream cap of stdout_text / stderr_text, and of the rich results' total size (later ones are dropped).
  std::size_t max_output_bytes = std::size_t{10} << 20;
  std::size_t max_line_bytes = std::size_t{16} << 20;    ///< a longer NDJSON line or envelope is hostile
  /// Default cap of read_file / download_file / download_file_to (their `max_bytes`), in bytes, counted on the
  /// bytes received. Default 512 MiB; 0 is refused (SandboxStartError, stage configure).
  std::uint64_t max_download_bytes = std::uint64_t{512} << 20;
  std::stop_token cancel;                   ///< cancels create / connect
  // processes
  /// How often envd is asked to send a keep-alive on a process stream when the process writes nothing
  /// (Keepalive-Ping-Interval, whole seconds, at least 1 s). A stream silent for twice this long is dead: the
  /// command or process re-attaches by pid (docs/backends/e2b.md "Processes").
  std::chrono::seconds process_keepalive{50};
};

/// A code interpreter context (a kernel): its own state and language. See E2BSandbox::create_context.
struct E2BContext {
  std::string id;
  std::string language;
  std::string cwd;
  friend bool operator==(const E2BContext&, const E2BContext&) = default;
};

/// The E2B backend. Thread-safe; executions run side by side (the service serializes those of one context).
class CODE_INTERPRETER_EXPORT E2BSandbox final : public CodeInterpreterSandbox {
 public:
  /// Creates a sandbox (`POST /v2/sandboxes`), retrying 429 (honouring Retry-After) and 5xx with jittered
  /// backoff; a create whose answer was lost is cleaned up (listed by its client token and killed) before a
  /// retry or a failure, so no sandbox is left running unnoticed. Then installs additional_packages.
  /// @throws SandboxStartError (stage configure: no API key or a bad URL; stage create: the service refused —
  ///         kUnauthenticated for a bad key, kRateLimited, kUnavailable, ...; stage install_packages) with the
  ///         TransportError nested; TemplateBuildError when the template does not exist.
  [[nodiscard]] static std::unique_ptr<E2BSandbox> create(E2BOptions options = {});

  /// Attaches to a running (or paused) sandbox by id (`POST /v2/sandboxes/{id}/connect`), extending its lease
  /// to options.lifetime. additional_packages are not installed. @throws SandboxStartError (kNotFound when the
  /// sandbox does not exist).
  [[nodiscard]] static std::unique_ptr<E2BSandbox> connect(std::string_view sandbox_id, E2BOptions options = {});

  ~E2BSandbox() override;

  [[nodiscard]] std::optional<std::string> sandbox_id() const override;
  [[nodiscard]] Capabilities capabilities() const override;

  /// Runs code in one context (see create_context) instead of the language's default context. Same contract
  /// as execute_code.
  [[nodiscard]] ExecutionResult execute_in_context(std::string_view context_id, std::string_view code,
                                                   const ExecuteOptions& options = {});
  /// A new context (a fresh kernel) for `language`, working in `cwd` (default: the user's home).
  /// @throws SandboxExecutionError (stage execute).
  [[nodiscard]] E2BContext create_context(Language language, std::optional<std::string> cwd = std::nullopt);
  [[nodiscard]] std::vector<E2BContext> list_contexts();
  void restart_context(std::string_view context_id);  ///< clears its state; @throws SandboxExecutionError
  void remove_context(std::string_view context_id);   ///< @throws SandboxExecutionError

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
  std::vector<ProcessInfo> do_list_processes() override;
  ProcessHandle do_connect_process(std::string_view id, const ProcessConnectOptions& options) override;
  // filesystem, interrupt, restart, variables
  bool do_exists(std::string_view path) override;
  FileInfo do_get_info(std::string_view path) override;
  void do_copy(std::string_view from, std::string_view to) override;
  void do_move(std::string_view from, std::string_view to) override;
  void do_interrupt() override;
  void do_restart() override;
  void do_set_variable(std::string_view name, const std::string& value_json) override;
  nlohmann::json do_get_variable(std::string_view name) override;

 private:
  struct Impl;
  explicit E2BSandbox(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace code_interpreter
