// BedrockAgentCoreSandbox against answers the local AgentCore server cannot produce: a scripted HTTP/1.1 server on
// 127.0.0.1 (tests/unit/local_http_server.hpp) answers Start, Stop and Get, and each Invoke with the frames the test
// builds; and, where a real session is needed, the local AgentCore server. Everything a service sends is untrusted
// (docs/architecture.md "Core"): no answer may make a call throw what its contract does not allow, or crash.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <sstream>

#include "../unit/local_http_server.hpp"
#include "bedrock/event_stream.hpp"
#include "bedrock_test_support.hpp"
#include "code_interpreter/bedrock_sandbox.hpp"
#include "code_interpreter/logging.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::BedrockServer;
using code_interpreter::test::LocalHttpServer;
using code_interpreter::test::ServerConnection;
using nlohmann::json;

namespace {

bedrock::EventMessage frame(std::map<std::string, bedrock::HeaderValue> headers, std::string payload) {
  bedrock::EventMessage m;
  m.headers = std::move(headers);
  m.payload = std::move(payload);
  return m;
}

bedrock::HeaderValue text(std::string value) {
  bedrock::HeaderValue v;
  v.type = bedrock::HeaderValue::Type::kString;
  v.bytes = std::move(value);
  return v;
}

std::string result_frame(const json& payload) {
  return bedrock::encode_event_message(frame(
      {{":message-type", text("event")}, {":event-type", text("result")}, {":content-type", text("application/json")}},
      payload.dump()));
}

// Answers a session's control requests; each Invoke goes to `invoke(tool, arguments, index)`, which returns the
// event-stream body (200) — or, when it returns nullopt, the connection is dropped without an answer.
class ScriptedAgentCore {
 public:
  using Invoke = std::function<std::optional<std::string>(const std::string& tool, const json& arguments, int index)>;

  explicit ScriptedAgentCore(Invoke invoke)
      : invoke_(std::move(invoke)), server_([this](ServerConnection& c, int) { serve(c); }) {}

  [[nodiscard]] BedrockOptions options() const {
    BedrockOptions o;
    o.region = "us-east-1";
    o.endpoint_url = server_.url("");
    while (!o.endpoint_url->empty() && o.endpoint_url->back() == '/') o.endpoint_url->pop_back();
    o.credentials = test::kTestCredentials;
    o.request_timeout = 5s;
    return o;
  }
  [[nodiscard]] int invocations() const { return invocations_.load(); }
  [[nodiscard]] int stops() const { return stops_.load(); }
  /// `drop(n)` for the n-th Start (from 0): true reads it and closes the connection without an answer.
  void drop_starts(std::function<bool(int)> drop) { drop_start_ = std::move(drop); }
  /// `status(n)` for the n-th Start (from 0) not dropped: 0 answers it normally, else that HTTP status.
  void fail_starts(std::function<int(int)> status) { start_status_ = std::move(status); }
  [[nodiscard]] std::vector<std::string> start_tokens() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return start_tokens_;
  }
  [[nodiscard]] std::vector<std::string> stop_targets() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stop_targets_;
  }

 private:
  void serve(ServerConnection& c) {
    while (auto request = c.read_request()) {
      const std::string& target = request->target;
      if (target.find("/sessions/start") != std::string::npos) {
        {
          const std::lock_guard<std::mutex> lock(mutex_);
          start_tokens_.push_back(json::parse(request->body).value("clientToken", ""));
        }
        const int n = starts_++;
        if (drop_start_ && drop_start_(n)) return;  // read, never answered
        if (const int status = start_status_ ? start_status_(n) : 0; status != 0) {
          c.respond(status, R"({"message":"Service Unavailable"})",
                    "Content-Type: application/json\r\nx-amzn-ErrorType: ServiceUnavailableException\r\n");
          continue;
        }
        c.respond(200, R"({"codeInterpreterIdentifier":"aws.codeinterpreter.v1","sessionId":"SESSION1",)"
                       R"("createdAt":"2026-01-01T12:00:00.000Z"})",
                  "Content-Type: application/json\r\n");
      } else if (target.find("/sessions/stop") != std::string::npos) {
        ++stops_;
        {
          const std::lock_guard<std::mutex> lock(mutex_);
          stop_targets_.push_back(target);
        }
        c.respond(200, R"({"codeInterpreterIdentifier":"aws.codeinterpreter.v1","sessionId":"SESSION1",)"
                       R"("lastUpdatedAt":"2026-01-01T12:00:01.000Z"})",
                  "Content-Type: application/json\r\n");
      } else if (target.find("/sessions/get") != std::string::npos) {
        c.respond(200, R"({"codeInterpreterIdentifier":"aws.codeinterpreter.v1","sessionId":"SESSION1",)"
                       R"("createdAt":"2026-01-01T12:00:00.000Z","status":"READY"})",
                  "Content-Type: application/json\r\n");
      } else if (target.find("/tools/invoke") != std::string::npos) {
        const json body = json::parse(request->body);
        const auto answer = invoke_(body.at("name").get<std::string>(), body.value("arguments", json::object()),
                                    invocations_++);
        if (!answer) return;
        c.respond(200, *answer, "Content-Type: application/vnd.amazon.eventstream\r\n");
      } else {
        c.respond(404, "{}", "Content-Type: application/json\r\n");
      }
    }
  }

  Invoke invoke_;
  std::function<bool(int)> drop_start_;
  std::function<int(int)> start_status_;
  std::atomic<int> invocations_{0};
  std::atomic<int> stops_{0};
  std::atomic<int> starts_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> start_tokens_, stop_targets_;
  LocalHttpServer server_;
};

}  // namespace

TEST_CASE("bedrock hostile: a frame whose :message-type is missing, unknown or not a string is UNKNOWN "
          "eventstream.malformed_event, never a refusal that proves the code did not run",
          "[bedrock][hostile]") {
  bedrock::HeaderValue number;
  number.type = bedrock::HeaderValue::Type::kInteger;
  number.integer = 7;
  const std::vector<std::map<std::string, bedrock::HeaderValue>> odd = {
      {{":event-type", text("result")}},                                   // no :message-type
      {{":message-type", text("surprise")}, {":event-type", text("result")}},  // an unknown one
      {{":message-type", number}, {":event-type", text("result")}},          // not a string
  };
  for (std::size_t i = 0; i < odd.size(); ++i) {
    DYNAMIC_SECTION("case " << i) {
      ScriptedAgentCore server([&](const std::string&, const json&, int) {
        return std::optional(bedrock::encode_event_message(frame(odd[i], R"({"content":[]})")));
      });
      auto sandbox = BedrockAgentCoreSandbox::create(server.options());
      const auto r = sandbox->execute_code("print(1)");
      CHECK(r.status == ExecutionStatus::kUnknown);
      CHECK(r.exit_code == -1);
      REQUIRE(r.failure);
      CHECK(r.failure->exception_type == "eventstream.malformed_event");
      CHECK_FALSE(r.failure->retry_safe);
      sandbox->terminate();
    }
  }
}

TEST_CASE("bedrock hostile: content blocks whose type, mimeType, name or uri are not strings are ignored, never "
          "thrown out of execute_code or list_files",
          "[bedrock][hostile]") {
  ScriptedAgentCore server([](const std::string& tool, const json&, int) {
    if (tool == "listFiles")
      return std::optional(result_frame(
          {{"content",
            json::array({{{"type", 7}, {"name", "x"}},
                         {{"type", "resource_link"}, {"name", 1}, {"uri", false}, {"description", 2}, {"mimeType", 3}},
                         {{"type", "resource_link"}, {"name", "a.txt"}, {"uri", "file:///a.txt"}, {"size", 4}}})}}));
    return std::optional(result_frame(
        {{"content", json::array({{{"type", 1}, {"text", "odd\n"}},
                                  {{"type", "image"}, {"data", "AAAA"}, {"mimeType", 5}},
                                  {{"type", "text"}, {"text", "hello\n"}}})},
         {"isError", false}}));
  });
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const auto r = sandbox->execute_code("print('hello')");
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "hello\n");
  REQUIRE(r.results.size() == 1);
  CHECK(r.results[0].data == std::map<std::string, std::string>{{"image/png", "AAAA"}});

  // The link whose name is not a string reads as an empty name, which list_files drops (docs/errors.md, "File
  // guards").
  const auto files = sandbox->list_files(".");
  REQUIRE(files.size() == 1);
  CHECK(files[0].name == "a.txt");
  CHECK(files[0].path == "a.txt");
  CHECK(files[0].size == 4);
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: a traceback whose last line is megabytes long is parsed without std::regex's "
          "recursion (no stack overflow)",
          "[bedrock][hostile]") {
  const std::string message(2'000'000, 'x');
  ScriptedAgentCore server([&](const std::string&, const json&, int) {
    const std::string err = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nValueError: " +
                            message + "\n";
    return std::optional(result_frame(
        {{"content", json::array()},
         {"structuredContent", {{"stdout", ""}, {"stderr", err}, {"exitCode", 1}}},
         {"isError", true}}));
  });
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const auto r = sandbox->execute_code("raise ValueError('x' * 2_000_000)");
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  REQUIRE(r.code_error);
  CHECK(r.code_error->name == "ValueError");
  CHECK(r.code_error->value == message);
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: code, commands and paths that are not UTF-8 are std::invalid_argument, sent nowhere",
          "[bedrock][hostile]") {
  ScriptedAgentCore server([](const std::string&, const json&, int) {
    return std::optional(result_frame({{"content", json::array()}}));
  });
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const std::string bad = "print('\xff')";
  CHECK_THROWS_AS(sandbox->execute_code(bad), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->execute_command("echo \xfe"), std::invalid_argument);
  CommandOptions in_bad_dir;
  in_bad_dir.cwd = "dir\xff";
  CHECK_THROWS_AS(sandbox->execute_command("true", in_bad_dir), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->write_file("a\xff.txt", "x"), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->read_file("a\xff.txt"), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->download_file("a\xff.txt"), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->list_files("d\xff"), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->remove_file("a\xff.txt"), std::invalid_argument);
  CHECK_THROWS_AS(sandbox->make_dir("d\xff"), std::invalid_argument);
  ExecuteOptions upload;
  upload.upload_dir = "up\xff";
  upload.files = {Attachment::from_bytes("x", "a.txt")};
  CHECK_THROWS_AS(sandbox->execute_code("print(1)", upload), std::invalid_argument);
  CHECK(server.invocations() == 0);
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: output a getTask reported is kept when a later poll fails", "[bedrock][hostile]") {
  std::atomic<int> polls{0};
  ScriptedAgentCore server([&](const std::string& tool, const json&, int) -> std::optional<std::string> {
    if (tool == "startCommandExecution")
      return result_frame({{"content", json::array()},
                           {"structuredContent", {{"taskId", "T1"}, {"taskStatus", "submitted"}}}});
    if (tool == "getTask") {
      if (polls++ == 0)
        return result_frame(
            {{"content", json::array()},
             {"structuredContent", {{"taskId", "T1"}, {"taskStatus", "working"}, {"stdout", "partial\n"}, {"stderr", "warn\n"}}}});
      return std::nullopt;  // every later poll (and libcurl's re-send of it) loses its connection
    }
    return result_frame({{"content", json::array()}, {"structuredContent", {{"taskId", "T1"}, {"taskStatus", "canceled"}}}});
  });
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  std::string streamed;
  CommandOptions options;
  options.on_stdout = [&](std::string_view line) { streamed += line; };
  const auto r = sandbox->execute_command("echo partial; sleep 5", options);
  CHECK(r.status == ExecutionStatus::kUnknown);
  CHECK(r.exit_code == -1);
  REQUIRE(r.failure);
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.stdout_text == "partial\n");
  CHECK(r.stderr_text == "warn\n");
  CHECK(streamed == "partial\n");
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: a command whose cwd cannot be entered does not run, not even the rest of a list",
          "[bedrock][hostile]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  CommandOptions options;
  options.cwd = "missing";
  options.env = {{"A", "1"}, {"B", "2"}};
  const auto r = sandbox->execute_command("echo first; touch ran_here; echo \"$A$B\"", options);
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text.find("missing") != std::string::npos);
  CHECK_FALSE(sandbox->download_file("ran_here"));

  // A command that ends in a comment or a here-document still runs in the directory, with its env.
  sandbox->make_dir("work");
  options.cwd = "work";
  const auto ok = sandbox->execute_command("basename \"$PWD\"; cat <<EOF\n$A$B\nEOF\n# done", options);
  CHECK(ok.status == ExecutionStatus::kSuccess);
  CHECK(ok.stdout_text == "work\n12\n");
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: the identifiers '.' and '..' are refused at configure: libcurl would drop them from "
          "the path",
          "[bedrock][hostile]") {
  ScriptedAgentCore server([](const std::string&, const json&, int) {
    return std::optional(result_frame({{"content", json::array()}}));
  });
  for (const char* id : {".", ".."}) {
    auto options = server.options();
    options.code_interpreter_identifier = id;
    try {
      (void)BedrockAgentCoreSandbox::create(options);
      FAIL("'" << id << "' must be refused");
    } catch (const SandboxStartError& e) {
      CHECK(e.stage() == Stage::kConfigure);
      CHECK(e.kind() == ErrorKind::kInvalidArgument);
      CHECK(std::string(e.what()) == "code interpreter identifier '" + std::string(id) +
                                         "' is not an interpreter id, e.g. aws.codeinterpreter.v1");
    }
  }
  CHECK(server.stops() == 0);
}

TEST_CASE("bedrock hostile: a task id the service chose reaches the warning log bounded, on one line and without "
          "an echoed secret",
          "[bedrock][hostile]") {
  const std::string task_id = test::kTestCredentials.secret_access_key + "\nFORGED LOG LINE " + std::string(100'000, 'x');
  ScriptedAgentCore server([&](const std::string& tool, const json&, int) -> std::optional<std::string> {
    if (tool == "startCommandExecution")
      return result_frame({{"content", json::array()}, {"structuredContent", {{"taskId", task_id}, {"taskStatus", "submitted"}}}});
    if (tool == "getTask")
      return result_frame({{"content", json::array()}, {"structuredContent", {{"taskId", task_id}, {"taskStatus", "working"}}}});
    return std::nullopt;  // stopTask fails: the warning names the task
  });
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  set_logger(std::make_shared<spdlog::logger>("capture", sink));
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  CommandOptions options;
  options.timeout = 300ms;
  const auto r = sandbox->execute_command("sleep 5", options);
  set_logger(nullptr);
  CHECK(r.status == ExecutionStatus::kTimeout);
  const std::string log = captured.str();
  INFO(log.substr(0, 400));
  CHECK(log.find("could not stop task") != std::string::npos);
  CHECK(log.find(test::kTestCredentials.secret_access_key) == std::string::npos);
  CHECK(log.find("\nFORGED") == std::string::npos);
  CHECK(log.size() < 1000);
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: attachments to a session that expired before the call: ERROR upload, retry_safe, "
          "state_lost, as without attachments",
          "[bedrock][hostile]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  server.fault({{"operation", "invoke"}, {"tool", "executeCommand"}, {"action", "expire_session"}});
  ExecuteOptions options;
  options.files = {Attachment::from_bytes("x", "a.txt")};
  const auto r = sandbox->execute_code("print(1)", options);
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == "upload");
  CHECK(r.failure->retry_safe);
  CHECK(r.state_lost);
  CHECK(server.requests("invoke", "executeCode").empty());
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: a request signature the service echoed is redacted from the error and its cause",
          "[bedrock][hostile]") {
  std::mutex mutex;
  std::string signature;
  LocalHttpServer echo([&](ServerConnection& c, int) {
    while (auto request = c.read_request()) {
      const std::string authorization = request->headers["authorization"];
      {
        std::lock_guard lock(mutex);
        signature = authorization.substr(authorization.find("Signature=") + 10);
      }
      c.respond(403, json{{"message", "denied: Authorization: " + authorization}}.dump(),
                "Content-Type: application/json\r\nx-amzn-ErrorType: AccessDeniedException\r\n");
    }
  });
  BedrockOptions options;
  options.region = "us-east-1";
  options.endpoint_url = echo.url("");
  options.credentials = test::kTestCredentials;
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("a 403 must throw");
  } catch (const SandboxStartError& e) {
    std::lock_guard lock(mutex);
    REQUIRE(signature.size() == 64);
    const std::string message = e.what();
    CHECK(message.find("Signature=[redacted]") != std::string::npos);
    CHECK(message.find(signature) == std::string::npos);
    try {
      std::rethrow_if_nested(e);
      FAIL("a cause must be nested");
    } catch (const TransportError& cause) {
      CHECK(std::string(cause.what()).find(signature) == std::string::npos);
    }
  }
}

TEST_CASE("bedrock hostile: a Start or Get answer of more than a million JSON values is refused like any other "
          "hostile JSON, not parsed into memory",
          "[bedrock][hostile]") {
  std::string values = "[0";
  for (int i = 0; i < (1 << 20); ++i) values += ",0";
  values += "]";
  std::atomic<bool> hostile_get{false};
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (auto request = c.read_request()) {
      const bool start = request->target.find("/sessions/start") != std::string::npos;
      const bool get = request->target.find("/sessions/get") != std::string::npos;
      if (start && !hostile_get)
        c.respond(200, R"({"sessionId":"SESSION1","padding":)" + values + "}", "Content-Type: application/json\r\n");
      else if (start)
        c.respond(200, R"({"sessionId":"SESSION1"})", "Content-Type: application/json\r\n");
      else if (get)
        c.respond(200, R"({"sessionId":"SESSION1","status":"READY","padding":)" + values + "}",
                  "Content-Type: application/json\r\n");
      else
        c.respond(200, R"({"sessionId":"SESSION1"})", "Content-Type: application/json\r\n");
    }
  });
  BedrockOptions options;
  options.region = "us-east-1";
  options.endpoint_url = server.url("");
  options.credentials = test::kTestCredentials;
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("the Start answer must be refused");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.kind() == ErrorKind::kInternal);
    CHECK(std::string(e.what()) == "StartCodeInterpreterSession answered without a usable sessionId");
  }
  hostile_get = true;
  auto sandbox = BedrockAgentCoreSandbox::create(options);
  try {
    (void)sandbox->session_status();
    FAIL("the Get answer must be refused");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.stage() == Stage::kExecute);
    CHECK(std::string(e.what()) == "GetCodeInterpreterSession failed");
  }
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: session_name counts characters, not bytes, a session_name or package name that is not "
          "UTF-8 is SandboxStartError(configure), not a JSON exception",
          "[bedrock][hostile]") {
  ScriptedAgentCore server([](const std::string&, const json&, int) {
    return std::optional(result_frame({{"content", json::array()}}));
  });
  // The service's 100 characters hold the tag's prefix "ci.t." too (docs/backends/bedrock.md "Tags and session
  // names"): 95 are left.
  std::string longest;
  for (int i = 0; i < 95; ++i) longest += "\xc3\xa9";  // é: 95 characters, 190 bytes
  auto options = server.options();
  options.tag = "t";
  options.session_name = longest;
  auto sandbox = BedrockAgentCoreSandbox::create(options);
  sandbox->terminate();

  const auto refused = [&](BedrockOptions o, std::string_view message) {
    try {
      (void)BedrockAgentCoreSandbox::create(std::move(o));
      FAIL("create must throw");
    } catch (const SandboxStartError& e) {
      CHECK(e.stage() == Stage::kConfigure);
      CHECK(e.kind() == ErrorKind::kInvalidArgument);
      CHECK(std::string(e.what()) == message);
    }
  };
  options.session_name = longest + "\xc3\xa9";
  refused(options, "session_name must be 1..95 characters of UTF-8 (the service's 100 less the tag's prefix ci.t.)");
  options.session_name = "name\xff";
  refused(options, "session_name must be 1..95 characters of UTF-8 (the service's 100 less the tag's prefix ci.t.)");
  options.session_name.reset();
  options.additional_packages = {"numpy", "bad\xff"};
  refused(options, "additional_packages: a package name is empty, has a NUL byte or is not UTF-8");
  CHECK(server.invocations() == 0);
}

TEST_CASE("bedrock hostile: an exitCode that does not fit in an int is 1, never wrapped to SUCCESS",
          "[bedrock][hostile]") {
  ScriptedAgentCore server([&](const std::string& tool, const json&, int index) -> std::optional<std::string> {
    if (tool == "executeCode") {
      // 2^32 would wrap to 0 through a 32-bit cast; -2^40 to 0 as well.
      const json codes = json::array({4294967296ULL, -1099511627776LL, 2147483647, -7});
      return result_frame({{"content", json::array()},
                           {"isError", false},
                           {"structuredContent", {{"stdout", ""}, {"stderr", ""}, {"exitCode", codes.at(index)}}}});
    }
    if (tool == "startCommandExecution")
      return result_frame({{"content", json::array()},
                           {"structuredContent", {{"taskId", "T1"}, {"taskStatus", "submitted"}}}});
    return result_frame({{"content", json::array()},
                         {"structuredContent", {{"taskId", "T1"}, {"taskStatus", "completed"}, {"exitCode", 4294967296ULL}}}});
  });
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  for (const int expected : {1, 1, 2147483647, -7}) {
    INFO(expected);
    const auto r = sandbox->execute_code("1");
    CHECK(r.status == ExecutionStatus::kError);
    CHECK(r.exit_code == expected);
  }
  const auto command = sandbox->execute_command("true");
  CHECK(command.status == ExecutionStatus::kError);
  CHECK(command.exit_code == 1);
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: a throttled getTask is polled again, the command's result still arrives",
          "[bedrock][hostile]") {
  std::atomic<int> polls{0};
  ScriptedAgentCore server([&](const std::string& tool, const json&, int) -> std::optional<std::string> {
    if (tool == "startCommandExecution")
      return result_frame({{"content", json::array()},
                           {"structuredContent", {{"taskId", "T1"}, {"taskStatus", "submitted"}}}});
    if (tool == "getTask" && polls++ == 0)
      return bedrock::encode_event_message(frame({{":message-type", text("exception")},
                                                  {":exception-type", text("throttlingException")},
                                                  {":content-type", text("application/json")}},
                                                 R"({"message":"Rate exceeded"})"));
    return result_frame({{"content", json::array()},
                         {"structuredContent",
                          {{"taskId", "T1"}, {"taskStatus", "completed"}, {"stdout", "done\n"}, {"exitCode", 0}}}});
  });
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const auto r = sandbox->execute_command("echo done");
  CHECK(r.status == ExecutionStatus::kSuccess);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "done\n");
  CHECK(polls.load() == 2);
  sandbox->terminate();
}

TEST_CASE("bedrock hostile: a Start whose every answer was lost: the session it may have made is found by its "
          "clientToken and stopped, and create throws a transient error",
          "[bedrock][hostile]") {
  ScriptedAgentCore server([](const std::string&, const json&, int) -> std::optional<std::string> { return {}; });
  server.drop_starts([](int n) { return n < 3; });  // the three attempts of create; the cleanup's Start is answered
  auto options = server.options();
  options.create_timeout = 3s;
  options.request_timeout = 1s;
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("create must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.transient());
  }
  const auto tokens = server.start_tokens();
  REQUIRE(tokens.size() == 4);
  for (const auto& t : tokens) CHECK(t == tokens.front());  // one clientToken: the cleanup asks for the same session
  // The cleanup's Start was answered with SESSION1, which was then stopped, once.
  CHECK(server.stops() == 1);
  REQUIRE(server.stop_targets().size() == 1);
  CHECK(server.stop_targets()[0].find("sessionId=SESSION1") != std::string::npos);
}

TEST_CASE("bedrock hostile: a Start lost on an earlier attempt is stopped too when a later attempt is answered "
          "with an error",
          "[bedrock][hostile]") {
  ScriptedAgentCore server([](const std::string&, const json&, int) -> std::optional<std::string> { return {}; });
  server.drop_starts([](int n) { return n == 0; });             // the first attempt reached the service, unanswered
  server.fail_starts([](int n) { return n == 1 || n == 2 ? 503 : 0; });  // the other two: 503; the cleanup's: 200
  auto options = server.options();
  options.create_timeout = 10s;
  options.request_timeout = 1s;
  try {
    (void)BedrockAgentCoreSandbox::create(options);
    FAIL("create must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kCreate);
    CHECK(e.kind() == ErrorKind::kUnavailable);
  }
  const auto tokens = server.start_tokens();
  REQUIRE(tokens.size() == 4);
  for (const auto& t : tokens) CHECK(t == tokens.front());
  CHECK(server.stops() == 1);
  REQUIRE(server.stop_targets().size() == 1);
  CHECK(server.stop_targets()[0].find("sessionId=SESSION1") != std::string::npos);
}

TEST_CASE("bedrock hostile: a task the service reports failed is an error with exit code 1 even when its exitCode "
          "is 0",
          "[bedrock][hostile]") {
  ScriptedAgentCore server([&](const std::string& tool, const json&, int) -> std::optional<std::string> {
    if (tool == "startCommandExecution")
      return result_frame({{"content", json::array()},
                           {"structuredContent", {{"taskId", "T1"}, {"taskStatus", "submitted"}}}});
    return result_frame({{"content", json::array()},
                         {"structuredContent", {{"taskId", "T1"}, {"taskStatus", "failed"}, {"exitCode", 0}}}});
  });
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const auto r = sandbox->execute_command("true");
  CHECK(r.status == ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  CHECK(r.error == "exit status 1");
  sandbox->terminate();
}
