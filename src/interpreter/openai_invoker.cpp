// Chat Completions request and response shapes:
// https://platform.openai.com/docs/api-reference/chat/create and .../chat/object
#include "code_interpreter/openai_invoker.hpp"

#include <nlohmann/json.hpp>

#include "core/untrusted.hpp"
#include "interpreter/lm_http.hpp"

namespace code_interpreter {

namespace {
constexpr const char* kChatCompletions = "openai chat completions";

nlohmann::json to_chat_message(const ChatMessage& message) {
  nlohmann::json out;
  switch (message.role) {
    case ChatRole::kSystem:
      return {{"role", "system"}, {"content", message.content}};
    case ChatRole::kUser:
      return {{"role", "user"}, {"content", message.content}};
    case ChatRole::kTool: {
      // A tool message takes text only: the images are named, not shown.
      std::string content = message.content;
      if (!message.images.empty()) {
        content += "\n[" + std::to_string(message.images.size()) + " image" + (message.images.size() == 1 ? "" : "s") +
                   " produced but not shown: this API takes text only in tool results]";
      }
      return {{"role", "tool"}, {"tool_call_id", message.tool_call_id}, {"content", std::move(content)}};
    }
    case ChatRole::kAssistant:
      out = {{"role", "assistant"}};
      // With tool calls and no text, `content` is null, as the API itself answers.
      out["content"] = message.content.empty() && !message.tool_calls.empty() ? nlohmann::json(nullptr)
                                                                              : nlohmann::json(message.content);
      if (!message.tool_calls.empty()) {
        auto& calls = out["tool_calls"] = nlohmann::json::array();
        for (const auto& call : message.tool_calls) {
          calls.push_back({{"id", call.id},
                           {"type", "function"},
                           {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        }
      }
      return out;
  }
  return out;
}

LMResponse from_chat_completion(const nlohmann::json& body) {
  if (!body.contains("choices") || !body["choices"].is_array() || body["choices"].empty()) {
    interpreter::throw_malformed(kChatCompletions, "no choices");
  }
  const auto& choice = body["choices"][0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object()) {
    interpreter::throw_malformed(kChatCompletions, "choices[0] has no message");
  }
  const auto& message = choice["message"];
  LMResponse response;
  if (message.contains("content") && message["content"].is_string()) {
    response.text = message["content"].get<std::string>();
  } else if (message.contains("content") && message["content"].is_array()) {
    // Some compatible servers answer with content parts.
    for (const auto& part : message["content"]) {
      // `type` of any JSON type compares unequal to "text" instead of throwing, as value("type", "") would.
      if (part.is_object() && part.contains("type") && part["type"] == "text" && part.contains("text") &&
          part["text"].is_string()) {
        response.text += part["text"].get<std::string>();
      }
    }
  }
  if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
    for (const auto& call : message["tool_calls"]) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
        interpreter::throw_malformed(kChatCompletions, "a tool call has no function");
      }
      const auto& function = call["function"];
      ToolCall out;
      out.id = detail::string_member(call, "id");
      out.name = detail::string_member(function, "name");
      if (function.contains("arguments")) {
        // The API sends a JSON string; a few compatible servers send the object itself.
        out.arguments = function["arguments"].is_string() ? function["arguments"].get<std::string>()
                                                          : function["arguments"].dump();
      }
      if (out.id.empty()) interpreter::throw_malformed(kChatCompletions, "a tool call has no id");
      response.tool_calls.push_back(std::move(out));
    }
  }
  interpreter::read_stop_and_usage(choice, "finish_reason", body, "prompt_tokens", "completion_tokens", response);
  return response;
}

}  // namespace

struct OpenAIChatInvoker::Impl : interpreter::LMInvokerState<OpenAIChatOptions> {};

OpenAIChatInvoker::OpenAIChatInvoker(OpenAIChatOptions options) : impl_(std::make_unique<Impl>()) {
  interpreter::check_model_and_base_url("OpenAIChatInvoker", options.model, options.base_url);
  // No key is not refused: a local server that speaks the API (vLLM, llama.cpp, Ollama) often needs none.
  std::string api_key = options.api_key ? *options.api_key : interpreter::env_or_empty("OPENAI_API_KEY");
  impl_->endpoint =
      interpreter::make_endpoint("OpenAIChatInvoker", kChatCompletions, std::move(api_key), "/chat/completions",
                                 options);
  impl_->options = std::move(options);
}

OpenAIChatInvoker::~OpenAIChatInvoker() = default;

LMResponse OpenAIChatInvoker::invoke(std::span<const ChatMessage> messages, std::span<const ToolDefinition> tools,
                                     std::stop_token cancel) {
  const auto& options = impl_->options;
  nlohmann::json body = {{"model", options.model}, {"messages", nlohmann::json::array()}};
  for (const auto& message : messages) body["messages"].push_back(to_chat_message(message));
  if (!tools.empty()) {
    auto& wire_tools = body["tools"] = nlohmann::json::array();
    for (const auto& tool : tools) {
      wire_tools.push_back({{"type", "function"},
                            {"function",
                             {{"name", tool.name},
                              {"description", tool.description},
                              {"parameters", interpreter::tool_schema(tool)}}}});
    }
  }
  if (options.temperature) body["temperature"] = *options.temperature;
  if (options.max_tokens) body["max_tokens"] = *options.max_tokens;

  const auto& endpoint = impl_->endpoint;
  interpreter::LMHeaders headers;
  if (!endpoint.api_key.empty()) headers.emplace_back("Authorization", "Bearer " + endpoint.api_key);
  return from_chat_completion(interpreter::post_json(endpoint, std::move(headers), body, std::move(cancel)));
}

}  // namespace code_interpreter
