// docs/errors.md "Timeouts", "TimeoutKind", "Cancellation", "terminate" (from another thread), and concurrency.
#include <atomic>
#include <stop_token>
#include <thread>

#include "checks.hpp"
#include "harness.hpp"
#include "programs.hpp"

using namespace contract;
namespace ci = code_interpreter;

namespace {

constexpr auto kBudget = std::chrono::milliseconds(600);

// Runs `code` on another thread, then calls `interrupt` once the call has been sent (after `after`).
template <class H, class Interrupt>
ci::ExecutionResult run_and_interrupt(H& h, std::string_view code, ci::ExecuteOptions options, Interrupt interrupt,
                                      std::chrono::milliseconds after = std::chrono::milliseconds(400)) {
  ci::ExecutionResult result;
  std::thread runner([&] { result = h.exec(code, options); });
  std::this_thread::sleep_for(after);
  interrupt();
  runner.join();
  return result;
}

}  // namespace

CONTRACT_SCENARIO("a busy loop over its budget is TIMEOUT execution with no FailureDetail", "[timeout]") {
  TestType h;
  ci::ExecuteOptions options;
  options.timeout = kBudget;
  const auto r = h.exec(prog::kBusy, options);
  check_timeout(r, ci::TimeoutKind::kExecution);
  CHECK(ci::to_string(*r.timeout_kind) == "execution");
  CHECK(r.code == prog::kBusy);
  CHECK(r.stdout_text.empty());
}

CONTRACT_SCENARIO("after a timeout an interrupting backend keeps the state", "[timeout][state]") {
  TestType h;
  REQUIRE(h.exec(prog::kSetZ).status == ci::ExecutionStatus::kSuccess);
  ci::ExecuteOptions options;
  options.timeout = kBudget;
  const auto r = h.exec(prog::kBusy, options);
  check_timeout(r, ci::TimeoutKind::kExecution);
  if (!h.sb().capabilities().interrupt) return;  // the code goes on running: nothing more is promised
  CHECK_FALSE(r.state_lost);
  check_success(h.exec(prog::kPrintZ), prog::kPrintZ, "kept\n");
}

CONTRACT_SCENARIO("a timeout of zero or less means no limit", "[timeout]") {
  TestType h;
  ci::ExecuteOptions none;
  none.timeout = ci::kNoTimeout;
  check_success(h.exec(prog::kSleepShort, none), prog::kSleepShort, "slept\n");
  ci::ExecuteOptions negative;
  negative.timeout = std::chrono::milliseconds(-5);
  check_success(h.exec(prog::kSleepShort, negative), prog::kSleepShort, "slept\n");
}

CONTRACT_SCENARIO("a command over its budget is TIMEOUT execution or refused without a shell", "[timeout][command]") {
  TestType h;
  ci::CommandOptions options;
  options.timeout = kBudget;
  const std::string command = "echo started; sleep 30";
  const auto r = h.command(command, options);
  if (!h.sb().capabilities().shell_commands) {
    check_local_refusal(r, command);
    return;
  }
  check_timeout(r, ci::TimeoutKind::kExecution);
  CHECK_FALSE(r.state_lost);
}

CONTRACT_SCENARIO("a cancel requested before the call is ERROR cancelled retry_safe and nothing runs",
                  "[cancel]") {
  TestType h;
  std::stop_source stop;
  stop.request_stop();
  ci::ExecuteOptions options;
  options.cancel = stop.get_token();
  const auto r = h.exec(prog::kCancelWrite, options);
  check_never_ran(r, "cancelled");
  CHECK(r.code == prog::kCancelWrite);
  CHECK_FALSE(r.duration);  // absent when the code was never sent (execution.hpp)
  check_success(h.exec(prog::kCancelCheck), prog::kCancelCheck, "False\n");
}

CONTRACT_SCENARIO("after a cancelled call the next call runs normally", "[cancel]") {
  TestType h;
  std::stop_source stop;
  stop.request_stop();
  ci::ExecuteOptions options;
  options.cancel = stop.get_token();
  check_never_ran(h.exec(prog::kHi, options), "cancelled");
  check_success(h.exec(prog::kHi), prog::kHi, "hi\n");
}

CONTRACT_SCENARIO("a stop_token that is never stopped changes nothing", "[cancel]") {
  TestType h;
  std::stop_source stop;
  ci::ExecuteOptions options;
  options.cancel = stop.get_token();
  check_success(h.exec(prog::kHi, options), prog::kHi, "hi\n");
}

CONTRACT_SCENARIO("a cancel requested while the code runs is UNKNOWN cancelled not retry_safe",
                  "[cancel][concurrency]") {
  TestType h;
  REQUIRE(h.exec(prog::kSetZ).status == ci::ExecutionStatus::kSuccess);
  std::stop_source stop;
  ci::ExecuteOptions options;
  options.cancel = stop.get_token();
  options.timeout = std::chrono::seconds(20);
  const auto r = run_and_interrupt(h, prog::kBusy, options, [&] { stop.request_stop(); });
  check_unknown(r, "cancelled");
  CHECK(r.code == prog::kBusy);
  if (!h.sb().capabilities().interrupt) return;
  CHECK_FALSE(r.state_lost);  // the busy loop stops at the interrupt
  check_success(h.exec(prog::kPrintZ), prog::kPrintZ, "kept\n");
}

CONTRACT_SCENARIO("terminate from another thread ends a call in flight as UNKNOWN cancelled",
                  "[terminate][concurrency]") {
  TestType h;
  REQUIRE(h.exec(prog::kPass).status == ci::ExecutionStatus::kSuccess);
  ci::ExecuteOptions options;
  options.timeout = std::chrono::seconds(20);
  const auto r = run_and_interrupt(h, prog::kBusy, options, [&] { h.sb().terminate(); });
  check_unknown(r, "cancelled");
  CHECK(r.state_lost);  // the sandbox, and the state with it, is gone (docs/errors.md "terminate")
  check_not_initialized([&] { (void)h.exec(prog::kHi); });
}

CONTRACT_SCENARIO("two threads executing at once on one sandbox each get their own result",
                  "[concurrency]") {
  TestType h;
  ci::ExecutionResult a;
  ci::ExecutionResult b;
  std::thread ta([&] { a = h.exec(prog::kThreadA); });
  std::thread tb([&] { b = h.exec(prog::kThreadB); });
  ta.join();
  tb.join();
  check_success(a, prog::kThreadA, "from a\n");
  check_success(b, prog::kThreadB, "from b\n");
}

CONTRACT_SCENARIO("file operations from another thread during an execution complete", "[concurrency][files]") {
  TestType h;
  ci::ExecutionResult r;
  std::thread runner([&] { r = h.exec(prog::kSleepShort); });
  h.sb().write_file("ct/conc.txt", "concurrent");
  const auto read = h.sb().read_file("ct/conc.txt");
  runner.join();
  CHECK(read == "concurrent");
  check_success(r, prog::kSleepShort, "slept\n");
}

CONTRACT_SCENARIO("four threads with their own callbacks see only their own lines", "[concurrency][callbacks]") {
  TestType h;
  std::array<std::vector<std::string>, 4> lines;
  std::array<ci::ExecutionResult, 4> results;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      ci::ExecuteOptions options;
      options.on_stdout = [&, i](std::string_view line) { lines[i].emplace_back(line); };
      results[i] = h.exec(i % 2 == 0 ? prog::kThreadA : prog::kThreadB, options);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    const std::string expected = i % 2 == 0 ? "from a\n" : "from b\n";
    CHECK(results[i].stdout_text == expected);
    CHECK(lines[i] == std::vector<std::string>{expected});
  }
}
