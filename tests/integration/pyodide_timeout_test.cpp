// Timeouts, hard kills and lost runtimes. Tagged [timing]: these run alone (RUN_SERIAL) so a busy machine does
// not eat their margins.
#include <catch2/catch.hpp>

#include <signal.h>

#include <thread>

#include "pyodide_test_support.hpp"

using test_support::make_sandbox;
using Clock = std::chrono::steady_clock;

// Waits the runtime implements wake on the interrupt: the timeout is soft, and the state is kept.
TEST_CASE("a timeout during time.sleep, asyncio.sleep or Event.wait interrupts it at once and keeps the state",
          "[timing]") {
  const char* const cases[] = {
      "import time\ntime.sleep(30)",
      "from time import sleep\nsleep(1e9)",
      "import asyncio\nawait asyncio.sleep(30)",
      "import threading\nthreading.Event().wait(30)",
  };
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("kept = 1").status == ci::ExecutionStatus::kSuccess);
  for (const char* code : cases) {
    INFO(code);
    ci::ExecuteOptions o;
    o.timeout = 1000ms;
    std::vector<std::string> pieces;
    o.on_stdout = [&](std::string_view s) { pieces.emplace_back(s); };
    const auto t0 = Clock::now();
    auto r = sb->execute_code(std::string("print('waiting', flush=True)\n") + code, o);
    const auto took = Clock::now() - t0;
    CHECK(took >= 1000ms);
    CHECK(took < 1500ms);  // the wait ends within milliseconds of the interrupt, not when its time is up
    CHECK(r.status == ci::ExecutionStatus::kTimeout);
    REQUIRE(r.timeout_kind.has_value());
    CHECK(*r.timeout_kind == ci::TimeoutKind::kExecution);
    CHECK_FALSE(r.state_lost);
    CHECK(r.exit_code == -1);
    CHECK(r.error == "execution timed out and was interrupted");
    CHECK(r.stdout_text == "waiting\n");
    CHECK(pieces == std::vector<std::string>{"waiting\n"});
    auto next = sb->execute_code("kept");
    REQUIRE(next.status == ci::ExecutionStatus::kSuccess);
    CHECK(next.results.at(0).data.at("text/plain") == "1");
  }
}

TEST_CASE("time.sleep still sleeps as long as asked and judges its argument as CPython's does", "[timing]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("import time\nt = time.monotonic()\ntime.sleep(0.3)\ntime.monotonic() - t >= 0.3");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "True");
  struct Refused {
    const char* code;
    const char* name;
    const char* value;
  };
  const Refused refused[] = {
      {"time.sleep('1')", "TypeError", "'str' object cannot be interpreted as an integer"},
      {"time.sleep(float('nan'))", "ValueError", "Invalid value NaN (not a number)"},
      {"time.sleep(-1)", "ValueError", "sleep length must be non-negative"},
      {"time.sleep(float('inf'))", "OverflowError", "timestamp too large to convert to C PyTime_t"},
  };
  for (const auto& c : refused) {
    INFO(c.code);
    r = sb->execute_code(std::string("import time\n") + c.code);
    CHECK(r.status == ci::ExecutionStatus::kError);
    REQUIRE(r.code_error.has_value());
    CHECK(r.code_error->name == c.name);
    CHECK(r.code_error->value == c.value);
  }
  // Integers of any type with __index__, and floats of any subclass, are lengths.
  r = sb->execute_code(
      "import time\nclass Zero:\n    def __index__(self):\n        return 0\nclass F(float):\n    pass\n"
      "time.sleep(Zero())\ntime.sleep(F(0.01))\ntime.sleep(True * 0)\n(time.sleep.__name__, time.sleep.__module__)");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "('sleep', 'time')");
}

TEST_CASE("a busy loop is interrupted softly at the timeout and keeps the state", "[timing]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("kept = 'yes'").status == ci::ExecutionStatus::kSuccess);
  ci::ExecuteOptions o;
  o.timeout = 1000ms;
  const auto t0 = Clock::now();
  auto r = sb->execute_code("print('looping', flush=True)\nwhile True:\n    pass", o);
  CHECK(Clock::now() - t0 < 2500ms);
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  REQUIRE(r.timeout_kind.has_value());
  CHECK(*r.timeout_kind == ci::TimeoutKind::kExecution);
  CHECK_FALSE(r.state_lost);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.failure.has_value());
  CHECK(r.stdout_text == "looping\n");
  CHECK(sb->execute_code("kept").results.at(0).data.at("text/plain") == "'yes'");
}

TEST_CASE("a loop that swallows KeyboardInterrupt is hard-killed after the grace period", "[timing]") {
  ci::PyodideOptions options;
  options.interrupt_grace = 1000ms;
  auto sb = make_sandbox(options);
  ci::ExecuteOptions o;
  o.timeout = 1000ms;
  const auto t0 = Clock::now();
  auto r = sb->execute_code(
      "caught = 0\nwhile True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n"
      "        caught += 1\n        print('swallowed', flush=True)",
      o);
  const auto took = Clock::now() - t0;
  CHECK(took >= 2s);
  CHECK(took < 4s);
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  CHECK(r.timeout_kind == ci::TimeoutKind::kExecution);
  CHECK(r.state_lost);
  // The interrupt is repeated through the grace period, and each one is swallowed.
  REQUIRE(r.stdout_text.size() >= std::string("swallowed\n").size());
  std::string expected;
  while (expected.size() < r.stdout_text.size()) expected += "swallowed\n";
  CHECK(r.stdout_text == expected);
  CHECK(sb->execute_code("'caught' in globals()").results.at(0).data.at("text/plain") == "False");
}

TEST_CASE("kNoTimeout, negative timeouts and one the clock cannot reach mean no limit", "[timing]") {
  auto sb = make_sandbox();
  // milliseconds::max() once overflowed the deadline into the past: an immediate TIMEOUT.
  for (auto t : {ci::kNoTimeout, std::chrono::milliseconds(-5), std::chrono::milliseconds::max()}) {
    ci::ExecuteOptions o;
    o.timeout = t;
    auto r = sb->execute_code("import time\ntime.sleep(1.2)\n'done'", o);
    CHECK(r.status == ci::ExecutionStatus::kSuccess);
    CHECK(r.results.at(0).data.at("text/plain") == "'done'");
  }
}

TEST_CASE("a runtime killed from outside mid-call is TIMEOUT sandbox_lost and the next call gets a fresh one",
          "[timing][concurrency]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("lost = 1").status == ci::ExecutionStatus::kSuccess);
  const auto children = test_support::deno_children();
  REQUIRE(children.size() == 1);
  std::thread killer([pid = children[0]] {
    std::this_thread::sleep_for(1000ms);
    ::kill(pid, SIGKILL);
  });
  const auto t0 = Clock::now();
  auto r = sb->execute_code("print('before', flush=True)\nimport time\ntime.sleep(20)");
  killer.join();
  CHECK(Clock::now() - t0 < 5s);
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  REQUIRE(r.timeout_kind.has_value());
  CHECK(*r.timeout_kind == ci::TimeoutKind::kSandboxLost);
  CHECK(r.state_lost);
  CHECK(r.exit_code == -1);
  CHECK(r.stdout_text == "before\n");
  CHECK(r.error.find("killed by signal 9") != std::string::npos);
  auto next = sb->execute_code("'lost' in globals()");
  REQUIRE(next.status == ci::ExecutionStatus::kSuccess);
  CHECK(next.results.at(0).data.at("text/plain") == "False");
}

TEST_CASE("a Pyodide fatal error is TIMEOUT sandbox_lost and the interpreter is replaced", "[timing]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code("print('pre', flush=True)\nimport ctypes\nctypes.string_at(0xfffffff0, 100)");
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  REQUIRE(r.timeout_kind.has_value());
  CHECK(*r.timeout_kind == ci::TimeoutKind::kSandboxLost);
  CHECK(r.state_lost);
  // Output before the crash is kept; Pyodide adds the Python stack of the fatal error after it.
  CHECK(r.stdout_text.rfind("pre\n", 0) == 0);
  CHECK(r.stdout_text.find("Stack (most recent call first):") != std::string::npos);
  CHECK(sb->execute_code("6 * 7").results.at(0).data.at("text/plain") == "42");
}

TEST_CASE("terminate from another thread ends a call in flight: UNKNOWN, state lost", "[timing][concurrency]") {
  auto sb = make_sandbox();
  ci::ExecutionResult r;
  std::thread runner([&] { r = sb->execute_code("import time\ntime.sleep(30)"); });
  std::this_thread::sleep_for(1000ms);
  const auto t0 = Clock::now();
  sb->terminate();
  runner.join();
  CHECK(Clock::now() - t0 < 3s);
  CHECK(r.status == ci::ExecutionStatus::kUnknown);
  REQUIRE(r.failure.has_value());
  CHECK(r.failure->exception_type == "cancelled");
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(r.state_lost);
  CHECK(test_support::no_deno_children());
  CHECK_THROWS_AS(sb->execute_code("1"), ci::SandboxNotInitializedError);
}

TEST_CASE("short timeouts while the runtime restarts let it finish starting", "[timing]") {
  ci::PyodideOptions options;
  options.interrupt_grace = 200ms;
  auto sb = make_sandbox(options);
  ci::ExecuteOptions quick;
  quick.timeout = 300ms;
  REQUIRE(sb->execute_code(test_support::kUnstoppable, quick).state_lost);
  // A restart takes seconds; calls with a short budget answer TIMEOUT (request) until it is ready, then run.
  int timeouts = 0;
  ci::ExecutionResult r;
  const auto t0 = Clock::now();
  do {
    r = sb->execute_code("'ready'", quick);
    if (r.status == ci::ExecutionStatus::kTimeout) {
      // kRequest while the runtime starts; kExecution if it became ready just before the deadline and the first
      // run (slower than later ones) was interrupted. Neither loses state.
      ++timeouts;
      CHECK((r.timeout_kind == ci::TimeoutKind::kRequest || r.timeout_kind == ci::TimeoutKind::kExecution));
      CHECK_FALSE(r.state_lost);
    }
  } while (r.status == ci::ExecutionStatus::kTimeout && Clock::now() - t0 < 30s);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "'ready'");
  CHECK(timeouts >= 1);
}

TEST_CASE("cancelling during a large upload stops before the code is sent", "[timing][concurrency]") {
  auto sb = make_sandbox();
  std::stop_source source;
  ci::ExecuteOptions o;
  o.cancel = source.get_token();
  o.files = {ci::Attachment::from_bytes(std::string(200u << 20, 'u'), "big.bin")};
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    source.request_stop();
  });
  const auto t0 = Clock::now();
  auto r = sb->execute_code("ran = True", o);
  canceller.join();
  CHECK(Clock::now() - t0 < 5s);
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.failure.has_value());
  CHECK(r.failure->exception_type == "cancelled");
  CHECK(r.failure->retry_safe);
  CHECK(sb->execute_code("'ran' in globals()").results.at(0).data.at("text/plain") == "False");
}

TEST_CASE("a stopped runtime cannot block a call past its timeout, even while the code is being sent", "[timing]") {
  auto sb = make_sandbox();
  const auto children = test_support::deno_children();
  REQUIRE(children.size() == 1);
  ::kill(children[0], SIGSTOP);
  ci::ExecuteOptions o;
  o.timeout = 2000ms;
  const std::string big = "x = '" + std::string(4u << 20, 'a') + "'\n";  // more than a pipe holds
  const auto t0 = Clock::now();
  auto r = sb->execute_code(big, o);
  const auto took = Clock::now() - t0;
  ::kill(children[0], SIGCONT);
  CHECK(took < 5s);
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.failure.has_value());
  CHECK(r.failure->exception_type == "pyodide.runtime_lost");
  CHECK(r.failure->retry_safe);
  CHECK(r.state_lost);
  CHECK(sb->execute_code("'fresh'").results.at(0).data.at("text/plain") == "'fresh'");
}
