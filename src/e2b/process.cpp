// E2B's processes (docs/protocols/e2b.md "process.Process"): spawn is process.Process/Start with stdin, followed by
// a reader thread of the handle's own; stdin, signals and the listing are unary calls; connect_process is
// process.Process/Connect. follow_process re-attaches a stream cut mid-run, for spawned processes and for
// execute_command alike (docs/backends/e2b.md "Processes").
#include <algorithm>
#include <charconv>
#include <thread>

#include "core/base64.hpp"
#include "core/deadline.hpp"
#include "core/untrusted.hpp"
#include "e2b/e2b_impl.hpp"

namespace code_interpreter {
namespace e2b {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using std::chrono::milliseconds;

// Re-attaches in a row that may fail before start (the connection refused, a 5xx) before the stream is given up.
constexpr int kReattachAttempts = 3;
constexpr milliseconds kReattachBackoff{200};
// A re-attached stream open this long worked, whatever it carried (a silent process behind a proxy that cuts idle
// streams); one cut sooner with no output bytes or end counts toward kMaxReattachesInARow.
constexpr milliseconds kHealthyStream{1000};
// Re-attaches start at least this far apart, whatever the streams carried: a server that ends every stream at once,
// even after a byte of output, gets ten Connects a second at most.
constexpr milliseconds kReattachSpacing{100};
// How long after a cut a command's stream may take to re-attach, beyond its own budget (envd's deadline ends it).
constexpr milliseconds kBackstop{std::chrono::seconds(10)};

// A stream broke while the process may still run: after its start, before its end, and not by our own hand.
bool cut_mid_run(const http::Exchange& ex, const ProcessStream& stream) {
  if (stream.fault() != StreamFault::kNone || !stream.started() || stream.ended() || stream.stream_closed()) return false;
  if (!ex.ok()) return ex.failure == http::Failure::kReceive || ex.failure == http::Failure::kSend;
  return ex.response.status == 200;  // a body that completed without its end-stream envelope
}

}  // namespace

Followed follow_process(http::HttpClient& client, const E2BStub& stub, http::Request request, std::stop_token cancel,
                        std::optional<Clock::time_point> deadline, ProcessStream& stream,
                        const std::function<bool(std::string_view)>& feed, const std::function<bool()>& tick) {
  Followed f;
  const auto ticking = [&tick](http::Request& r) {
    r.on_tick = tick;
    r.tick_interval = detail::kPartialLineDelay / 2;
  };
  request.cancel = cancel;
  ticking(request);
  http::stream_success_body(request, f.error_body, feed, kMaxErrorBody);
  f.ex = client.perform(request);
  int failures = 0;
  int in_a_row = 0;  // re-attached streams in a row cut quickly, before they carried output or an end
  auto last_connect = Clock::now();  // when the last Start or Connect began
  while (cut_mid_run(f.ex, stream) && !cancel.stop_requested()) {
    const std::uint32_t pid = *stream.pid();
    if (failures == 0) ++f.cuts;
    if (deadline && Clock::now() >= *deadline) {
      f.deadline_passed = true;
      break;
    }
    if (in_a_row >= kMaxReattachesInARow) {
      f.gave_up = true;
      break;
    }
    for (const auto until = last_connect + kReattachSpacing; Clock::now() < until && !cancel.stop_requested() &&
                                                              !(deadline && Clock::now() >= *deadline);)
      std::this_thread::sleep_for(milliseconds(10));
    if (cancel.stop_requested()) break;
    if (deadline && Clock::now() >= *deadline) {
      f.deadline_passed = true;
      break;
    }
    stream.reattach();
    const auto opened = Clock::now();
    last_connect = opened;
    const auto events_before = stream.events();
    auto again = stub.process_connect_request(pid);
    if (deadline) again.timeout = std::chrono::duration_cast<milliseconds>(*deadline - Clock::now()) + kBackstop;
    again.cancel = cancel;
    ticking(again);
    std::string error_body;
    http::stream_success_body(again, error_body, feed, kMaxErrorBody);
    auto ex = client.perform(again);
    if (stream.started()) {
      ++f.reattached;
      failures = 0;
      // A stream that carried output or the end, or stayed open a while, worked: only quick cuts in a row count.
      in_a_row = stream.events() > events_before || Clock::now() - opened >= kHealthyStream ? 0 : in_a_row + 1;
      f.ex = std::move(ex);
      f.error_body = std::move(error_body);
      continue;  // a new stream of the same process: cut again, re-attach again
    }
    // The Connect never began: envd says the process is gone, or the call itself failed. Giving up keeps the cut
    // as the outcome (f.ex stays the broken exchange): a refused re-attach proves nothing about the process.
    const bool not_found = (stream.stream_closed() && stream.stream_error() == "not_found") ||
                           (ex.ok() && ex.response.status != 200 && connect_error_code(error_body) == "not_found");
    const bool refused = ex.ok() && ex.response.status != 200 &&
                         (is_gone_answer(ex.response.status, error_body) || ex.response.status < 500);
    const bool closed = stream.stream_closed();
    // The stream is again the one that was cut, whatever the failed Connect said.
    stream.abandon_reattach(pid);
    if (not_found) {
      f.not_found = true;
      return f;
    }
    if (refused || closed || ++failures >= kReattachAttempts) return f;
    for (auto until = Clock::now() + kReattachBackoff * failures; Clock::now() < until && !cancel.stop_requested();)
      std::this_thread::sleep_for(milliseconds(10));
  }
  if (deadline && cut_mid_run(f.ex, stream) && Clock::now() >= *deadline) f.deadline_passed = true;
  return f;
}

namespace {

// Go's ProcessState text for a signal (docs/protocols/e2b.md "process.Process/Start": "signal: killed") as the signal's
// name; a text we do not know is kept as it came (bounded).
std::string signal_name(std::string_view status) {
  constexpr std::string_view kPrefix = "signal: ";
  if (status.substr(0, kPrefix.size()) != kPrefix) return {};
  const auto text = status.substr(kPrefix.size());
  constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"killed", "SIGKILL"}, {"terminated", "SIGTERM"}, {"interrupt", "SIGINT"}, {"hangup", "SIGHUP"},
      {"segmentation fault", "SIGSEGV"}, {"aborted", "SIGABRT"}, {"broken pipe", "SIGPIPE"}, {"quit", "SIGQUIT"},
      {"alarm clock", "SIGALRM"}, {"user defined signal 1", "SIGUSR1"}, {"user defined signal 2", "SIGUSR2"}};
  for (const auto& [said, name] : kNames)
    if (text == said) return std::string(name);
  return std::string(text.substr(0, 64));
}

class E2BProcessDriver final : public detail::ProcessDriver {
 public:
  E2BProcessDriver(std::shared_ptr<detail::SandboxLink> link, const E2BStub& stub, http::HttpClient& client,
                   std::function<void(std::string_view)> on_stdout, std::function<void(std::string_view)> on_stderr,
                   bool stdin_pipe, bool attached_late, Timeout lifetime = std::nullopt)
      : detail::ProcessDriver(std::move(link)),
        lifetime_end_(detail::Deadline::after(lifetime, milliseconds(0))),
        client_(client),
        stub_(stub),
        on_stdout_(std::move(on_stdout)),
        on_stderr_(std::move(on_stderr)),
        stream_(on_stdout_ ? &on_stdout_ : nullptr, on_stderr_ ? &on_stderr_ : nullptr, stub_.options.max_output_bytes,
                stub_.options.max_line_bytes),
        stdin_pipe_(stdin_pipe),
        output_lost_(attached_late),
        link_stop_(this->link().token(), std::function<void()>([this] { stop_.request_stop(); })) {}

  ~E2BProcessDriver() override { detach(); }

  /// Sends `request` on the reader thread and waits for the process's `start`, at most E2BOptions::request_timeout.
  /// @throws SandboxExecutionError (stage command) when it did not start: the service's refusal, not found, a
  ///         transport failure, a stream that is not the protocol (kInternal), or no `start` within the bound
  ///         (kTimeout; a pid that came too late is named in the error, for connect_process);
  ///         SandboxNotInitializedError when the sandbox ended meanwhile.
  void start(http::Request request, std::string_view what) {
    const auto bound = detail::Deadline::after(stub_.options.request_timeout, stub_.options.request_timeout);
    reader_ = std::thread([this, request = std::move(request)]() mutable { run(std::move(request)); });
    std::unique_lock lock(mutex_);
    const auto begun = [this] { return pid_.has_value() || finished_; };
    const bool in_time = bound.at ? changed_.wait_until(lock, *bound.at, begun) : (changed_.wait(lock, begun), true);
    if (pid_ && in_time) return;
    lock.unlock();
    detach();
    link().require_alive();
    if (!in_time) {
      const auto late = pid();
      throw SandboxExecutionError(
          std::string(what) + ": envd did not report the process's start within " +
              std::to_string(stub_.options.request_timeout.count()) + " ms" +
              (late ? "; it started as pid " + std::to_string(*late) + ", which connect_process attaches to"
                    : "; the process may have started"),
          Stage::kCommand, ErrorKind::kTimeout);
    }
    if (start_error_) std::rethrow_exception(start_error_);
    throw SandboxExecutionError(std::string(what) + ": the process did not start", Stage::kCommand, ErrorKind::kUnknown);
  }

  /// The stream's `start` must name `pid` (connect_process).
  void expect_pid(std::uint32_t pid) { stream_.expect_pid(pid); }

  void send_stdin(std::string_view bytes) override {
    require_stdin();
    unary(http::Operation::kE2BProcessInput, "SendInput",
          json{{"process", {{"pid", *pid()}}}, {"input", {{"stdin", detail::base64_encode(bytes)}}}}, "send_stdin");
  }

  void close_stdin() override {
    require_stdin();
    unary(http::Operation::kE2BProcessControl, "CloseStdin", json{{"process", {{"pid", *pid()}}}}, "close_stdin");
  }

  void signal(bool kill) override {
    const char* what = kill ? "kill" : "terminate";
    {
      // A process known to have ended is left alone: no signal that could reach a process that took its pid since.
      // One whose fate is unknown (kUnknown) may still run: it is signalled.
      std::lock_guard lock(mutex_);
      if (state_ == ProcessState::kExited || state_ == ProcessState::kSignaled) return;
    }
    try {
      unary(http::Operation::kE2BProcessControl, "SendSignal",
            json{{"process", {{"pid", *pid()}}}, {"signal", kill ? "SIGNAL_SIGKILL" : "SIGNAL_SIGTERM"}}, what);
    } catch (const SandboxExecutionError& e) {
      // A process that already ended is left alone (envd forgets it: not_found).
      if (e.kind() != ErrorKind::kNotFound) throw;
    }
  }

  void detach() override {
    stop_.request_stop();
    if (reader_.joinable() && reader_.get_id() != std::this_thread::get_id()) reader_.join();
  }

 protected:
  void collect_locked(ProcessResult& r) const override {
    r.stdout_text = stream_.out().text();
    r.stderr_text = stream_.err().text();
    r.truncated = stream_.out().truncated() || stream_.err().truncated();
    r.output_lost = output_lost_;
    r.exit_code = exit_code_;
    r.signal = signal_;
    r.error = error_;
    r.failure = failure_;
  }

 private:
  void require_stdin() const {
    if (!stdin_pipe_)
      throw SandboxExecutionError("the process was spawned without stdin_pipe: its stdin cannot be written",
                                  Stage::kCommand, ErrorKind::kInvalidArgument);
  }

  void unary(http::Operation op, std::string_view method, const json& body, std::string_view what) {
    auto request = stub_.process_rpc_request(op, method, body);
    request.cancel = link().token();
    const auto ex = http::perform_with_retries(client_, request);
    link().require_alive();
    if (!ex.success()) throw_call_error(stub_, ex, Stage::kCommand, what);
  }

  bool feed(std::string_view bytes) {
    bool ok = false;
    bool started = false;
    {
      std::lock_guard lock(mutex_);
      ok = stream_.feed(bytes);
      if (!pid_ && stream_.pid()) {
        pid_ = stream_.pid();
        id_ = std::to_string(*pid_);
        started = true;
      }
    }
    if (started) changed_.notify_all();
    return ok;
  }

  void run(http::Request request) {
    const bool was_connect = request.operation == http::Operation::kE2BProcessConnect;
    Followed f;
    try {
      f = follow_process(client_, stub_, std::move(request), stop_.get_token(), std::nullopt, stream_,
                         [this](std::string_view bytes) { return feed(bytes); },
                         [this] {
                           std::lock_guard lock(mutex_);
                           return stream_.flush_idle();
                         });
    } catch (...) {
      std::lock_guard lock(mutex_);
      start_error_ = std::current_exception();
      finished_ = true;
      changed_.notify_all();
      return;
    }
    {
      std::lock_guard lock(mutex_);
      stream_.finish();
      if (f.cuts > 0) output_lost_ = true;
      settle(f, was_connect);
      finished_ = true;
    }
    changed_.notify_all();
  }

  // The end of the reader: the process's state from what the stream said (mutex_ held).
  void settle(const Followed& f, bool was_connect) {
    const auto unknown = [this](std::string type, std::string error) {
      state_ = ProcessState::kUnknown;
      failure_ = FailureDetail{std::move(type), false};
      error_ = std::move(error);
    };
    if (stop_.stop_requested()) return;  // detached, or the sandbox ended: nobody reads the state again
    if (!pid_) {  // it never started: spawn / connect_process throws this
      const std::string what = was_connect ? "connect_process" : "spawn";
      if (stream_.fault() != StreamFault::kNone) {
        start_error_ = std::make_exception_ptr(SandboxExecutionError(
            what + " failed: the sandbox's answer was not the protocol: " + stream_.fault_detail() +
                (was_connect ? "" : "; the process may have started"),
            Stage::kCommand, ErrorKind::kInternal));
        return;
      }
      if (stream_.stream_closed() && !stream_.stream_error().empty()) {
        start_error_ = std::make_exception_ptr(SandboxExecutionError(
            what + " failed: " + stream_.stream_error() + ": " + stub_.service_text(stream_.stream_error_message()),
            Stage::kCommand, connect_error_kind(stream_.stream_error())));
        return;
      }
      try {
        throw_call_error(stub_, f.ex, Stage::kCommand, what);
      } catch (...) {
        start_error_ = std::current_exception();
      }
      return;
    }
    if (stream_.fault() != StreamFault::kNone) {
      ExecutionResult r;
      apply_fault(stream_.fault(), stream_.fault_detail(), r);
      return unknown(r.failure->exception_type, r.error + "; the process may still be running");
    }
    const auto lifetime_ran_out = [this] {
      state_ = ProcessState::kSignaled;
      signal_ = "SIGKILL";
      error_ = "the process's timeout ran out: envd killed it";
    };
    if (stream_.ended()) {
      const auto& end = *stream_.end();
      if (end.exited) {
        state_ = ProcessState::kExited;
        exit_code_ = end.exit_code;
        return;
      }
      // After a re-attach the end comes on a Connect stream, which envd ends with the process's `end` rather than
      // deadline_exceeded when the Start's Connect-Timeout-Ms kills it: a kill once the lifetime ran out is that.
      if (end.status == "signal: killed" && lifetime_end_.expired()) return lifetime_ran_out();
      state_ = ProcessState::kSignaled;
      signal_ = stub_.service_text(signal_name(end.status));
      error_ = stub_.service_text(end.status.empty() ? end.error : end.status);
      return;
    }
    if (f.not_found)
      return unknown("connect.not_found",
                     "the stream was cut and envd no longer knows the process: it ended meanwhile, and its exit "
                     "status cannot be learned");
    if (stream_.stream_error() == "deadline_exceeded") return lifetime_ran_out();
    if (f.gave_up)
      return unknown("connect.reattach_limit",
                     "the stream was cut " + std::to_string(kMaxReattachesInARow) +
                         " times in a row right after re-attaching to the process; re-attaching was given up, and "
                         "the process may still be running");
    if (!stream_.stream_error().empty())
      return unknown("connect." + stream_.stream_error(),
                     stream_.stream_error() + ": " + stub_.service_text(stream_.stream_error_message()));
    if (!f.ex.ok())
      return unknown("curl." + f.ex.curl_code,
                     "the stream broke and could not be re-attached: " + f.ex.message +
                         "; the process may still be running");
    unknown("connect.missing_end_event", "the stream ended without the process's end event");
  }

  detail::Deadline lifetime_end_;  // SpawnOptions::timeout from the spawn: envd kills the process then
  http::HttpClient& client_;
  const E2BStub stub_;  // a copy: the handle never points into its sandbox
  std::function<void(std::string_view)> on_stdout_, on_stderr_;
  ProcessStream stream_;  // guarded by mutex_
  bool stdin_pipe_;
  bool output_lost_;      // guarded by mutex_
  int exit_code_ = -1;    // guarded by mutex_
  std::string signal_, error_;
  std::optional<FailureDetail> failure_;
  bool finished_ = false;
  std::exception_ptr start_error_;
  std::stop_source stop_;
  std::stop_callback<std::function<void()>> link_stop_;
  std::thread reader_;
};

std::uint32_t parse_pid(std::string_view id) {
  std::uint32_t pid = 0;
  const auto* end = id.data() + id.size();
  const auto [p, ec] = std::from_chars(id.data(), end, pid);
  if (ec != std::errc() || p != end || id.front() == '+' || (id.size() > 1 && id.front() == '0'))
    throw std::invalid_argument("an E2B process id is a pid in decimal (1 to 4294967295)");
  if (pid == 0) throw std::invalid_argument("an E2B process id is a pid in decimal (1 to 4294967295)");
  return pid;
}

}  // namespace
}  // namespace e2b

ProcessHandle E2BSandbox::do_spawn(std::string_view command, const SpawnOptions& options) {
  const auto call = impl_->begin_call();  // refuses after terminate
  auto request = impl_->stub.spawn_request(command, options);
  auto driver = std::make_shared<e2b::E2BProcessDriver>(impl_->link, impl_->stub, impl_->client, options.on_stdout,
                                                        options.on_stderr, options.stdin_pipe, false, options.timeout);
  driver->start(std::move(request), "spawn");
  return ProcessHandle(std::move(driver));
}

ProcessHandle E2BSandbox::do_connect_process(std::string_view id, const ProcessConnectOptions& options) {
  const std::uint32_t pid = e2b::parse_pid(id);
  const auto call = impl_->begin_call();
  // envd does not replay what the process wrote before this stream: the handle says output may be missing.
  auto driver = std::make_shared<e2b::E2BProcessDriver>(impl_->link, impl_->stub, impl_->client, options.on_stdout,
                                                        options.on_stderr, true, true);
  driver->expect_pid(pid);
  driver->start(impl_->stub.process_connect_request(pid), "connect_process");
  return ProcessHandle(std::move(driver));
}

std::vector<ProcessInfo> E2BSandbox::do_list_processes() {
  const auto call = impl_->begin_call();
  auto request = impl_->stub.process_rpc_request(http::Operation::kE2BProcessList, "List", nlohmann::json::object());
  request.cancel = call->token();
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (!ex.success()) e2b::throw_call_error(impl_->stub, ex, Stage::kCommand, "list_processes");
  const auto answer = detail::parse_untrusted_json(ex.response.body);
  const auto list = answer.is_object() ? answer.find("processes") : answer.end();
  if (!answer.is_object()) throw SandboxExecutionError("list_processes: the sandbox answered with malformed JSON",
                                                       Stage::kCommand, ErrorKind::kInternal);
  std::vector<ProcessInfo> out;
  if (list == answer.end()) return out;  // protojson omits an empty list
  if (!list->is_array()) throw SandboxExecutionError("list_processes: `processes` is not a list", Stage::kCommand,
                                                     ErrorKind::kInternal);
  for (const auto& p : *list) {
    if (!p.is_object()) continue;
    const auto pid = p.find("pid");
    if (pid == p.end() || !pid->is_number_unsigned() || pid->get<std::uint64_t>() == 0 ||
        pid->get<std::uint64_t>() > 0xffffffffULL)
      continue;  // an entry we could not connect to is no use
    ProcessInfo info;
    info.pid = static_cast<std::uint32_t>(pid->get<std::uint64_t>());
    info.id = std::to_string(*info.pid);
    if (const auto config = p.find("config"); config != p.end() && config->is_object()) {
      if (const auto cmd = config->find("cmd"); cmd != config->end() && cmd->is_string()) info.command = cmd->get<std::string>();
      if (const auto args = config->find("args"); args != config->end() && args->is_array())
        for (const auto& a : *args)
          if (a.is_string()) info.command += " " + a.get<std::string>();
      if (const auto cwd = config->find("cwd"); cwd != config->end() && cwd->is_string()) info.cwd = cwd->get<std::string>();
    }
    if (const auto tag = p.find("tag"); tag != p.end() && tag->is_string()) info.tag = tag->get<std::string>();
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace code_interpreter
