// SandboxCodeInterpreter: the tool-calling loop in which a language model writes code, a sandbox runs it, and the
// results go back to the model until it answers. Also the language-model seam (LMInvoker) and the chat model it
// speaks. Guide: docs/interpreter.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"
#include "code_interpreter/export.hpp"
#include "code_interpreter/sandbox.hpp"

namespace code_interpreter {

/// Who speaks in a chat message.
enum class ChatRole {
  kSystem,     ///< instructions to the model
  kUser,       ///< the person's request
  kAssistant,  ///< the model's reply: text and/or tool calls
  kTool,       ///< the result of one tool call, answering `tool_call_id`
};

/// "system", "user", "assistant" or "tool".
CODE_INTERPRETER_EXPORT std::string_view to_string(ChatRole role) noexcept;

/// One tool call the model asked for.
struct ToolCall {
  std::string id;         ///< the provider's id ("call_..." for OpenAI, "toolu_..." for Anthropic); echoed back
  std::string name;       ///< the tool's name, e.g. "execute_code"
  std::string arguments;  ///< the arguments as JSON text, as the model wrote them (may be malformed: untrusted)
  friend bool operator==(const ToolCall&, const ToolCall&) = default;
};

/// An image a tool result carries to the model (a chart the code drew).
struct ChatImage {
  std::string media_type;  ///< "image/png" or "image/jpeg"
  std::string data;        ///< the image, base64 (RFC 4648, no line breaks)
  friend bool operator==(const ChatImage&, const ChatImage&) = default;
};

/// One message of the conversation, provider-neutral. The invokers translate it to each API's shape.
struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::string content;               ///< the text; for kTool, the tool's result
  std::vector<ToolCall> tool_calls;  ///< kAssistant only: the calls the model made
  std::string tool_call_id;          ///< kTool only: the ToolCall::id this message answers
  bool is_error = false;             ///< kTool only: the call failed (sent as Anthropic's `is_error`)
  /// kTool only: images the execution produced (its image/png and image/jpeg rich results, in order). Anthropic
  /// receives them as image blocks of the tool result; OpenAI's chat completions take no image in a tool message, so
  /// that invoker sends a note saying how many were not shown.
  std::vector<ChatImage> images;
  friend bool operator==(const ChatMessage&, const ChatMessage&) = default;
};

/// A tool the model may call.
struct ToolDefinition {
  std::string name;         ///< [a-zA-Z0-9_-]{1,64}
  std::string description;  ///< what the tool does, for the model
  std::string parameters;   ///< JSON Schema text of the arguments object ({"type":"object",...})
  friend bool operator==(const ToolDefinition&, const ToolDefinition&) = default;
};

/// Tokens counted by the provider (OpenAI `usage.prompt_tokens` / `completion_tokens`; Anthropic
/// `usage.input_tokens` / `output_tokens`). Zero when the provider reports none.
struct LMUsage {
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;

  LMUsage& operator+=(const LMUsage& other) noexcept {
    input_tokens += other.input_tokens;
    output_tokens += other.output_tokens;
    return *this;
  }
  friend bool operator==(const LMUsage&, const LMUsage&) = default;
};

/// One answer of the model.
struct LMResponse {
  std::string text;                  ///< the text part of the answer (may be empty when it only calls tools)
  std::vector<ToolCall> tool_calls;  ///< empty: the model answered
  std::string stop_reason;           ///< the provider's own value (OpenAI finish_reason, Anthropic stop_reason)
  LMUsage usage;
  friend bool operator==(const LMResponse&, const LMResponse&) = default;
};

/// A language-model call failed: the service refused (HTTP 4xx), kept failing after the retries (429 / 5xx /
/// transport), answered something that is not a valid response, or the invoker is misconfigured.
///
/// Stage: `execute` for a failed call, `configure` for a bad option (missing API key or model). Kind: from the HTTP
/// status (401 kUnauthenticated, 403 kPermissionDenied, 404 kNotFound, 429 kRateLimited, 5xx kUnavailable, ...) or
/// the transport failure. The low-level `TransportError` (status, Retry-After, whether the request was written) is
/// nested with `std::throw_with_nested`; `transient()` reads it. Messages never contain an API key.
class CODE_INTERPRETER_EXPORT LMInvocationError : public CodeInterpreterError {
 public:
  using CodeInterpreterError::CodeInterpreterError;
};

/// The seam between the loop and a language model. Implementations: OpenAIChatInvoker, AnthropicInvoker,
/// testing::FakeLMInvoker.
class CODE_INTERPRETER_EXPORT LMInvoker {
 public:
  virtual ~LMInvoker();

  /// Asks the model for its next message.
  /// @param messages the conversation so far, oldest first (system messages anywhere are gathered as instructions).
  /// @param tools the tools the model may call (may be empty).
  /// @param cancel a stop request aborts the call in flight and any wait between retries.
  /// @return the model's answer and the tokens it cost.
  /// @throws LMInvocationError when the call fails after the invoker's retries, or is cancelled.
  [[nodiscard]] virtual LMResponse invoke(std::span<const ChatMessage> messages, std::span<const ToolDefinition> tools,
                                          std::stop_token cancel = {}) = 0;

 protected:
  LMInvoker() = default;
  LMInvoker(const LMInvoker&) = default;
  LMInvoker& operator=(const LMInvoker&) = default;
};

/// Options of SandboxCodeInterpreter.
struct InterpreterOptions {
  /// Most model calls one `execute` makes (each call is one turn). Must be >= 1.
  int max_turns = 10;
  /// Most tool calls run from one model message; the calls after them are answered "not run" (each call is always
  /// answered). Bounds the executions one hostile or broken reply can start. Must be >= 1.
  int max_tool_calls_per_turn = 16;
  /// Largest tool result sent back to the model, in bytes. Longer output keeps its head and its tail around a note
  /// saying how many bytes were cut. Must be >= 1024.
  std::size_t max_tool_result_bytes = 16 * 1024;
  /// Most images sent back with one tool result (see ChatMessage::images); later ones are dropped with a note in the
  /// text. 0: none are sent.
  std::size_t max_images_per_result = 4;
  /// Largest image sent back, in bytes of its base64 text; a larger one is dropped with a note. Default 5 MiB, the
  /// most Anthropic's API accepts per image.
  std::size_t max_image_bytes = std::size_t{5} << 20;
  /// Largest file returned for a sandbox link, in bytes, counted on the bytes downloaded (the download stops once
  /// it is passed, whatever size `list_files` reports); a larger one goes to `missing_files`.
  std::size_t max_file_bytes = std::size_t{64} << 20;
  /// Largest total of the files returned for one answer, in bytes; once it is reached, further linked files go to
  /// `missing_files`. Bounds what a hostile answer can make the host hold (many links, each under `max_file_bytes`).
  std::size_t max_total_file_bytes = std::size_t{256} << 20;
  /// Most distinct sandbox links looked up for one answer; the links after them go to `missing_files` without a
  /// sandbox call. Bounds the lookups a hostile answer (thousands of links) can make the host do.
  std::size_t max_linked_files = 100;
  /// Budget of each `execute_code` call; nullopt: the backend's default (300 s); <= 0: unbounded (still bounded by
  /// `timeout`).
  Timeout execution_timeout;
  /// Budget of the whole `execute` call, model calls, executions and downloads alike. nullopt or <= 0: none.
  Timeout timeout;
  /// Extra instructions appended to the built-in system prompt (e.g. the persona or the answer's format).
  std::string instructions;
};

/// Why `execute` stopped.
enum class StopReason {
  kAnswered,      ///< the model answered without calling a tool
  kMaxTurns,      ///< `max_turns` model calls were made and the model still wanted to run code
  kCancelled,     ///< the caller's stop_token was triggered
  kTimeout,       ///< `InterpreterOptions::timeout` ran out
  kLMError,       ///< a model call failed (LMInvocationError in `InterpreterResult::error`)
  kSandboxError,  ///< the sandbox threw (e.g. SandboxNotInitializedError after terminate), in `error`
};

/// "answered", "max_turns", "cancelled", "timeout", "lm_error" or "sandbox_error".
CODE_INTERPRETER_EXPORT std::string_view to_string(StopReason reason) noexcept;

/// One execution the model asked for.
struct CodeExecResult {
  std::string code;               ///< the code as the model wrote it
  ExecutionResult result;         ///< what the sandbox answered (never re-run: a kTimeout / kUnknown stays one)
  std::vector<Attachment> output; ///< files linked in the final answer (only on the last execution)
  friend bool operator==(const CodeExecResult&, const CodeExecResult&) = default;
};

/// The outcome of SandboxCodeInterpreter::execute. Everything done before the loop stopped is kept, whatever the
/// reason it stopped.
struct InterpreterResult {
  /// kAnswered: the model's final text, verbatim (its sandbox links included). Otherwise a one-line note in
  /// brackets saying why the loop stopped, e.g. "[stopped: no final answer after 10 model calls (max_turns)]".
  std::string text;
  /// Every execution, in order. Files linked in the final answer are in `code_exec_results.back().output`, each
  /// named by its base name.
  std::vector<CodeExecResult> code_exec_results;
  /// Linked sandbox paths (as written after "sandbox:") that could not be returned: the file does not exist, could
  /// not be read, is over `max_file_bytes` (or past `max_total_file_bytes` or `max_linked_files`), the backend
  /// cannot download files, or no code was executed.
  std::vector<std::string> missing_files;
  /// Link targets refused without being looked at: outside the upload directory, or holding "..", ".", an empty
  /// component, a backslash or a control character (NUL included).
  std::vector<std::string> refused_links;
  LMUsage usage;  ///< summed over every model call
  int turns = 0;  ///< model calls made (successful ones)
  StopReason stop_reason = StopReason::kAnswered;
  /// kLMError: the LMInvocationError; kSandboxError: the sandbox's exception. Null otherwise.
  std::exception_ptr error;
  /// The whole conversation: the system prompt, the request, then each model message and tool result.
  std::vector<ChatMessage> messages;
};

/// The tool-calling loop over one sandbox and one model.
///
/// `execute` offers the model one tool, `execute_code(code)`, whose description is written from the sandbox's
/// capabilities (whether state persists, where the input files are, whether files can be returned, the
/// language). Each tool result is the execution's `text()`, bounded to `max_tool_result_bytes`; a kTimeout or
/// kUnknown execution is reported to the model as such and never re-run. The loop ends when the model answers
/// without a tool call; sandbox links `[name](sandbox:<upload_dir>/<path>)` in that answer are then downloaded and
/// returned as attachments.
///
/// Failures mid-loop are returned, not thrown: a failed model call, a cancellation, the overall timeout or a
/// sandbox that throws end the loop with `stop_reason` set (and `error` holding the exception), keeping every
/// execution done so far. `execute` throws only std::invalid_argument, for bad input files.
///
/// Holds references: the sandbox and the invoker must outlive it. Thread safety: `execute` keeps no state in the
/// object, so calls from several threads are as safe as the sandbox and the invoker are (the library's are); they
/// share the sandbox's state and files.
class CODE_INTERPRETER_EXPORT SandboxCodeInterpreter {
 public:
  /// @throws std::invalid_argument if `options.max_turns` < 1, `options.max_tool_calls_per_turn` < 1 or
  ///         `options.max_tool_result_bytes` < 1024.
  SandboxCodeInterpreter(CodeInterpreterSandbox& sandbox, LMInvoker& lm_invoker, InterpreterOptions options = {});

  /// Runs the loop for one request.
  /// @param request what the person asks, sent as the user message.
  /// @param files uploaded to the sandbox's `Capabilities::upload_dir` with the first execution (and again after an
  ///        execution that lost the sandbox's state); the model is told their paths `<upload_dir>/<name>`. Without
  ///        files, `upload_dir` is created (make_dir) before the first execution so the model can write there.
  /// @param cancel stops the loop: the model call or execution in flight is cancelled, nothing further starts.
  /// @return see InterpreterResult; `stop_reason` says how the loop ended.
  /// @throws std::invalid_argument for a bad or duplicate file name.
  [[nodiscard]] InterpreterResult execute(std::string_view request, std::vector<Attachment> files = {},
                                          std::stop_token cancel = {});

  /// The one tool offered for this sandbox, given the names of the input files (as `execute` builds it).
  [[nodiscard]] ToolDefinition tool_definition(const std::vector<std::string>& file_names = {}) const;

 private:
  CodeInterpreterSandbox& sandbox_;
  LMInvoker& lm_;
  InterpreterOptions options_;
};

}  // namespace code_interpreter
