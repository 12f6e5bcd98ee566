// The loop's own rules, with a scripted sandbox and a scripted model: what the model is offered and told, what
// runs, what goes back, when the loop stops, and which files come out.
#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "code_interpreter/interpreter.hpp"
#include "code_interpreter/logging.hpp"
#include "code_interpreter/testing/fake_sandbox.hpp"
#include "results.hpp"

namespace ci = code_interpreter;
using ci::testing::FakeLMInvoker;
using ci::testing::FakeSandbox;
using namespace std::chrono_literals;

namespace {

using ci::test_support::success;

ci::ChatMessage tool_message(std::string content, std::string id, bool is_error = false) {
  return ci::ChatMessage{ci::ChatRole::kTool, std::move(content), {}, std::move(id), is_error};
}

}  // namespace

TEST_CASE("the model's code runs and its final answer is returned", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("42\n"));
  FakeLMInvoker lm;
  lm.push_code("print(6 * 7)", "", {100, 20}).push_answer("The answer is 42.", {150, 8});

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("What is 6 * 7?");

  CHECK(result.stop_reason == ci::StopReason::kAnswered);
  CHECK(result.text == "The answer is 42.");
  CHECK(result.turns == 2);
  CHECK(result.usage == ci::LMUsage{250, 28});
  REQUIRE(result.code_exec_results.size() == 1);
  CHECK(result.code_exec_results[0].code == "print(6 * 7)");
  CHECK(result.code_exec_results[0].result.stdout_text == "42\n");
  CHECK(result.code_exec_results[0].output.empty());
  CHECK(result.missing_files.empty());
  CHECK(result.refused_links.empty());
  REQUIRE(sandbox.execute_calls().size() == 1);
  CHECK(sandbox.execute_calls()[0].code == "print(6 * 7)");
  // The second model call sees the request, its own tool call, and the output as the tool's answer.
  const auto calls = lm.calls();
  REQUIRE(calls.size() == 2);
  REQUIRE(calls[1].messages.size() == 4);
  CHECK(calls[1].messages[1] == ci::ChatMessage{ci::ChatRole::kUser, "What is 6 * 7?", {}, {}, false});
  CHECK(calls[1].messages[2].tool_calls ==
        std::vector<ci::ToolCall>{{"call_1", "execute_code", R"j({"code":"print(6 * 7)"})j"}});
  CHECK(calls[1].messages[3] == tool_message("42", "call_1"));
  CHECK(result.messages.size() == 5);
}

TEST_CASE("the one tool is execute_code, described from a stateful sandbox's capabilities", "[interpreter]") {
  FakeSandbox sandbox;
  FakeLMInvoker lm;
  lm.push_answer("nothing to do");
  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute(
      "hi", {ci::Attachment::from_bytes("a,b\n", "data.csv"), ci::Attachment::from_bytes("x", "notes.txt")});

  const auto tools = lm.calls().at(0).tools;
  REQUIRE(tools.size() == 1);
  CHECK(tools[0].name == "execute_code");
  CHECK(tools[0].description ==
        "Runs Python code in a sandbox and returns what it printed (stdout, then stderr), the error with its "
        "traceback if it failed, and the value of the last expression. The sandbox keeps its state between calls: "
        "variables, imports and files persist from one call to the next. The user's files are in /files/: "
        "/files/data.csv, /files/notes.txt. To return a file to the user, write it under /files/ and link it in the "
        "final answer as [name](sandbox:/files/name). The code cannot reach the network, so nothing can be "
        "downloaded or installed. Each call may run for at most 300 seconds.");
  CHECK(tools[0].parameters ==
        R"j({"properties":{"code":{"description":"The Python code to run.","type":"string"}},"required":["code"],"type":"object"})j");
  const auto system = lm.calls().at(0).messages.at(0);
  CHECK(system.role == ci::ChatRole::kSystem);
  CHECK(system.content ==
        "You answer the user's request. You can run Python code with the execute_code tool: use it for any "
        "computation and to read or write files rather than guessing. When you are done, answer in plain text "
        "without calling a tool. The user's files are in /files/. To hand over a file, write it under /files/ and "
        "link it in your final answer as [name](sandbox:/files/name); only files linked that way reach the user.");
  // No code ran, so the files were never needed.
  CHECK(sandbox.execute_calls().empty());
}

TEST_CASE("a stateless sandbox without downloads or expression results is never promised them", "[interpreter]") {
  ci::Capabilities caps;
  caps.network = true;
  caps.languages = {ci::Language::kBash};
  caps.upload_dir = "files";
  FakeSandbox sandbox(caps, ci::Language::kBash, {"jq"});
  FakeLMInvoker lm;
  ci::InterpreterOptions options;
  options.execution_timeout = 30s;
  options.instructions = "Answer in French.";
  const ci::SandboxCodeInterpreter interpreter(sandbox, lm, options);

  CHECK(interpreter.tool_definition().description ==
        "Runs Bash code in a sandbox and returns what it printed (stdout, then stderr), the error with its traceback "
        "if it failed. The value of the last expression is not returned: print what you need. Each call starts from "
        "a fresh interpreter: nothing "
        "persists between calls, so every call must be complete on its own. Files cannot be returned from this "
        "sandbox: put the results in the answer text. The code can reach the network. Installed packages besides "
        "the standard library: jq. Each call may run for at most 30 seconds.");
}

TEST_CASE("input files go with the first execution only", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("")).push_result(success(""));
  FakeLMInvoker lm;
  lm.push_code("a = 1").push_code("print(a)").push_answer("done");
  const auto file = ci::Attachment::from_bytes("x,y\n1,2\n", "data.csv");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go", {file});

  REQUIRE(result.code_exec_results.size() == 2);
  const auto calls = sandbox.execute_calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].files == std::vector<ci::Attachment>{file});
  CHECK(calls[0].upload_dir == std::nullopt);  // the backend's own upload_dir
  CHECK(calls[1].files.empty());
  CHECK(sandbox.file("/files/data.csv") == "x,y\n1,2\n");
}

TEST_CASE("without input files, the upload directory is created before the first execution", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("")).push_result(success(""));
  FakeLMInvoker lm;
  lm.push_code("a = 1").push_code("b = 2").push_answer("done");

  (void)ci::SandboxCodeInterpreter(sandbox, lm).execute("go");

  CHECK(sandbox.made_dirs() == std::vector<std::string>{"/files"});
  CHECK(sandbox.execute_calls().size() == 2);
}

TEST_CASE("input files go again after an execution that lost the sandbox's state", "[interpreter]") {
  FakeSandbox sandbox;
  ci::ExecutionResult killed;
  killed.status = ci::ExecutionStatus::kTimeout;
  killed.timeout_kind = ci::TimeoutKind::kExecution;
  killed.state_lost = true;
  sandbox.push_result(killed).push_result(success("ok\n"));
  FakeLMInvoker lm;
  lm.push_code("import time; time.sleep(999)").push_code("print('ok')").push_answer("done");
  const auto file = ci::Attachment::from_bytes("1", "in.txt");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go", {file});

  const auto calls = sandbox.execute_calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].files.size() == 1);
  CHECK(calls[1].files == std::vector<ci::Attachment>{file});
  CHECK(lm.calls().at(1).messages.back() ==
        tool_message("[TIMEOUT (execution): the code did not finish in time. It was not run again; it may have partly "
                     "run.]\n[The sandbox's state was lost: variables, imports and files are gone.]",
                     "call_1", true));
}

TEST_CASE("a timed-out execution is reported as TIMEOUT with its output and never run again", "[interpreter]") {
  FakeSandbox sandbox;
  ci::ExecutionResult timeout;
  timeout.status = ci::ExecutionStatus::kTimeout;
  timeout.timeout_kind = ci::TimeoutKind::kExecution;
  timeout.stdout_text = "step 1\nstep 2\n";
  timeout.error = "execution timed out after 300000 ms";
  sandbox.push_result(timeout);
  FakeLMInvoker lm;
  lm.push_code("slow()").push_answer("It took too long.");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("run it");

  CHECK(sandbox.execute_calls().size() == 1);
  CHECK(result.text == "It took too long.");
  CHECK(result.code_exec_results.at(0).result.status == ci::ExecutionStatus::kTimeout);
  CHECK(lm.calls().at(1).messages.back() ==
        tool_message("step 1\nstep 2\nexecution timed out after 300000 ms\n[TIMEOUT (execution): the code did not "
                     "finish in time. It was not run again; it may have partly run.]",
                     "call_1", true));
}

TEST_CASE("an UNKNOWN execution is reported as UNKNOWN and never run again", "[interpreter]") {
  FakeSandbox sandbox;
  ci::ExecutionResult unknown;
  unknown.status = ci::ExecutionStatus::kUnknown;
  unknown.failure = ci::FailureDetail{"curl.RECV_ERROR", false};
  unknown.error = "the connection broke";
  sandbox.push_result(unknown);
  FakeLMInvoker lm;
  lm.push_code("write_to_db()").push_answer("I cannot tell whether it ran.");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("run it");

  CHECK(sandbox.execute_calls().size() == 1);
  CHECK(result.turns == 2);
  CHECK(lm.calls().at(1).messages.back() ==
        tool_message("the connection broke\n[UNKNOWN (curl.RECV_ERROR): the outcome cannot be known; the code may or "
                     "may not have run. It was not run again.]",
                     "call_1", true));
}

TEST_CASE("a code error goes back to the model as the traceback, flagged as an error", "[interpreter]") {
  FakeSandbox sandbox;
  ci::ExecutionResult failed;
  failed.status = ci::ExecutionStatus::kError;
  failed.exit_code = 1;
  failed.error = "Traceback (most recent call last):\nNameError: name 'x' is not defined\n";
  failed.code_error = ci::CodeError{"NameError", "name 'x' is not defined", failed.error};
  sandbox.push_result(failed).push_result(success("1\n"));
  FakeLMInvoker lm;
  lm.push_code("print(x)").push_code("x = 1\nprint(x)").push_answer("x is 1");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("print x");

  CHECK(result.turns == 3);
  REQUIRE(result.code_exec_results.size() == 2);
  CHECK(lm.calls().at(1).messages.back() ==
        tool_message("Traceback (most recent call last):\nNameError: name 'x' is not defined", "call_1", true));
  CHECK(lm.calls().at(2).messages.back() == tool_message("1", "call_2"));
}

TEST_CASE("a long tool result keeps its head and tail around a note of what was cut", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success(std::string(20000, 'h') + std::string(20000, 't')));
  FakeLMInvoker lm;
  lm.push_code("print(big)").push_answer("done");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");

  const std::string sent = lm.calls().at(1).messages.back().content;
  CHECK(sent == std::string(8140, 'h') +
                    "\n[... 23720 bytes cut from the middle of 40000; the first 8140 and the last 8140 bytes are "
                    "shown ...]\n" +
                    std::string(8140, 't'));
  CHECK(sent.size() <= 16 * 1024);
  // The result itself keeps everything.
  CHECK(result.code_exec_results.at(0).result.stdout_text.size() == 40000);
}

TEST_CASE("max_tool_result_bytes sets the bound", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success(std::string(3000, 'x')));
  FakeLMInvoker lm;
  lm.push_code("print(big)").push_answer("done");
  ci::InterpreterOptions options;
  options.max_tool_result_bytes = 1024;

  (void)ci::SandboxCodeInterpreter(sandbox, lm, options).execute("go");

  CHECK(lm.calls().at(1).messages.back().content ==
        std::string(462, 'x') +
            "\n[... 2076 bytes cut from the middle of 3000; the first 462 and the last 462 bytes are shown ...]\n" +
            std::string(462, 'x'));
}

TEST_CASE("max_turns stops the loop with a clear result, keeping what was done", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("1\n")).push_result(success("2\n"));
  FakeLMInvoker lm;
  lm.push_code("print(1)").push_code("print(2)").push_code("print(3)").push_answer("never asked");
  ci::InterpreterOptions options;
  options.max_turns = 3;

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm, options).execute("count");

  CHECK(result.stop_reason == ci::StopReason::kMaxTurns);
  CHECK(result.text == "[stopped: no final answer after 3 model calls (max_turns)]");
  CHECK(result.turns == 3);
  CHECK(lm.calls().size() == 3);
  REQUIRE(result.code_exec_results.size() == 2);
  CHECK(result.code_exec_results[0].code == "print(1)");
  CHECK(result.code_exec_results[1].code == "print(2)");
  // The last turn's code is not run: its result could never reach the model.
  CHECK(sandbox.execute_calls().size() == 2);
}

TEST_CASE("the default max_turns is 10", "[interpreter]") {
  FakeSandbox sandbox;
  FakeLMInvoker lm;
  for (int i = 0; i < 11; ++i) {
    sandbox.push_result(success(""));
    lm.push_code("pass");
  }
  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("loop");
  CHECK(result.stop_reason == ci::StopReason::kMaxTurns);
  CHECK(result.turns == 10);
  CHECK(result.code_exec_results.size() == 9);
}

TEST_CASE("several tool calls in one turn run in order and are each answered", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("a\n")).push_result(success("b\n"));
  FakeLMInvoker lm;
  ci::LMResponse both;
  both.tool_calls = {{"c1", "execute_code", R"j({"code":"print('a')"})j"},
                     {"c2", "execute_code", R"j({"code":"print('b')"})j"}};
  lm.push_response(both).push_answer("a then b");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");

  CHECK(result.turns == 2);
  REQUIRE(result.code_exec_results.size() == 2);
  const auto messages = lm.calls().at(1).messages;
  REQUIRE(messages.size() == 5);
  CHECK(messages[3] == tool_message("a", "c1"));
  CHECK(messages[4] == tool_message("b", "c2"));
}

TEST_CASE("an unknown tool or malformed arguments are answered with an error and nothing runs", "[interpreter]") {
  FakeSandbox sandbox;
  FakeLMInvoker lm;
  ci::LMResponse bad;
  bad.tool_calls = {{"c1", "rm_rf", R"j({"code":"x"})j"},
                    {"c2", "execute_code", R"j({"code": 5})j"},
                    {"c3", "execute_code", "not json"}};
  lm.push_response(bad).push_answer("sorry");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");

  CHECK(sandbox.execute_calls().empty());
  CHECK(result.code_exec_results.empty());
  const auto messages = lm.calls().at(1).messages;
  REQUIRE(messages.size() == 6);
  CHECK(messages[3] == tool_message("[error: there is no tool 'rm_rf'; the only tool is execute_code. Nothing was run.]",
                                    "c1", true));
  const std::string bad_arguments =
      "[error: the arguments must be a JSON object with a string \"code\". Nothing was run.]";
  CHECK(messages[4] == tool_message(bad_arguments, "c2", true));
  CHECK(messages[5] == tool_message(bad_arguments, "c3", true));
}

TEST_CASE("a linked file is downloaded and returned with the last execution", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("3.5\n"));  // the first execution writes nothing
  sandbox.push_result(success("written\n"), {{"/files/out/summary.csv", std::string("mean\n3.5\n\0\xff", 11)}});
  FakeLMInvoker lm;
  lm.push_code("compute()").push_code("write()").push_answer(
      "Mean 3.5. See [the summary](sandbox:/files/out/summary.csv) and again [it](sandbox:/files/out/summary.csv).");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("summarize");

  REQUIRE(result.code_exec_results.size() == 2);
  CHECK(result.code_exec_results[0].output.empty());
  REQUIRE(result.code_exec_results[1].output.size() == 1);
  const auto& file = result.code_exec_results[1].output[0];
  CHECK(file.filename == "summary.csv");
  CHECK(file.data == std::string("mean\n3.5\n\0\xff", 11));
  CHECK(file.mime_type == "text/csv");
  CHECK(result.missing_files.empty());
  CHECK(sandbox.downloads() == std::vector<std::string>{"/files/out/summary.csv"});
}

TEST_CASE("a link to a file that does not exist goes to missing_files", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success(""), {{"/files/real.csv", "1"}});
  FakeLMInvoker lm;
  lm.push_code("write()").push_answer("[real](sandbox:/files/real.csv) [ghost](sandbox:/files/ghost.csv)");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");

  CHECK(result.missing_files == std::vector<std::string>{"/files/ghost.csv"});
  REQUIRE(result.code_exec_results.at(0).output.size() == 1);
  CHECK(result.code_exec_results[0].output[0].filename == "real.csv");
}

TEST_CASE("links outside the upload directory are refused and listed, never fetched", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.put_file("/etc/passwd", "root:x:0:0");
  sandbox.put_file("/files/ok.txt", "fine");
  sandbox.push_result(success(""));
  FakeLMInvoker lm;
  lm.push_code("pass").push_answer(
      "[a](sandbox:/files/../../etc/passwd) [b](sandbox:/etc/passwd) [c](sandbox:/files/%2E%2E/%2E%2E/etc/passwd) "
      "[d](sandbox:/files/./ok.txt) [e](sandbox:/files//ok.txt) [f](sandbox:/filesystem/x) [g](sandbox:files/ok.txt) "
      "[h](sandbox:/files/a%5C..%5Cx) [i](sandbox:/files/) [ok](sandbox:/files/ok.txt)");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");

  CHECK(result.refused_links == std::vector<std::string>{"/files/../../etc/passwd", "/etc/passwd",
                                                         "/files/%2E%2E/%2E%2E/etc/passwd", "/files/./ok.txt",
                                                         "/files//ok.txt", "/filesystem/x", "files/ok.txt",
                                                         "/files/a%5C..%5Cx", "/files/"});
  CHECK(result.missing_files.empty());
  CHECK(sandbox.downloads() == std::vector<std::string>{"/files/ok.txt"});
  REQUIRE(result.code_exec_results.at(0).output.size() == 1);
  CHECK(result.code_exec_results[0].output[0].data == "fine");
}

TEST_CASE("a linked file over max_file_bytes is not fetched and goes to missing_files", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success(""), {{"/files/big.bin", std::string(2048, 'b')}, {"/files/small.bin", "s"}});
  FakeLMInvoker lm;
  lm.push_code("write()").push_answer("[big](sandbox:/files/big.bin) [small](sandbox:/files/small.bin)");
  ci::InterpreterOptions options;
  options.max_file_bytes = 1024;

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm, options).execute("go");

  CHECK(result.missing_files == std::vector<std::string>{"/files/big.bin"});
  CHECK(sandbox.downloads() == std::vector<std::string>{"/files/small.bin"});
  REQUIRE(result.code_exec_results.at(0).output.size() == 1);
  CHECK(result.code_exec_results[0].output[0].filename == "small.bin");
}

TEST_CASE("links in an answer given without any execution go to missing_files", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.put_file("/files/data.csv", "1");
  FakeLMInvoker lm;
  lm.push_answer("Here: [data](sandbox:/files/data.csv)");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");

  CHECK(result.code_exec_results.empty());
  CHECK(result.missing_files == std::vector<std::string>{"/files/data.csv"});
}

TEST_CASE("a failed model call mid-loop is returned with the error and the work done so far", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("1\n"));
  FakeLMInvoker lm;
  lm.push_code("print(1)", "", {10, 5})
      .push_error(std::make_exception_ptr(ci::LMInvocationError("openai chat completions: HTTP 503", ci::Stage::kExecute,
                                                                ci::ErrorKind::kUnavailable)));

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");

  CHECK(result.stop_reason == ci::StopReason::kLMError);
  CHECK(result.text == "[stopped: the language model call failed: openai chat completions: HTTP 503]");
  CHECK(result.turns == 1);
  CHECK(result.usage == ci::LMUsage{10, 5});
  REQUIRE(result.code_exec_results.size() == 1);
  CHECK(result.code_exec_results[0].result.stdout_text == "1\n");
  REQUIRE(result.error);
  try {
    std::rethrow_exception(result.error);
  } catch (const ci::LMInvocationError& e) {
    CHECK(e.kind() == ci::ErrorKind::kUnavailable);
    CHECK(e.stage() == ci::Stage::kExecute);
  }
}

TEST_CASE("cancelling during an execution cancels it and stops the loop", "[interpreter][concurrency]") {
  std::stop_source user;
  FakeSandbox sandbox;
  bool execution_saw_cancel = false;
  sandbox.push_handler([&](std::string_view, const ci::ExecuteOptions& options) {
    user.request_stop();  // the person cancels while the code runs
    execution_saw_cancel = options.cancel.stop_requested();
    ci::ExecutionResult r;
    r.status = ci::ExecutionStatus::kUnknown;
    r.failure = ci::FailureDetail{"cancelled", false};
    return r;
  });
  FakeLMInvoker lm;
  lm.push_code("work()").push_answer("never asked");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go", {}, user.get_token());

  CHECK(execution_saw_cancel);
  CHECK(result.stop_reason == ci::StopReason::kCancelled);
  CHECK(result.text == "[stopped: cancelled]");
  CHECK(lm.calls().size() == 1);
  REQUIRE(result.code_exec_results.size() == 1);
  CHECK(result.code_exec_results[0].result.status == ci::ExecutionStatus::kUnknown);
}

TEST_CASE("cancelling during a model call stops the loop as cancelled, not as a model failure",
          "[interpreter][concurrency]") {
  std::stop_source user;
  FakeSandbox sandbox;
  FakeLMInvoker lm;
  lm.push_handler([&](auto, auto, std::stop_token cancel) -> ci::LMResponse {
    user.request_stop();
    REQUIRE(cancel.stop_requested());
    throw ci::LMInvocationError("cancelled", ci::Stage::kExecute, ci::ErrorKind::kUnknown);
  });

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go", {}, user.get_token());

  CHECK(result.stop_reason == ci::StopReason::kCancelled);
  CHECK(result.error == nullptr);
  CHECK(result.turns == 0);
}

TEST_CASE("one timeout covers the whole loop, executions included", "[interpreter][concurrency]") {
  FakeSandbox sandbox;
  ci::Timeout budget_given;
  sandbox.push_handler([&](std::string_view, const ci::ExecuteOptions& options) {
    budget_given = options.timeout;
    // Runs until the loop's stop reaches it.
    for (int i = 0; i < 500 && !options.cancel.stop_requested(); ++i) std::this_thread::sleep_for(10ms);
    ci::ExecutionResult r;
    r.status = ci::ExecutionStatus::kUnknown;
    r.failure = ci::FailureDetail{"cancelled", false};
    return r;
  });
  FakeLMInvoker lm;
  lm.push_code("work()").push_answer("never asked");
  ci::InterpreterOptions options;
  options.timeout = 300ms;

  const auto start = std::chrono::steady_clock::now();
  const auto result = ci::SandboxCodeInterpreter(sandbox, lm, options).execute("go");
  const auto elapsed = std::chrono::steady_clock::now() - start;

  CHECK(result.stop_reason == ci::StopReason::kTimeout);
  CHECK(result.text == "[stopped: the interpreter's timeout ran out]");
  CHECK(elapsed < 3s);
  REQUIRE(budget_given);
  CHECK(*budget_given <= 300ms);
  CHECK(*budget_given > 0ms);
  CHECK(lm.calls().size() == 1);
}

TEST_CASE("a sandbox terminated mid-loop ends it with the sandbox's error", "[interpreter]") {
  FakeSandbox sandbox;
  sandbox.push_result(success("1\n")).push_result(success("2\n"));
  FakeLMInvoker lm;
  lm.push_code("print(1)").push_code("print(2)");
  lm.push_handler([&](auto, auto, auto) {
    sandbox.terminate();
    ci::LMResponse r;
    r.tool_calls = {{"c3", "execute_code", R"j({"code":"print(3)"})j"}};
    return r;
  });

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");
  CHECK(result.stop_reason == ci::StopReason::kSandboxError);
  CHECK(result.text == "[stopped: the sandbox failed: Sandbox is not initialized]");
  CHECK(result.code_exec_results.size() == 2);
  REQUIRE(result.error);
  CHECK_THROWS_AS(std::rethrow_exception(result.error), ci::SandboxNotInitializedError);
}

TEST_CASE("bad input file names are refused before anything runs", "[interpreter]") {
  FakeSandbox sandbox;
  FakeLMInvoker lm;
  ci::SandboxCodeInterpreter interpreter(sandbox, lm);
  ci::Attachment traversal;
  traversal.filename = "../x";
  CHECK_THROWS_AS(interpreter.execute("go", {traversal}), std::invalid_argument);
  const auto a = ci::Attachment::from_bytes("1", "a.txt");
  CHECK_THROWS_AS(interpreter.execute("go", {a, a}), std::invalid_argument);
  CHECK(lm.calls().empty());
}

TEST_CASE("options below their minimum are refused", "[interpreter]") {
  FakeSandbox sandbox;
  FakeLMInvoker lm;
  ci::InterpreterOptions zero_turns;
  zero_turns.max_turns = 0;
  CHECK_THROWS_AS(ci::SandboxCodeInterpreter(sandbox, lm, zero_turns), std::invalid_argument);
  ci::InterpreterOptions tiny;
  tiny.max_tool_result_bytes = 100;
  CHECK_THROWS_AS(ci::SandboxCodeInterpreter(sandbox, lm, tiny), std::invalid_argument);
}

TEST_CASE("the files returned for one answer are bounded in total by max_total_file_bytes", "[interpreter]") {
  // Each file is under max_file_bytes, but a hostile answer may link many of them (or many names of one file).
  auto capabilities = FakeSandbox::pyodide_like_capabilities();
  const bool can_list = GENERATE(true, false);
  capabilities.filesystem = can_list;
  FakeSandbox sandbox(capabilities);
  sandbox.push_result(success(""), {{"/files/a.bin", std::string(600, 'a')},
                                    {"/files/b.bin", std::string(600, 'b')},
                                    {"/files/c.bin", std::string(600, 'c')},
                                    {"/files/d.bin", std::string(300, 'd')}});
  FakeLMInvoker lm;
  lm.push_code("write()").push_answer(
      "[a](sandbox:/files/a.bin) [b](sandbox:/files/b.bin) [c](sandbox:/files/c.bin) [d](sandbox:/files/d.bin)");
  ci::InterpreterOptions options;
  options.max_file_bytes = 1000;
  options.max_total_file_bytes = 1500;

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm, options).execute("go");

  INFO("filesystem: " << can_list);
  CHECK(result.stop_reason == ci::StopReason::kAnswered);
  CHECK(result.missing_files == std::vector<std::string>{"/files/c.bin"});
  REQUIRE(result.code_exec_results.at(0).output.size() == 3);
  CHECK(result.code_exec_results[0].output[0].data == std::string(600, 'a'));
  CHECK(result.code_exec_results[0].output[1].data == std::string(600, 'b'));
  CHECK(result.code_exec_results[0].output[2].data == std::string(300, 'd'));
  CHECK(sandbox.downloads() == (can_list ? std::vector<std::string>{"/files/a.bin", "/files/b.bin", "/files/d.bin"}
                                         : std::vector<std::string>{"/files/a.bin", "/files/b.bin", "/files/c.bin",
                                                                    "/files/d.bin"}));
}

TEST_CASE("at most max_tool_calls_per_turn calls of one reply run, the rest are answered as not run",
          "[interpreter]") {
  // A hostile or broken reply may hold thousands of tool calls: max_turns alone would not bound the executions.
  FakeSandbox sandbox;
  for (int i = 0; i < 3; ++i) sandbox.push_result(success(std::to_string(i)));
  FakeLMInvoker lm;
  ci::LMResponse many;
  for (int i = 0; i < 1000; ++i) {
    many.tool_calls.push_back({"c" + std::to_string(i), "execute_code", R"j({"code":"pass"})j"});
  }
  lm.push_response(many).push_answer("done");
  ci::InterpreterOptions options;
  options.max_tool_calls_per_turn = 3;

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm, options).execute("go");

  CHECK(result.stop_reason == ci::StopReason::kAnswered);
  CHECK(result.code_exec_results.size() == 3);
  CHECK(sandbox.execute_calls().size() == 3);
  const auto messages = lm.calls().at(1).messages;
  REQUIRE(messages.size() == 3 + 1000);
  CHECK(messages[3] == tool_message("0", "c0"));
  CHECK(messages[5] == tool_message("2", "c2"));
  CHECK(messages[6] == tool_message("[not run: at most 3 tool calls are run per turn. Nothing was run.]", "c3", true));
  CHECK(messages.back() ==
        tool_message("[not run: at most 3 tool calls are run per turn. Nothing was run.]", "c999", true));
  CHECK(ci::InterpreterOptions{}.max_tool_calls_per_turn == 16);
  ci::InterpreterOptions none;
  none.max_tool_calls_per_turn = 0;
  CHECK_THROWS_AS(ci::SandboxCodeInterpreter(sandbox, lm, none), std::invalid_argument);
}

TEST_CASE("a refused link is logged with its control bytes escaped, never raw", "[interpreter]") {
  // The target is the model's text: a raw CR or escape sequence would forge or hide log lines on a terminal.
  std::ostringstream captured;
  auto logger = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_st>(captured));
  logger->set_pattern("%v");
  ci::set_logger(logger);
  FakeSandbox sandbox;
  sandbox.push_result(success(""));
  FakeLMInvoker lm;
  lm.push_code("pass").push_answer("[x](<sandbox:/etc/\r\x1b[2Jpasswd>)");

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm).execute("go");
  ci::set_logger(nullptr);

  CHECK(result.refused_links == std::vector<std::string>{"/etc/\r\x1b[2Jpasswd"});
  CHECK(captured.str() == "interpreter: refused a sandbox link outside /files: /etc/\\x0d\\x1b[2Jpasswd\n");
}

TEST_CASE("only the first max_linked_files distinct links are looked up, the rest go to missing_files unlooked",
          "[interpreter]") {
  // A hostile answer may hold hundreds of thousands of links; each lookup is a sandbox round trip.
  FakeSandbox sandbox;
  sandbox.push_result(success(""), {{"/files/a", "1"}, {"/files/b", "2"}, {"/files/c", "3"}});
  FakeLMInvoker lm;
  std::string answer = "[a](sandbox:/files/a) [a2](sandbox:/files/%61) [b](sandbox:/files/b) [x](sandbox:/etc/x)";
  for (int i = 0; i < 5000; ++i) answer += " [m](sandbox:/files/m" + std::to_string(i) + ")";
  answer += " [c](sandbox:/files/c)";
  lm.push_code("write()").push_answer(answer);
  ci::InterpreterOptions options;
  options.max_linked_files = 2;

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm, options).execute("go");

  REQUIRE(result.code_exec_results.at(0).output.size() == 2);
  CHECK(result.code_exec_results[0].output[0].data == "1");
  CHECK(result.code_exec_results[0].output[1].data == "2");
  CHECK(sandbox.downloads() == std::vector<std::string>{"/files/a", "/files/b"});
  CHECK(result.refused_links == std::vector<std::string>{"/etc/x"});
  REQUIRE(result.missing_files.size() == 5001);
  CHECK(result.missing_files.front() == "/files/m0");
  CHECK(result.missing_files.back() == "/files/c");
  CHECK(ci::InterpreterOptions{}.max_linked_files == 100);
}

namespace {

// A sandbox whose list_files claims every file is 10 bytes long, and which records the cap of every download.
class LyingListing : public FakeSandbox {
 public:
  std::vector<std::optional<std::uint64_t>> caps;

 protected:
  std::vector<ci::FileInfo> do_list_files(std::string_view dir) override {
    auto entries = FakeSandbox::do_list_files(dir);
    for (auto& e : entries) e.size = 10;
    return entries;
  }
  std::optional<std::string> do_download_file(std::string_view path, ci::Timeout timeout,
                                              std::optional<std::uint64_t> max_bytes) override {
    caps.push_back(max_bytes);
    return FakeSandbox::do_download_file(path, timeout, max_bytes);
  }
};

}  // namespace

TEST_CASE("a file whose listed size lies is still capped at max_file_bytes, counted on the bytes downloaded",
          "[interpreter][guards]") {
  LyingListing sandbox;
  sandbox.push_result(success(""), {{"/files/big.bin", std::string(5000, 'b')}, {"/files/small.bin", "s"}});
  FakeLMInvoker lm;
  lm.push_code("write()").push_answer("[big](sandbox:/files/big.bin) [small](sandbox:/files/small.bin)");
  ci::InterpreterOptions options;
  options.max_file_bytes = 1024;

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm, options).execute("go");

  CHECK(sandbox.list_files("/files").at(0).size == 10);  // the lie the loop was told
  CHECK(result.missing_files == std::vector<std::string>{"/files/big.bin"});
  CHECK(sandbox.downloads() == std::vector<std::string>{"/files/big.bin", "/files/small.bin"});
  CHECK(sandbox.caps == std::vector<std::optional<std::uint64_t>>{1024, 1024});
  REQUIRE(result.code_exec_results.at(0).output.size() == 1);
  CHECK(result.code_exec_results[0].output[0].filename == "small.bin");
}

TEST_CASE("with lying sizes the total stays within max_total_file_bytes: each download is capped at what is left",
          "[interpreter][guards]") {
  LyingListing sandbox;
  sandbox.push_result(success(""), {{"/files/a.bin", std::string(900, 'a')},
                                    {"/files/b.bin", std::string(900, 'b')},
                                    {"/files/c.bin", std::string(600, 'c')}});
  FakeLMInvoker lm;
  lm.push_code("write()").push_answer("[a](sandbox:/files/a.bin) [b](sandbox:/files/b.bin) [c](sandbox:/files/c.bin)");
  ci::InterpreterOptions options;
  options.max_file_bytes = 1000;
  options.max_total_file_bytes = 1500;

  const auto result = ci::SandboxCodeInterpreter(sandbox, lm, options).execute("go");

  CHECK(result.missing_files == std::vector<std::string>{"/files/b.bin"});
  CHECK(sandbox.caps == std::vector<std::optional<std::uint64_t>>{1000, 600, 600});
  REQUIRE(result.code_exec_results.at(0).output.size() == 2);
  CHECK(result.code_exec_results[0].output[0].data == std::string(900, 'a'));
  CHECK(result.code_exec_results[0].output[1].data == std::string(600, 'c'));
}

TEST_CASE("list_files drops entries with names that are not one path component, on any sandbox",
          "[interpreter][guards]") {
  class HostileNames : public FakeSandbox {
   protected:
    std::vector<ci::FileInfo> do_list_files(std::string_view) override {
      return {{"../../../root/.bashrc", "/files/../../../root/.bashrc", false, 1},
              {"ok.txt", "/files/ok.txt", false, 2},
              {"..", "/files/..", true, 0},
              {".", "/files/.", true, 0},
              {"", "/files/", false, 0},
              {"a\\b", "/files/a\\b", false, 3},
              {std::string("n\0l", 3), "/files/n", false, 4},
              {"x", "/elsewhere/x", false, 5},
              {"noted", "", false, 6}};
    }
  };
  HostileNames sandbox;
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  ci::set_logger(logger);

  const auto entries = sandbox.list_files("/files");

  ci::set_logger(nullptr);
  CHECK(entries == std::vector<ci::FileInfo>{{"ok.txt", "/files/ok.txt", false, 2}, {"noted", "", false, 6}});
  CHECK(log.str().find("list_files '/files': dropped 7 entries with an invalid name or path") != std::string::npos);
  CHECK_THROWS_AS(sandbox.read_file("/files/ok.txt", 0), std::invalid_argument);
  CHECK_THROWS_AS(sandbox.download_file("/files/ok.txt", std::nullopt, 0), std::invalid_argument);
  CHECK_THROWS_AS(sandbox.download_file_to("/files/ok.txt", "/tmp/x", std::nullopt, 0), std::invalid_argument);
}
