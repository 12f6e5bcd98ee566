// The fake harness's script: the answer docs/errors.md gives for each program of programs.hpp, as a scripted
// FakeSandbox would be told to give it. Programs that touch files read and write the fake's in-memory files;
// programs that run until stopped wait for the call's stop_token or for terminate.
#include <thread>

#include "harness.hpp"
#include "programs.hpp"
#include "../support/bytes.hpp"

namespace contract {

using code_interpreter::test_support::repeat;

namespace {

using ci::ExecutionResult;
using ci::ExecutionStatus;

ExecutionResult ok(std::string out, std::string err = {}) {
  ExecutionResult r;
  r.status = ExecutionStatus::kSuccess;
  r.stdout_text = std::move(out);
  r.stderr_text = std::move(err);
  r.exit_code = 0;
  r.duration = std::chrono::milliseconds(1);
  return r;
}

ExecutionResult failed(int exit_code, std::string name, std::string value, std::string out = {}) {
  ExecutionResult r;
  r.status = ExecutionStatus::kError;
  r.stdout_text = std::move(out);
  r.exit_code = exit_code;
  r.duration = std::chrono::milliseconds(1);
  const std::string traceback =
      "Traceback (most recent call last):\n  File \"<code>\", line 1, in <module>\n" + name + ": " + value + "\n";
  r.code_error = ci::CodeError{name, value, traceback};
  r.error = traceback;
  return r;
}

ExecutionResult unknown(std::string type, std::string error = {}) {
  ExecutionResult r;
  r.status = ExecutionStatus::kUnknown;
  r.failure = ci::FailureDetail{std::move(type), false};
  r.error = std::move(error);
  return r;
}

ExecutionResult never_ran(std::string type, bool state_lost = false) {
  ExecutionResult r;
  r.status = ExecutionStatus::kError;
  r.failure = ci::FailureDetail{std::move(type), true};
  r.state_lost = state_lost;
  return r;
}

ExecutionResult timed_out(ci::TimeoutKind kind, std::string out = {}) {
  ExecutionResult r;
  r.status = ExecutionStatus::kTimeout;
  r.timeout_kind = kind;
  r.stdout_text = std::move(out);
  return r;
}

}  // namespace

FakeHarness::FakeHarness() {
  namespace p = prog;
  auto& fake = fake_;
  auto add = [this](std::string_view code, Handler handler) { catalogue_.emplace(std::string(code), handler); };
  auto fixed = [&add](std::string_view code, ExecutionResult result) {
    add(code, [result](std::string_view, const ci::ExecuteOptions&) { return result; });
  };
  // Runs until the call is cancelled or the sandbox terminated (there is no code to interrupt).
  auto until_stopped = [&fake](std::string out) {
    return [&fake, out](std::string_view, const ci::ExecuteOptions& o) {
      const auto start = std::chrono::steady_clock::now();
      const auto budget = o.timeout && *o.timeout > std::chrono::milliseconds(0)
                              ? *o.timeout
                              : std::chrono::milliseconds(std::chrono::hours(1));
      while (!o.cancel.stop_requested() && !fake.terminated()) {
        if (std::chrono::steady_clock::now() - start >= budget) return timed_out(ci::TimeoutKind::kExecution, out);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      ExecutionResult r = unknown("cancelled");
      r.stdout_text = out;
      r.state_lost = fake.terminated();  // terminate discards the sandbox's state (docs/errors.md "terminate")
      return r;
    };
  };
  auto exists = [&fake](std::string path) {
    return [&fake, path](std::string_view, const ci::ExecuteOptions&) {
      return ok(fake.file(path) ? "True\n" : "False\n");
    };
  };
  auto writes = [&fake](std::string path, std::string data) {
    return [&fake, path, data](std::string_view, const ci::ExecuteOptions&) {
      fake.put_file(path, data);
      return ok({});
    };
  };

  fixed(p::kHi, ok("hi\n"));
  fixed(p::kStderr, ok({}, "oops\n"));
  fixed(p::kBoth, ok("out\n", "err\n"));
  fixed(p::kExit0, ok("a\n"));
  fixed(p::kExitNone, ok({}));
  fixed(p::kDivZero, failed(1, "ZeroDivisionError", "division by zero", "before\n"));
  fixed(p::kSyntaxError, failed(1, "SyntaxError", "invalid syntax"));
  fixed(p::kRaiseValue, failed(1, "ValueError", "bad value"));
  {
    auto value = ok({});
    value.results.push_back(ci::RichResult{{{"text/plain", "42"}}, true});
    fixed(p::kExpression, value);
  }
  // The fake delivers a result's lines once its handler returns (Capabilities::streaming_output false).
  add(p::kLineThenSleep, [](std::string_view, const ci::ExecuteOptions&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return ok("early\nlate\n");
  });
  fixed(p::kMultilineValue, failed(1, "ValueError", "first\nsecond"));
  fixed(p::kExit3, failed(3, "SystemExit", "3"));
  fixed(p::kExitMinus1, failed(-1, "SystemExit", "-1"));
  fixed(p::kExit256, failed(256, "SystemExit", "256"));
  fixed(p::kExitMessage, failed(1, "SystemExit", "message"));
  fixed(p::kExitTrue, failed(1, "SystemExit", "True"));
  fixed(p::kExitHuge, failed(1, "SystemExit", "1099511627781"));
  fixed(p::kExitVeryHuge, failed(1, "SystemExit", "1" + std::string(400, '0')));
  fixed(p::kOwnKeyboardInterrupt, failed(1, "KeyboardInterrupt", "mine"));
  fixed(p::kSurrogate, failed(1, "ValueError", "\\udcff"));
  fixed(p::kOwnClass, failed(1, "CtError", "custom"));
  fixed(p::kEmptyMessage, failed(1, "RuntimeError", ""));
  fixed(p::kChained, failed(1, "KeyError", "'k'"));
  auto warned = failed(1, "OSError", "disk");
  warned.stderr_text = "warn\n";
  fixed(p::kStderrThenRaise, warned);
  fixed(p::kSetX, ok({}));
  fixed(p::kPrintX, ok("42\n"));
  fixed(p::kStatement, ok({}));
  fixed(p::kNoneValue, ok({}));
  fixed(p::kEmpty, ok({}));
  fixed(p::kPass, ok({}));
  add(p::kWriteMarker, writes("ct_marker.txt", "ran"));
  add(p::kReadMarker, exists("ct_marker.txt"));
  add(p::kEnvGreeting, [](std::string_view, const ci::ExecuteOptions& o) {
    const auto it = o.env.find("CT_GREETING");
    return ok((it == o.env.end() ? std::string("None") : it->second) + "\n");
  });
  add(p::kEnvTwo, [](std::string_view, const ci::ExecuteOptions& o) {
    return ok(o.env.at("CT_A") + " " + o.env.at("CT_B") + "\n");
  });
  add(p::kSleepShort, [](std::string_view, const ci::ExecuteOptions&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = ok("slept\n");
    r.duration = std::chrono::milliseconds(100);
    return r;
  });

  const std::string f = "\xef\xbf\xbd";
  fixed(p::kLines, ok("line 0\nline 1\nline 2\ntail"));
  fixed(p::kStderrLines, ok({}, "e1\ne2\ne3"));
  fixed(p::kIllFormed, ok("a" + f + "b" + f + "c" + f + "d" + f + f + f + "e\n"));
  fixed(p::kIllFormedStderr, ok({}, "x" + f + "(y\n"));
  fixed(p::kUnicode, ok("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\n"));
  fixed(p::kLongLine, ok(repeat("\xe2\x82\xac", 30000) + "\n"));
  fixed(p::kPartial, ok("x"));
  fixed(p::kAfterPartial, ok("y\n"));
  fixed(p::kOverCap, ok(std::string(150000, 'a') + "\n"));
  fixed(p::kOverCapWide, ok(repeat("\xe2\x82\xac", 50000) + "\n"));
  fixed(p::kOverCapStderr, ok({}, std::string(150000, 'b')));
  fixed(p::kAtCap, ok(std::string(kOutputCap, 'c')));
  fixed(p::kThreeLines, ok("one\ntwo\nthree\n"));
  fixed(p::kThreeErrLines, ok({}, "one\ntwo\n"));
  fixed(p::kMixed, ok("o1\no2\n", "e1\n"));
  fixed(p::kNoNewline, ok("no newline"));
  fixed(p::kBlankLines, ok("\n\nz\n"));
  fixed(p::kNulInOutput, ok(std::string("a\0b\tc\n", 6)));
  std::string thousand;
  for (int i = 0; i < 1000; ++i) thousand += std::to_string(i) + "\n";
  fixed(p::kThousandLines, ok(thousand));

  add(p::kBusy, until_stopped({}));
  add(p::kStartedThenBusy, until_stopped("started\n"));
  fixed(p::kSetZ, ok({}));
  fixed(p::kPrintZ, ok("kept\n"));
  add(p::kCancelWrite, writes("ct_cancel.txt", "ran"));
  add(p::kCancelCheck, exists("ct_cancel.txt"));

  add(p::kCodeWrites, writes("ct_code.txt", "from code"));
  add(p::kCodeReads, [&fake](std::string_view, const ci::ExecuteOptions&) {
    return ok(fake.file("ct_host.txt").value_or("") + "\n");
  });
  add(p::kReadAttachment, [&fake](std::string_view, const ci::ExecuteOptions&) {
    return ok(fake.file("ct_up/in.txt").value_or("") + "\n");
  });
  add(p::kReadBinaryAttachment, [&fake](std::string_view, const ci::ExecuteOptions&) {
    const auto data = fake.file("ct_up/all.bin").value_or("");
    std::string all;
    for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
    return ok(std::to_string(data.size()) + (data == all ? " True\n" : " False\n"));
  });
  add(p::kAttachmentCount, [&fake](std::string_view, const ci::ExecuteOptions&) {
    std::string names;
    for (const auto& e : fake.list_files("ct_up")) names += (names.empty() ? "'" : ", '") + e.name + "'";
    return ok("[" + names + "]\n");
  });

  fixed(p::kThreadA, ok("from a\n"));
  fixed(p::kThreadB, ok("from b\n"));
  add(p::kFaultWrite, [&fake](std::string_view, const ci::ExecuteOptions&) {
    fake.put_file("ct_fault.txt", "ran");
    return ok("ran\n");
  });
  // Commands: the fake has no shell (pyodide_like_capabilities), so execute_command is its local refusal.
}

ExecutionResult FakeHarness::dispatch(std::string_view code, const ci::ExecuteOptions& options) {
  // What the real backends check before sending: their local refusals and a stop already requested.
  std::size_t env_bytes = 0;
  for (const auto& [name, value] : options.env) env_bytes += name.size() + value.size();
  if (code.size() > (16u << 20) || env_bytes > (512u << 10)) {
    ExecutionResult r;
    r.status = ExecutionStatus::kError;
    r.error = "refused before sending";
    return r;
  }
  if (options.cancel.stop_requested()) return never_ran("cancelled");
  std::optional<Fault> fault;
  {
    std::lock_guard lock(mutex_);
    fault.swap(fault_);
  }
  if (fault) {
    switch (*fault) {
      case Fault::kGateway502:
        fake_.put_file("ct_fault.txt", "ran");
        return unknown("http.502", "execute: HTTP 502; the request had been sent, so the code may have run");
      case Fault::kThrottled429: return never_ran("http.429");
      case Fault::kStatus201: return unknown("http.201");
      case Fault::kResetAfterHeaders: return unknown("curl.PARTIAL_FILE");
      case Fault::kResetBeforeAnswer: return unknown("curl.RECV_ERROR");
      case Fault::kStall: return timed_out(ci::TimeoutKind::kExecution);
      case Fault::kSandboxGone: return never_ran("http.502", true);
      case Fault::kUploadRefused: return never_ran("http.507");
      case Fault::kReadUnavailable:
      case Fault::kReadStall:
      case Fault::kExistsUnavailable:  // FakeSandbox's exists is not scripted: CONTRACT_SERVER_SCENARIO only
      case Fault::kExistsGone:
      case Fault::kExistsMalformed: break;
    }
  }
  const auto it = catalogue_.find(code);
  if (it == catalogue_.end()) {
    FAIL_CHECK("FakeHarness has no scripted answer for: " << code);
    return unknown("fake.unscripted");
  }
  return it->second(code, options);
}

}  // namespace contract
