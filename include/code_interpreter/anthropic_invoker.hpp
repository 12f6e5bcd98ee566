// An LMInvoker for the Anthropic Messages API with client tools (tool_use / tool_result content blocks).
// Wire format: https://docs.anthropic.com/en/api/messages
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>

#include "code_interpreter/export.hpp"
#include "code_interpreter/interpreter.hpp"

namespace code_interpreter {

/// Options of AnthropicInvoker.
struct AnthropicOptions {
  /// The API root; requests go to `<base_url>/v1/messages`.
  std::string base_url = "https://api.anthropic.com";
  /// Sent as "x-api-key". nullopt: the ANTHROPIC_API_KEY environment variable. Required.
  std::optional<std::string> api_key;
  /// The model name, e.g. "claude-sonnet-4-5". Required.
  std::string model;
  /// The `anthropic-version` header.
  std::string anthropic_version = "2023-06-01";
  /// `max_tokens` of each call (the API requires it).
  int max_tokens = 4096;
  /// Sampling temperature (0 to 1); nullopt: not sent.
  std::optional<double> temperature;
  /// Limit of one HTTP exchange (each retry has its own). <= 0: none.
  std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
  /// Exchanges per call: HTTP 408, 429, 5xx (529 "overloaded" included) and transport failures are retried with
  /// jittered backoff (from 200 ms, capped at 10 s) that waits at least the server's Retry-After (up to 30 s).
  int max_attempts = 3;
};

/// Calls the Messages API: one POST per `invoke`, not streamed.
///
/// System messages become the top-level `system` text; assistant messages become `text` and `tool_use` blocks
/// (the arguments parsed back into the `input` object); consecutive tool messages become one user message of
/// `tool_result` blocks (with `is_error`). Reads the `text` and `tool_use` blocks of `content`, `stop_reason` and
/// `usage.input_tokens` / `usage.output_tokens`.
/// Thread-safe: `invoke` may run on several threads at once.
class CODE_INTERPRETER_EXPORT AnthropicInvoker final : public LMInvoker {
 public:
  /// @throws LMInvocationError (stage configure): no API key (kUnauthenticated), or an empty `model` or `base_url`
  ///         or a `max_tokens` < 1, or an API key or `anthropic_version` holding a line break or NUL byte
  ///         (kInvalidArgument).
  explicit AnthropicInvoker(AnthropicOptions options);
  ~AnthropicInvoker() override;
  AnthropicInvoker(const AnthropicInvoker&) = delete;
  AnthropicInvoker& operator=(const AnthropicInvoker&) = delete;

  /// @throws LMInvocationError (stage execute), as OpenAIChatInvoker::invoke.
  [[nodiscard]] LMResponse invoke(std::span<const ChatMessage> messages, std::span<const ToolDefinition> tools,
                                  std::stop_token cancel = {}) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace code_interpreter
