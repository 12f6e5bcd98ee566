// AgentCore sessions (docs/protocols/bedrock.md "Session operations"): start (with the recovery of a lost start),
// stop, status, additional_packages, and the lifecycle of BedrockAgentCoreSandbox.
#include "core/declared_capabilities.hpp"
#include "code_interpreter/logging.hpp"
#include "core/defaults.hpp"
#include "core/nested.hpp"
#include "core/outcome.hpp"
#include "core/sandbox_tag.hpp"
#include "bedrock/bedrock_impl.hpp"
#include "http/outcome.hpp"

namespace code_interpreter {

using detail::Deadline;
using std::chrono::milliseconds;

http::RetryHooks BedrockAgentCoreSandbox::Impl::deadline_hooks(const Deadline& deadline) {
  http::RetryHooks hooks;
  // Each attempt gets only what is left, so retries cannot stretch the operation past its deadline.
  hooks.prepare = [deadline](http::Request& request) { request.timeout = deadline.bound(request.timeout); };
  hooks.sleep = [deadline](milliseconds delay, std::stop_token cancel) {
    return deadline.allows(delay) && http::interruptible_sleep(delay, cancel);
  };
  return hooks;
}

template <typename Error>
void BedrockAgentCoreSandbox::Impl::throw_service_error(const http::Exchange& ex, Stage stage, std::string_view what) const {
  if (ex.ok()) {
    const auto e = stub.aws_error(ex.response, ex.response.body);
    const std::string said = e.code + (e.message.empty() ? "" : ": " + e.message);
    detail::throw_nested(Error(std::string(what) + " failed: HTTP " + std::to_string(ex.response.status) + " " + said,
                               stage, bedrock::aws_error_kind(e.code, ex.response.status)),
                         http::to_transport_error(ex, what, said));
  }
  const auto cause = http::to_transport_error(ex, what);
  if (ex.failure == http::Failure::kCancelled)
    detail::throw_nested(Error(std::string(what) + " was cancelled", stage, ErrorKind::kUnknown), cause);
  detail::throw_nested(Error(std::string(what) + " failed: " + cause.what(), stage, http::error_kind(ex)), cause);
}

void BedrockAgentCoreSandbox::Impl::start(const Deadline& deadline) {
  // One clientToken for every attempt: the service's idempotency key makes the retries safe.
  auto req = stub.start_request();
  req.cancel = stub.options.cancel;
  req.timeout = deadline.bound(stub.options.request_timeout);
  // Any attempt sent but unanswered (lost, timed out, cancelled) may have started a session, even when a later
  // attempt was answered with an error or never reached the service.
  bool lost = false;
  const auto lost_attempt = [&lost](const http::Exchange& e) { lost = lost || (!e.ok() && e.request_written); };
  auto hooks = deadline_hooks(deadline);
  hooks.before_retry = [&lost_attempt](const http::Exchange& e) {
    lost_attempt(e);
    return true;
  };
  const auto ex = http::perform_with_retries(client, req, {}, hooks);
  if (!ex.success()) {
    lost_attempt(ex);
    if (lost) stop_lost_session(req);
    throw_service_error<SandboxStartError>(ex, Stage::kCreate, "StartCodeInterpreterSession");
  }
  auto id = bedrock::AgentCoreStub::session_id_of(ex.response.body);
  if (!id)
    throw SandboxStartError("StartCodeInterpreterSession answered without a usable sessionId", Stage::kCreate,
                            ErrorKind::kInternal);
  stub.session_id = std::move(*id);
}

// A session whose Start answer was lost would run, billed, until its timeout with no handle to stop it. Start is
// idempotent by its clientToken (docs/protocols/bedrock.md "Session operations"): the same request again answers
// with that session (or starts it), which is then stopped. Best effort, with a budget of its own: the caller's
// deadline or cancellation may be what ended the Start, and must not skip the cleanup (create may so overrun
// create_timeout by up to 20 s).
void BedrockAgentCoreSandbox::Impl::stop_lost_session(http::Request start_request) {
  constexpr milliseconds kCleanup{std::chrono::seconds(10)};
  start_request.cancel = {};
  start_request.timeout = Deadline::after(kCleanup, kCleanup).bound(stub.options.request_timeout);
  const auto again = client.perform(start_request);
  auto id = again.success() ? bedrock::AgentCoreStub::session_id_of(again.response.body) : std::nullopt;
  if (!id) {
    logger()->warn("bedrock: a Start was sent but not answered, and its session could not be found to stop it; "
                   "if it started, it ends by itself after {} s",
                   stub.options.session_timeout.count());
    return;
  }
  stub.session_id = std::move(*id);
  if (!stopped(stop(Deadline::after(kCleanup, kCleanup))))
    logger()->warn("bedrock: session {} started without an answer and could not be stopped; it ends by itself after "
                   "{} s", stub.session_id, stub.options.session_timeout.count());
  stub.session_id.clear();
}

http::Exchange BedrockAgentCoreSandbox::Impl::stop(const Deadline& deadline) {
  auto req = stub.stop_request();
  req.timeout = deadline.bound(stub.options.request_timeout);
  return http::perform_with_retries(client, req, {}, deadline_hooks(deadline));
}

bool BedrockAgentCoreSandbox::Impl::stopped(const http::Exchange& ex) {
  // ResourceNotFound: already stopped or expired (docs/protocols/bedrock.md "Session operations").
  return ex.success() || (ex.ok() && ex.response.status == 404);
}

std::optional<std::string> BedrockAgentCoreSandbox::Impl::status_of_session(milliseconds timeout) {
  auto req = stub.get_session_request();
  req.timeout = timeout;
  const auto ex = client.perform(req);
  if (ex.ok() && ex.response.status == 404) return std::string("TERMINATED");
  if (!ex.success()) return std::nullopt;
  return bedrock::AgentCoreStub::session_status_of(ex.response.body);
}

// `budget`: the caller's create_timeout, which `deadline` bounds.
void BedrockAgentCoreSandbox::Impl::install_packages(const Deadline& deadline, milliseconds budget,
                                                     const std::vector<std::string>& packages) {
  if (packages.empty()) return;
  if (language != Language::kPython) {
    logger()->warn("bedrock: additional_packages skipped: the session's language is {}, not python",
                   to_string(language));
    return;
  }
  std::string cmd = "python3 -m pip install --disable-pip-version-check -q --";
  for (const auto& p : packages) cmd += " " + bedrock::shell_quote(p);
  CommandOptions install;
  install.timeout = deadline.at ? std::optional(deadline.bound(milliseconds(0))) : std::optional(kNoTimeout);
  install.cancel = stub.options.cancel;
  const auto result = command(cmd, install);
  if (result.status == ExecutionStatus::kSuccess) return;
  if (!stopped(stop(Deadline::after(std::nullopt, stub.options.request_timeout * 2))))
    logger()->warn("bedrock: could not stop session {} after a failed install", stub.session_id);
  calls.mark_terminated();
  throw detail::install_packages_error(result, stub.options.cancel, budget);
}

// ---- BedrockAgentCoreSandbox ----

// The language and packages are the options' (the stub keeps them).
BedrockAgentCoreSandbox::BedrockAgentCoreSandbox(std::unique_ptr<Impl> impl)
    : CodeInterpreterSandbox(impl->stub.options.language, impl->stub.options.additional_packages),
      impl_(std::move(impl)) {}

std::unique_ptr<BedrockAgentCoreSandbox> BedrockAgentCoreSandbox::create(BedrockOptions options) {
  const auto [deadline, budget] = detail::create_budget(options.create_timeout);
  options.tag = detail::tag_for_create(options.tag);
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->start(deadline);  // before the sandbox exists: a failed start leaves no destructor to stop a session
  std::unique_ptr<BedrockAgentCoreSandbox> sandbox(new BedrockAgentCoreSandbox(std::move(impl)));
  sandbox->impl_->install_packages(deadline, budget, sandbox->additional_packages());
  return sandbox;
}

BedrockAgentCoreSandbox::~BedrockAgentCoreSandbox() {
  if (impl_->calls.terminated()) return;
  detail::terminate_on_destruction([this] { do_terminate(std::nullopt); }, "bedrock", "session",
                                   impl_->stub.session_id, "stopped");
}

std::optional<std::string> BedrockAgentCoreSandbox::sandbox_id() const { return impl_->stub.session_id; }

Capabilities BedrockAgentCoreSandbox::capabilities() const { return detail::bedrock_capabilities(impl_->stub.options); }

Capabilities detail::bedrock_capabilities(const BedrockOptions& options) {
  // No network in SANDBOX mode, the built-in interpreter's: it reaches S3 and DNS only (docs/protocols/bedrock.md
  // "Interpreters and session lifetime"); PUBLIC reaches the internet, VPC the customer's network. No interrupt: an executeCode cannot be stopped. A relative upload
  // directory: the service rejects absolute paths (docs/protocols/bedrock.md "File tools"). The result event holds
  // the output and no value of the last expression (docs/protocols/bedrock.md "Tools").
  const auto& mode = options.interpreter_network_mode;
  auto c = detail::cloud_capabilities({.network = mode != "SANDBOX", .interrupt = false, .expression_results = false,
                                       .streaming_output = false},
                                      {Language::kPython, Language::kJavaScript, Language::kTypeScript},
                                      detail::kRelativeUploadDir);
  // Only all() can be honoured, and only by a PUBLIC interpreter (bedrock/stub.cpp check_network_mode).
  if (mode == "PUBLIC") c.network_policies = {NetworkAccess::kAll};
  // Tasks (docs/protocols/bedrock.md "Tools"): startCommandExecution, getTask by id, stopTask; no stdin, no listing
  // of tasks, no signals.
  c.processes = c.process_connect = true;
  // exists, get_info, copy, move and variables run as Python in the session; restart is executeCode's clearContext
  // (Python only). No interrupt_call: an executeCode cannot be stopped.
  const bool python = options.language == Language::kPython;
  c.file_info = c.file_move = c.file_copy = python;
  c.restart = c.variables = python;
  return c;
}

std::string BedrockAgentCoreSandbox::session_status() {
  const auto call = impl_->calls.begin();
  auto status = impl_->status_of_session(impl_->stub.options.request_timeout);
  if (!status)
    throw SandboxExecutionError("GetCodeInterpreterSession failed", Stage::kExecute, ErrorKind::kUnavailable);
  return *status;
}

void BedrockAgentCoreSandbox::do_set_timeout(std::chrono::seconds lease) {
  const auto call = impl_->calls.begin();
  // A session's lifetime is fixed at start; nothing extends it (docs/protocols/bedrock.md "Interpreters and session lifetime").
  logger()->debug("bedrock: set_timeout({} s) ignored: session {} ends {} s after its start", lease.count(),
                  impl_->stub.session_id, impl_->stub.options.session_timeout.count());
}

void BedrockAgentCoreSandbox::do_terminate(Timeout timeout) {
  if (!impl_->calls.cancel_all()) return;
  const auto ex = impl_->stop(Deadline::after(timeout, impl_->stub.options.request_timeout * 2));
  if (Impl::stopped(ex)) {
    impl_->calls.mark_terminated();
    impl_->link->end();
    return;
  }
  impl_->calls.terminate_failed();
  impl_->throw_service_error<SandboxTerminateError>(ex, Stage::kTerminate, "StopCodeInterpreterSession");
}

}  // namespace code_interpreter
