// SandboxTool (code_interpreter/tool.hpp): the schema and description it offers, the arguments it refuses, the
// rendering of results, with FakeSandbox.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "code_interpreter/code_interpreter.hpp"
#include "code_interpreter/testing/fake_sandbox.hpp"
#include "results.hpp"

namespace ci = code_interpreter;
using ci::testing::FakeSandbox;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

using ci::test_support::success;

ci::SandboxToolOptions full_options() {
  ci::SandboxToolOptions o;
  o.execution_timeout = 30s;
  o.max_timeout = 120s;
  o.file_arguments = true;
  return o;
}

}  // namespace

TEST_CASE("the schema offers code, a capped timeout and file names, and nothing else", "[mcp]") {
  FakeSandbox sandbox;
  const ci::SandboxTool tool(sandbox, full_options());
  CHECK(tool.name() == "execute_code");
  CHECK(json::parse(tool.parameters()) ==
        json::parse(R"j({"type":"object","additionalProperties":false,"required":["code"],"properties":{
          "code":{"type":"string","description":"The Python code to run."},
          "timeout":{"type":"number","exclusiveMinimum":0,"maximum":120,
                     "description":"The most this call may run, in seconds."},
          "files":{"type":"array","maxItems":64,"items":{"type":"string"},
                   "description":"Names of files already in /files/ that the code uses."}}})j"));
}

TEST_CASE("the description says the limits and the file argument, written from the capabilities", "[mcp]") {
  FakeSandbox sandbox;
  auto options = full_options();
  options.description_note = "One sandbox serves this session.";
  CHECK(ci::SandboxTool(sandbox, options).description() ==
        "Runs Python code in a sandbox and returns what it printed (stdout, then stderr), the error with its traceback "
        "if it failed, and the value of the last expression. The sandbox keeps its state between calls: variables, "
        "imports and files persist from one call to the next. Name files the code needs from /files/ in `files` "
        "(plain names, no paths) to have them checked before it runs; the code reads them as /files/name. To return "
        "a file to the user, write it under /files/ and link it in the final answer as [name](sandbox:/files/name). "
        "The code cannot reach the network, so nothing can be downloaded or installed. Each call may run for at most "
        "30 seconds unless `timeout` sets another limit, up to 120 seconds. One sandbox serves this session.");
}

TEST_CASE("describe without a sandbox gives what the tool over that sandbox gives", "[mcp]") {
  FakeSandbox sandbox(FakeSandbox::pyodide_like_capabilities(), ci::Language::kPython, {"numpy"});
  const auto options = full_options();
  CHECK(ci::SandboxTool::describe(ci::profile_of(sandbox), options) == ci::SandboxTool(sandbox, options).definition());
  CHECK(ci::SandboxTool::describe({FakeSandbox::pyodide_like_capabilities(), ci::Language::kPython, {"numpy"}},
                                  options) == ci::SandboxTool(sandbox, options).definition());
}

TEST_CASE("Pyodide's declared capabilities are those a Pyodide sandbox reports", "[mcp]") {
  const auto caps = ci::declared_capabilities(ci::SandboxConfig{});
  CHECK(caps.stateful);
  CHECK_FALSE(caps.network);
  CHECK(caps.upload_dir == "/files");
  CHECK(caps.languages == std::vector<ci::Language>{ci::Language::kPython});
  ci::SandboxConfig e2b;
  e2b.backend = "e2b";
  e2b.network_policy = ci::NetworkPolicy::none();
  CHECK_FALSE(ci::declared_capabilities(e2b).network);
  CHECK(ci::declared_capabilities(e2b).shell_commands);
}

TEST_CASE("bad tool options are refused", "[mcp]") {
  FakeSandbox sandbox;
  ci::SandboxToolOptions bad_name;
  bad_name.name = "run code";
  CHECK_THROWS_AS(ci::SandboxTool(sandbox, bad_name), std::invalid_argument);
  ci::SandboxToolOptions small;
  small.max_result_bytes = 100;
  CHECK_THROWS_AS(ci::SandboxTool(sandbox, small), std::invalid_argument);
  ci::SandboxToolOptions zero;
  zero.max_timeout = 0s;
  CHECK_THROWS_AS(ci::SandboxTool(sandbox, zero), std::invalid_argument);
}

TEST_CASE("a call runs the code and renders its output", "[mcp]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("42\n"));
  const auto result = ci::SandboxTool(sandbox, full_options()).call(R"j({"code":"print(6*7)"})j");
  CHECK(result.text == "42");  // text() drops the last newline
  CHECK_FALSE(result.is_error);
  CHECK(result.code == "print(6*7)");
  REQUIRE(result.execution);
  CHECK(result.execution->status == ci::ExecutionStatus::kSuccess);
  REQUIRE(sandbox.execute_calls().size() == 1);
  CHECK(sandbox.execute_calls()[0].timeout == ci::Timeout(30s));
}

TEST_CASE("malformed arguments are a tool error and nothing runs", "[mcp]") {
  FakeSandbox sandbox;
  const ci::SandboxTool tool(sandbox, full_options());
  const std::string shape = "[error: the arguments must be a JSON object with a string \"code\". Nothing was run.]";
  for (const char* args : {"not json", "[]", "{}", R"j({"code":5})j", "{\"code\":\"x\"", R"j({"code":null})j"}) {
    const auto r = tool.call(args);
    CHECK(r.text == shape);
    CHECK(r.is_error);
    CHECK_FALSE(r.execution);
  }
  CHECK(sandbox.execute_calls().empty());
}

TEST_CASE("an unknown argument is named and refused", "[mcp]") {
  FakeSandbox sandbox;
  const auto r = ci::SandboxTool(sandbox, full_options()).call(R"j({"code":"1","shell":"rm -rf /"})j");
  CHECK(r.text == "[error: unknown argument 'shell'; the arguments are code, timeout, files. Nothing was run.]");
  CHECK(r.is_error);
  // Without max_timeout the timeout argument is not offered, so it is unknown.
  const auto plain = ci::SandboxTool(sandbox).call(R"j({"code":"1","timeout":5})j");
  CHECK(plain.text == "[error: unknown argument 'timeout'; the arguments are code. Nothing was run.]");
  CHECK(sandbox.execute_calls().empty());
}

TEST_CASE("oversize arguments and code are refused, counted in bytes", "[mcp]") {
  FakeSandbox sandbox;
  auto options = full_options();
  options.max_arguments_bytes = 100;
  options.max_code_bytes = 10;
  const ci::SandboxTool tool(sandbox, options);
  const std::string big = R"j({"code":")j" + std::string(100, 'a') + "\"}";
  CHECK(tool.call(big).text == "[error: the arguments are 111 bytes, more than the 100 this tool takes. Nothing was run.]");
  CHECK(tool.call(R"j({"code":"print(123456)"})j").text ==
        "[error: the code is 13 bytes, more than the 10 this tool takes. Nothing was run.]");
  CHECK(sandbox.execute_calls().empty());
}

TEST_CASE("the timeout argument is the call's budget, within the host's maximum", "[mcp]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("")).push_result(success(""));
  const ci::SandboxTool tool(sandbox, full_options());
  CHECK_FALSE(tool.call(R"j({"code":"1","timeout":2.5})j").is_error);
  CHECK_FALSE(tool.call(R"j({"code":"1","timeout":120})j").is_error);
  const std::string range = "[error: timeout must be a number of seconds greater than 0 and at most 120. Nothing was run.]";
  CHECK(tool.call(R"j({"code":"1","timeout":121})j").text == range);
  CHECK(tool.call(R"j({"code":"1","timeout":0})j").text == range);
  CHECK(tool.call(R"j({"code":"1","timeout":-1})j").text == range);
  CHECK(tool.call(R"j({"code":"1","timeout":"5"})j").text == range);
  const auto calls = sandbox.execute_calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].timeout == ci::Timeout(2500ms));
  CHECK(calls[1].timeout == ci::Timeout(120s));
}

TEST_CASE("the host's remaining budget bounds the call", "[mcp]") {
  FakeSandbox sandbox;
  sandbox.push_result(success(""));
  ci::ToolCallOptions call;
  call.max_budget = 1500ms;
  (void)ci::SandboxTool(sandbox, full_options()).call(R"j({"code":"1","timeout":60})j", call);
  REQUIRE(sandbox.execute_calls().size() == 1);
  CHECK(sandbox.execute_calls()[0].timeout == ci::Timeout(1500ms));
}

TEST_CASE("file names that are paths or escape the upload directory are refused", "[mcp]") {
  FakeSandbox sandbox;
  sandbox.put_file("/files/data.csv", "a\n");
  const ci::SandboxTool tool(sandbox, full_options());
  CHECK(tool.call(R"j({"code":"1","files":["../etc/passwd"]})j").text ==
        "[error: '../etc/passwd' in files is not a plain file name in the upload directory. Nothing was run.]");
  CHECK(tool.call(R"j({"code":"1","files":["/etc/passwd"]})j").text ==
        "[error: '/etc/passwd' in files is not a plain file name in the upload directory. Nothing was run.]");
  CHECK(tool.call(R"j({"code":"1","files":[".."]})j").is_error);
  CHECK(tool.call(R"j({"code":"1","files":["a\\b"]})j").is_error);
  CHECK(tool.call(R"j({"code":"1","files":[""]})j").is_error);
  CHECK(tool.call(R"j({"code":"1","files":"data.csv"})j").text ==
        "[error: files must be an array of file names. Nothing was run.]");
  CHECK(tool.call(R"j({"code":"1","files":["data.csv","data.csv"]})j").text ==
        "[error: 'data.csv' is named twice in files. Nothing was run.]");
  CHECK(tool.call(R"j({"code":"1","files":["missing.csv"]})j").text ==
        "[error: there is no file 'missing.csv' in /files/. Nothing was run.]");
  CHECK(sandbox.execute_calls().empty());
}

TEST_CASE("a file already in the upload directory is accepted", "[mcp]") {
  FakeSandbox sandbox;
  sandbox.put_file("/files/data.csv", "a\n");
  sandbox.push_result(success("ok\n"));
  const auto r = ci::SandboxTool(sandbox, full_options()).call(R"j({"code":"1","files":["data.csv"]})j");
  CHECK(r.text == "ok");
  CHECK(sandbox.execute_calls().size() == 1);
}

TEST_CASE("an error, a timeout and an image are rendered as the loop renders them", "[mcp]") {
  FakeSandbox sandbox;
  ci::ExecutionResult error;
  error.status = ci::ExecutionStatus::kError;
  error.error = "ZeroDivisionError: division by zero";
  error.exit_code = 1;
  ci::ExecutionResult timeout;
  timeout.status = ci::ExecutionStatus::kTimeout;
  timeout.timeout_kind = ci::TimeoutKind::kExecution;
  ci::ExecutionResult image = success("");
  image.results.push_back({{{"image/png", "iVBORw0KGgo="}, {"text/plain", "<Figure>"}}, false});
  sandbox.push_result(error).push_result(timeout).push_result(image);
  const ci::SandboxTool tool(sandbox, full_options());

  const auto e = tool.call(R"j({"code":"1/0"})j");
  CHECK(e.text == "ZeroDivisionError: division by zero");
  CHECK(e.is_error);
  const auto t = tool.call(R"j({"code":"while True: pass"})j");
  CHECK(t.text == "[TIMEOUT (execution): the code did not finish in time. It was not run again; it may have partly run.]");
  CHECK(t.is_error);
  const auto i = tool.call(R"j({"code":"plot()"})j");
  CHECK_FALSE(i.is_error);
  CHECK(i.images == std::vector<ci::ChatImage>{{"image/png", "iVBORw0KGgo="}});
}

TEST_CASE("long output is bounded to max_result_bytes", "[mcp]") {
  FakeSandbox sandbox;
  sandbox.push_result(success(std::string(5000, 'x')));
  auto options = full_options();
  options.max_result_bytes = 1024;
  const auto r = ci::SandboxTool(sandbox, options).call(R"j({"code":"1"})j");
  CHECK(r.text.size() <= 1024);
  CHECK(r.text.find("bytes cut from the middle of 5000") != std::string::npos);
}

TEST_CASE("a sandbox that throws is a tool error carrying the exception, never a throw", "[mcp]") {
  FakeSandbox sandbox;
  sandbox.terminate();
  const auto r = ci::SandboxTool(sandbox, full_options()).call(R"j({"code":"1"})j");
  CHECK(r.is_error);
  CHECK(r.text == "[error: the sandbox failed: Sandbox is not initialized]");
  CHECK(r.error != nullptr);
  CHECK_FALSE(r.execution);
}

TEST_CASE("docs/agents.md's C++ example is examples/sandbox_tool.cpp, which the build compiles", "[mcp]") {
  const auto read = [](const std::string& path) {
    std::ifstream in(std::string(CI_SOURCE_DIR) + "/" + path, std::ios::binary);
    REQUIRE(in);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  };
  const std::string example = read("examples/sandbox_tool.cpp");
  const std::string marker = "// [snippet]\n";
  const auto first = example.find(marker);
  REQUIRE(first != std::string::npos);
  const auto begin = first + marker.size();
  const auto end = example.find(marker, begin);
  REQUIRE(end != std::string::npos);
  const std::string snippet = example.substr(begin, end - begin);
  CHECK(snippet.find("tool.call(R\"j({\"code\": \"print(6 * 7)\"})j\")") != std::string::npos);
  const std::string doc = read("docs/agents.md");
  CHECK(doc.find("```cpp\n" + snippet + "```\n") != std::string::npos);
}

TEST_CASE("the description states the time limit as set: none, sub-second, one second, the default", "[mcp]") {
  const ci::SandboxProfile profile{FakeSandbox::pyodide_like_capabilities(), ci::Language::kPython, {}};
  const auto limit_of = [&](ci::SandboxToolOptions o) {
    const std::string text = ci::SandboxTool::describe(profile, o).description;
    const auto at = text.find("installed.");
    REQUIRE(at != std::string::npos);
    return text.substr(at + 10);
  };
  ci::SandboxToolOptions o;
  CHECK(limit_of(o) == " Each call may run for at most 300 seconds.");
  o.execution_timeout = 0ms;
  CHECK(limit_of(o) == " Calls have no time limit.");
  o.execution_timeout = -5ms;
  CHECK(limit_of(o) == " Calls have no time limit.");
  o.max_timeout = 1s;
  o.execution_timeout = 0ms;
  CHECK(limit_of(o) == " Calls have no time limit unless `timeout` sets one, up to 1 second.");
  o.execution_timeout = 1ms;
  CHECK(limit_of(o) == " Each call may run for at most 0.001 seconds unless `timeout` sets another limit, up to 1 second.");
  o.max_timeout.reset();
  o.execution_timeout = 1500ms;
  CHECK(limit_of(o) == " Each call may run for at most 1.5 seconds.");
  o.execution_timeout = 1000ms;
  CHECK(limit_of(o) == " Each call may run for at most 1 second.");
}

TEST_CASE("an execution_timeout above max_timeout is refused, as the two would contradict", "[mcp]") {
  FakeSandbox sandbox(FakeSandbox::pyodide_like_capabilities(), ci::Language::kPython, {});
  ci::SandboxToolOptions o;
  o.execution_timeout = 60s;
  o.max_timeout = 10s;
  CHECK_THROWS_WITH(ci::SandboxTool(sandbox, o), "SandboxToolOptions::execution_timeout must not exceed max_timeout");
  o.execution_timeout = 10s;
  CHECK_NOTHROW(ci::SandboxTool(sandbox, o));
}
