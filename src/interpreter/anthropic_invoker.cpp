// Messages API request and response shapes: https://docs.anthropic.com/en/api/messages and
// https://docs.anthropic.com/en/docs/build-with-claude/tool-use (tool_use / tool_result blocks).
#include "code_interpreter/anthropic_invoker.hpp"

#include <nlohmann/json.hpp>

#include "core/untrusted.hpp"
#include "interpreter/lm_http.hpp"

namespace code_interpreter {

namespace {
constexpr const char* kOperation = "anthropic messages";

// The API refuses empty text blocks; an empty tool result still needs some content.
std::string non_empty(const std::string& text) { return text.empty() ? std::string("(empty)") : text; }

nlohmann::json tool_input(const ToolCall& call) {
  // The arguments came from this API as an object; anything else was altered on the way and is sent as empty.
  nlohmann::json input = nlohmann::json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  return input.is_object() ? input : nlohmann::json::object();
}

// Builds `system` and `messages`: system messages are gathered, tool results merged into one user turn.
void to_wire(std::span<const ChatMessage> messages, nlohmann::json& body) {
  std::string system;
  auto wire = nlohmann::json::array();
  for (const auto& message : messages) {
    switch (message.role) {
      case ChatRole::kSystem:
        if (!system.empty()) system += "\n\n";
        system += message.content;
        break;
      case ChatRole::kUser:
        wire.push_back({{"role", "user"}, {"content", non_empty(message.content)}});
        break;
      case ChatRole::kAssistant: {
        auto blocks = nlohmann::json::array();
        if (!message.content.empty()) blocks.push_back({{"type", "text"}, {"text", message.content}});
        for (const auto& call : message.tool_calls) {
          blocks.push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", tool_input(call)}});
        }
        if (blocks.empty()) blocks.push_back({{"type", "text"}, {"text", non_empty(message.content)}});
        wire.push_back({{"role", "assistant"}, {"content", std::move(blocks)}});
        break;
      }
      case ChatRole::kTool: {
        nlohmann::json block = {{"type", "tool_result"},
                                {"tool_use_id", message.tool_call_id},
                                {"content", non_empty(message.content)}};
        if (!message.images.empty()) {
          auto content = nlohmann::json::array({{{"type", "text"}, {"text", non_empty(message.content)}}});
          for (const auto& image : message.images) {
            content.push_back({{"type", "image"},
                               {"source", {{"type", "base64"}, {"media_type", image.media_type}, {"data", image.data}}}});
          }
          block["content"] = std::move(content);
        }
        if (message.is_error) block["is_error"] = true;
        // Results of one assistant turn all go in the user turn right after it.
        if (!wire.empty() && wire.back()["role"] == "user" && wire.back()["content"].is_array() &&
            !wire.back()["content"].empty() && wire.back()["content"].back()["type"] == "tool_result") {
          wire.back()["content"].push_back(std::move(block));
        } else {
          wire.push_back({{"role", "user"}, {"content", nlohmann::json::array({std::move(block)})}});
        }
        break;
      }
    }
  }
  if (!system.empty()) body["system"] = system;
  body["messages"] = std::move(wire);
}

LMResponse from_wire(const nlohmann::json& body) {
  if (!body.contains("content") || !body["content"].is_array()) interpreter::throw_malformed(kOperation, "no content");
  LMResponse response;
  for (const auto& block : body["content"]) {
    const std::string type = detail::string_member(block, "type");
    if (type == "text") {
      response.text += detail::string_member(block, "text");
    } else if (type == "tool_use") {
      ToolCall call;
      if (!block.contains("id") || !block["id"].is_string()) interpreter::throw_malformed(kOperation, "tool_use without id");
      call.id = block["id"].get<std::string>();
      call.name = detail::string_member(block, "name");
      call.arguments = block.contains("input") ? block["input"].dump() : "{}";
      response.tool_calls.push_back(std::move(call));
    }
  }
  interpreter::read_stop_and_usage(body, "stop_reason", body, "input_tokens", "output_tokens", response);
  return response;
}

}  // namespace

struct AnthropicInvoker::Impl : interpreter::LMInvokerState<AnthropicOptions> {};

AnthropicInvoker::AnthropicInvoker(AnthropicOptions options) : impl_(std::make_unique<Impl>()) {
  std::string api_key = options.api_key ? *options.api_key : interpreter::env_or_empty("ANTHROPIC_API_KEY");
  if (api_key.empty()) {
    throw LMInvocationError("AnthropicInvoker: no API key (set api_key or ANTHROPIC_API_KEY)", Stage::kConfigure,
                            ErrorKind::kUnauthenticated);
  }
  interpreter::check_model_and_base_url("AnthropicInvoker", options.model, options.base_url);
  if (options.max_tokens < 1) {
    throw LMInvocationError("AnthropicInvoker: max_tokens must be at least 1", Stage::kConfigure,
                            ErrorKind::kInvalidArgument);
  }
  impl_->endpoint =
      interpreter::make_endpoint("AnthropicInvoker", kOperation, std::move(api_key), "/v1/messages", options);
  interpreter::check_header_value("AnthropicInvoker", "anthropic_version", options.anthropic_version);
  impl_->options = std::move(options);
}

AnthropicInvoker::~AnthropicInvoker() = default;

LMResponse AnthropicInvoker::invoke(std::span<const ChatMessage> messages, std::span<const ToolDefinition> tools,
                                    std::stop_token cancel) {
  const auto& options = impl_->options;
  nlohmann::json body = {{"model", options.model}, {"max_tokens", options.max_tokens}};
  to_wire(messages, body);
  if (!tools.empty()) {
    auto& wire_tools = body["tools"] = nlohmann::json::array();
    for (const auto& tool : tools) {
      wire_tools.push_back(
          {{"name", tool.name}, {"description", tool.description}, {"input_schema", interpreter::tool_schema(tool)}});
    }
  }
  if (options.temperature) body["temperature"] = *options.temperature;

  const auto& endpoint = impl_->endpoint;
  return from_wire(interpreter::post_json(
      endpoint, {{"x-api-key", endpoint.api_key}, {"anthropic-version", options.anthropic_version}}, body,
      std::move(cancel)));
}

}  // namespace code_interpreter
