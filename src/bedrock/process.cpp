// AgentCore's processes are its tasks (docs/protocols/bedrock.md "Tools"): spawn is startCommandExecution, the
// handle polls getTask on a thread of its own (getTask answers everything written so far, so the handle feeds the
// new part), kill and terminate are stopTask, connect_process is getTask by task id. There is no stdin, no listing
// of tasks and no signal: those refuse (kUnsupported), and Capabilities says so.
#include <condition_variable>
#include <thread>

#include "bedrock/bedrock_impl.hpp"
#include "core/callback_guard.hpp"
#include "core/output.hpp"
#include "http/retry.hpp"

namespace code_interpreter {
namespace {

using std::chrono::milliseconds;

// Polls in a row that may fail (throttled, a lost answer) before the task's fate is called unknown.
constexpr int kPollFailures = 5;

// The sandbox's calls a task's handle makes, bound in the sandbox's own members (its Impl is private to it). The
// driver calls each only while it holds SandboxLink::use(), so never after the sandbox ended.
struct TaskCalls {
  std::shared_ptr<detail::SandboxLink> link;
  std::function<bedrock::Invocation(http::Operation, std::string_view tool, const std::string& task_id,
                                    std::stop_token)> invoke;
  std::function<void(const bedrock::Invocation&, std::string_view what)> fail;  // throws
  std::function<std::string(std::string_view)> service_text;
  std::size_t max_output = 0;
};

TaskCalls task_calls(const std::shared_ptr<detail::SandboxLink>& link, auto& impl) {
  TaskCalls calls;
  calls.link = link;
  calls.invoke = [&impl](http::Operation op, std::string_view tool, const std::string& task_id, std::stop_token cancel) {
    return impl.invoke(op, tool, {{"taskId", task_id}}, impl.stub.options.request_timeout, std::move(cancel));
  };
  calls.fail = [&impl](const bedrock::Invocation& inv, std::string_view what) {
    impl.throw_tool_error(inv, Stage::kCommand, what);
  };
  calls.service_text = [&impl](std::string_view text) { return impl.stub.service_text(std::string(text), 100); };
  calls.max_output = impl.stub.options.max_output_bytes;
  return calls;
}

class BedrockProcessDriver final : public detail::ProcessDriver {
 public:
  BedrockProcessDriver(TaskCalls calls, std::string task_id, std::function<void(std::string_view)> on_stdout,
                       std::function<void(std::string_view)> on_stderr)
      : detail::ProcessDriver(calls.link),
        calls_(std::move(calls)),
        on_stdout_(std::move(on_stdout)),
        on_stderr_(std::move(on_stderr)),
        out_(on_stdout_ ? &on_stdout_ : nullptr, calls_.max_output),
        err_(on_stderr_ ? &on_stderr_ : nullptr, calls_.max_output),
        link_stop_(link().token(), std::function<void()>([this] { stop_.request_stop(); })) {
    id_ = std::move(task_id);
  }
  ~BedrockProcessDriver() override { detach(); }

  /// Starts polling on a thread of the handle's own. `verify` (connect_process): reads the task once first, and a
  /// task that is not found throws kNotFound (the caller holds the id it gave). Without it (spawn, whose task was
  /// started) nothing throws: a failing getTask shows in the handle's state, and the handle keeps the task id.
  void start(bool verify) {
    if (verify && !poll_once(true)) return;
    poller_ = std::thread([this] { run(); });
  }

  void send_stdin(std::string_view) override { detail::refuse_process_operation("send_stdin", "Bedrock AgentCore"); }
  void close_stdin() override { detail::refuse_process_operation("close_stdin", "Bedrock AgentCore"); }

  // Both stop the task: AgentCore has one stop (stopTask), no signals (Capabilities::process_signals false). The
  // handle's own thread reads the end (and the last output) at once: no callback runs on the caller's thread.
  void signal(bool) override {
    {
      std::lock_guard lock(mutex_);
      // A task known to have ended is left alone; one whose fate is unknown (kUnknown) may still run.
      if (state_ == ProcessState::kExited || state_ == ProcessState::kSignaled) return;
    }
    const auto guard = link().use();
    const auto inv = calls_.invoke(http::Operation::kAgentCoreStopTask, "stopTask", id(), link().token());
    link().require_alive();
    if (!inv.succeeded()) calls_.fail(inv, "stopTask");
    {
      std::lock_guard lock(mutex_);
      poll_now_ = true;
    }
    poke_.notify_all();
  }

  void detach() override {
    stop_.request_stop();
    poke_.notify_all();
    if (poller_.joinable() && poller_.get_id() != std::this_thread::get_id()) poller_.join();
  }

 protected:
  void collect_locked(ProcessResult& r) const override {
    r.stdout_text = out_.text();
    r.stderr_text = err_.text();
    r.truncated = out_.truncated() || err_.truncated() || past_limit_;
    r.exit_code = exit_code_;
    r.signal = signal_;
    r.error = error_;
    r.failure = failure_;
  }

 private:
  // One getTask. `first` (connect_process): its failure throws. Otherwise failures in a row count toward unknown.
  // False when polling ends.
  bool poll_once(bool first) {
    bedrock::Invocation inv;
    std::string failed, task;  // the words of a failed poll and the task id, taken while the sandbox cannot end
    {
      const auto guard = link().use();
      inv = calls_.invoke(http::Operation::kAgentCoreGetTask, "getTask", id(), stop_.get_token());
      if (!stop_.stop_requested() && !inv.succeeded()) {
        task = calls_.service_text(id());
        if (first) {
          // "Task not found" is a tool error of the service (docs/protocols/bedrock.md "Tools").
          if (inv.exchange.success() && inv.result_seen && inv.is_error)
            throw SandboxExecutionError("connect_process: no task " + calls_.service_text(id()), Stage::kCommand,
                                        ErrorKind::kNotFound);
          calls_.fail(inv, "getTask");
        }
        try {
          calls_.fail(inv, "getTask");
        } catch (const std::exception& e) {
          failed = e.what();
        }
      }
    }
    if (stop_.stop_requested()) return false;
    if (!inv.succeeded()) {
      // An answer past the event-stream limit only grows: the output is past what getTask can carry, and the
      // task's end can no longer be read. Said at once, with the output read so far kept.
      const bool past_limit = inv.too_large || inv.decode_error == bedrock::EventStreamError::kTooLarge;
      if (!past_limit && ++failures_ < kPollFailures) return true;
      std::lock_guard lock(mutex_);
      finish_output();
      state_ = ProcessState::kUnknown;
      if (past_limit) {
        past_limit_ = true;
        failure_ = FailureDetail{"eventstream.too_large", false};
        error_ = "the task's output grew past what one getTask answer may carry (max_message_bytes); its end cannot "
                 "be read, and the task " + task + " may still be running";
      } else {
        failure_ = FailureDetail{inv.exception ? *inv.exception : "bedrock.get_task_failed", false};
        error_ = "getTask failed " + std::to_string(kPollFailures) + " times in a row (last: " + failed +
                 "); the task " + task + " may still be running";
      }
      changed_.notify_all();
      return false;
    }
    failures_ = 0;
    bool ended = false;
    {
      std::lock_guard lock(mutex_);
      ended = take(inv);
    }
    if (ended) changed_.notify_all();
    return !ended;
  }

  // Delivers the last partial lines (mutex_ held).
  void finish_output() {
    (void)detail::deliver_guarded([&] {
      out_.finish();
      err_.finish();
    }, {&out_, &err_});
  }

  // The output beyond what was fed, and the end if the task ended (mutex_ held). True when it ended.
  bool take(const bedrock::Invocation& inv) {
    if (state_ != ProcessState::kRunning) return true;
    // An answer about another task (docs/protocols/bedrock.md: getTask answers {taskId, taskStatus, ...}) would give
    // this handle another process's output and end: not the protocol, and this task's fate stays unknown.
    if (const auto t = inv.structured.find("taskId");
        t != inv.structured.end() && (!t->is_string() || t->get_ref<const std::string&>() != id_)) {
      finish_output();
      state_ = ProcessState::kUnknown;
      failure_ = FailureDetail{"protocol.malformed", false};
      error_ = "the sandbox's answer was not the protocol: a getTask answer about task " +
               (t->is_string() ? calls_.service_text(t->get_ref<const std::string&>()) : std::string("(not a string)")) +
               " on a poll of task " + calls_.service_text(id_) + "; the task may still be running";
      return true;
    }
    const bool new_out = inv.out.size() > fed_out_, new_err = inv.err.size() > fed_err_;
    const auto thrown = detail::deliver_guarded([&] {
      if (new_out) out_.feed(std::string_view(inv.out).substr(fed_out_));
      if (new_err) err_.feed(std::string_view(inv.err).substr(fed_err_));
      fed_out_ = std::max(fed_out_, inv.out.size());
      fed_err_ = std::max(fed_err_, inv.err.size());
      // A partial line that a whole poll interval (at least kPartialLineDelay) did not complete is delivered
      // (docs/errors.md "Output").
      if (!new_out && out_.holding()) out_.flush();
      if (!new_err && err_.holding()) err_.flush();
    }, {&out_, &err_});
    if (thrown) {
      state_ = ProcessState::kUnknown;
      failure_ = FailureDetail{"callback.exception", false};
      error_ = "an output callback threw: " + *thrown + "; the task may still be running";
      return true;
    }
    const auto s = inv.structured.find("taskStatus");
    const std::string status = s != inv.structured.end() && s->is_string() ? s->get<std::string>() : "";
    if (status == "completed" || status == "failed") {
      finish_output();
      state_ = ProcessState::kExited;
      exit_code_ = inv.exit_code().value_or(status == "completed" ? 0 : 1);
      if (status == "failed" && exit_code_ == 0) exit_code_ = 1;  // failed is never a success
      return true;
    }
    if (status == "canceled") {
      finish_output();
      state_ = ProcessState::kSignaled;
      signal_ = "stopTask";
      error_ = "the task was canceled (stopTask)";
      return true;
    }
    return false;
  }

  void run() {
    milliseconds nap{50};
    try {
      while (!stop_.stop_requested()) {
        {
          // Sleeps until the next poll, or until a stopTask asks for one now.
          std::unique_lock lock(mutex_);
          poke_.wait_for(lock, stop_.get_token(), nap, [this] { return poll_now_; });
          poll_now_ = false;
        }
        if (stop_.stop_requested() || !poll_once(false)) return;
        nap = std::min(milliseconds(500), nap * 3 / 2);
      }
    } catch (...) {
      // The sandbox ended (SandboxNotInitializedError from use()): nobody reads this state again.
    }
  }

  TaskCalls calls_;
  std::function<void(std::string_view)> on_stdout_, on_stderr_;
  detail::OutputStream out_, err_;  // guarded by mutex_
  std::size_t fed_out_ = 0, fed_err_ = 0;
  int exit_code_ = -1;
  std::string signal_, error_;
  std::optional<FailureDetail> failure_;
  bool past_limit_ = false;  // guarded by mutex_: output past what getTask can carry
  bool poll_now_ = false;    // guarded by mutex_: a stopTask was sent, read the end now
  std::condition_variable_any poke_;
  int failures_ = 0;
  std::stop_source stop_;
  std::stop_callback<std::function<void()>> link_stop_;
  std::thread poller_;
};

}  // namespace

ProcessHandle BedrockAgentCoreSandbox::do_spawn(std::string_view command, const SpawnOptions& options) {
  const auto call = impl_->calls.begin();
  if (options.timeout && options.timeout->count() > 0)
    throw SandboxExecutionError("spawn: a lifetime timeout is not supported by Bedrock AgentCore tasks",
                                Stage::kCommand, ErrorKind::kUnsupported);
  std::string refusal;
  const auto line = impl_->command_line(command, options.env, options.cwd, refusal);
  if (!line) throw std::invalid_argument(refusal);
  const auto inv = impl_->invoke(http::Operation::kAgentCoreStartCommand, "startCommandExecution", {{"command", *line}},
                                 impl_->stub.options.request_timeout, call->token());
  if (!inv.succeeded()) impl_->throw_tool_error(inv, Stage::kCommand, "startCommandExecution");
  const auto task = inv.structured.find("taskId");
  if (task == inv.structured.end() || !task->is_string() || task->get_ref<const std::string&>().empty() ||
      task->get_ref<const std::string&>().size() > 256)
    throw SandboxExecutionError("spawn: startCommandExecution answered without a usable taskId", Stage::kCommand,
                                ErrorKind::kInternal);
  auto driver = std::make_shared<BedrockProcessDriver>(task_calls(impl_->link, *impl_), task->get<std::string>(),
                                                       options.on_stdout, options.on_stderr);
  driver->start(false);  // the task runs: from here nothing throws, so its id is never lost
  return ProcessHandle(std::move(driver));
}

ProcessHandle BedrockAgentCoreSandbox::do_connect_process(std::string_view id, const ProcessConnectOptions& options) {
  const auto call = impl_->calls.begin();
  // getTask answers the whole output so far: nothing is lost by attaching late.
  auto driver = std::make_shared<BedrockProcessDriver>(task_calls(impl_->link, *impl_), std::string(id),
                                                       options.on_stdout, options.on_stderr);
  driver->start(true);
  return ProcessHandle(std::move(driver));
}

}  // namespace code_interpreter
