// E2B's execute_code and contexts (docs/backends/e2b.md "Executing code"): the /execute stream (e2b/streams.hpp)
// turned into a result, and the outcome rules execute shares with commands.
#include <charconv>

#include "core/defaults.hpp"
#include "core/outcome.hpp"
#include "core/random_id.hpp"
#include "core/untrusted.hpp"
#include "e2b/e2b_impl.hpp"

namespace code_interpreter {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

void finish_code_result(ExecutionResult& r) {
  if (!r.code_error) {
    r.status = ExecutionStatus::kSuccess;
    r.exit_code = 0;
    return;
  }
  const CodeError& e = *r.code_error;
  if (e.name == "SystemExit") {
    // sys.exit() / sys.exit(0) / sys.exit(None) end the code successfully (docs/backends/e2b.md "Executing code"); so
    // does sys.exit(False), as CPython exits with status 0 for it (the value is str() of the code).
    if (e.value.empty() || e.value == "0" || e.value == "None" || e.value == "False") {
      r.status = ExecutionStatus::kSuccess;
      r.exit_code = 0;
      r.code_error.reset();
      return;
    }
    // str() of an int code is digits with an optional '-'; anything else (" 3", "+3": only a str code prints so)
    // exits 1, as CPython does.
    int n = 1;
    if (const auto [end, ec] = std::from_chars(e.value.data(), e.value.data() + e.value.size(), n);
        ec != std::errc() || end != e.value.data() + e.value.size())
      n = 1;
    r.status = ExecutionStatus::kError;
    r.exit_code = n;
    r.error = e.traceback.empty() ? e.name + ": " + e.value : e.traceback;
    return;
  }
  r.status = ExecutionStatus::kError;
  r.exit_code = 1;
  r.error = e.traceback.empty() ? e.name + ": " + e.value : e.traceback;
}

}  // namespace

namespace e2b {

void apply(const http::Verdict& verdict, ExecutionResult& r) {
  r.status = verdict.status;
  r.timeout_kind = verdict.timeout_kind;
  r.failure = verdict.failure;
  r.error = verdict.message;
  r.exit_code = -1;
}

void apply_fault(StreamFault fault, const std::string& detail, ExecutionResult& r) {
  if (fault == StreamFault::kCallbackThrew) return detail::mark_callback_threw(r, detail);
  r.status = ExecutionStatus::kUnknown;
  r.exit_code = -1;
  r.timeout_kind.reset();
  r.failure = FailureDetail{fault == StreamFault::kOversize ? "protocol.oversize" : "protocol.malformed", false};
  r.error = "the sandbox's answer was not the protocol: " + detail;
}

void unexpected_status(int status, std::string_view what, ExecutionResult& r) {
  r.status = ExecutionStatus::kUnknown;
  r.exit_code = -1;
  r.timeout_kind.reset();
  r.failure = FailureDetail{"http." + std::to_string(status), false};
  r.error = std::string(what) + ": unexpected HTTP " + std::to_string(status) + "; the code may have run";
}

}  // namespace e2b

bool E2BSandbox::Impl::sandbox_gone() {
  auto request = stub.health_request();
  request.timeout = std::chrono::seconds(5);
  const auto ex = client.perform(request);
  return ex.ok() && e2b::is_gone_answer(ex.response.status, ex.response.body);
}

// A 4xx is the service's refusal and the sandbox-not-found answer shows the sandbox gone before the call; any other
// 5xx may come from a proxy after the code was taken, so nothing is known.
ExecutionResult E2BSandbox::Impl::answered_error(ExecutionResult& r, int status, std::string_view body,
                                                 std::string_view what) const {
  const bool gone = e2b::is_gone_answer(status, body);
  e2b::apply(http::answered(status, gone, "http." + std::to_string(status), what, stub.service_text(body)), r);
  if (gone) {
    r.error = "the sandbox is gone (it expired or was killed)";
    r.state_lost = true;
  }
  return std::move(r);
}

void E2BSandbox::Impl::transport_failure(const http::Exchange& ex, std::string_view what, ExecutionResult& r) {
  e2b::apply(http::classify(ex, TimeoutKind::kExecution, what), r);
  // A stream that broke after the code started: if the sandbox itself is gone, it died during the call.
  if (r.status == ExecutionStatus::kUnknown && ex.request_written && ex.failure != http::Failure::kCancelled &&
      sandbox_gone())
    detail::mark_sandbox_lost(r, std::string(what) + ": the sandbox was lost during the call");
}

ExecutionResult E2BSandbox::Impl::execute(std::optional<std::string_view> context_id, std::string_view code,
                                          const ExecuteOptions& o) {
  e2b::require_utf8(code, "execute: the code");
  if (context_id) e2b::require_utf8(*context_id, "execute: the context id");
  const auto call = begin_call(o.cancel, /*interruptible=*/true);
  ExecutionResult r;
  r.code = std::string(code);

  if (!o.files.empty()) {
    const auto ex = upload(o.upload_dir.value_or(std::string(detail::kUploadDir)), o.files, call->token());
    if (!ex.success()) {
      // The code has not run: whatever broke, a retry cannot duplicate it (uploads overwrite).
      if (ex.ok()) {
        const int status = ex.response.status;
        return detail::never_ran(r.code, "upload refused: HTTP " + std::to_string(status) + ": " + stub.service_text(ex.response.body),
                                 FailureDetail{"http." + std::to_string(status), true},
                                 e2b::is_gone_answer(status, ex.response.body));
      }
      const auto verdict = http::classify(ex, TimeoutKind::kRequest, "upload");
      return detail::never_ran(r.code, verdict.message,
                               FailureDetail{verdict.failure ? verdict.failure->exception_type : "curl." + ex.curl_code, true});
    }
  }
  const auto started = Clock::now();  // duration is the execution itself, after the uploads (execution.hpp)

  const milliseconds budget = o.timeout.value_or(detail::kDefaultExecuteTimeout);
  auto request = stub.execute_request(context_id, code, language, o.env, budget);
  e2b::ExecuteStream stream(o.on_stdout ? &o.on_stdout : nullptr, o.on_stderr ? &o.on_stderr : nullptr,
                            stub.options.max_output_bytes, stub.options.max_line_bytes);
  std::string error_body;
  const auto ex = perform_streamed(request, call->token(), stream, error_body);
  // Absent when the code was never sent (execution.hpp): e.g. a call cancelled before it started.
  if (ex.request_written) r.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);

  if (ex.ok() && ex.response.status == 200) {
    // A cleanly finished body is complete even without end_of_execution (docs/backends/e2b.md "Executing code").
    const bool clean = stream.finish();
    stream.collect(r);
    if (!clean) {
      e2b::apply_fault(stream.fault(), stream.fault_detail(), r);
      return r;
    }
    // The interpreter's first line comes from the kernel taking the code (docs/protocols/e2b.md "Fields of the
    // /execute events"): a 200 without a single event (an empty body, or blank lines) does not show the code ran,
    // let alone to its end.
    if (!stream.started()) {
      e2b::apply_fault(e2b::StreamFault::kMalformed, "a 200 answer without any event", r);
      return r;
    }
    finish_code_result(r);
    return r;
  }
  if (ex.ok() && ex.response.status < 400) {
    // Neither the stream nor a refusal (a 201, 204, redirect...): nothing says the code did not run.
    e2b::unexpected_status(ex.response.status, "execute", r);
    return r;
  }
  if (ex.ok()) return answered_error(r, ex.response.status, error_body, "execute");
  stream.finish_output();
  stream.collect(r);
  if (stream.fault() != e2b::StreamFault::kNone) {
    e2b::apply_fault(stream.fault(), stream.fault_detail(), r);
    return r;
  }
  transport_failure(ex, "execute", r);
  if (r.status == ExecutionStatus::kTimeout && r.timeout_kind == TimeoutKind::kExecution)
    r.error = "execute: the execution timed out after " + std::to_string(budget.count()) +
              " ms; the connection was closed, which interrupts the code";
  return r;
}

// ---- E2BSandbox: execution and contexts ----

ExecutionResult E2BSandbox::do_execute_code(std::string_view code, const ExecuteOptions& options) {
  return impl_->calls.settled(impl_->execute(std::nullopt, code, options));
}

ExecutionResult E2BSandbox::execute_in_context(std::string_view context_id, std::string_view code,
                                               const ExecuteOptions& options) {
  if (context_id.empty()) throw std::invalid_argument("context_id is empty");
  check_execute_options(options);
  return impl_->calls.settled(impl_->execute(context_id, code, options));
}

E2BContext E2BSandbox::create_context(Language language, std::optional<std::string> cwd) {
  if (cwd) e2b::require_utf8(*cwd, "create_context: the cwd");
  json body = {{"language", to_string(language)}};
  if (cwd) body["cwd"] = *cwd;
  // A re-sent create could start a second kernel: the idempotency table retries it only when nothing was written.
  auto request = impl_->stub.sandbox_request(http::Operation::kE2BCreateContext, e2b::kInterpreterPort, "POST",
                                             "/contexts", body.dump());
  request.headers.emplace_back("Content-Type", "application/json");
  const auto ex = impl_->call(std::move(request), Stage::kExecute, "create_context");
  if (auto context = e2b::E2BStub::decode_context(detail::parse_untrusted_json(ex.response.body))) return *context;
  throw SandboxExecutionError("create_context: malformed answer", Stage::kExecute, ErrorKind::kInternal);
}

std::vector<E2BContext> E2BSandbox::list_contexts() {
  const auto ex = impl_->call(impl_->stub.sandbox_request(http::Operation::kE2BListContexts, e2b::kInterpreterPort,
                                                          "GET", "/contexts"),
                              Stage::kExecute, "list_contexts");
  const json answer = detail::parse_untrusted_json(ex.response.body);
  if (!answer.is_array()) throw SandboxExecutionError("list_contexts: malformed answer", Stage::kExecute, ErrorKind::kInternal);
  std::vector<E2BContext> contexts;
  for (const auto& c : answer)
    if (auto context = e2b::E2BStub::decode_context(c)) contexts.push_back(std::move(*context));
  return contexts;
}

void E2BSandbox::restart_context(std::string_view context_id) {
  if (context_id.empty()) throw std::invalid_argument("context_id is empty");
  (void)impl_->call(impl_->stub.sandbox_request(http::Operation::kE2BRestartContext, e2b::kInterpreterPort, "POST",
                                                "/contexts/" + http::url_encode(context_id) + "/restart"),
                    Stage::kExecute, "restart_context");
}

void E2BSandbox::remove_context(std::string_view context_id) {
  if (context_id.empty()) throw std::invalid_argument("context_id is empty");
  (void)impl_->call(impl_->stub.sandbox_request(http::Operation::kE2BRemoveContext, e2b::kInterpreterPort, "DELETE",
                                                "/contexts/" + http::url_encode(context_id)),
                    Stage::kExecute, "remove_context");
}

// ---- E2BSandbox: interrupt, restart, variables ----

void E2BSandbox::do_interrupt() {
  // The only interrupt E2B has is closing the /execute stream: the code interpreter then interrupts its kernel,
  // which keeps its state (docs/protocols/e2b.md "Code interpreter"). The call returns as a cancelled one does.
  impl_->calls.interrupt_running();
}

void E2BSandbox::do_restart() {
  // execute_code runs in the code interpreter's default context of the sandbox's language, which GET /contexts does
  // not mark: it lists every context (the defaults, and any create_context made) with no promise of order
  // (docs/protocols/e2b.md "Code interpreter"). So the default is found by what it holds: execute_code sets a global
  // to a fresh nonce, and the context of that language whose globals hold it is the one restarted. Contexts are
  // asked in the listed order and the search stops at the first that answers; each probe waits behind a call
  // running in that context.
  const std::string language(to_string(impl_->language));
  if (impl_->language != Language::kPython)
    throw SandboxExecutionError("restart: the default context is found by Python code; this sandbox runs " + language,
                                Stage::kExecute, ErrorKind::kUnsupported);
  const std::string nonce = detail::random_hex(16);
  const auto set = execute_code("_code_interpreter_default_context = '" + nonce + "'");
  if (set.status != ExecutionStatus::kSuccess)
    throw SandboxExecutionError("restart: marking the default context failed (" + std::string(to_string(set.status)) +
                                    "): " + set.error,
                                Stage::kExecute, detail::error_kind_of(set));
  for (const auto& context : list_contexts()) {
    if (context.language != language) continue;
    const auto probe =
        execute_in_context(context.id, "print(globals().get('_code_interpreter_default_context'), end='')");
    if (probe.status == ExecutionStatus::kSuccess && probe.stdout_text == nonce) {
      restart_context(context.id);
      return;
    }
  }
  throw SandboxExecutionError("restart: no " + language +
                                  " context the code interpreter lists is the one execute_code runs in",
                              Stage::kExecute, ErrorKind::kNotFound);
}

void E2BSandbox::do_set_variable(std::string_view name, const std::string& value_json) {
  set_variable_by_code(name, value_json);
}

nlohmann::json E2BSandbox::do_get_variable(std::string_view name) { return get_variable_by_code(name); }

}  // namespace code_interpreter
