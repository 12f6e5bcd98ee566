// OpenAIChatInvoker and AnthropicInvoker against the scripted LM server (tests/servers/lm), which validates every
// request as the real services do and records it: what is sent, what is read back, retries and failures.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "code_interpreter/anthropic_invoker.hpp"
#include "code_interpreter/openai_invoker.hpp"
#include "code_interpreter/testing/fake_sandbox.hpp"
#include "lm_server.hpp"

namespace ci = code_interpreter;
using ci::test::LMServer;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

ci::OpenAIChatInvoker openai(const LMServer& server, std::string key = ci::test::kOpenAIKey) {
  ci::OpenAIChatOptions options;
  options.base_url = server.url() + "/v1";
  options.api_key = std::move(key);
  options.model = "gpt-test";
  return ci::OpenAIChatInvoker(options);
}

ci::AnthropicInvoker anthropic(const LMServer& server, std::string key = ci::test::kAnthropicKey) {
  ci::AnthropicOptions options;
  options.base_url = server.url();
  options.api_key = std::move(key);
  options.model = "claude-test";
  return ci::AnthropicInvoker(options);
}

const std::vector<ci::ToolDefinition> kTools{
    {"execute_code", "Runs Python code.",
     R"j({"type":"object","properties":{"code":{"type":"string"}},"required":["code"]})j"}};

std::vector<ci::ChatMessage> conversation() {
  return {{ci::ChatRole::kSystem, "Be brief.", {}, {}, false}, {ci::ChatRole::kUser, "What is 2+2?", {}, {}, false}};
}

json tool_call_reply() {
  return {{"tool_calls", {{{"name", "execute_code"}, {"arguments", {{"code", "print(2+2)"}}}}}},
          {"usage", {{"input", 12}, {"output", 7}}}};
}

}  // namespace

TEST_CASE("openai: a tool call is read back with its id, arguments and usage", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array({{{"expect",
                               {{"protocol", "openai"},
                                {"model", "gpt-test"},
                                {"tools", {"execute_code"}},
                                {"system_contains", "Be brief."},
                                {"message_count", 2}}},
                              {"reply", tool_call_reply()}}}));
  auto invoker = openai(server);

  const auto response = invoker.invoke(conversation(), kTools);

  CHECK(response.text.empty());
  CHECK(response.tool_calls == std::vector<ci::ToolCall>{{"call_1", "execute_code", R"j({"code":"print(2+2)"})j"}});
  CHECK(response.stop_reason == "tool_calls");
  CHECK(response.usage == ci::LMUsage{12, 7});
  const auto log = server.log();
  REQUIRE(log["calls"].size() == 1);
  CHECK(log["calls"][0]["outcome"] == "reply");
  CHECK(log["calls"][0]["path"] == "/v1/chat/completions");
  CHECK(log["calls"][0]["auth_scheme"] == "bearer");
  CHECK(log["calls"][0]["body"]["tools"][0] ==
        json::parse(R"j({"type":"function","function":{"name":"execute_code","description":"Runs Python code.",
                        "parameters":{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}}})j"));
}

TEST_CASE("openai: tool results go back as tool messages answering the call", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array({{{"reply", tool_call_reply()}},
                             {{"expect",
                               {{"last_tool_result_equals", "4"},
                                {"last_tool_result_id", "call_1"},
                                {"tool_result_count", 1},
                                {"message_count", 4}}},
                              {"reply", {{"text", "2+2 is 4."}}}}}));
  auto invoker = openai(server);
  ci::testing::FakeSandbox sandbox;
  ci::ExecutionResult four;
  four.status = ci::ExecutionStatus::kSuccess;
  four.stdout_text = "4\n";
  sandbox.push_result(four);

  const auto result = ci::SandboxCodeInterpreter(sandbox, invoker).execute("What is 2+2?");

  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
  CHECK(result.text == "2+2 is 4.");
  CHECK(result.turns == 2);
  CHECK(result.usage == ci::LMUsage{22, 12});
  CHECK(sandbox.execute_calls().at(0).code == "print(2+2)");
}

TEST_CASE("anthropic: tool_use and tool_result round-trip through the Messages API", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array(
      {{{"expect", {{"protocol", "anthropic"}, {"model", "claude-test"}, {"system_contains", "execute_code"}}},
        {"reply", {{"text", "Let me compute."}, {"tool_calls", tool_call_reply()["tool_calls"]}}}},
       {{"expect", {{"last_tool_result_equals", "4"}, {"last_tool_result_id", "toolu_1"}, {"message_count", 3}}},
        {"reply", {{"text", "2+2 is 4."}, {"usage", {{"input", 30}, {"output", 6}}}}}}}));
  auto invoker = anthropic(server);
  ci::testing::FakeSandbox sandbox;
  ci::ExecutionResult four;
  four.status = ci::ExecutionStatus::kSuccess;
  four.stdout_text = "4\n";
  sandbox.push_result(four);

  const auto result = ci::SandboxCodeInterpreter(sandbox, invoker).execute("What is 2+2?");

  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
  CHECK(result.text == "2+2 is 4.");
  CHECK(result.usage == ci::LMUsage{40, 11});
  const auto log = server.log();
  CHECK(log["calls"][0]["auth_scheme"] == "x-api-key");
  CHECK(log["calls"][0]["headers"]["anthropic-version"] == "2023-06-01");
  CHECK(log["calls"][0]["body"]["max_tokens"] == 4096);
  // The model's own text and tool_use go back in the assistant turn, the result in the next user turn.
  CHECK(log["calls"][1]["body"]["messages"][1] ==
        json::parse(R"j({"role":"assistant","content":[{"type":"text","text":"Let me compute."},
                        {"type":"tool_use","id":"toolu_1","name":"execute_code","input":{"code":"print(2+2)"}}]})j"));
  CHECK(log["calls"][1]["body"]["messages"][2] ==
        json::parse(R"j({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"4"}]})j"));
}

TEST_CASE("anthropic: an error result is flagged is_error", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array({{{"reply", tool_call_reply()}}, {{"reply", {{"text", "failed"}}}}}));
  auto invoker = anthropic(server);
  ci::testing::FakeSandbox sandbox;
  ci::ExecutionResult failed;
  failed.status = ci::ExecutionStatus::kError;
  failed.exit_code = 1;
  failed.error = "ZeroDivisionError: division by zero";
  sandbox.push_result(failed);

  (void)ci::SandboxCodeInterpreter(sandbox, invoker).execute("divide");

  CHECK(server.log()["calls"][1]["body"]["messages"][2]["content"][0] ==
        json::parse(R"j({"type":"tool_result","tool_use_id":"toolu_1","content":"ZeroDivisionError: division by zero",
                        "is_error":true})j"));
}

TEST_CASE("a 429 is retried after its Retry-After", "[interpreter][lm_server]") {
  const bool use_openai = GENERATE(true, false);
  LMServer server;
  server.script(json::array({{{"fault", {{"status", 429}, {"retry_after", 1}}}}, {{"reply", {{"text", "ok"}}}}}));
  const auto start = std::chrono::steady_clock::now();
  const auto response = use_openai ? openai(server).invoke(conversation(), kTools)
                                   : anthropic(server).invoke(conversation(), kTools);
  const auto elapsed = std::chrono::steady_clock::now() - start;

  CHECK(response.text == "ok");
  CHECK(server.outcomes() == std::vector<std::string>{"fault", "reply"});
  CHECK(elapsed >= 1s);
}

TEST_CASE("429 with a long Retry-After on every call cannot outlast the loop's timeout", "[interpreter][lm_server]") {
  LMServer server;
  json steps = json::array();
  for (int i = 0; i < 10; ++i) steps.push_back({{"fault", {{"status", 429}, {"retry_after", 999999}}}});
  server.script(steps);
  ci::testing::FakeSandbox sandbox;
  auto invoker = openai(server);
  ci::InterpreterOptions options;
  options.timeout = 1500ms;
  const auto start = std::chrono::steady_clock::now();
  const auto result = ci::SandboxCodeInterpreter(sandbox, invoker, options).execute("go");
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(result.stop_reason == ci::StopReason::kTimeout);
}

TEST_CASE("5xx answers are retried, then the call fails as unavailable and transient", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array({{{"fault", {{"status", 503}}}}, {{"fault", {{"status", 500}}}}, {{"fault", {{"status", 529}}}}}));
  auto invoker = anthropic(server);
  try {
    (void)invoker.invoke(conversation(), kTools);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.stage() == ci::Stage::kExecute);
    CHECK(e.kind() == ci::ErrorKind::kUnavailable);
    CHECK(e.transient());
    CHECK(std::string(e.what()) == "anthropic messages: HTTP 529: Overloaded (after 3 attempts)");
    try {
      std::rethrow_if_nested(e);
      FAIL("nothing nested");
    } catch (const ci::TransportError& cause) {
      CHECK(cause.kind() == ci::TransportError::Kind::kHttpStatus);
      CHECK(cause.http_status() == 529);
    }
  }
  CHECK(server.log()["calls"].size() == 3);
}

TEST_CASE("a wrong API key fails at once as unauthenticated, and the key appears nowhere", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array({{{"reply", {{"text", "never"}}}}}));
  const std::string secret = "sk-wrong-secret-123456";
  auto invoker = openai(server, secret);
  try {
    (void)invoker.invoke(conversation(), kTools);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.kind() == ci::ErrorKind::kUnauthenticated);
    CHECK_FALSE(e.transient());
    CHECK(std::string(e.what()) == "openai chat completions: HTTP 401: Incorrect API key provided.");
    try {
      std::rethrow_if_nested(e);
    } catch (const std::exception& cause) {
      CHECK(std::string(cause.what()).find(secret) == std::string::npos);
    }
  }
  CHECK(server.outcomes() == std::vector<std::string>{"auth_failed"});
}

TEST_CASE("a service message that echoes the key is redacted", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array(
      {{{"fault", {{"status", 400}, {"body", {{"error", {{"message", "bad key test-openai-key here"}}}}}}}}}));
  try {
    (void)openai(server).invoke(conversation(), kTools);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "openai chat completions: HTTP 400: bad key [redacted] here");
  }
}

TEST_CASE("a long service message is redacted before it is cut, so no part of an echoed key survives",
          "[interpreter][lm_server]") {
  // 490 bytes of text, then the key: a cut at 500 bytes through the key would keep its first 10 bytes.
  const std::string padding(490, 'x');
  LMServer server;
  server.script(json::array(
      {{{"fault", {{"status", 400}, {"body", {{"error", {{"message", padding + ci::test::kOpenAIKey + " tail"}}}}}}}},
       {{"fault",
         {{"status", 400},
          {"body", {{"type", "error"}, {"error", {{"message", padding + ci::test::kAnthropicKey + " tail"}}}}}}}}}));
  try {
    (void)openai(server).invoke(conversation(), kTools);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(std::string(e.what()) == "openai chat completions: HTTP 400: " + padding + "[redacted]...");
  }
  try {
    (void)anthropic(server).invoke(conversation(), kTools);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(std::string(e.what()) == "anthropic messages: HTTP 400: " + padding + "[redacted]...");
  }
}

TEST_CASE("openai: content parts whose type is not a string are skipped, not a crash", "[interpreter][lm_server]") {
  // A hostile or broken server: every failure to read a reply must be an LMInvocationError or a valid answer.
  LMServer server;
  server.script(json::array({{{"fault",
                               {{"status", 200},
                                {"body",
                                 {{"choices",
                                   {{{"message",
                                      {{"role", "assistant"},
                                       {"content",
                                        {{{"type", 1}, {"text", "a"}},
                                         {{"type", nullptr}, {"text", "b"}},
                                         {{"type", "text"}, {"text", "c"}}}}}},
                                     {"finish_reason", "stop"}}}}}}}}}}));
  const auto response = openai(server).invoke(conversation(), kTools);
  CHECK(response.text == "c");
  CHECK(response.tool_calls.empty());
  CHECK(response.stop_reason == "stop");
}

TEST_CASE("x-should-retry: false stops the retries", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array());  // exhausted at once: 500 with x-should-retry: false
  CHECK_THROWS_AS(openai(server).invoke(conversation(), kTools), ci::LMInvocationError);
  CHECK(server.log()["calls"].size() == 1);
}

TEST_CASE("a 200 answer that is not a chat completion is an internal error", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array({{{"fault", {{"status", 200}, {"body", {{"choices", json::array()}}}}}}}));
  try {
    (void)openai(server).invoke(conversation(), kTools);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.kind() == ci::ErrorKind::kInternal);
    CHECK(std::string(e.what()) == "openai chat completions: the reply is not a valid response: no choices");
  }
}

TEST_CASE("a reply nested a million levels deep is an internal error, not a crash", "[interpreter][lm_server]") {
  // Tool arguments sent as a JSON value are serialized back to text; a hostile depth must not reach that.
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  const std::string openai_body = R"({"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c1",)"
                                  R"("type":"function","function":{"name":"execute_code","arguments":)" +
                                  deep + "}}]}}]}";
  const std::string anthropic_body = R"({"type":"message","role":"assistant","content":[{"type":"tool_use",)"
                                     R"("id":"t1","name":"execute_code","input":)" + deep + "}]}";
  LMServer server;
  server.script(json::array({{{"fault", {{"status", 200}, {"body", openai_body}}}},
                             {{"fault", {{"status", 200}, {"body", anthropic_body}}}}}));
  try {
    (void)openai(server).invoke(conversation(), kTools);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.kind() == ci::ErrorKind::kInternal);
  }
  try {
    (void)anthropic(server).invoke(conversation(), kTools);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.kind() == ci::ErrorKind::kInternal);
  }
}

TEST_CASE("a stop request aborts a model call in flight", "[interpreter][lm_server][concurrency]") {
  LMServer server;
  server.script(json::array({{{"fault", {{"stall_ms", 20000}}}}}));
  auto invoker = openai(server);
  std::stop_source stop;
  std::jthread canceller([&] {
    std::this_thread::sleep_for(300ms);
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(invoker.invoke(conversation(), kTools, stop.get_token()), ci::LMInvocationError);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("invokers refuse a configuration without model or key", "[interpreter]") {
  ci::AnthropicOptions no_key;
  no_key.api_key = "";
  no_key.model = "m";
  try {
    ci::AnthropicInvoker invoker(no_key);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.stage() == ci::Stage::kConfigure);
    CHECK(e.kind() == ci::ErrorKind::kUnauthenticated);
  }
  ci::OpenAIChatOptions no_model;
  CHECK_THROWS_AS(ci::OpenAIChatInvoker(no_model), ci::LMInvocationError);
}

TEST_CASE("invokers refuse an API key with a line break at construction, without quoting it", "[interpreter]") {
  // A key read from a file keeps its newline; it cannot go in a header, and every call would fail late with a
  // std::invalid_argument from the HTTP layer instead of the documented LMInvocationError.
  ci::OpenAIChatOptions openai_options;
  openai_options.model = "m";
  openai_options.api_key = "sk-secret-value\n";
  try {
    ci::OpenAIChatInvoker invoker(openai_options);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.stage() == ci::Stage::kConfigure);
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "OpenAIChatInvoker: the API key contains a line break or NUL byte");
  }
  ci::AnthropicOptions anthropic_options;
  anthropic_options.model = "m";
  anthropic_options.api_key = "sk-ant-secret\r\nX-Injected: 1";
  try {
    ci::AnthropicInvoker invoker(anthropic_options);
    FAIL("no error");
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.stage() == ci::Stage::kConfigure);
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "AnthropicInvoker: the API key contains a line break or NUL byte");
  }
  anthropic_options.api_key = "k";
  anthropic_options.anthropic_version = std::string("2023-06-01\0", 11);
  CHECK_THROWS_AS(ci::AnthropicInvoker(anthropic_options), ci::LMInvocationError);
}

namespace {
// A chart's result: a display with a PNG, then the last expression.
ci::ExecutionResult chart_result() {
  ci::ExecutionResult r;
  r.status = ci::ExecutionStatus::kSuccess;
  r.stdout_text = "drawn\n";
  r.results.push_back({{{"image/png", "iVBORw0KGgo="}, {"text/plain", "<Figure size 640x480 with 1 Axes>"}}, false});
  r.results.push_back({{{"image/jpeg", "/9j/4AAQ"}, {"text/plain", "<Image>"}}, false});
  return r;
}
}  // namespace

TEST_CASE("anthropic: a tool result's images go back as image blocks after its text", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array({{{"reply", tool_call_reply()}},
                             {{"expect", {{"last_tool_result_equals", "drawn"}}}, {"reply", {{"text", "done"}}}}}));
  auto invoker = anthropic(server);
  ci::testing::FakeSandbox sandbox;
  sandbox.push_result(chart_result());

  const auto result = ci::SandboxCodeInterpreter(sandbox, invoker).execute("draw");

  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
  CHECK(server.log()["calls"][1]["body"]["messages"][2]["content"][0] == json::parse(R"j(
      {"type":"tool_result","tool_use_id":"toolu_1","content":[
        {"type":"text","text":"drawn"},
        {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
        {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}}]})j"));
  REQUIRE(result.messages.size() == 5);
  CHECK(result.messages[3].images ==
        std::vector<ci::ChatImage>{{"image/png", "iVBORw0KGgo="}, {"image/jpeg", "/9j/4AAQ"}});
}

TEST_CASE("openai: a tool message names the images it cannot carry", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array(
      {{{"reply", tool_call_reply()}},
       {{"expect",
         {{"last_tool_result_equals", "drawn\n[2 images produced but not shown: this API takes text only in tool results]"}}},
        {"reply", {{"text", "done"}}}}}));
  auto invoker = openai(server);
  ci::testing::FakeSandbox sandbox;
  sandbox.push_result(chart_result());
  (void)ci::SandboxCodeInterpreter(sandbox, invoker).execute("draw");
  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
}

TEST_CASE("images over the count or size cap, or not base64, are dropped with a note", "[interpreter][lm_server]") {
  LMServer server;
  server.script(json::array(
      {{{"reply", tool_call_reply()}},
       {{"expect",
         {{"last_tool_result_equals", "drawn\n[2 images not sent: at most 1 per result, each at most 12 bytes]"}}},
        {"reply", {{"text", "done"}}}}}));
  auto invoker = anthropic(server);
  ci::testing::FakeSandbox sandbox;
  auto r = chart_result();
  r.results.insert(r.results.begin(), ci::RichResult{{{"image/png", "not base64!"}}, false});
  sandbox.push_result(r);
  ci::InterpreterOptions options;
  options.max_images_per_result = 1;
  options.max_image_bytes = 12;
  const auto result = ci::SandboxCodeInterpreter(sandbox, invoker, options).execute("draw");
  CHECK(server.outcomes() == std::vector<std::string>{"reply", "reply"});
  CHECK(result.messages.at(3).images == std::vector<ci::ChatImage>{{"image/png", "iVBORw0KGgo="}});
}
