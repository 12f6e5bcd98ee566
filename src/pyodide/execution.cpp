// PyodideSandbox's runs: the attachments, the exec request, the output, and the state machine of a timeout,
// cancellation or throwing callback (interrupt, repeated interrupts, grace, kill, respawn). The steps are
// docs/architecture.md "A normal run", "Timeout: interrupt, grace, kill, respawn", "Cancellation and terminate" and
// "When the process dies on its own"; the results they end in are docs/errors.md "Statuses and what each result
// carries", built by src/pyodide/outcome.hpp.
#include <nlohmann/json.hpp>

#include "code_interpreter/logging.hpp"
#include "core/callback_guard.hpp"
#include "core/output.hpp"
#include "pyodide/outcome.hpp"
#include "pyodide/sandbox_impl.hpp"

namespace code_interpreter {

using Clock = detail::HostClock;
using detail::FrameWait;
using json = nlohmann::json;

namespace {

constexpr std::size_t kMaxCodeBytes = 16u << 20;
constexpr std::size_t kMaxEnvBytes = 512u << 10;
constexpr auto kInterruptRepeat = std::chrono::milliseconds(50);
using detail::kPartialLineDelay;  // see the call loop's flush_at

}  // namespace

ExecutionResult PyodideSandbox::Impl::execute(std::string_view code, const ExecuteOptions& opts) {
  // The host reads at most 1 MiB of header and 64 MiB of body per frame (host/frames.mjs); refuse locally, before
  // anything is sent, what it would reject (docs/architecture.md "Size limits").
  if (code.size() > kMaxCodeBytes) {
    return detail::refused(std::string(code), "the code is " + std::to_string(code.size()) +
                                                  " bytes; the Pyodide sandbox accepts at most " +
                                                  std::to_string(kMaxCodeBytes) +
                                                  " (pass large data as an attachment)");
  }
  if (json(opts.env).dump().size() > kMaxEnvBytes) {
    return detail::refused(std::string(code),
                           "the env option holds more than " + std::to_string(kMaxEnvBytes) + " bytes");
  }
  if (opts.cancel.stop_requested()) {
    return detail::never_ran_safe(std::string(code), "cancelled before the code was sent", "cancelled", false);
  }
  const auto call = begin_call();
  host.drain_wake();
  std::stop_callback on_cancel(opts.cancel, [this] { host.wake(); });
  // From here an interrupt() wakes the wait below; one asked before this call is not kept for it.
  interrupt_asked = false;
  running = true;
  struct NotRunning {
    std::atomic<bool>& running;
    ~NotRunning() { running = false; }
  } not_running{running};
  auto deadline = detail::deadline_from(opts.timeout, detail::kDefaultExecuteTimeout);

  if (auto e = host.await_ready(deadline, opts.cancel); e.kind != detail::ReadyError::kNone) {
    if (e.kind != detail::ReadyError::kTimeout && e.kind != detail::ReadyError::kCancelled) host.respawn();
    return detail::not_ready_outcome(std::string(code), e);
  }

  // Upload the attachments. The code has not run yet, so a failure here is a clean refusal.
  const std::string upload_dir = opts.upload_dir.value_or(std::string(detail::kUploadDir));
  for (const auto& file : opts.files) {
    const std::string path = (upload_dir.back() == '/' ? upload_dir : upload_dir + "/") + file.filename;
    const auto e = file.source ? write_from_file(path, *file.source, deadline, opts.cancel)
                               : write_bytes(path, file.data, deadline, opts.cancel);
    if (!e) continue;
    if (opts.cancel.stop_requested() && !e->restarted) {
      return detail::never_ran_safe(std::string(code), "cancelled while uploading '" + file.filename + "'",
                                    "cancelled", false);
    }
    if (e->kind == ErrorKind::kTimeout) {
      return detail::request_timed_out(std::string(code), "uploading '" + file.filename + "' timed out: " + e->message,
                                       e->restarted);
    }
    if (host.shutting_down()) {
      return detail::never_ran_safe(std::string(code), "the sandbox is being terminated", "cancelled", false);
    }
    return detail::never_ran_safe(std::string(code), "uploading '" + file.filename + "' failed: " + e->message,
                                  "pyodide.upload", e->restarted);
  }

  auto h = host.current();
  if (!h) return detail::never_ran_safe(std::string(code), "the sandbox is being terminated", "cancelled", false);

  ExecutionResult r;
  r.code = std::string(code);
  detail::OutputStream out(&opts.on_stdout, options.max_output_bytes);
  detail::OutputStream err(&opts.on_stderr, options.max_output_bytes);

  // Why we asked the code to stop, if we did.
  detail::StopReason reason = detail::StopReason::kNone;
  std::string callback_error;
  std::optional<Clock::time_point> hard_deadline;  // set once the interrupt was sent: grace ends here

  // Delivers the final partial lines; a throwing callback there still turns the result into kUnknown.
  auto finish_streams = [&] {
    for (auto* s : {&out, &err}) {
      if (auto thrown = detail::deliver_guarded([&] { s->finish(); }, {&out, &err})) {
        if (reason != detail::StopReason::kCallback) callback_error = std::move(*thrown);
        reason = detail::StopReason::kCallback;
      }
    }
    r.stdout_text = out.take_text();
    r.stderr_text = err.take_text();
    r.truncated = r.truncated || out.truncated() || err.truncated();  // r.truncated: rich results dropped
  };
  // The outcome when the code was stopped on our request (by interrupt or by kill).
  auto stopped = [&](bool killed) { detail::set_stopped(r, reason, killed, callback_error); };
  auto elapsed = [&](Clock::time_point since) {
    r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since);
  };

  if (opts.cancel.stop_requested()) {
    return detail::never_ran_safe(std::string(code), "cancelled before the code was sent", "cancelled", false);
  }
  const auto rid = host.request_id();
  json header = {{"t", "exec"}, {"id", rid}, {"env", opts.env}};
  const auto started = Clock::now();
  if (!detail::write_all(h->child.stdin_fd(), detail::encode_frame(header, code), deadline)) {
    // The runtime is killed before it could take the whole request, so the code never ran.
    const bool timed_out = deadline && Clock::now() >= *deadline;
    const auto message = timed_out ? std::string("the runtime did not take the code before the timeout (is it stopped?); "
                                                 "it was restarted")
                                   : h->death_description();
    host.respawn();
    return detail::never_ran_safe(std::string(code), message, "pyodide.runtime_lost", true);
  }

  // The interrupt is repeated every kInterruptRepeat until the grace period ends: one that Python checks while the
  // user's code is off the stack (inside the event loop) only cancels its task, which a synchronous loop never sees
  // (docs/protocols/pyodide.md "Interrupts").
  std::optional<Clock::time_point> next_interrupt;
  auto send_interrupt = [&] {
    // Bounded like every write: a stopped runtime with a full pipe must not hold the call past its grace period
    // (a frame cut short there is moot: the runtime is killed when the grace period ends).
    detail::write_all(h->child.stdin_fd(), detail::encode_frame({{"t", "interrupt"}, {"id", rid}}),
                      hard_deadline.value_or(Clock::now() + options.interrupt_grace));
    next_interrupt = Clock::now() + kInterruptRepeat;
  };
  auto ask_to_stop = [&](detail::StopReason why) {
    if (reason == detail::StopReason::kNone) reason = why;
    if (hard_deadline) return;
    send_interrupt();
    hard_deadline = Clock::now() + options.interrupt_grace;
  };

  // Runs the output callbacks through `deliver`; one that throws stops both and the code (docs/errors.md "Output").
  auto guarded = [&](auto&& deliver) {
    if (auto thrown = detail::deliver_guarded(deliver, {&out, &err})) {
      callback_error = std::move(*thrown);
      reason = detail::StopReason::kCallback;
      ask_to_stop(detail::StopReason::kCallback);
    }
  };
  // A partial line the code flushed (each out frame is one flush of Python's line-buffered stream) is delivered
  // kPartialLineDelay after a frame first left it partial, unless a later frame completed it by then: print() of a
  // text with a newline in it flushes the text and then its end separately.
  std::optional<Clock::time_point> flush_at;

  for (;;) {
    detail::Frame f;
    std::string why;
    const auto bound = hard_deadline ? std::optional(std::min(*hard_deadline, *next_interrupt)) : deadline;
    const auto wait_until = flush_at ? std::optional(bound ? std::min(*bound, *flush_at) : *flush_at) : bound;
    const FrameWait w = host.next_frame(*h, wait_until, f, why);
    if (w == FrameWait::kFrame) {
      auto kind = detail::classify_run_frame(f, rid);
      if (kind.kind == detail::RunFrame::kUnexpected) {
        why = std::move(kind.why);
      } else if (kind.kind == detail::RunFrame::kOut) {
        auto& stream = kind.stream == 2 ? err : out;
        auto& other = kind.stream == 2 ? out : err;
        // What the other stream holds was produced first: delivered first, so the order across them is kept.
        // Two guarded steps: a callback that throws in the first still leaves this frame's text collected.
        if (other.holding()) guarded([&] { other.flush(); });
        guarded([&] { stream.feed(f.body); });
        if (!out.holding() && !err.holding()) {
          flush_at.reset();
        } else if (!flush_at) {
          flush_at = Clock::now() + kPartialLineDelay;
        }
        continue;
      } else {  // result
        elapsed(started);
        auto end = detail::decode_run_end(f.header);
        if (!end) {
          why = "malformed result frame";
        } else {
          const bool host_interrupt = end->host_interrupt;
          const bool ok = end->status == detail::RunEnd::Status::kOk;
          detail::apply_run_end(std::move(*end), r, options.max_output_bytes);
          if (h->watchdog.over_limit_now()) {
            // The call ended holding more than the cap (an allocation that failed inside Python after others had
            // touched memory reserved before the data limit): the cap's outcome is this call's, not the next one's.
            host.respawn();
            finish_streams();
            detail::set_memory_outcome(r, options.memory_limit_bytes);
            return r;
          }
          finish_streams();
          if (reason == detail::StopReason::kCallback) {
            stopped(false);
          } else if (host_interrupt && !ok && reason == detail::StopReason::kInterrupt) {
            // interrupt(): the code's KeyboardInterrupt (or the CancelledError of a task waiting at an await) is
            // the answer, the state kept (docs/errors.md "Filesystem, interrupt, restart and variables").
          } else if (host_interrupt && !ok) {
            // We asked the code to stop; whatever error it ended with (KeyboardInterrupt, CancelledError, or an
            // error the interrupt caused inside Pyodide) is the consequence of that request, not the code's own.
            stopped(false);
          }
          return r;
        }
      }
      // Falls through: a frame that breaks the protocol is handled as malformed output below.
    }
    if (w == FrameWait::kFrame || w == FrameWait::kMalformed ||
        (w == FrameWait::kEof && !why.empty() && !host.shutting_down())) {
      // The runtime broke the protocol: it can no longer be trusted (docs/architecture.md "What the library
      // accepts").
      elapsed(started);
      host.respawn();
      finish_streams();
      detail::set_malformed(r, why);
      return r;
    }
    if (w == FrameWait::kDeadline && flush_at && Clock::now() >= *flush_at) {
      flush_at.reset();
      guarded([&] {
        out.flush();
        err.flush();
      });
      if (!bound || Clock::now() < *bound) continue;
    }
    if (w == FrameWait::kDeadline) {
      if (!hard_deadline) {
        ask_to_stop(detail::StopReason::kTimeout);
        continue;
      }
      if (Clock::now() < *hard_deadline) {
        send_interrupt();
        continue;
      }
      // The grace period is over: kill, and start a fresh runtime for the next call.
      elapsed(started);
      host.respawn();
      finish_streams();
      stopped(true);
      return r;
    }
    if (w == FrameWait::kWoken) {
      if (host.shutting_down()) {
        elapsed(started);
        host.kill();
        finish_streams();
        detail::set_terminated(r);
        return r;
      }
      if (opts.cancel.stop_requested()) ask_to_stop(detail::StopReason::kCancel);
      if (interrupt_asked.exchange(false)) ask_to_stop(detail::StopReason::kInterrupt);
      continue;
    }
    // FrameWait::kEof: the runtime died during the call.
    elapsed(started);
    const auto message = h->death_description();
    if (host.shutting_down()) {
      host.kill();
      finish_streams();
      detail::set_terminated(r);
      return r;
    }
    const bool memory = h->died_of_memory();
    host.respawn();
    finish_streams();
    if (reason == detail::StopReason::kCancel || reason == detail::StopReason::kCallback ||
        reason == detail::StopReason::kInterrupt) {
      stopped(true);
      return r;
    }
    if (memory) {
      // The cap could not be met inside Python (a buffer outside the wasm heap, a fatal allocation in V8): the
      // runtime is gone, and the call reports it as the program's MemoryError (docs/errors.md "Statuses and what
      // each result carries").
      detail::set_memory_outcome(r, options.memory_limit_bytes);
      logger()->debug("sandbox {}: {}", host.id(), message);
      return r;
    }
    detail::mark_sandbox_lost(r, message + "; a fresh runtime was started and the state is lost");
    return r;
  }
}

ExecutionResult PyodideSandbox::do_execute_code(std::string_view code, const ExecuteOptions& options) {
  impl_->check_alive();
  return impl_->execute(code, options);
}

ExecutionResult PyodideSandbox::do_execute_command(std::string_view command, const CommandOptions&) {
  impl_->check_alive();
  return detail::refused(std::string(command),
                         "shell commands are not available in the Pyodide sandbox (Python runs in WebAssembly, with "
                         "no processes); use execute_code");
}

}  // namespace code_interpreter

namespace code_interpreter {

void PyodideSandbox::do_interrupt() {
  impl_->check_alive();
  // Not under the call lock, which the run holds: the run's wait wakes and sends the interrupt itself.
  if (!impl_->running) return;
  impl_->interrupt_asked = true;
  impl_->host.wake();
}

void PyodideSandbox::do_restart() {
  const auto call = impl_->begin_call();
  impl_->host.respawn();
  const auto deadline = detail::deadline_from(std::nullopt, detail::kDefaultFileTimeout);
  if (auto e = impl_->host.await_ready(deadline, {}); e.kind != detail::ReadyError::kNone) {
    throw SandboxExecutionError("restart: the fresh Pyodide runtime did not become ready: " + e.message,
                                Stage::kExecute, e.kind == detail::ReadyError::kTimeout ? ErrorKind::kTimeout
                                                                                         : ErrorKind::kInternal);
  }
}

void PyodideSandbox::do_set_variable(std::string_view name, const std::string& value_json) {
  set_variable_by_code(name, value_json);
}

nlohmann::json PyodideSandbox::do_get_variable(std::string_view name) { return get_variable_by_code(name); }

}  // namespace code_interpreter
