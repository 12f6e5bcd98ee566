// E2B's execute_command: process.Process/Start, a Connect server stream (docs/protocols/e2b.md "process.Process/Start"),
// decoded by e2b::ProcessStream (e2b/streams.hpp) and turned into a result here.
#include "core/defaults.hpp"
#include "core/outcome.hpp"
#include "e2b/e2b_impl.hpp"

namespace code_interpreter {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

void unknown(ExecutionResult& r, std::string exception_type, std::string error) {
  r.status = ExecutionStatus::kUnknown;
  r.exit_code = -1;
  r.failure = FailureDetail{std::move(exception_type), false};
  r.error = std::move(error);
}

}  // namespace

ExecutionResult E2BSandbox::Impl::command(std::string_view cmd, const CommandOptions& o) {
  const auto call = begin_call(o.cancel);
  const auto started = Clock::now();
  ExecutionResult r;
  r.code = std::string(cmd);

  const milliseconds budget = o.timeout.value_or(detail::kDefaultCommandTimeout);
  auto request = stub.command_request(cmd, o, budget);
  e2b::ProcessStream stream(o.on_stdout ? &o.on_stdout : nullptr, o.on_stderr ? &o.on_stderr : nullptr,
                            stub.options.max_output_bytes, stub.options.max_line_bytes);
  // A stream cut mid-run is re-attached by pid within the budget (docs/backends/e2b.md "Processes").
  std::optional<Clock::time_point> deadline;
  if (budget.count() > 0) deadline = started + budget;
  auto followed = e2b::follow_process(client, stub, std::move(request), call->token(), deadline, stream,
                                      [&stream](std::string_view piece) { return stream.feed(piece); },
                                      [&stream] { return stream.flush_idle(); });
  const auto& ex = followed.ex;
  const auto& error_body = followed.error_body;
  r.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
  stream.finish();
  stream.collect(r);
  if (followed.cuts > 0) r.truncated = true;  // envd does not replay what was written while cut off

  if (stream.fault() != e2b::StreamFault::kNone) {
    e2b::apply_fault(stream.fault(), stream.fault_detail(), r);
    return r;
  }
  const auto timed_out = [&] {
    r.status = ExecutionStatus::kTimeout;
    r.timeout_kind = TimeoutKind::kExecution;
    r.exit_code = -1;
    r.error = "command: timed out after " + std::to_string(budget.count()) + " ms; the command was killed";
    return r;
  };
  if (followed.not_found) {
    unknown(r, "connect.not_found",
            "command: the stream was cut and envd no longer knows the process: it ended meanwhile, and its exit "
            "status cannot be learned");
    return r;
  }
  if (ex.ok() && ex.response.status != 200 && ex.response.status < 400) {
    e2b::unexpected_status(ex.response.status, "command", r);
    return r;
  }
  if (ex.ok() && ex.response.status != 200) return answered_error(r, ex.response.status, error_body, "command");
  if (followed.gave_up) {
    unknown(r, "connect.reattach_limit",
            "command: the stream was cut " + std::to_string(e2b::kMaxReattachesInARow) +
                " times in a row right after re-attaching to the process; re-attaching was given up, and the command "
                "may still be running");
    return r;
  }
  // Cut, and the budget ran out before a stream could tell the end: envd's deadline (Connect-Timeout-Ms) kills the
  // command if it still runs then; what the cut hid may also have been its own end, so the text does not say killed.
  if (followed.deadline_passed && followed.cuts > 0) {
    timed_out();
    r.error = "command: timed out after " + std::to_string(budget.count()) +
              " ms while its stream was cut off; envd kills the command at that deadline if it still runs, so it "
              "was killed or had ended unseen";
    return r;
  }
  if (!ex.ok()) {
    transport_failure(ex, "command", r);
    // Our backstop fired after envd's own limit should have: name the caller's budget, not libcurl's timer.
    if (r.status == ExecutionStatus::kTimeout && r.timeout_kind == TimeoutKind::kExecution)
      r.error = "command: timed out after " + std::to_string(budget.count()) +
                " ms; envd did not end it in time, so the command may still be running";
    return r;
  }
  // A complete HTTP body: the Connect stream itself says how it ended.
  if (stream.stream_error() == "deadline_exceeded") return timed_out();
  if (!stream.stream_closed()) {
    unknown(r, stream.partial_envelope() ? "connect.truncated_envelope" : "connect.missing_end_stream",
            "command: the stream ended without its end-of-stream envelope");
    return r;
  }
  if (!stream.stream_error().empty()) {
    const std::string type = "connect." + stream.stream_error();
    const std::string said = "command: " + stream.stream_error() + ": " + stub.service_text(stream.stream_error_message());
    if (!stream.started()) {
      auto refused = detail::never_ran(r.code, said, FailureDetail{type, true});
      refused.duration = r.duration;
      return refused;
    }
    unknown(r, type, said);
    return r;
  }
  if (!stream.ended()) {
    unknown(r, "connect.missing_end_event", "command: the stream closed without the process's end event");
    return r;
  }
  const auto& end = *stream.end();
  // After a re-attach the end comes on a Connect stream, which envd ends with the process's `end` (SIGKILL) rather
  // than deadline_exceeded when the Start's Connect-Timeout-Ms kills it: a kill once the budget ran out is that.
  if (!end.exited && end.status == "signal: killed" && deadline && Clock::now() >= *deadline) return timed_out();
  r.exit_code = end.exit_code;
  if (end.exit_code == 0 && end.error.empty()) {
    r.status = ExecutionStatus::kSuccess;
  } else {
    r.status = ExecutionStatus::kError;
    r.error = end.error.empty() ? end.status : end.error;
    if (r.error.empty()) r.error = "exit status " + std::to_string(end.exit_code);
  }
  return r;
}

ExecutionResult E2BSandbox::do_execute_command(std::string_view command, const CommandOptions& options) {
  return impl_->calls.settled(impl_->command(command, options));
}

}  // namespace code_interpreter
