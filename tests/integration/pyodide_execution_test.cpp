// Execution semantics of the Pyodide sandbox: real Python in real Deno.
#include <catch2/catch.hpp>

#include <atomic>
#include <stop_token>
#include <thread>

#include "pyodide_test_support.hpp"

using test_support::make_sandbox;

namespace {
const std::string kTraceHead = "Traceback (most recent call last):\n";
}

TEST_CASE("state persists across execute_code calls of one sandbox", "[execute]") {
  auto sb = make_sandbox();
  auto a = sb->execute_code("x = 41\ndef f():\n    return x + 1\n");
  REQUIRE(a.status == ci::ExecutionStatus::kSuccess);
  auto b = sb->execute_code("f()");
  REQUIRE(b.status == ci::ExecutionStatus::kSuccess);
  REQUIRE(b.results.size() == 1);
  CHECK(b.results[0].data.at("text/plain") == "42");
  CHECK(b.results[0].is_main_result);
}

TEST_CASE("state is never shared between sandboxes", "[execute]") {
  auto one = make_sandbox();
  auto two = make_sandbox();
  REQUIRE(one->execute_code("shared_name = 1").status == ci::ExecutionStatus::kSuccess);
  one->write_file("/files/only_in_one.txt", "1");
  auto r = two->execute_code("shared_name");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "NameError");
  CHECK(r.code_error->value == "name 'shared_name' is not defined");
  CHECK_FALSE(two->download_file("/files/only_in_one.txt").has_value());
  CHECK(one->sandbox_id() != two->sandbox_id());
}

TEST_CASE("a successful run has exit_code 0, no failure, and its duration", "[execute]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("print('hi')");
  CHECK(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.code == "print('hi')");
  CHECK(r.stdout_text == "hi\n");
  CHECK(r.stderr_text == "");
  CHECK(r.error == "");
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.failure.has_value());
  CHECK_FALSE(r.code_error.has_value());
  CHECK_FALSE(r.timeout_kind.has_value());
  CHECK_FALSE(r.state_lost);
  CHECK_FALSE(r.truncated);
  REQUIRE(r.duration.has_value());
  CHECK(r.duration->count() >= 0);
  CHECK(r.results.empty());
  CHECK(r.text() == "hi");
}

TEST_CASE("the last expression's value is the main text/plain result", "[execute]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("x = [1, 2]\nx + [3]");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  REQUIRE(r.results.size() == 1);
  CHECK(r.results[0].data == std::map<std::string, std::string>{{"text/plain", "[1, 2, 3]"}});
  CHECK(r.results[0].is_main_result);
  auto s = sb->execute_code("'text'");
  REQUIRE(s.results.size() == 1);
  CHECK(s.results[0].data.at("text/plain") == "'text'");
}

TEST_CASE("None, a statement or a trailing semicolon give no result", "[execute]") {
  auto sb = make_sandbox();
  for (const char* code : {"None", "y = 5", "1 + 1;", "print('p')"}) {
    auto r = sb->execute_code(code);
    INFO(code);
    CHECK(r.status == ci::ExecutionStatus::kSuccess);
    CHECK(r.results.empty());
  }
}

TEST_CASE("an uncaught exception is ERROR with exit_code 1 and a traceback of the user's lines without host frames",
          "[execute]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("print('before')\ndef g():\n    return 1 / 0\ng()");
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  CHECK(r.stdout_text == "before\n");
  CHECK_FALSE(r.failure.has_value());
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "ZeroDivisionError");
  CHECK(r.code_error->value == "division by zero");
  const std::string tb = kTraceHead +
                         "  File \"<code-1>\", line 4, in <module>\n"
                         "    g()\n"
                         "    ~^^\n"
                         "  File \"<code-1>\", line 3, in g\n"
                         "    return 1 / 0\n"
                         "           ~~^~~\n"
                         "ZeroDivisionError: division by zero";
  CHECK(r.code_error->traceback == tb);
  CHECK(r.error == tb);
  CHECK(r.text() == "before\n" + tb);
  CHECK(r.results.empty());
  CHECK_FALSE(r.state_lost);
  // The interpreter survives.
  CHECK(sb->execute_code("2 + 2").results.at(0).data.at("text/plain") == "4");
}

TEST_CASE("a SyntaxError is ERROR with the offending line and no traceback frames", "[execute]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("x = (");
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "SyntaxError");
  CHECK(r.code_error->value == "'(' was never closed (<code-1>, line 1)");
  CHECK(r.code_error->traceback == "  File \"<code-1>\", line 1\n    x = (\n        ^\nSyntaxError: '(' was never closed");
}

TEST_CASE("sys.exit sets the exit code: 0 is SUCCESS, n is ERROR with n, a message is 1", "[execute]") {
  auto sb = make_sandbox();
  auto zero = sb->execute_code("import sys\nprint('bye')\nsys.exit(0)");
  CHECK(zero.status == ci::ExecutionStatus::kSuccess);
  CHECK(zero.exit_code == 0);
  CHECK(zero.stdout_text == "bye\n");
  CHECK_FALSE(zero.code_error.has_value());

  auto none = sb->execute_code("import sys; sys.exit()");
  CHECK(none.status == ci::ExecutionStatus::kSuccess);
  CHECK(none.exit_code == 0);

  auto three = sb->execute_code("import sys; sys.exit(3)");
  CHECK(three.status == ci::ExecutionStatus::kError);
  CHECK(three.exit_code == 3);
  REQUIRE(three.code_error.has_value());
  CHECK(three.code_error->name == "SystemExit");
  CHECK(three.code_error->value == "3");
  CHECK_FALSE(three.failure.has_value());

  auto message = sb->execute_code("import sys; sys.exit('fatal problem')");
  CHECK(message.status == ci::ExecutionStatus::kError);
  CHECK(message.exit_code == 1);
  REQUIRE(message.code_error.has_value());
  CHECK(message.code_error->value == "fatal problem");
  // The interpreter survives SystemExit.
  CHECK(sb->execute_code("'alive'").results.at(0).data.at("text/plain") == "'alive'");
}

TEST_CASE("deep recursion is a RecursionError and never kills the runtime", "[execute]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("kept = 'state'").status == ci::ExecutionStatus::kSuccess);
  auto r = sb->execute_code("def f(n):\n    return f(n + 1)\nf(0)");
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "RecursionError");
  CHECK(r.code_error->value == "maximum recursion depth exceeded");
  CHECK_FALSE(r.state_lost);
  CHECK(sb->execute_code("kept").results.at(0).data.at("text/plain") == "'state'");
}

TEST_CASE("a KeyboardInterrupt raised by the code itself is an ordinary ERROR", "[execute]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("raise KeyboardInterrupt('by the code')");
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "KeyboardInterrupt");
  CHECK(r.code_error->value == "by the code");
  CHECK_FALSE(r.timeout_kind.has_value());
}

TEST_CASE("stdout and stderr are kept apart and delivered one line at a time with their newline", "[output]") {
  auto sb = make_sandbox();
  std::vector<std::string> out, err;
  ci::ExecuteOptions o;
  o.on_stdout = [&](std::string_view line) { out.emplace_back(line); };
  o.on_stderr = [&](std::string_view line) { err.emplace_back(line); };
  auto r = sb->execute_code(
      "import sys\nprint('one')\nprint('two\\nthree')\nprint('warn', file=sys.stderr)\nprint('tail', end='')", o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(out == std::vector<std::string>{"one\n", "two\n", "three\n", "tail"});
  CHECK(err == std::vector<std::string>{"warn\n"});
  CHECK(r.stdout_text == "one\ntwo\nthree\ntail");
  CHECK(r.stderr_text == "warn\n");
}

TEST_CASE("a partial last line is delivered and never leaks into the next call", "[output]") {
  auto sb = make_sandbox();
  auto a = sb->execute_code("print('partial', end='')");
  CHECK(a.stdout_text == "partial");
  auto b = sb->execute_code("print('next')");
  CHECK(b.stdout_text == "next\n");
}

TEST_CASE("lines arrive while the code is still running", "[output]") {
  auto sb = make_sandbox();
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> seen;
  ci::ExecuteOptions o;
  o.on_stdout = [&](std::string_view line) { seen.emplace_back(std::string(line), std::chrono::steady_clock::now()); };
  auto r = sb->execute_code("import time\nprint('first')\ntime.sleep(1.0)\nprint('second')", o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].first == "first\n");
  CHECK(seen[1].first == "second\n");
  CHECK(seen[1].second - seen[0].second >= 900ms);
}

TEST_CASE("a partial line the code flushes reaches the callback when flushed, the rest as its own piece",
          "[output]") {
  auto sb = make_sandbox();
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> seen;
  ci::ExecuteOptions o;
  o.on_stdout = [&](std::string_view s) { seen.emplace_back(std::string(s), std::chrono::steady_clock::now()); };
  o.on_stderr = [&](std::string_view s) { seen.emplace_back("err:" + std::string(s), std::chrono::steady_clock::now()); };
  auto r = sb->execute_code(
      "import sys, time\nsys.stdout.write('tick'); sys.stdout.flush()\nprint('e1', file=sys.stderr)\n"
      "time.sleep(1.0)\nprint('tock')\nsys.stdout.write('\\u00e9'); sys.stdout.flush()\ntime.sleep(0.2)\n"
      "sys.stdout.write('!'); sys.stdout.flush()\nsys.stdout.write('\\n')",
      o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "ticktock\n\u00e9!\n");
  CHECK(r.stderr_text == "e1\n");
  REQUIRE(seen.size() == 5);
  CHECK(seen[0].first == "tick");
  CHECK(seen[1].first == "err:e1\n");  // a whole line on the other stream does not overtake the held "tick"
  CHECK(seen[2].first == "tock\n");
  CHECK(seen[3].first == "\u00e9");
  CHECK(seen[4].first == "!\n");
  CHECK(seen[2].second - seen[0].second >= 900ms);  // "tick" came at its flush, a second before the newline
  // '!' and the newline written right after it are one piece: a flush is held back while more of the line comes.
}

TEST_CASE("invalid UTF-8 output is replaced exactly as Python's decode('utf-8', 'replace')", "[output]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code(
      "import sys\nsys.stdout.buffer.write(b'a\\xffb\\xe2\\x82c\\xf0\\x9f\\x98\\x80\\n')\nsys.stdout.flush()");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xF0\x9F\x98\x80\n");
}

TEST_CASE("output past the cap is cut and marked truncated while callbacks still get all of it", "[output]") {
  ci::PyodideOptions options;
  options.max_output_bytes = 1000;
  auto sb = make_sandbox(options);
  std::string streamed;
  ci::ExecuteOptions o;
  o.on_stdout = [&](std::string_view line) { streamed += line; };
  auto r = sb->execute_code("print('x' * 5000)\nprint('y' * 10)", o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.truncated);
  CHECK(r.stdout_text == std::string(1000, 'x'));
  CHECK(streamed == std::string(5000, 'x') + "\n" + std::string(10, 'y') + "\n");
  CHECK(r.text() == std::string(1000, 'x') + "\n[output truncated]");
}

TEST_CASE("a line over 64 KiB reaches the callback in 64 KiB pieces", "[output]") {
  auto sb = make_sandbox();
  std::vector<std::size_t> sizes;
  ci::ExecuteOptions o;
  o.on_stdout = [&](std::string_view line) { sizes.push_back(line.size()); };
  auto r = sb->execute_code("print('z' * 150000)", o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(sizes == std::vector<std::size_t>{65536, 65536, 150000 - 2 * 65536 + 1});
  CHECK(r.stdout_text == std::string(150000, 'z') + "\n");
}

TEST_CASE("env applies to one call only and earlier values come back", "[execute]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("import os; os.environ['KEEP'] = 'original'").status == ci::ExecutionStatus::kSuccess);
  ci::ExecuteOptions o;
  o.env = {{"CI_TOKEN", "value-1"}, {"KEEP", "overridden"}};
  auto r = sb->execute_code("import os\nos.environ['CI_TOKEN'], os.environ['KEEP']", o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "('value-1', 'overridden')");
  auto after = sb->execute_code("import os\nos.environ.get('CI_TOKEN'), os.environ['KEEP']");
  CHECK(after.results.at(0).data.at("text/plain") == "(None, 'original')");
}

TEST_CASE("the host's environment is invisible to the code", "[security]") {
  ::setenv("CI_HOST_SECRET", "sk-host-secret-value", 1);
  auto sb = make_sandbox();
  auto r = sb->execute_code("import os\n'CI_HOST_SECRET' in os.environ, 'sk-host' in repr(dict(os.environ))");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "(False, False)");
}

TEST_CASE("reading stdin raises instead of reading the protocol pipe", "[security]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("input()");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "OSError");
  CHECK(r.code_error->value == "[Errno 29] I/O error");
}

TEST_CASE("os.system runs nothing and the runtime survives", "[security]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("import os\nos.system('echo escaped > /tmp/ci_escape_marker')");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "-1");  // Emscripten's system() outside Node: not supported
  CHECK_FALSE(std::filesystem::exists("/tmp/ci_escape_marker"));
  CHECK(sb->execute_code("1").results.at(0).data.at("text/plain") == "1");
}

TEST_CASE("JavaScript globals and code generation are out of reach", "[security]") {
  auto sb = make_sandbox();
  auto js = sb->execute_code("import js\njs.Deno");
  CHECK(js.status == ci::ExecutionStatus::kError);
  REQUIRE(js.code_error.has_value());
  CHECK(js.code_error->name == "AttributeError");
  auto gen = sb->execute_code("import pyodide_js\npyodide_js.constructor.constructor('return 1')()");
  CHECK(gen.status == ci::ExecutionStatus::kError);
  REQUIRE(gen.code_error.has_value());
  CHECK(gen.code_error->value == "EvalError: Code generation from strings disallowed for this context");
}

TEST_CASE("the host filesystem is invisible to the code", "[security]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("open('/etc/hostname').read()");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "FileNotFoundError");
}

TEST_CASE("execute_command is refused locally: ERROR, exit_code -1, no FailureDetail", "[execute]") {
  auto sb = make_sandbox();
  CHECK_FALSE(sb->capabilities().shell_commands);
  auto r = sb->execute_command("ls");
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.failure.has_value());
  CHECK(r.code == "ls");
  CHECK(r.error ==
        "shell commands are not available in the Pyodide sandbox (Python runs in WebAssembly, with no processes); "
        "use execute_code");
}

TEST_CASE("capabilities describe the Pyodide backend", "[execute]") {
  auto sb = make_sandbox();
  ci::Capabilities expected;
  expected.stateful = true;
  expected.shell_commands = false;
  expected.file_download = true;
  expected.filesystem = true;
  expected.packages = true;
  expected.network = false;
  expected.interrupt = true;
  expected.expression_results = true;
  expected.streaming_output = true;
  expected.languages = {ci::Language::kPython};
  expected.network_policies = {ci::NetworkAccess::kNone};
  expected.upload_dir = "/files";
  expected.file_info = expected.file_move = expected.file_copy = true;
  expected.interrupt_call = expected.interrupt_keeps_state = true;
  expected.restart = expected.variables = true;
  CHECK(sb->capabilities() == expected);
  CHECK(sb->language() == ci::Language::kPython);
  REQUIRE(sb->sandbox_id().has_value());
  CHECK(sb->sandbox_id()->size() == std::string("pyodide-").size() + 16);
  CHECK(sb->sandbox_id()->rfind("pyodide-", 0) == 0);
}

TEST_CASE("calls work through PyodideSandbox and through CodeInterpreterSandbox alike", "[execute]") {
  auto sb = make_sandbox();
  ci::PyodideSandbox& concrete = *sb;
  ci::CodeInterpreterSandbox& base = *sb;
  CHECK(concrete.execute_code("1 + 1").results.at(0).data.at("text/plain") == "2");
  CHECK(base.execute_code("2 + 1").results.at(0).data.at("text/plain") == "3");
  concrete.set_timeout(60s);
  base.set_timeout(60s);
  CHECK(concrete.execute_command("true").status == ci::ExecutionStatus::kError);
  CHECK(base.download_file("/nope") == std::nullopt);
}

TEST_CASE("two threads executing on one sandbox are serialized and get unmixed output", "[concurrency]") {
  auto sb = make_sandbox();
  ci::ExecutionResult ra, rb;
  auto job = [&](const std::string& tag, ci::ExecutionResult& out) {
    out = sb->execute_code("import time\nfor i in range(5):\n    print('" + tag + "', i)\n    time.sleep(0.05)");
  };
  std::thread ta(job, "A", std::ref(ra));
  std::thread tb(job, "B", std::ref(rb));
  ta.join();
  tb.join();
  CHECK(ra.status == ci::ExecutionStatus::kSuccess);
  CHECK(rb.status == ci::ExecutionStatus::kSuccess);
  CHECK(ra.stdout_text == "A 0\nA 1\nA 2\nA 3\nA 4\n");
  CHECK(rb.stdout_text == "B 0\nB 1\nB 2\nB 3\nB 4\n");
}

TEST_CASE("a throwing output callback makes the call UNKNOWN with callback.exception", "[output]") {
  auto sb = make_sandbox();
  int calls = 0;
  ci::ExecuteOptions o;
  o.on_stdout = [&](std::string_view) {
    ++calls;
    throw std::runtime_error("consumer failed");
  };
  auto r = sb->execute_code("print('a')\nprint('b')\nresult_kept = 1", o);
  CHECK(r.status == ci::ExecutionStatus::kUnknown);
  REQUIRE(r.failure.has_value());
  CHECK(r.failure->exception_type == "callback.exception");
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.exit_code == -1);
  CHECK(calls == 1);
  CHECK(r.error == "an output callback threw: consumer failed");
  // The sandbox stays usable.
  CHECK(sb->execute_code("'ok'").status == ci::ExecutionStatus::kSuccess);
}

TEST_CASE("a call cancelled before it starts never runs: ERROR with retry_safe", "[cancel][concurrency]") {
  auto sb = make_sandbox();
  std::stop_source source;
  source.request_stop();
  ci::ExecuteOptions o;
  o.cancel = source.get_token();
  auto r = sb->execute_code("ran = True", o);
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  REQUIRE(r.failure.has_value());
  CHECK(r.failure->exception_type == "cancelled");
  CHECK(r.failure->retry_safe);
  CHECK(sb->execute_code("'ran' in globals()").results.at(0).data.at("text/plain") == "False");
}

TEST_CASE("a call cancelled while running is interrupted: UNKNOWN, state kept", "[cancel][timing][concurrency]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("kept = 7").status == ci::ExecutionStatus::kSuccess);
  std::stop_source source;
  ci::ExecuteOptions o;
  o.cancel = source.get_token();
  std::thread canceller([&] {
    std::this_thread::sleep_for(500ms);
    source.request_stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = sb->execute_code("print('started', flush=True)\nwhile True:\n    pass", o);
  canceller.join();
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
  CHECK(r.status == ci::ExecutionStatus::kUnknown);
  REQUIRE(r.failure.has_value());
  CHECK(r.failure->exception_type == "cancelled");
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.stdout_text == "started\n");
  CHECK_FALSE(r.state_lost);
  CHECK(sb->execute_code("kept").results.at(0).data.at("text/plain") == "7");
}

TEST_CASE("code or env too large for a frame is refused locally: ERROR, exit_code -1, no FailureDetail",
          "[execute]") {
  auto sb = make_sandbox();
  const std::string huge(16u * 1024 * 1024 + 1, '#');
  auto r = sb->execute_code(huge);
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.failure.has_value());
  CHECK(r.error == "the code is 16777217 bytes; the Pyodide sandbox accepts at most 16777216 (pass large data as an "
                   "attachment)");
  ci::ExecuteOptions o;
  o.env = {{"BIG", std::string(600 * 1024, 'v')}};
  auto e = sb->execute_code("1", o);
  CHECK(e.status == ci::ExecutionStatus::kError);
  CHECK_FALSE(e.failure.has_value());
  CHECK(e.error == "the env option holds more than 524288 bytes");
  // Nothing was sent: the sandbox is untouched and still answers.
  CHECK(sb->execute_code("'fine'").results.at(0).data.at("text/plain") == "'fine'");
}

TEST_CASE("env names and values must be valid: bad ones are invalid arguments and nothing is sent", "[execute]") {
  auto sb = make_sandbox();
  const std::map<std::string, std::string> bad[] = {
      {{"", "v"}}, {{"A=B", "v"}}, {{"OK", std::string("a\0b", 3)}}, {{"OK", "\xff"}}, {{"\xc3", "v"}}};
  for (const auto& env : bad) {
    ci::ExecuteOptions o;
    o.env = env;
    CHECK_THROWS_AS(sb->execute_code("1", o), std::invalid_argument);
  }
  ci::ExecuteOptions good;
  good.env = {{"UNICODE_OK", "\xC3\xA9t\xC3\xA9"}};
  auto r = sb->execute_code("import os\nos.environ['UNICODE_OK']", good);
  CHECK(r.results.at(0).data.at("text/plain") == "'\xC3\xA9t\xC3\xA9'");
}

TEST_CASE("a huge last value or exception message is cut in the middle, and the call still succeeds", "[execute]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("'a' * 300000 + 'b' * 300000");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  const auto& text = r.results.at(0).data.at("text/plain");
  const std::string marker = "\n... [337858 characters cut] ...\n";
  CHECK(text == "'" + std::string(131071, 'a') + marker + std::string(131071, 'b') + "'");
  auto e = sb->execute_code("raise ValueError('x' * 2000000)");
  CHECK(e.status == ci::ExecutionStatus::kError);
  REQUIRE(e.code_error.has_value());
  CHECK(e.code_error->value.size() == 262144 + std::string("\n... [1737856 characters cut] ...\n").size());
  CHECK_FALSE(e.state_lost);
}

TEST_CASE("an exit code beyond a C int is 1, as CPython's own exit would give", "[execute]") {
  auto sb = make_sandbox();
  for (const char* code : {"import sys\nsys.exit(2**40 + 5)", "import sys\nsys.exit(10**400)"}) {
    auto r = sb->execute_code(code);
    INFO(code);
    CHECK(r.status == ci::ExecutionStatus::kError);
    CHECK(r.exit_code == 1);
    REQUIRE(r.code_error.has_value());
    CHECK(r.code_error->name == "SystemExit");
  }
  CHECK(sb->execute_code("import sys\nsys.exit(-7)").exit_code == -7);
}

TEST_CASE("a lone surrogate in an exception message comes back escaped, not as a broken frame", "[execute]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("kept = 1").status == ci::ExecutionStatus::kSuccess);
  auto r = sb->execute_code("raise ValueError(b'\\xff'.decode('utf-8', 'surrogateescape'))");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->value == "\\udcff");
  CHECK_FALSE(r.state_lost);
  CHECK(sb->execute_code("kept").results.at(0).data.at("text/plain") == "1");
}

TEST_CASE("timeouts that land anywhere in a run never crash the runtime", "[timing]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("kept = 'state'").status == ci::ExecutionStatus::kSuccess);
  // 1 ms budgets land the interrupt in the runner's and the event loop's own code as well as in the user's.
  for (int i = 0; i < 40; ++i) {
    ci::ExecuteOptions o;
    o.timeout = std::chrono::milliseconds(1 + i % 3);
    auto r = sb->execute_code(i % 2 ? "1 + 1" : "x = 0\nfor i in range(20000):\n    x += i", o);
    INFO(i);
    REQUIRE(!r.state_lost);
    CHECK((r.status == ci::ExecutionStatus::kSuccess ||
           (r.status == ci::ExecutionStatus::kTimeout && r.timeout_kind == ci::TimeoutKind::kExecution)));
  }
  ci::ExecuteOptions o;
  o.timeout = 150ms;
  auto a = sb->execute_code("import asyncio\nwhile True:\n    await asyncio.sleep(0.001)", o);
  CHECK(a.status == ci::ExecutionStatus::kTimeout);
  CHECK(a.timeout_kind == ci::TimeoutKind::kExecution);
  CHECK_FALSE(a.state_lost);
  CHECK(sb->execute_code("kept").results.at(0).data.at("text/plain") == "'state'");
}

TEST_CASE("the code cannot replace the runtime's streams to forge frames", "[security]") {
  auto sb = make_sandbox();
  for (const char* name : {"setStdout", "setStderr", "setStdin", "setInterruptBuffer"}) {
    auto r = sb->execute_code(std::string("import pyodide_js\npyodide_js.") + name + "()");
    INFO(name);
    CHECK(r.status == ci::ExecutionStatus::kError);
    REQUIRE(r.code_error.has_value());
    CHECK(r.code_error->value == std::string("Error: ") + name + " is not available in the sandbox");
  }
  CHECK(sb->execute_code("print('still framed')").stdout_text == "still framed\n");
}

TEST_CASE("a function an earlier cell defined shows that cell's lines in a later cell's traceback", "[execute]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("def g(x):\n    return x[3]\n").status == ci::ExecutionStatus::kSuccess);
  auto r = sb->execute_code("y = 1\ng('ab')");
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->traceback == kTraceHead +
                                       "  File \"<code-2>\", line 2, in <module>\n"
                                       "    g('ab')\n"
                                       "    ~^^^^^^\n"
                                       "  File \"<code-1>\", line 2, in g\n"
                                       "    return x[3]\n"
                                       "           ~^^^\n"
                                       "IndexError: string index out of range");
}

namespace {
// Objects of the _repr_*_ protocol, defined by the test (no IPython, no matplotlib needed).
constexpr const char* kRichClasses =
    "class Png:\n"
    "    def _repr_png_(self): return b'\\x89PNG\\r\\n'\n"
    "class Page:\n"
    "    def _repr_html_(self): return '<b>bold</b>'\n"
    "    def _repr_markdown_(self): return '**bold**'\n"
    "    def __repr__(self): return 'Page()'\n"
    "class Data:\n"
    "    def _repr_json_(self): return {'a': [1, 2]}\n"
    "    def _repr_svg_(self): return '<svg/>'\n"
    "    def __repr__(self): return 'Data()'\n"
    "class Broken:\n"
    "    def _repr_html_(self): raise ValueError('no html')\n"
    "    def __repr__(self): return 'Broken()'\n";

std::map<std::string, std::string> plain_and(std::map<std::string, std::string> data, std::string plain) {
  data["text/plain"] = std::move(plain);
  return data;
}
}  // namespace

TEST_CASE("display() results come in the order produced, then the last expression's formats as the main result",
          "[execute][rich]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code(kRichClasses).status == ci::ExecutionStatus::kSuccess);
  auto r = sb->execute_code("display(Data())\nprint('between')\ndisplay(Png(), Broken())\nPage()");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "between\n");
  REQUIRE(r.results.size() == 4);
  CHECK(r.results[0] == ci::RichResult{plain_and({{"application/json", "{\"a\": [1, 2]}"}, {"image/svg+xml", "<svg/>"}},
                                                 "Data()"),
                                       false});
  CHECK(r.results[1].data.at("image/png") == "iVBORw0K");
  CHECK(r.results[1].data.at("text/plain").rfind("<__main__.Png object at 0x", 0) == 0);
  CHECK(r.results[1].is_main_result == false);
  CHECK(r.results[2] == ci::RichResult{{{"text/plain", "Broken()"}}, false});
  CHECK(r.results[3] == ci::RichResult{plain_and({{"text/html", "<b>bold</b>"}, {"text/markdown", "**bold**"}},
                                                 "Page()"),
                                       true});
  CHECK_FALSE(r.truncated);
}

TEST_CASE("IPython.display works without IPython: display, HTML, Markdown, Image and JSON", "[execute][rich]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code(
      "from IPython.display import display, HTML, Markdown, Image, JSON\n"
      "display(HTML('<i>x</i>'), Markdown('# t'))\n"
      "display(Image(b'PNG'))\n"
      "display(JSON({'k': 1}))\n");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  REQUIRE(r.results.size() == 4);
  CHECK(r.results[0].data == plain_and({{"text/html", "<i>x</i>"}}, "<IPython.display.HTML object>"));
  CHECK(r.results[1].data == plain_and({{"text/markdown", "# t"}}, "<IPython.display.Markdown object>"));
  CHECK(r.results[2].data == plain_and({{"image/png", "UE5H"}}, "<IPython.display.Image object>"));
  CHECK(r.results[3].data == plain_and({{"application/json", "{\"k\": 1}"}}, "<IPython.display.JSON object>"));
}

TEST_CASE("displays before an exception are kept beside the error", "[execute][rich]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("display('first')\nraise KeyError('k')");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.results.size() == 1);
  CHECK(r.results[0] == ci::RichResult{{{"text/plain", "'first'"}}, false});
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "KeyError");
}

TEST_CASE("rich results past max_output_bytes are dropped, later ones first, and the result says truncated",
          "[execute][rich]") {
  ci::PyodideOptions o;
  o.max_output_bytes = 1000;
  auto sb = make_sandbox(o);
  auto r = sb->execute_code("class H:\n    def __init__(s, c): s.c = c\n    def _repr_html_(s): return s.c * 400\n"
                            "    def __repr__(s): return 'H'\n"
                            "display(H('a'), H('b'), H('c'))\n'end'");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.truncated);
  REQUIRE(r.results.size() == 3);
  CHECK(r.results[0].data.at("text/html") == std::string(400, 'a'));
  CHECK(r.results[1].data.at("text/html") == std::string(400, 'b'));
  CHECK(r.results[2] == ci::RichResult{{{"text/plain", "'end'"}}, true});
}

TEST_CASE("a lone surrogate in any rich format arrives escaped, never as a broken answer", "[execute][rich]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("class M:\n    def _repr_svg_(self): return '\\udfff<svg/>'\n"
                            "    def __repr__(self): return 'M'\nM()");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  REQUIRE(r.results.size() == 1);
  CHECK(r.results[0].data.at("image/svg+xml") == "\\udfff<svg/>");
  CHECK_FALSE(r.state_lost);
}

TEST_CASE("displays past the runtime's own limits are dropped and the result says truncated, never lost silently",
          "[execute][rich]") {
  auto sb = make_sandbox();
  auto many = sb->execute_code("for i in range(1005): display(i)");
  REQUIRE(many.status == ci::ExecutionStatus::kSuccess);
  CHECK(many.results.size() == 1000);
  CHECK(many.results.back().data.at("text/plain") == "999");
  CHECK(many.truncated);
  // A display just under 8 MiB, past the runtime's 6 MiB cap for rich data: dropped, and the runtime lives on.
  auto big = sb->execute_code("class H:\n    def _repr_html_(self): return 'a' * (8 * 1024 * 1024 - 30)\n"
                              "    def __repr__(self): return 'H'\ndisplay(H())\n'after'");
  REQUIRE(big.status == ci::ExecutionStatus::kSuccess);
  CHECK(big.truncated);
  CHECK_FALSE(big.state_lost);
  REQUIRE(big.results.size() == 1);
  CHECK(big.results[0] == ci::RichResult{{{"text/plain", "'after'"}}, true});
}
