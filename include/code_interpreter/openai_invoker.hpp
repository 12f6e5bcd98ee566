// An LMInvoker for the OpenAI Chat Completions API with function tools, and for every server that speaks it
// (vLLM, llama.cpp server, Ollama, ...): the base URL is the whole configuration.
// Wire format: https://platform.openai.com/docs/api-reference/chat/create
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

/// Options of OpenAIChatInvoker.
struct OpenAIChatOptions {
  /// The API root; requests go to `<base_url>/chat/completions`. E.g. "http://localhost:8000/v1" for vLLM,
  /// "http://localhost:11434/v1" for Ollama.
  std::string base_url = "https://api.openai.com/v1";
  /// Sent as "Authorization: Bearer <key>". nullopt: the OPENAI_API_KEY environment variable. Empty (or no
  /// variable): no Authorization header, for local servers that need none.
  std::optional<std::string> api_key;
  /// The model name, e.g. "gpt-4o-mini". Required.
  std::string model;
  /// Sampling temperature (0 to 2); nullopt: not sent (the server's default).
  std::optional<double> temperature;
  /// Sent as "max_tokens" (the field every compatible server accepts); nullopt: not sent.
  std::optional<int> max_tokens;
  /// Limit of one HTTP exchange (each retry has its own). <= 0: none.
  std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
  /// Exchanges per call: HTTP 408, 429, 5xx and transport failures are retried with jittered backoff (from 200 ms,
  /// capped at 10 s) that waits at least the server's Retry-After (up to 30 s). A model call is safe to repeat.
  int max_attempts = 3;
};

/// Calls the Chat Completions API: one POST per `invoke`, not streamed.
///
/// Maps ChatMessage to `messages` (system / user / assistant with `tool_calls` / tool with `tool_call_id`) and
/// ToolDefinition to `tools` entries of type "function"; reads `choices[0].message` (`content`, `tool_calls`),
/// `finish_reason` and `usage.prompt_tokens` / `usage.completion_tokens`.
/// Thread-safe: `invoke` may run on several threads at once.
class CODE_INTERPRETER_EXPORT OpenAIChatInvoker final : public LMInvoker {
 public:
  /// @throws LMInvocationError (stage configure, kInvalidArgument) if `model` or `base_url` is empty, or the API key
  ///         holds a line break or NUL byte (it could not be sent as a header).
  explicit OpenAIChatInvoker(OpenAIChatOptions options);
  ~OpenAIChatInvoker() override;
  OpenAIChatInvoker(const OpenAIChatInvoker&) = delete;
  OpenAIChatInvoker& operator=(const OpenAIChatInvoker&) = delete;

  /// @throws LMInvocationError (stage execute): an HTTP error status (kind from the status; the service's
  ///         `error.message` in the message), a transport failure after the retries, a cancelled call, or a reply
  ///         that is not a chat completion (kInternal, a TransportError of kind kProtocol nested).
  [[nodiscard]] LMResponse invoke(std::span<const ChatMessage> messages, std::span<const ToolDefinition> tools,
                                  std::stop_token cancel = {}) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace code_interpreter
