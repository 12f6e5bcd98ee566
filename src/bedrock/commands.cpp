// AgentCore's execute_command: startCommandExecution, then getTask polls until the task ends, and stopTask when the
// budget runs out or the call is cancelled — so a timeout really stops the command (docs/protocols/bedrock.md "Tools").
#include <algorithm>
#include <cctype>

#include "code_interpreter/logging.hpp"
#include "core/callback_guard.hpp"
#include "core/defaults.hpp"
#include "core/outcome.hpp"
#include "bedrock/bedrock_impl.hpp"

namespace code_interpreter {
namespace {

using detail::Deadline;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

ExecutionResult BedrockAgentCoreSandbox::Impl::command(std::string_view cmd, const CommandOptions& o) {
  const auto call = calls.begin(o.cancel);
  std::unique_lock lock(exec_mutex);
  std::string refusal;
  const auto line = command_line(cmd, o.env, o.cwd, refusal);
  if (!line) return detail::never_ran(std::string(cmd), refusal, std::nullopt);
  const std::string& full = *line;

  const milliseconds budget = o.timeout.value_or(detail::kDefaultCommandTimeout);
  const auto limit = Deadline::after(budget, budget);  // none for <= 0, or for a budget the clock cannot reach
  const bool bounded = limit.at.has_value();
  const auto deadline = limit.at.value_or(Clock::time_point::max());
  // Each request gets at most what is left of the budget, so a service that stalls cannot stretch the call.
  const auto request_budget = [&] { return limit.bound(stub.options.request_timeout); };
  const auto started = Clock::now();
  const auto started_task = invoke(http::Operation::kAgentCoreStartCommand, "startCommandExecution",
                                   {{"command", full}}, request_budget(), call->token());
  if (auto failed = failure_of(started_task, std::string(cmd), "command")) return *failed;
  const auto task_it = started_task.structured.find("taskId");
  if (task_it == started_task.structured.end() || !task_it->is_string()) {
    ExecutionResult r;
    r.code = std::string(cmd);
    r.status = ExecutionStatus::kUnknown;
    r.failure = FailureDetail{"bedrock.no_task_id", false};
    r.error = "command: startCommandExecution answered without a taskId";
    return r;
  }
  const std::string task_id = task_it->get<std::string>();

  bedrock::Invocation last;
  std::string task_status;
  milliseconds poll{50};
  bool timed_out = false, cancelled = false;
  std::optional<ExecutionResult> poll_failed;
  while (true) {
    const milliseconds left = bounded ? std::chrono::duration_cast<milliseconds>(deadline - Clock::now()) : milliseconds(0);
    if (bounded && left.count() <= 0) {
      timed_out = true;
      break;
    }
    // A poll only reads: one throttled or lost poll must not end a command that is still running.
    auto polled = invoke(http::Operation::kAgentCoreGetTask, "getTask", {{"taskId", task_id}}, request_budget(),
                         call->token());
    if (call->token().stop_requested()) {
      cancelled = true;
      break;
    }
    if (bounded && polled.exchange.failure == http::Failure::kTimeout && Clock::now() + milliseconds(50) >= deadline) {
      timed_out = true;  // the poll ran into the command's budget; the output of the previous poll is kept
      break;
    }
    if (auto failed = failure_of(polled, std::string(cmd), "command")) {
      // The task was started: whatever breaks now, it may be running.
      if (failed->status == ExecutionStatus::kError) {
        failed->status = ExecutionStatus::kUnknown;
        if (failed->failure) failed->failure->retry_safe = false;
      }
      stop_task(task_id);
      poll_failed = std::move(*failed);  // it keeps the output of the previous poll, below
      break;
    }
    // An answer about another task would be another command's output and end: not the protocol
    // (docs/protocols/bedrock.md: getTask answers {taskId, taskStatus, ...}); this task's fate stays unknown.
    if (const auto t = polled.structured.find("taskId");
        t != polled.structured.end() && (!t->is_string() || t->get_ref<const std::string&>() != task_id)) {
      stop_task(task_id);
      ExecutionResult malformed;
      malformed.code = std::string(cmd);
      malformed.status = ExecutionStatus::kUnknown;
      malformed.failure = FailureDetail{"protocol.malformed", false};
      malformed.error = "command: the sandbox's answer was not the protocol: a getTask answer about task " +
                        (t->is_string() ? stub.service_text(t->get<std::string>(), 100) : std::string("(not a string)")) +
                        " on a poll of task " + stub.service_text(task_id, 100) + "; the task was stopped";
      poll_failed = std::move(malformed);  // it keeps the output of the previous poll, below
      break;
    }
    last = std::move(polled);
    const auto s = last.structured.find("taskStatus");
    task_status = s != last.structured.end() && s->is_string() ? s->get<std::string>() : "";
    if (task_status == "completed" || task_status == "failed" || task_status == "canceled") break;
    const auto nap = bounded ? std::min(poll, std::max(milliseconds(1), left)) : poll;
    if (!http::interruptible_sleep(nap, call->token())) {
      cancelled = true;
      break;
    }
    poll = std::min(milliseconds(500), poll * 3 / 2);
  }

  ExecutionResult r;
  r.code = std::string(cmd);
  detail::OutputStream out(o.on_stdout ? &o.on_stdout : nullptr, stub.options.max_output_bytes);
  detail::OutputStream err(o.on_stderr ? &o.on_stderr : nullptr, stub.options.max_output_bytes);
  // getTask reports everything so far; the callbacks get it line by line after the answer.
  const auto callback_threw = detail::deliver_guarded([&] {
    out.feed(last.out);
    err.feed(last.err);
    out.finish();
    err.finish();
  }, {&out, &err});
  r.truncated = out.truncated() || err.truncated();
  r.stdout_text = out.take_text();
  r.stderr_text = err.take_text();
  r.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
  if (poll_failed) {
    poll_failed->stdout_text = std::move(r.stdout_text);
    poll_failed->stderr_text = std::move(r.stderr_text);
    poll_failed->truncated = r.truncated;
    poll_failed->duration = r.duration;
    return std::move(*poll_failed);
  }
  if (timed_out || cancelled) {
    stop_task(task_id);
    if (timed_out) {
      r.status = ExecutionStatus::kTimeout;
      r.timeout_kind = TimeoutKind::kExecution;
      r.error = "command: timed out after " + std::to_string(budget.count()) + " ms; the task was stopped";
    } else {
      r.status = ExecutionStatus::kUnknown;
      r.failure = FailureDetail{"cancelled", false};
      r.error = "command: cancelled after the command started; the task was stopped";
    }
    return r;
  }
  if (callback_threw) {
    detail::mark_callback_threw(r, *callback_threw);
    return r;
  }
  const std::optional<int> code = last.exit_code();
  if (task_status == "canceled") {
    r.status = ExecutionStatus::kError;
    r.exit_code = -1;
    r.error = "command: the task was canceled";
  } else {
    // TaskStatus completed / failed (docs/protocols/bedrock.md "Tools"); the exit code decides.
    r.exit_code = code.value_or(task_status == "completed" ? 0 : 1);
    if (task_status == "failed" && r.exit_code == 0) r.exit_code = 1;  // failed is never SUCCESS, as for isError
    r.status = r.exit_code == 0 ? ExecutionStatus::kSuccess : ExecutionStatus::kError;
    if (r.exit_code != 0) r.error = "exit status " + std::to_string(r.exit_code);
  }
  return r;
}

std::optional<std::string> BedrockAgentCoreSandbox::Impl::command_line(std::string_view cmd,
                                                                      const std::map<std::string, std::string>& env,
                                                                      const std::optional<std::string>& cwd,
                                                                      std::string& refusal) const {
  std::string full;
  for (const auto& [name, value] : env) {
    const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                            std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
    if (!identifier) {
      refusal = "env: '" + bedrock::bounded_text(name, 64) + "' is not a shell variable name (CommandOptions::env)";
      return std::nullopt;
    }
    full += "export " + name + "=" + bedrock::shell_quote(value) + "; ";
  }
  // A cwd that cannot be entered fails the command: `cd dir && cmd` alone would still run the rest of a list
  // such as `a; b` in the wrong directory, so the command goes in a group (on lines of its own, so that a
  // trailing comment or here-document cannot swallow the closing brace).
  if (cwd) full += "cd -- " + bedrock::shell_quote(*cwd) + " && {\n" + std::string(cmd) + "\n}";
  else full += cmd;
  return full;
}

void BedrockAgentCoreSandbox::Impl::stop_task(const std::string& task_id) {
  // A quick kill: a stalled answer must not hold the caller long past the command's budget.
  constexpr milliseconds kStopTaskTimeout{std::chrono::seconds(10)};
  const auto inv = invoke(http::Operation::kAgentCoreStopTask, "stopTask", {{"taskId", task_id}},
                          Deadline::after(kStopTaskTimeout, kStopTaskTimeout).bound(stub.options.request_timeout), {});
  if (!inv.exchange.success() || !inv.result_seen)
    // The task id is the service's text: bounded, one line, no echoed secret.
    logger()->warn("bedrock: session {}: could not stop task {}", stub.session_id,
                   bedrock::safe_name(stub.service_text(task_id, 100)));
}

ExecutionResult BedrockAgentCoreSandbox::do_execute_command(std::string_view command, const CommandOptions& options) {
  return impl_->calls.settled(impl_->command(command, options));
}

}  // namespace code_interpreter
