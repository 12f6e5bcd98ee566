// docs/errors.md "Statuses and what each result carries", "The user's exception", local refusals and commands.
#include "checks.hpp"
#include "harness.hpp"
#include "programs.hpp"

using namespace contract;
namespace ci = code_interpreter;

CONTRACT_SCENARIO("code that runs to its end is SUCCESS with exit code 0 and its exact stdout", "[status]") {
  TestType h;
  check_success(h.exec(prog::kHi), prog::kHi, "hi\n");
}

CONTRACT_SCENARIO("stderr is kept apart from stdout", "[status]") {
  TestType h;
  check_success(h.exec(prog::kStderr), prog::kStderr, "", "oops\n");
  check_success(h.exec(prog::kBoth), prog::kBoth, "out\n", "err\n");
}

CONTRACT_SCENARIO("sys.exit(0) and sys.exit(None) are SUCCESS without a code error", "[status][exit]") {
  TestType h;
  check_success(h.exec(prog::kExit0), prog::kExit0, "a\n");
  check_success(h.exec(prog::kExitNone), prog::kExitNone, "");
}

CONTRACT_SCENARIO("an empty program and pass are SUCCESS with no output", "[status]") {
  TestType h;
  check_success(h.exec(prog::kEmpty), prog::kEmpty, "");
  check_success(h.exec(prog::kPass), prog::kPass, "");
}

CONTRACT_SCENARIO("an uncaught exception is ERROR exit code 1 with the code's error and the output before it",
                  "[status][code_error]") {
  TestType h;
  const auto r = h.exec(prog::kDivZero);
  check_code_failed(r, 1, "ZeroDivisionError", "division by zero");
  CHECK(r.code == prog::kDivZero);
  CHECK(r.stdout_text == "before\n");
  CHECK(r.error == r.code_error->traceback);
}

CONTRACT_SCENARIO("a SyntaxError is ERROR exit code 1 and nothing runs", "[status][code_error]") {
  TestType h;
  const auto r = h.exec(prog::kSyntaxError);
  INFO("stderr: " << r.stderr_text << "\nerror: " << r.error);
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  CHECK_FALSE(r.failure);
  CHECK_FALSE(r.timeout_kind);
  CHECK(r.stdout_text.empty());
  CHECK(r.results.empty());
  REQUIRE(r.code_error);
  CHECK(r.code_error->name == "SyntaxError");
  CHECK_FALSE(r.code_error->traceback.empty());
  CHECK(r.error == r.code_error->traceback);
}

CONTRACT_SCENARIO("a ValueError keeps its str as code_error value", "[status][code_error]") {
  TestType h;
  check_code_failed(h.exec(prog::kRaiseValue), 1, "ValueError", "bad value");
}

CONTRACT_SCENARIO("an exception whose str spans lines keeps all of it as code_error value", "[status][code_error]") {
  TestType h;
  check_code_failed(h.exec(prog::kMultilineValue), 1, "ValueError", "first\nsecond");
}

CONTRACT_SCENARIO("lone surrogates in an exception's value come back as backslash escapes", "[status][code_error]") {
  TestType h;
  check_code_failed(h.exec(prog::kSurrogate), 1, "ValueError", "\\udcff");
}

CONTRACT_SCENARIO("sys.exit(3) is ERROR exit code 3 with code_error SystemExit 3", "[status][exit]") {
  TestType h;
  check_exited(h.exec(prog::kExit3), 3, "3");
}

CONTRACT_SCENARIO("sys.exit(-1) is exit code -1 with no FailureDetail", "[status][exit]") {
  TestType h;
  check_exited(h.exec(prog::kExitMinus1), -1, "-1");
}

CONTRACT_SCENARIO("sys.exit(256) is exit code 256: not reduced modulo 256", "[status][exit]") {
  TestType h;
  check_exited(h.exec(prog::kExit256), 256, "256");
}

CONTRACT_SCENARIO("sys.exit with a message is exit code 1", "[status][exit]") {
  TestType h;
  check_exited(h.exec(prog::kExitMessage), 1);
}

CONTRACT_SCENARIO("sys.exit(True) is exit code 1", "[status][exit]") {
  TestType h;
  check_exited(h.exec(prog::kExitTrue), 1);
}

CONTRACT_SCENARIO("sys.exit of a value beyond a C int is exit code 1", "[status][exit]") {
  TestType h;
  check_exited(h.exec(prog::kExitHuge), 1);
  check_exited(h.exec(prog::kExitVeryHuge), 1);
}

CONTRACT_SCENARIO("a KeyboardInterrupt the code raises itself is an ordinary ERROR exit code 1",
                  "[status][code_error]") {
  TestType h;
  check_code_failed(h.exec(prog::kOwnKeyboardInterrupt), 1, "KeyboardInterrupt", "mine");
}

CONTRACT_SCENARIO("state persists between calls on a stateful backend", "[status][state]") {
  TestType h;
  REQUIRE(h.sb().capabilities().stateful);
  check_success(h.exec(prog::kSetX), prog::kSetX, "");
  check_success(h.exec(prog::kPrintX), prog::kPrintX, "42\n");
}

CONTRACT_SCENARIO("results is empty when the code ends with a statement or the value is None", "[status][results]") {
  TestType h;
  const auto statement = h.exec(prog::kStatement);
  check_success(statement, prog::kStatement, "");
  CHECK(statement.results.empty());
  const auto none = h.exec(prog::kNoneValue);
  check_success(none, prog::kNoneValue, "");
  CHECK(none.results.empty());
  CHECK(none.text().empty());
}

CONTRACT_SCENARIO("the last expression's repr is the main result where the backend returns it", "[status][results]") {
  TestType h;
  const auto r = h.exec(prog::kExpression);
  check_success(r, prog::kExpression, "");
  if (h.sb().capabilities().expression_results) {
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].is_main_result);
    CHECK(r.results[0].data.at("text/plain") == "42");
    CHECK(r.text() == "42");
  } else {
    CHECK(r.results.empty());
    CHECK(r.text().empty());
  }
}

CONTRACT_SCENARIO("text joins stdout and stderr with one newline without trailing newlines", "[status][text]") {
  TestType h;
  const auto r = h.exec(prog::kBoth);
  CHECK(r.text() == "out\nerr");
}

CONTRACT_SCENARIO("text of a code failure holds the output then the traceback", "[status][text]") {
  TestType h;
  const auto r = h.exec(prog::kDivZero);
  REQUIRE(r.code_error);
  std::string traceback = r.code_error->traceback;
  while (!traceback.empty() && traceback.back() == '\n') traceback.pop_back();
  std::string stderr_text = r.stderr_text;
  while (!stderr_text.empty() && stderr_text.back() == '\n') stderr_text.pop_back();
  CHECK(r.text() == "before\n" + (stderr_text.empty() ? "" : stderr_text + "\n") + traceback);
}

CONTRACT_SCENARIO("execute_command runs the shell when the backend has one and is refused locally otherwise",
                  "[status][command]") {
  TestType h;
  const auto r = h.command("echo hi");
  if (h.sb().capabilities().shell_commands) {
    check_success(r, "echo hi", "hi\n");
  } else {
    check_local_refusal(r, "echo hi");
    CHECK_FALSE(r.duration);
  }
}

CONTRACT_SCENARIO("a command's exit code and both streams", "[status][command]") {
  TestType h;
  const std::string command = "echo out; echo err >&2; exit 3";
  const auto r = h.command(command);
  if (!h.sb().capabilities().shell_commands) {
    check_local_refusal(r, command);
    return;
  }
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 3);
  CHECK(r.stdout_text == "out\n");
  CHECK(r.stderr_text == "err\n");
  CHECK_FALSE(r.failure);
  CHECK_FALSE(r.timeout_kind);
}

CONTRACT_SCENARIO("a command's env and cwd apply", "[status][command][env]") {
  TestType h;
  h.sb().make_dir("ct_cwd");
  ci::CommandOptions options;
  options.env = {{"CT_GREETING", "hello"}};
  options.cwd = "ct_cwd";
  const std::string command = "echo $CT_GREETING; basename \"$(pwd)\"";
  const auto r = h.command(command, options);
  if (!h.sb().capabilities().shell_commands) {
    check_local_refusal(r, command);
    return;
  }
  check_success(r, command, "hello\nct_cwd\n");
}

CONTRACT_SCENARIO("env applies to one execution only", "[status][env]") {
  TestType h;
  ci::ExecuteOptions options;
  options.env = {{"CT_GREETING", "hello"}};
  check_success(h.exec(prog::kEnvGreeting, options), prog::kEnvGreeting, "hello\n");
  check_success(h.exec(prog::kEnvGreeting), prog::kEnvGreeting, "None\n");
}

CONTRACT_SCENARIO("several env variables with UTF-8 values reach the code exactly", "[status][env]") {
  TestType h;
  ci::ExecuteOptions options;
  options.env = {{"CT_A", "\xc3\xa9t\xc3\xa9"}, {"CT_B", "two words"}};
  check_success(h.exec(prog::kEnvTwo, options), prog::kEnvTwo, "\xc3\xa9t\xc3\xa9 two words\n");
}

CONTRACT_SCENARIO("code holds the code passed for every status", "[status]") {
  TestType h;
  CHECK(h.exec(prog::kHi).code == prog::kHi);
  CHECK(h.exec(prog::kDivZero).code == prog::kDivZero);
  CHECK(h.exec(prog::kExit3).code == prog::kExit3);
}

CONTRACT_SCENARIO("a call that sleeps briefly within a generous timeout succeeds", "[status][timeout]") {
  TestType h;
  ci::ExecuteOptions options;
  options.timeout = std::chrono::seconds(20);
  const auto r = h.exec(prog::kSleepShort, options);
  check_success(r, prog::kSleepShort, "slept\n");
  REQUIRE(r.duration);
  CHECK(*r.duration >= std::chrono::milliseconds(100));
}

CONTRACT_SCENARIO("an exception of the code's own class keeps its class name", "[status][code_error]") {
  TestType h;
  check_code_failed(h.exec(prog::kOwnClass), 1, "CtError", "custom");
}

CONTRACT_SCENARIO("an exception without a message has an empty value", "[status][code_error]") {
  TestType h;
  check_code_failed(h.exec(prog::kEmptyMessage), 1, "RuntimeError", "");
}

CONTRACT_SCENARIO("a chained exception reports the one that ended the code", "[status][code_error]") {
  TestType h;
  check_code_failed(h.exec(prog::kChained), 1, "KeyError", "'k'");
}

CONTRACT_SCENARIO("stderr printed before an exception is kept", "[status][code_error]") {
  TestType h;
  const auto r = h.exec(prog::kStderrThenRaise);
  check_code_failed(r, 1, "OSError", "disk");
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text.rfind("warn\n", 0) == 0);
}

CONTRACT_SCENARIO("a command's output reaches the callbacks line by line", "[status][command][callbacks]") {
  TestType h;
  std::vector<std::string> out;
  std::vector<std::string> err;
  ci::CommandOptions options;
  options.on_stdout = [&](std::string_view line) { out.emplace_back(line); };
  options.on_stderr = [&](std::string_view line) { err.emplace_back(line); };
  const std::string command = "printf 'a\\nb\\nc'; echo e >&2";
  const auto r = h.command(command, options);
  if (!h.sb().capabilities().shell_commands) {
    check_local_refusal(r, command);
    CHECK(out.empty());
    return;
  }
  check_success(r, command, "a\nb\nc", "e\n");
  CHECK(out == std::vector<std::string>{"a\n", "b\n", "c"});
  CHECK(err == std::vector<std::string>{"e\n"});
}

CONTRACT_SCENARIO("a cancel requested before a command is ERROR cancelled or the refusal of a backend without a shell",
                  "[status][command][cancel]") {
  TestType h;
  std::stop_source stop;
  stop.request_stop();
  ci::CommandOptions options;
  options.cancel = stop.get_token();
  const std::string command = "touch ct_command_ran";
  const auto r = h.command(command, options);
  if (!h.sb().capabilities().shell_commands) {
    check_local_refusal(r, command);
    return;
  }
  check_never_ran(r, "cancelled");
  CHECK(h.sb().download_file("ct_command_ran") == std::nullopt);
}
