// BedrockAgentCoreSandbox::Impl: the AgentCore backend's orchestration (docs/architecture.md "Backends"). It owns the
// stub (signed requests and decoded answers, bedrock/stub.hpp) and the calls in flight, sends through the one retry
// loop (src/http/retry.hpp) and turns the stub's facts into results and errors (invoke.cpp, with
// src/http/outcome.hpp and src/core/outcome.hpp). Its members are defined by concept: sessions.cpp (start, stop,
// lost starts, packages), invoke.cpp (one tool call and its outcome), execution.cpp, commands.cpp, files.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bedrock/stub.hpp"
#include "core/process_driver.hpp"
#include "code_interpreter/bedrock_sandbox.hpp"
#include "core/call_registry.hpp"
#include "core/deadline.hpp"
#include "http/idempotency.hpp"
#include "http/retry.hpp"

namespace code_interpreter {

struct BedrockAgentCoreSandbox::Impl {
  http::HttpClient& client = http::HttpClient::shared();
  bedrock::AgentCoreStub stub;
  Language language = Language::kPython;
  std::mutex exec_mutex;  // executions on one session run one at a time
  detail::CallRegistry calls;

  /// Shared with the process handles: ended by terminate and by the sandbox's destruction (core/process_driver.hpp).
  std::shared_ptr<detail::SandboxLink> link = std::make_shared<detail::SandboxLink>();

  explicit Impl(BedrockOptions options) : stub(std::move(options)) { language = stub.options.language; }
  ~Impl() { link->end(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// Retry hooks that keep every attempt, and every sleep between them, within `deadline`.
  [[nodiscard]] static http::RetryHooks deadline_hooks(const detail::Deadline& deadline);

  // ---- sessions.cpp ----
  void start(const detail::Deadline& deadline);
  void stop_lost_session(http::Request start_request);
  http::Exchange stop(const detail::Deadline& deadline);
  /// True when the session is stopped (or was already gone).
  [[nodiscard]] static bool stopped(const http::Exchange& ex);
  std::optional<std::string> status_of_session(std::chrono::milliseconds timeout);
  void install_packages(const detail::Deadline& deadline, std::chrono::milliseconds budget,
                        const std::vector<std::string>& packages);
  template <typename Error>
  [[noreturn]] void throw_service_error(const http::Exchange& ex, Stage stage, std::string_view what) const;

  // ---- invoke.cpp ----
  /// One InvokeCodeInterpreter call of `tool`. An operation the idempotency table marks kIdempotent (a tool that
  /// only reads) goes through the one retry loop, every attempt within `timeout`; any other is sent once.
  /// `file_cap`: for readFiles, the most bytes of file content the answer may carry (see Invocation::over_cap).
  bedrock::Invocation invoke(http::Operation op, std::string_view tool, nlohmann::json arguments,
                             std::chrono::milliseconds timeout, std::stop_token cancel,
                             detail::OutputStream* out = nullptr, detail::OutputStream* err = nullptr,
                             std::optional<std::uint64_t> file_cap = std::nullopt);
  /// The result of an invocation that did not end in a result: the rows of docs/errors.md "Statuses and what each
  /// result carries" for refusals, faults and loss. nullopt when a result arrived and the caller should read it.
  std::optional<ExecutionResult> failure_of(const bedrock::Invocation& inv, const std::string& code, std::string_view what);
  /// The error of a file tool that failed; `session_gone`, when given, learns whether the failure showed the
  /// session already gone (an upload reports it as state_lost).
  [[noreturn]] void throw_tool_error(const bedrock::Invocation& inv, Stage stage, std::string_view what,
                                     bool* session_gone = nullptr);

  // ---- execution.cpp ----
  ExecutionResult execute(std::string_view code, const ExecuteOptions& o);

  // ---- commands.cpp ----
  ExecutionResult command(std::string_view cmd, const CommandOptions& o);
  void stop_task(const std::string& task_id);
  /// The command line of startCommandExecution: exports of `env`, then `cmd` in `cwd` (a bad env name: nullopt, and
  /// `refusal` says why).
  std::optional<std::string> command_line(std::string_view cmd, const std::map<std::string, std::string>& env,
                                          const std::optional<std::string>& cwd, std::string& refusal) const;

  // ---- files.cpp ----
  bedrock::Invocation file_tool(http::Operation op, std::string_view tool, nlohmann::json arguments,
                                std::stop_token cancel, Timeout timeout = std::nullopt,
                                std::optional<std::uint64_t> file_cap = std::nullopt);
  void make_directory(std::string_view path, std::stop_token cancel, bool* session_gone = nullptr);
  void write(std::string_view path, std::string_view data, std::stop_token cancel, bool* session_gone = nullptr);
  /// Throws the over-cap error (detail::over_cap_error) for a file of more than `cap` bytes.
  std::string read(std::string_view path, std::uint64_t cap, std::stop_token cancel, Timeout timeout = std::nullopt);
  /// read() for the calls that answer std::nullopt on failure; over the cap, one warning naming `op` and the cap.
  std::optional<std::string> download(std::string_view path, std::uint64_t cap, std::stop_token cancel,
                                      Timeout timeout, std::string_view op);
};

}  // namespace code_interpreter
