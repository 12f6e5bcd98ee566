// serve_mcp over a pair of pipes: the protocol's answers to hostile input, version negotiation, no sandbox before
// the first call, state kept across calls, cancellation, reset; FakeSandbox for speed and real Pyodide for a few.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "code_interpreter/code_interpreter.hpp"
#include "code_interpreter/testing/fake_sandbox.hpp"
#include "results.hpp"

namespace ci = code_interpreter;
using ci::testing::FakeSandbox;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A server on its own thread, spoken to through pipes as a client process would.
class Server {
 public:
  explicit Server(ci::McpServerOptions options) : options_(std::move(options)) {
    REQUIRE(::pipe(in_) == 0);
    REQUIRE(::pipe(out_) == 0);
    thread_ = std::thread([this] { ci::serve_mcp(in_[0], out_[1], options_); ::close(out_[1]); });
  }
  ~Server() {
    close_input();
    thread_.join();
    ::close(in_[0]);
    ::close(out_[0]);
  }

  void send_raw(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const auto n = ::write(in_[1], bytes.data() + done, bytes.size() - done);
      REQUIRE(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }
  void send(const json& message) { send_raw(message.dump() + "\n"); }
  void request(int id, const std::string& method, json params = json::object()) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  }

  // The next message, or nullopt when none came within `wait`.
  std::optional<json> next(std::chrono::milliseconds wait = 10s) {
    for (;;) {
      if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
        const auto line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return json::parse(line);
      }
      pollfd p{out_[0], POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return std::nullopt;
      char chunk[65536];
      const auto n = ::read(out_[0], chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  // The next message that is not a notification.
  json answer(std::chrono::milliseconds wait = 10s) {
    for (;;) {
      auto m = next(wait);
      REQUIRE(m);
      if (m->contains("id")) return *m;
    }
  }

  void close_input() {
    if (in_[1] >= 0) {
      ::close(in_[1]);
      in_[1] = -1;
    }
  }

 private:
  ci::McpServerOptions options_;
  int in_[2]{-1, -1};
  int out_[2]{-1, -1};
  std::string buffer_;
  std::thread thread_;
};

// A FakeSandbox that says, once the server has destroyed it, whether it was terminated first.
class RecordingSandbox : public FakeSandbox {
 public:
  explicit RecordingSandbox(std::shared_ptr<std::atomic<bool>> ended) : ended_(std::move(ended)) {}
  ~RecordingSandbox() override { *ended_ = terminated(); }

 private:
  std::shared_ptr<std::atomic<bool>> ended_;
};

// Options whose sandboxes are FakeSandboxes, counted; `setup` scripts each one.
struct FakeBackend {
  std::atomic<int> created{0};
  std::function<void(FakeSandbox&)> setup = [](FakeSandbox&) {};
  std::mutex mutex;  // the server's worker makes sandboxes while the test reads
  std::vector<std::shared_ptr<std::atomic<bool>>> made;

  /// Whether the index-th sandbox made was destroyed after being terminated.
  bool terminated(std::size_t index) {
    std::lock_guard lock(mutex);
    return *made.at(index);
  }

  ci::McpServerOptions options() {
    ci::McpServerOptions o;
    o.create = [this](const ci::SandboxConfig&) {
      auto ended = std::make_shared<std::atomic<bool>>(false);
      {
        std::lock_guard lock(mutex);
        made.push_back(ended);
      }
      auto s = std::make_unique<RecordingSandbox>(ended);
      setup(*s);
      ++created;
      return std::unique_ptr<ci::CodeInterpreterSandbox>(std::move(s));
    };
    return o;
  }
};

using ci::test_support::success;

// A sandbox whose first call runs until it is cancelled.
void runs_until_cancelled(FakeSandbox& s) {
  s.push_handler([](std::string_view, const ci::ExecuteOptions& o) {
    while (!o.cancel.stop_requested()) std::this_thread::sleep_for(5ms);
    return ci::ExecutionResult{};
  });
}

json init_params(const std::string& version) {
  return {{"protocolVersion", version}, {"capabilities", json::object()},
          {"clientInfo", {{"name", "test"}, {"version", "1"}}}};
}

}  // namespace

TEST_CASE("initialize answers the client's revision when it is known, else the latest", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.request(1, "initialize", init_params("2025-06-18"));
  const auto a = server.answer();
  CHECK(a["id"] == 1);
  CHECK(a["result"]["protocolVersion"] == "2025-06-18");
  CHECK(a["result"]["serverInfo"]["name"] == "code-interpreter");
  CHECK(a["result"]["capabilities"].contains("tools"));
  CHECK(a["result"]["capabilities"].contains("logging"));
  server.request(2, "initialize", init_params("1999-01-01"));
  CHECK(server.answer()["result"]["protocolVersion"] == "2025-11-25");
  server.request(3, "initialize", {{"capabilities", json::object()}});
  CHECK(server.answer()["error"]["code"] == -32602);
}

TEST_CASE("initialize and tools/list are answered before any sandbox exists", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.request(1, "initialize", init_params("2025-11-25"));
  (void)server.answer();
  server.send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  server.request(2, "tools/list");
  const auto list = server.answer();
  REQUIRE(list["result"]["tools"].size() == 2);
  CHECK(list["result"]["tools"][0]["name"] == "execute_code");
  CHECK(list["result"]["tools"][1]["name"] == "reset_sandbox");
  // Word for word what docs/agents.md says the model is told.
  CHECK(list["result"]["tools"][0]["description"] ==
        "Runs Python code in a sandbox and returns what it printed (stdout, then stderr), the error with its traceback "
        "if it failed, and the value of the last expression. The sandbox keeps its state between calls: variables, "
        "imports and files persist from one call to the next. Name files the code needs from /files/ in `files` "
        "(plain names, no paths) to have them checked before it runs; the code reads them as /files/name. Files "
        "written in the sandbox stay there: put the results in the answer text. The code cannot reach the network, "
        "so nothing can be downloaded or installed. Each call may run for at most 30 seconds unless `timeout` sets "
        "another limit, up to 300 seconds. One sandbox serves this whole session; call reset_sandbox to start over "
        "in a fresh one (at most 3 sandboxes per session).");
  CHECK(list["result"]["tools"][0]["inputSchema"]["properties"]["timeout"]["maximum"] == 300);
  CHECK(backend.created == 0);
}

TEST_CASE("text that is not JSON is a parse error with a null id", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.send_raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"\n");
  const auto a = server.answer();
  CHECK(a["id"] == nullptr);
  CHECK(a["error"]["code"] == -32700);
}

TEST_CASE("a batch is refused as an invalid request", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.send_raw(R"j([{"jsonrpc":"2.0","id":1,"method":"ping"}])j" "\n");
  const auto a = server.answer();
  CHECK(a["error"]["code"] == -32600);
  CHECK(a["error"]["message"] == "Invalid Request: batches are not supported");
}

TEST_CASE("invalid requests are answered -32600", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.send_raw("42\n");
  CHECK(server.answer()["error"]["code"] == -32600);
  server.send_raw(R"j({"jsonrpc":"1.0","id":7,"method":"ping"})j" "\n");
  const auto wrong_version = server.answer();
  CHECK(wrong_version["id"] == 7);
  CHECK(wrong_version["error"]["code"] == -32600);
  server.send_raw(R"j({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})j" "\n");
  CHECK(server.answer()["error"]["code"] == -32600);
  server.send_raw(R"j({"jsonrpc":"2.0","id":8,"method":5})j" "\n");
  CHECK(server.answer()["error"]["code"] == -32600);
}

TEST_CASE("an invalid request without an id is answered -32600 with id null, a response is never answered", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  const auto refused = [&](const std::string& line, const std::string& message) {
    server.send_raw(line + "\n");
    const auto a = server.answer();
    CHECK(a == json({{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", -32600}, {"message", message}}}}));
  };
  refused(R"j({"jsonrpc":"2.0","method":5})j", "Invalid Request: method must be a string");
  refused(R"j({})j", "Invalid Request: jsonrpc must be \"2.0\"");
  refused(R"j({"jsonrpc":"1.0","method":"ping"})j", "Invalid Request: jsonrpc must be \"2.0\"");
  refused(R"j({"jsonrpc":"2.0"})j", "Invalid Request: no method");
  // Responses, with any id: nothing comes back, and the ping after them is the next answer.
  server.send_raw(R"j({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}})j" "\n");
  server.send_raw(R"j({"jsonrpc":"2.0","id":3,"result":{}})j" "\n");
  server.send_raw(R"j({"jsonrpc":"2.0","id":{"x":1},"error":{"code":1,"message":"y"}})j" "\n");
  server.request(4, "ping");
  CHECK(server.answer() == json::parse(R"j({"jsonrpc":"2.0","id":4,"result":{}})j"));
}

TEST_CASE("a string id with a lone surrogate escape, which cannot be echoed as sent, is refused with id null", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.send_raw(R"j({"jsonrpc":"2.0","id":"\ud800","method":"ping"})j" "\n");
  CHECK(server.answer() == json::parse(R"j({"jsonrpc":"2.0","id":null,"error":{"code":-32600,
                                        "message":"Invalid Request: id must not hold a lone surrogate"}})j"));
  // An escaped backslash followed by u is an ordinary id, echoed as sent.
  server.send_raw(R"j({"jsonrpc":"2.0","id":"\\ud800","method":"ping"})j" "\n");
  CHECK(server.answer() == json::parse(R"j({"jsonrpc":"2.0","id":"\\ud800","result":{}})j"));
}

TEST_CASE("an unknown method is -32601 and a ping is answered empty", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.request(1, "resources/frobnicate");
  const auto a = server.answer();
  CHECK(a["id"] == 1);
  CHECK(a["error"]["code"] == -32601);
  server.request(2, "ping");
  CHECK(server.answer() == json::parse(R"j({"jsonrpc":"2.0","id":2,"result":{}})j"));
}

TEST_CASE("wrong params are -32602 and run nothing", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.send_raw(R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]})j" "\n");
  CHECK(server.answer()["error"]["code"] == -32602);
  server.request(2, "tools/call", {{"name", 5}});
  CHECK(server.answer()["error"]["code"] == -32602);
  server.request(3, "tools/call", {{"name", "rm_rf"}, {"arguments", json::object()}});
  CHECK(server.answer()["error"]["code"] == -32602);
  server.request(4, "tools/call", {{"name", "execute_code"}, {"arguments", "print(1)"}});
  CHECK(server.answer()["error"]["code"] == -32602);
  server.request(5, "logging/setLevel", {{"level", "loud"}});
  CHECK(server.answer()["error"]["code"] == -32602);
  CHECK(backend.created == 0);
}

TEST_CASE("notifications are never answered, known or not", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  server.send({{"jsonrpc", "2.0"}, {"method", "notifications/whatever"}, {"params", {{"x", 1}}}});
  server.send({{"jsonrpc", "2.0"}, {"method", "ping"}});
  server.request(9, "ping");
  // The first message out is the answer to the ping that has an id.
  CHECK(server.next() == json::parse(R"j({"jsonrpc":"2.0","id":9,"result":{}})j"));
}

TEST_CASE("an oversize line is refused and the session goes on", "[mcp]") {
  FakeBackend backend;
  auto options = backend.options();
  options.max_message_bytes = 1024;
  Server server(options);
  server.send_raw(R"j({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":")j" + std::string(100000, 'x') +
                  "\"}}\n");
  const auto a = server.answer();
  CHECK(a["id"] == nullptr);
  CHECK(a["error"]["code"] == -32600);
  CHECK(a["error"]["message"] == "Invalid Request: a message is longer than 1024 bytes");
  server.request(2, "ping");
  CHECK(server.answer()["id"] == 2);
}

TEST_CASE("calls share one sandbox, created at the first call", "[mcp]") {
  FakeBackend backend;
  backend.setup = [](FakeSandbox& s) { s.push_result(success("")).push_result(success("1\n")); };
  Server server(backend.options());
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "a = 1"}}}});
  CHECK(server.answer()["result"] == json::parse(R"j({"content":[{"type":"text","text":"[no output]"}],"isError":false})j"));
  server.request(2, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "print(a)"}}}});
  CHECK(server.answer()["result"] == json::parse(R"j({"content":[{"type":"text","text":"1"}],"isError":false})j"));
  CHECK(backend.created == 1);
}

TEST_CASE("refused arguments are a tool error, not a protocol error", "[mcp]") {
  FakeBackend backend;
  Server server(backend.options());
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "1"}, {"shell", "ls"}}}});
  const auto a = server.answer();
  CHECK(a["result"]["isError"] == true);
  CHECK(a["result"]["content"][0]["text"] ==
        "[error: unknown argument 'shell'; the arguments are code, timeout, files. Nothing was run.]");
}

namespace {

// Waits, at most 10 s, until a call has reached the sandbox (`started`): a request cancelled while it still waits in
// the server's queue is dropped without running, which a fixed pause cannot rule out on a loaded machine.
bool await_running(const std::atomic<bool>& started) {
  for (int i = 0; i < 1000 && !started; ++i) std::this_thread::sleep_for(10ms);
  return started;
}

}  // namespace

TEST_CASE("a cancelled call is stopped and gets no answer, and the next call runs", "[mcp][concurrency]") {
  FakeBackend backend;
  std::atomic<bool> started{false};
  std::atomic<bool> was_cancelled{false};
  backend.setup = [&](FakeSandbox& s) {
    s.push_handler([&](std::string_view, const ci::ExecuteOptions& o) {
      started = true;
      while (!o.cancel.stop_requested()) std::this_thread::sleep_for(5ms);
      was_cancelled = true;
      ci::ExecutionResult r;
      r.failure = ci::FailureDetail{"cancelled", false};
      return r;
    });
    s.push_result(success("after\n"));
  };
  Server server(backend.options());
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "while True: pass"}}}});
  REQUIRE(await_running(started));
  server.send({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}});
  server.request(2, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "print('after')"}}}});
  const auto a = server.answer();
  CHECK(a["id"] == 2);
  CHECK(a["result"]["content"][0]["text"] == "after");
  CHECK(was_cancelled);
}

TEST_CASE("a cancelled call that lost the state has it told in the next answer and in a log message", "[mcp][concurrency]") {
  FakeBackend backend;
  std::atomic<bool> started{false};
  backend.setup = [&](FakeSandbox& s) {
    s.push_handler([&](std::string_view, const ci::ExecuteOptions& o) {
      started = true;
      while (!o.cancel.stop_requested()) std::this_thread::sleep_for(5ms);
      ci::ExecutionResult r;  // the code swallowed the interrupt: the runtime was restarted
      r.failure = ci::FailureDetail{"cancelled", false};
      r.state_lost = true;
      return r;
    });
    s.push_result(success("after\n"));
    s.push_result(success("again\n"));
  };
  Server server(backend.options());
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "while True: pass"}}}});
  REQUIRE(await_running(started));
  server.send({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}});
  server.request(2, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "print('after')"}}}});
  bool logged = false;
  json a;
  for (;;) {
    auto m = server.next();
    REQUIRE(m);
    if (m->contains("id")) {
      a = *m;
      break;
    }
    if ((*m)["params"]["data"] == "the cancelled call did not stop when interrupted: the sandbox's state was lost") {
      CHECK((*m)["params"]["level"] == "warning");
      logged = true;
    }
  }
  CHECK(logged);
  CHECK(a["id"] == 2);
  CHECK(a["result"]["content"][0]["text"] ==
        "after\n[The sandbox's state was lost when an earlier call was cancelled: variables, imports and files are "
        "gone.]");
  server.request(3, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "print('again')"}}}});
  CHECK(server.answer()["result"]["content"][0]["text"] == "again");
}

TEST_CASE("arguments the tool refuses are refused before a sandbox is created", "[mcp]") {
  FakeBackend backend;
  backend.setup = [](FakeSandbox& s) { s.push_result(success("ok\n")); };
  Server server(backend.options());
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", 5}}}});
  const auto a = server.answer();
  CHECK(a["result"]["isError"] == true);
  CHECK(a["result"]["content"][0]["text"] ==
        "[error: the arguments must be a JSON object with a string \"code\". Nothing was run.]");
  server.request(2, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "1"}, {"timeout", 0}}}});
  CHECK(server.answer()["result"]["content"][0]["text"] ==
        "[error: timeout must be a number of seconds greater than 0 and at most 300. Nothing was run.]");
  CHECK(backend.created == 0);
  server.request(3, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "print('ok')"}}}});
  CHECK(server.answer()["result"]["content"][0]["text"] == "ok");
  CHECK(backend.created == 1);
}

TEST_CASE("a sandbox start the client cancels is logged at info, not as an error", "[mcp][concurrency]") {
  FakeBackend backend;
  auto options = backend.options();
  options.create = [](const ci::SandboxConfig& config) -> std::unique_ptr<ci::CodeInterpreterSandbox> {
    while (!config.cancel.stop_requested()) std::this_thread::sleep_for(5ms);
    throw ci::SandboxStartError("creating the sandbox was cancelled", ci::Stage::kCreate, ci::ErrorKind::kUnknown);
  };
  Server server(options);
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "1"}}}});
  // Cancelled only once the start has begun: a request cancelled while it still waits in the queue is dropped
  // without a start (and without a log message), which a fixed pause cannot rule out on a loaded machine.
  std::vector<json> logs;
  for (;;) {
    auto m = server.next();
    REQUIRE(m);
    REQUIRE_FALSE(m->contains("id"));
    logs.push_back((*m)["params"]);
    if (logs.back()["data"].get<std::string>().rfind("starting the ", 0) == 0) break;
  }
  server.send({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}});
  server.request(2, "ping");
  for (;;) {
    auto m = server.next();
    REQUIRE(m);
    if (m->contains("id")) {
      if ((*m)["id"] == 2) break;
      continue;
    }
    logs.push_back((*m)["params"]);
  }
  // The ping may be answered before the worker has noticed the cancellation: wait for its log message.
  while (logs.empty() || logs.back()["data"] != "the sandbox start was cancelled") {
    auto m = server.next();
    REQUIRE(m);
    logs.push_back((*m)["params"]);
  }
  CHECK(logs.back()["level"] == "info");
  for (const auto& l : logs) CHECK(l["level"] != "error");
}

TEST_CASE("reset_sandbox gives a fresh sandbox, at most max_sandboxes per session", "[mcp]") {
  FakeBackend backend;
  backend.setup = [](FakeSandbox& s) { s.push_result(success("x\n")); };
  auto options = backend.options();
  options.max_sandboxes = 2;
  Server server(options);
  const json call = {{"name", "execute_code"}, {"arguments", {{"code", "print('x')"}}}};
  const json reset = {{"name", "reset_sandbox"}, {"arguments", json::object()}};
  server.request(1, "tools/call", call);
  CHECK(server.answer()["result"]["isError"] == false);
  server.request(2, "tools/call", reset);
  CHECK(server.answer()["result"]["content"][0]["text"] == "[the sandbox was ended: the next call starts a fresh one]");
  server.request(3, "tools/call", call);
  CHECK(server.answer()["result"]["isError"] == false);
  CHECK(backend.created == 2);
  CHECK(backend.terminated(0));
  server.request(4, "tools/call", reset);
  const auto refused = server.answer();
  CHECK(refused["result"]["isError"] == true);
  CHECK(refused["result"]["content"][0]["text"] ==
        "[error: this session has had 2 sandboxes, the most it may have; the current one is kept.]");
}

TEST_CASE("progress is notified while the sandbox starts, when asked for", "[mcp]") {
  FakeBackend backend;
  backend.setup = [](FakeSandbox& s) {
    std::this_thread::sleep_for(300ms);
    s.push_result(success(""));
  };
  Server server(backend.options());
  server.request(1, "tools/call",
                 {{"name", "execute_code"}, {"arguments", {{"code", "1"}}}, {"_meta", {{"progressToken", "p1"}}}});
  bool progress = false;
  for (;;) {
    const auto m = server.next();
    REQUIRE(m);
    if (m->contains("id")) break;
    if ((*m)["method"] == "notifications/progress") {
      CHECK((*m)["params"]["progressToken"] == "p1");
      CHECK((*m)["params"]["message"] == "starting the pyodide sandbox");
      progress = true;
    }
  }
  CHECK(progress);
}

TEST_CASE("logging/setLevel decides which log messages reach the client", "[mcp]") {
  FakeBackend backend;
  backend.setup = [](FakeSandbox& s) { s.push_result(success("")).push_result(success("")); };
  Server server(backend.options());
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "1"}}}});
  std::vector<std::string> logged;
  for (;;) {
    const auto m = server.next();
    REQUIRE(m);
    if (m->contains("id")) break;
    if ((*m)["method"] == "notifications/message") logged.push_back((*m)["params"]["data"]);
  }
  CHECK(logged == std::vector<std::string>{"starting the pyodide sandbox", "the sandbox started"});
  server.request(2, "logging/setLevel", {{"level", "error"}});
  CHECK(server.answer()["result"] == json::object());
  server.request(3, "tools/call", {{"name", "reset_sandbox"}});
  // Nothing at info reaches the client now: the next message is the answer.
  const auto a = server.next();
  REQUIRE(a);
  CHECK((*a)["id"] == 3);
}

TEST_CASE("end of input terminates the session's sandbox, a call in flight included", "[mcp][concurrency]") {
  FakeBackend backend;
  backend.setup = runs_until_cancelled;
  {
    Server server(backend.options());
    server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "while True: pass"}}}});
    std::this_thread::sleep_for(200ms);
    server.close_input();
  }  // joined: serve_mcp returned
  REQUIRE(backend.created == 1);
  CHECK(backend.terminated(0));
}

// A cold Pyodide start takes seconds, more on a loaded machine: its answers get a wide bound (CTest's TIMEOUT is wider).
constexpr std::chrono::milliseconds kPyodideWait = 120s;

TEST_CASE("against real Pyodide: state persists across calls and an exception is a tool error", "[mcp][pyodide]") {
  ci::McpServerOptions options;
  options.sandbox.pyodide.runtime_dir = CI_TEST_RUNTIME_DIR;
  Server server(options);
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "x = 6 * 7"}}}});
  CHECK(server.answer(kPyodideWait)["result"]["isError"] == false);
  server.request(2, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "print(x)"}}}});
  CHECK(server.answer(kPyodideWait)["result"] == json::parse(R"j({"content":[{"type":"text","text":"42"}],"isError":false})j"));
  server.request(3, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "1/0"}}}});
  const auto error = server.answer(kPyodideWait);
  CHECK(error["result"]["isError"] == true);
  const std::string text = error["result"]["content"][0]["text"];
  CHECK(text.find("ZeroDivisionError: division by zero") != std::string::npos);
}

TEST_CASE("against real Pyodide: a timeout is reported and the sandbox answers afterwards", "[mcp][pyodide]") {
  ci::McpServerOptions options;
  options.sandbox.pyodide.runtime_dir = CI_TEST_RUNTIME_DIR;
  Server server(options);
  server.request(1, "tools/call",
                 {{"name", "execute_code"}, {"arguments", {{"code", "import time\nwhile True: time.sleep(0.01)"}, {"timeout", 1}}}});
  const auto timeout = server.answer(kPyodideWait);
  CHECK(timeout["result"]["isError"] == true);
  const std::string text = timeout["result"]["content"][0]["text"];
  CHECK(text.find("[TIMEOUT (execution): the code did not finish in time.") != std::string::npos);
  server.request(2, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "print('alive')"}}}});
  CHECK(server.answer(kPyodideWait)["result"]["content"][0]["text"] == "alive");
}

TEST_CASE("the waiting calls' arguments total at most 4 longest messages, the next is refused as busy", "[mcp][concurrency]") {
  FakeBackend backend;
  backend.setup = runs_until_cancelled;
  auto options = backend.options();
  options.max_message_bytes = 2048;
  Server server(options);
  server.request(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "1"}}}});
  std::this_thread::sleep_for(300ms);
  // {"code":"x...x"}: 1911 bytes each; four wait (7644 bytes), a fifth would make 9555 > 4 * 2048.
  const json big = {{"name", "execute_code"}, {"arguments", {{"code", std::string(1900, 'x')}}}};
  for (int id = 2; id <= 6; ++id) server.request(id, "tools/call", big);
  const auto busy = server.answer();
  CHECK(busy["id"] == 6);
  CHECK(busy["error"]["code"] == -32000);
  CHECK(busy["error"]["message"] == "Server busy: the waiting tool calls' arguments may total at most 8192 bytes");
}

TEST_CASE("at most 16 calls wait behind the running one, the next is refused as busy", "[mcp][concurrency]") {
  FakeBackend backend;
  backend.setup = runs_until_cancelled;
  Server server(backend.options());
  const json call = {{"name", "execute_code"}, {"arguments", {{"code", "1"}}}};
  server.request(1, "tools/call", call);
  std::this_thread::sleep_for(300ms);
  for (int id = 2; id <= 18; ++id) server.request(id, "tools/call", call);
  const auto busy = server.answer();
  CHECK(busy["id"] == 18);
  CHECK(busy["error"]["code"] == -32000);
  CHECK(busy["error"]["message"] == "Server busy: at most 16 tool calls may wait");
}

TEST_CASE("a client that closed its end gets no SIGPIPE into the host program, and the server ends at end of input",
          "[mcp]") {
  // SIGPIPE at its default disposition kills the process: were it raised, this test program would die.
  const auto previous = std::signal(SIGPIPE, SIG_DFL);
  FakeBackend backend;
  int in[2], out[2];
  REQUIRE(::pipe(in) == 0);
  REQUIRE(::pipe(out) == 0);
  ::close(out[0]);  // the client reads nothing, ever
  const std::string requests =
      json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}.dump() + "\n" +
      json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}.dump() + "\n";
  REQUIRE(::write(in[1], requests.data(), requests.size()) == static_cast<ssize_t>(requests.size()));
  ::close(in[1]);
  const auto options = backend.options();
  const int code = ci::serve_mcp(in[0], out[1], options);
  ::close(in[0]);
  ::close(out[1]);
  std::signal(SIGPIPE, previous);
  CHECK(code == 0);
  CHECK(backend.created == 0);
}
