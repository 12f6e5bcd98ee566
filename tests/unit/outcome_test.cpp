// The outcome rules every backend shares: what an answered status proves (docs/errors.md "Answered statuses"),
// exit codes a service sent, and the one deadline arithmetic.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <limits>

#include "core/call_registry.hpp"
#include "core/deadline.hpp"
#include "core/outcome.hpp"
#include "core/untrusted.hpp"
#include "http/http_client.hpp"
#include "http/idempotency.hpp"
#include "http/outcome.hpp"

using namespace code_interpreter;

namespace {

http::Exchange answered_with(int status) {
  http::Exchange exchange;
  exchange.failure = http::Failure::kNone;
  exchange.request_written = true;
  exchange.response.status = status;
  return exchange;
}

}  // namespace

TEST_CASE("an answered 4xx proves the code never ran, a 5xx only in the service's own refusal shape", "[outcome]") {
  for (const int status : {400, 401, 403, 404, 408, 409, 429, 499}) {
    INFO(status);
    CHECK(http::answer_proves_never_ran(status, false));
    CHECK(http::answer_proves_never_ran(status, true));
  }
  for (const int status : {500, 502, 503, 504, 507, 599}) {
    INFO(status);
    CHECK_FALSE(http::answer_proves_never_ran(status, false));
    CHECK(http::answer_proves_never_ran(status, true));
  }
  for (const int status : {0, 200, 302, 399, 600}) {
    INFO(status);
    CHECK_FALSE(http::answer_proves_never_ran(status, false));
  }
}

TEST_CASE("answered(): the refusal is ERROR retry_safe, anything else UNKNOWN not retry_safe, with exact messages",
          "[outcome]") {
  const auto refused = http::answered(429, false, "http.429", "execute", "slow down");
  CHECK(refused.status == ExecutionStatus::kError);
  REQUIRE(refused.failure);
  CHECK(refused.failure->exception_type == "http.429");
  CHECK(refused.failure->retry_safe);
  CHECK_FALSE(refused.timeout_kind);
  CHECK(refused.message == "execute refused: HTTP 429: slow down");

  const auto gateway = http::answered(502, false, "http.502", "execute");
  CHECK(gateway.status == ExecutionStatus::kUnknown);
  REQUIRE(gateway.failure);
  CHECK(gateway.failure->exception_type == "http.502");
  CHECK_FALSE(gateway.failure->retry_safe);
  CHECK(gateway.message == "execute: HTTP 502; the request had been sent, so the code may have run");

  const auto shaped = http::answered(500, true, "aws.InternalServerException", "execute", "InternalServerException");
  CHECK(shaped.status == ExecutionStatus::kError);
  REQUIRE(shaped.failure);
  CHECK(shaped.failure->retry_safe);
  CHECK(shaped.message == "execute refused: HTTP 500: InternalServerException");
}

TEST_CASE("classify() reads an answered exchange by the same rule", "[outcome]") {
  const auto refused = http::classify(answered_with(404), TimeoutKind::kExecution, "command");
  CHECK(refused.status == ExecutionStatus::kError);
  REQUIRE(refused.failure);
  CHECK(refused.failure->exception_type == "http.404");
  CHECK(refused.failure->retry_safe);
  CHECK(refused.message == "command refused: HTTP 404");

  const auto unknown = http::classify(answered_with(503), TimeoutKind::kExecution, "command");
  CHECK(unknown.status == ExecutionStatus::kUnknown);
  REQUIRE(unknown.failure);
  CHECK(unknown.failure->exception_type == "http.503");
  CHECK_FALSE(unknown.failure->retry_safe);
  CHECK(unknown.message == "command: HTTP 503; the request had been sent, so the code may have run");
}

TEST_CASE("an exit code a service sent never wraps, and a float out of range is 1 without undefined behaviour",
          "[outcome]") {
  using nlohmann::json;
  CHECK(detail::untrusted_exit_code(json(3)) == 3);
  CHECK(detail::untrusted_exit_code(json(-7)) == -7);
  CHECK(detail::untrusted_exit_code(json(2147483647.0)) == 2147483647);
  CHECK(detail::untrusted_exit_code(json(-2147483648.0)) == std::numeric_limits<int>::min());
  CHECK(detail::untrusted_exit_code(json(2147483648.0)) == 1);
  CHECK(detail::untrusted_exit_code(json(-2147483649.0)) == 1);
  CHECK(detail::untrusted_exit_code(json(1e300)) == 1);  // beyond long long: the old check converted first
  CHECK(detail::untrusted_exit_code(json(-1e300)) == 1);
  CHECK(detail::untrusted_exit_code(json(std::numeric_limits<double>::infinity())) == 1);
  CHECK(detail::untrusted_exit_code(json(std::nan(""))) == 1);
  CHECK(detail::untrusted_exit_code(json(2.5)) == 1);
  CHECK(detail::untrusted_exit_code(json(0.0)) == 0);
  CHECK(detail::untrusted_exit_code(json(4294967296ull)) == 1);
  CHECK(detail::untrusted_exit_code(json("42")) == 42);
  CHECK(detail::untrusted_exit_code(json("99999999999999999999")) == 1);
}

TEST_CASE("Deadline::after: a budget the clock cannot reach is no bound, never an expired one", "[outcome]") {
  using std::chrono::milliseconds;
  const auto unbounded = detail::Deadline::after(milliseconds::max(), milliseconds(1));
  CHECK_FALSE(unbounded.at);
  CHECK_FALSE(unbounded.expired());
  CHECK_FALSE(detail::Deadline::after(milliseconds(0), milliseconds(1)).at);
  const auto fallback = detail::Deadline::after(std::nullopt, milliseconds(60'000));
  REQUIRE(fallback.at);
  CHECK_FALSE(fallback.expired());
  CHECK(fallback.bound(milliseconds(0)) <= milliseconds(60'000));
  CHECK(fallback.bound(milliseconds(0)) > milliseconds(59'000));
}

TEST_CASE("the idempotency table: what runs code is sent once, reads are retried, a lost create only after cleanup",
          "[outcome][idempotency]") {
  using http::Operation;
  const auto written_then_broke = [] {
    http::Exchange e;
    e.failure = http::Failure::kReceive;
    e.request_written = true;
    return e;
  }();
  const auto never_written = [] {
    http::Exchange e;
    e.failure = http::Failure::kConnect;
    return e;
  }();
  for (const auto op : {Operation::kE2BExecute, Operation::kE2BCommand, Operation::kAgentCoreExecuteCode,
                        Operation::kAgentCoreStartCommand, Operation::kAgentCoreWriteFiles,
                        Operation::kAgentCoreRemoveFiles}) {
    INFO(http::rule(op).name);
    CHECK(http::rule(op).resend == http::Resend::kNever);
    CHECK_FALSE(http::rewindable(op));
    CHECK_FALSE(http::may_resend(op, never_written));
    CHECK_FALSE(http::for_operation(op).idempotent);
  }
  for (const auto op : {Operation::kE2BHealth, Operation::kE2BDownloadTo, Operation::kAgentCoreGetSession,
                        Operation::kAgentCoreStopTask}) {
    INFO(http::rule(op).name);
    CHECK(http::rewindable(op));
    CHECK_FALSE(http::may_resend(op, never_written));
  }
  for (const auto op : {Operation::kE2BReadFile, Operation::kE2BConnect, Operation::kAgentCoreStart,
                        Operation::kAgentCoreGetTask, Operation::kAgentCoreReadFiles, Operation::kAgentCoreMakeDir,
                        Operation::kE2BListSandboxes, Operation::kE2BGetSandbox, Operation::kE2BKill,
                        Operation::kE2BPause, Operation::kAgentCoreListSessions, Operation::kAgentCoreManageGetSession,
                        Operation::kAgentCoreStop}) {
    INFO(http::rule(op).name);
    CHECK(http::for_operation(op).idempotent);
    CHECK(http::may_resend(op, written_then_broke));
    CHECK(http::may_resend(op, answered_with(503)));
  }
  // A second kernel if delivered twice: only what provably never left is tried again.
  CHECK_FALSE(http::rewindable(Operation::kE2BCreateContext));
  CHECK(http::may_resend(Operation::kE2BCreateContext, never_written));
  CHECK_FALSE(http::may_resend(Operation::kE2BCreateContext, written_then_broke));
  CHECK_FALSE(http::may_resend(Operation::kE2BCreateContext, answered_with(503)));
  // E2B's create: never rewound by libcurl, but retried, because a lost attempt is cleaned up before the retry.
  CHECK_FALSE(http::rewindable(Operation::kE2BCreate));
  CHECK(http::may_resend(Operation::kE2BCreate, written_then_broke));
  CHECK(http::for_operation(Operation::kE2BCreate).operation == Operation::kE2BCreate);
}

TEST_CASE("a call cancelled after its code was sent loses the state once terminate has begun, not after it failed",
          "[outcome]") {
  code_interpreter::detail::CallRegistry calls;
  const auto cancelled = [](ExecutionStatus status) {
    ExecutionResult r;
    r.status = status;
    r.failure = FailureDetail{"cancelled", status == ExecutionStatus::kError};
    return r;
  };
  // The caller's own cancel, no terminate: the state stays.
  CHECK_FALSE(calls.settled(cancelled(ExecutionStatus::kUnknown)).state_lost);
  REQUIRE(calls.cancel_all());
  CHECK(calls.settled(cancelled(ExecutionStatus::kUnknown)).state_lost);
  // Cancelled before its code was sent, or another outcome: untouched.
  CHECK_FALSE(calls.settled(cancelled(ExecutionStatus::kError)).state_lost);
  ExecutionResult ok;
  ok.status = ExecutionStatus::kSuccess;
  CHECK_FALSE(calls.settled(ok).state_lost);
  // The kill failed: the sandbox and its state live on.
  calls.terminate_failed();
  CHECK_FALSE(calls.settled(cancelled(ExecutionStatus::kUnknown)).state_lost);
  REQUIRE(calls.cancel_all());
  calls.mark_terminated();
  CHECK(calls.settled(cancelled(ExecutionStatus::kUnknown)).state_lost);
}

TEST_CASE("an operation riding on a call that did not succeed throws the kind of the call's status", "[outcome]") {
  auto with = [](ExecutionStatus status, std::optional<FailureDetail> failure = {}, bool code_failed = false) {
    ExecutionResult r;
    r.status = status;
    r.failure = std::move(failure);
    if (code_failed) r.code_error = CodeError{"ValueError", "bad", ""};
    return detail::error_kind_of(r);
  };
  CHECK(with(ExecutionStatus::kTimeout) == ErrorKind::kTimeout);
  CHECK(with(ExecutionStatus::kUnknown, FailureDetail{"curl.RECV_ERROR", false}) == ErrorKind::kUnknown);
  CHECK(with(ExecutionStatus::kError, {}, true) == ErrorKind::kInternal);  // the operation's own code failed
  CHECK(with(ExecutionStatus::kError) == ErrorKind::kInternal);            // a local refusal
  // Never ran because of the sandbox or its service: refused, unreachable, gone.
  CHECK(with(ExecutionStatus::kError, FailureDetail{"http.503", true}) == ErrorKind::kUnavailable);
  CHECK(with(ExecutionStatus::kError, FailureDetail{"http.404", true}) == ErrorKind::kUnavailable);
  CHECK(with(ExecutionStatus::kError, FailureDetail{"pyodide.runtime_lost", true}) == ErrorKind::kUnavailable);
  CHECK(with(ExecutionStatus::kError, FailureDetail{"cancelled", true}) == ErrorKind::kUnknown);
  CHECK(with(ExecutionStatus::kSuccess) == ErrorKind::kInternal);
}
