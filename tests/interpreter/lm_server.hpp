// The scripted LM server (tests/servers/lm, see its README.md) for the life of a test: start, load a script,
// read the call log.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "http/http_client.hpp"
#include "node_server.hpp"

namespace code_interpreter::test {

inline constexpr const char* kOpenAIKey = "test-openai-key";
inline constexpr const char* kAnthropicKey = "test-anthropic-key";

class LMServer {
 public:
  LMServer() : node_("servers/lm/server.mjs") {}

  /// http://127.0.0.1:PORT
  [[nodiscard]] std::string url() const { return node_.url("url"); }

  /// Replaces the script: {"steps": [...]}. Throws when the server refuses it.
  void script(const nlohmann::json& steps) {
    http::Request request;
    request.method = "POST";
    request.url = url() + "/_control/script";
    request.headers = {{"Content-Type", "application/json"}};
    request.body = nlohmann::json{{"steps", steps}}.dump();
    const auto exchange = client_.perform(request);
    if (!exchange.success()) throw std::runtime_error("script refused: " + exchange.response.body);
  }

  /// {"calls": [...], "steps": N, "next_step": i, "dropped": d}
  [[nodiscard]] nlohmann::json log() {
    http::Request request;
    request.url = url() + "/_control/log";
    const auto exchange = client_.perform(request);
    if (!exchange.success()) throw std::runtime_error("cannot read the log");
    return nlohmann::json::parse(exchange.response.body);
  }

  /// The calls' outcomes in order, e.g. ["reply", "reply"]: a failed expectation shows as "expect_failed".
  [[nodiscard]] std::vector<std::string> outcomes() {
    std::vector<std::string> out;
    const auto entries = log();
    for (const auto& call : entries["calls"]) out.push_back(call["outcome"].is_string() ? call["outcome"].get<std::string>() : "");
    return out;
  }

 private:
  NodeServer node_;
  http::HttpClient client_;
};

}  // namespace code_interpreter::test
