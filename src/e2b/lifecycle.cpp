// E2B's lifecycle (docs/backends/e2b.md): create with the cleanup of lost creates, connect, additional_packages,
// the lease, terminate. Requests and answers are the stub's (e2b/stub.hpp).
#include <nlohmann/json.hpp>

#include "core/declared_capabilities.hpp"
#include "code_interpreter/logging.hpp"
#include "core/defaults.hpp"
#include "core/nested.hpp"
#include "core/outcome.hpp"
#include "core/random_id.hpp"
#include "core/sandbox_tag.hpp"
#include "e2b/e2b_impl.hpp"

namespace code_interpreter {
namespace {

using nlohmann::json;
using detail::Deadline;
using detail::throw_nested;
using std::chrono::milliseconds;

constexpr milliseconds kCleanupBudget{std::chrono::seconds(20)};  // finding and killing what a lost create made

// A create whose request was written but whose answer did not arrive (or was a 5xx) may have made a sandbox.
bool may_have_created(const http::Exchange& ex) { return ex.request_written && (!ex.ok() || ex.response.status >= 500); }

// 404: already gone, which is what a kill wants (docs/protocols/e2b.md "Control plane").
bool killed(const http::Exchange& ex) { return ex.success() || (ex.ok() && ex.response.status == 404); }

}  // namespace

http::RetryHooks E2BSandbox::Impl::deadline_hooks(const Deadline& deadline) {
  http::RetryHooks hooks;
  hooks.sleep = [deadline](milliseconds delay, std::stop_token cancel) {
    return deadline.allows(delay) && http::interruptible_sleep(delay, cancel);
  };
  // Each attempt gets only what is left: a Retry-After sleep must not extend a later attempt past the deadline.
  hooks.prepare = [deadline](http::Request& request) { request.timeout = deadline.bound(request.timeout); };
  return hooks;
}

void E2BSandbox::Impl::throw_start_error(const http::Exchange& ex, Stage stage, std::string_view what) const {
  const std::string said = ex.ok() ? stub.service_text(ex.response.body) : std::string();
  const auto cause = http::to_transport_error(ex, what, said);
  if (ex.failure == http::Failure::kCancelled)
    throw_nested(SandboxStartError(std::string(what) + " was cancelled", stage, ErrorKind::kUnknown), cause);
  throw_nested(SandboxStartError(std::string(what) + " failed: " + cause.what(), stage, http::error_kind(ex)), cause);
}

// Finds the sandboxes a create may have made (by the client token in their metadata) and kills them; true when the
// listing worked and every kill did. It has a budget of its own (kCleanupBudget for the listing and the kills
// together) and is never cancelled: the caller's deadline or cancellation may be what ended the create, and must
// not leave a sandbox running unnoticed. So a create that fails this way may return up to kCleanupBudget after
// create_timeout.
bool E2BSandbox::Impl::cleanup_by_token(const std::string& token) {
  const auto budget = Deadline::after(kCleanupBudget, kCleanupBudget);
  auto list = stub.list_by_token_request(token);
  list.timeout = budget.bound(list.timeout);
  const auto listed = http::perform_with_retries(client, list, {}, deadline_hooks(budget));
  if (!listed.success()) {
    logger()->error("e2b: could not list sandboxes to clean up a lost create ({})", http::to_transport_error(listed, "list").what());
    return false;
  }
  const auto found = e2b::E2BStub::sandboxes_with_token(listed.response.body, token);
  if (!found) return false;
  bool all = true;
  for (const auto& found_id : *found) {
    auto kill = stub.kill_request(found_id);
    kill.timeout = budget.bound(kill.timeout);
    const bool ok = killed(http::perform_with_retries(client, kill, {}, deadline_hooks(budget)));
    if (ok) logger()->warn("e2b: killed sandbox {} left by a create whose answer was lost", found_id);
    else logger()->error("e2b: could not kill sandbox {} left by a lost create", found_id);
    all = all && ok;
  }
  return all;
}

void E2BSandbox::Impl::create_sandbox(const Deadline& deadline) {
  const std::string token = detail::random_hex(16);
  bool left_unknown = false;  // a create that may have made a sandbox we could not clean up
  auto hooks = deadline_hooks(deadline);
  // Transient answers are retried (the idempotency table: kAfterCleanup); a create that may have been processed is
  // cleaned up first, which is what makes retrying a non-idempotent create safe (docs/backends/e2b.md "Create
  // retries and lost creates").
  bool cleaned = false;  // what the latest attempt may have made was already cleaned up
  hooks.prepare = [&cleaned, prepare = hooks.prepare](http::Request& request) {
    cleaned = false;
    prepare(request);
  };
  hooks.before_retry = [&](const http::Exchange& ex) {
    if (!may_have_created(ex)) return true;
    if (!cleanup_by_token(token)) {
      left_unknown = true;
      return false;
    }
    cleaned = true;
    return true;
  };

  http::Exchange ex;
  for (int round = 0; round < 2; ++round) {
    auto request = stub.create_request(round == 1, token);
    request.cancel = stub.options.cancel;
    request.timeout = deadline.bound(stub.options.request_timeout);
    ex = http::perform_with_retries(client, request, {}, hooks);
    // Older or self-hosted APIs have only v1 (docs/protocols/e2b.md "Control plane"); a 404 about the template is the template's.
    const bool no_v2 = ex.ok() && (ex.response.status == 405 ||
                                   (ex.response.status == 404 && ex.response.body.find("emplate") == std::string::npos));
    if (round == 0 && no_v2) continue;
    break;
  }
  if (ex.success()) {
    try {
      stub.accept_sandbox_answer(ex.response.body, Stage::kCreate);
      return;
    } catch (const SandboxStartError&) {
      cleanup_by_token(token);
      throw;
    }
  }
  if (!left_unknown && !cleaned && may_have_created(ex) && !cleanup_by_token(token)) left_unknown = true;
  if (left_unknown)
    logger()->error("e2b: a create may have made a sandbox that could not be killed; it carries metadata {}={}",
                    e2b::kClientTokenKey, token);
  if (ex.ok() && ex.response.status == 404) {
    const auto said = stub.service_text(ex.response.body);
    throw_nested(TemplateBuildError("E2B template '" + stub.options.template_id + "' does not exist: " + said,
                                    Stage::kTemplateBuild, ErrorKind::kNotFound),
                 http::to_transport_error(ex, "create", said));
  }
  throw_start_error(ex, Stage::kCreate, "create");
}

void E2BSandbox::Impl::connect_sandbox(std::string_view sandbox_id, const Deadline& deadline) {
  if (!e2b::valid_sandbox_id(sandbox_id))
    throw SandboxStartError("not an E2B sandbox id: '" + std::string(sandbox_id).substr(0, 64) + "'",
                            Stage::kConfigure, ErrorKind::kInvalidArgument);
  http::Exchange ex;
  for (const std::string_view prefix : {"/v2/sandboxes/", "/sandboxes/"}) {
    auto request = stub.connect_request(prefix, sandbox_id);
    request.cancel = stub.options.cancel;
    request.timeout = deadline.bound(stub.options.request_timeout);
    ex = http::perform_with_retries(client, request, {}, deadline_hooks(deadline));
    if (!(ex.ok() && ex.response.status == 405)) break;
  }
  if (!ex.success()) throw_start_error(ex, Stage::kCreate, "connect");
  stub.accept_sandbox_answer(ex.response.body, Stage::kCreate);
}

// `budget`: the caller's create_timeout, which `deadline` bounds.
void E2BSandbox::Impl::install_packages(const Deadline& deadline, milliseconds budget, E2BSandbox& self) {
  if (self.additional_packages().empty()) return;
  if (self.language() != Language::kPython) {
    logger()->warn("e2b: additional_packages skipped: the sandbox's language is {}, not python",
                   to_string(self.language()));
    return;
  }
  json args = json::array({"-m", "pip", "install", "--disable-pip-version-check", "-q"});
  for (const auto& p : self.additional_packages()) args.push_back(p);
  // JSON strings are valid Python string literals, so package names cannot break out of the list.
  const std::string code = "import subprocess, sys\n_r = subprocess.run([sys.executable] + " + args.dump() +
                           ", capture_output=True, text=True)\nprint(_r.stdout, end='')\nprint(_r.stderr, end='', "
                           "file=sys.stderr)\nif _r.returncode:\n    raise SystemExit(_r.returncode)\n";
  ExecuteOptions install;
  install.timeout = deadline.at ? std::optional(deadline.bound(milliseconds(0))) : std::optional(kNoTimeout);
  install.cancel = stub.options.cancel;
  const auto result = execute(std::nullopt, code, install);
  if (result.status == ExecutionStatus::kSuccess) return;
  try {
    kill_quietly();
  } catch (...) {
  }
  throw detail::install_packages_error(result, stub.options.cancel, budget);
}

void E2BSandbox::Impl::kill_quietly() {
  if (!killed(http::perform_with_retries(client, stub.kill_request(stub.id))))
    logger()->warn("e2b: could not kill sandbox {} after a failed creation", stub.id);
  calls.mark_terminated();
}

// ---- E2BSandbox ----

// The language and packages are the options' (the stub keeps them).
E2BSandbox::E2BSandbox(std::unique_ptr<Impl> impl)
    : CodeInterpreterSandbox(impl->stub.options.language, impl->stub.options.additional_packages),
      impl_(std::move(impl)) {
  impl_->language = language();
}

std::unique_ptr<E2BSandbox> E2BSandbox::create(E2BOptions options) {
  const auto [deadline, budget] = detail::create_budget(options.create_timeout);
  options.tag = detail::tag_for_create(options.tag);
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->create_sandbox(deadline);
  std::unique_ptr<E2BSandbox> sandbox(new E2BSandbox(std::move(impl)));
  sandbox->impl_->install_packages(deadline, budget, *sandbox);
  return sandbox;
}

std::unique_ptr<E2BSandbox> E2BSandbox::connect(std::string_view sandbox_id, E2BOptions options) {
  const auto deadline = Deadline::after(options.create_timeout, detail::kDefaultCreateTimeout);
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->connect_sandbox(sandbox_id, deadline);
  return std::unique_ptr<E2BSandbox>(new E2BSandbox(std::move(impl)));
}

E2BSandbox::~E2BSandbox() {
  if (impl_->calls.terminated()) return;
  detail::terminate_on_destruction([this] { do_terminate(std::nullopt); }, "e2b", "sandbox", impl_->stub.id, "killed");
}

std::optional<std::string> E2BSandbox::sandbox_id() const { return impl_->stub.id; }

Capabilities E2BSandbox::capabilities() const { return detail::e2b_capabilities(impl_->stub.options); }

Capabilities detail::e2b_capabilities(const E2BOptions& options) {
  // An allowlist still reaches the network: only a sandbox made with none() has none.
  const auto& policy = options.network_policy;
  const bool network = !(policy && policy->access == NetworkAccess::kNone);
  auto c = detail::cloud_capabilities({.network = network, .interrupt = true, .expression_results = true,
                                       .streaming_output = true},
                                      {Language::kPython, Language::kJavaScript, Language::kTypeScript,
                                       Language::kBash, Language::kR, Language::kJava},
                                      detail::kUploadDir);
  c.network_policies = {NetworkAccess::kNone, NetworkAccess::kAllowlist, NetworkAccess::kAll};
  // envd's process service: Start, SendInput, CloseStdin, SendSignal, Connect, List (docs/protocols/e2b.md).
  c.processes = c.process_stdin = c.process_connect = c.process_list = c.process_signals = true;
  c.file_info = c.file_move = c.file_copy = true;
  c.interrupt_call = true;  // by closing the stream: the kernel is interrupted and keeps its state
  c.restart = options.language == Language::kPython;  // the default context is found by Python code (do_restart)
  c.variables = options.language == Language::kPython;
  return c;
}

void E2BSandbox::do_set_timeout(std::chrono::seconds lease) {
  if (lease.count() <= 0) throw std::invalid_argument("set_timeout: the lease must be positive");
  const auto call = impl_->begin_call();
  auto request = impl_->stub.api_request(http::Operation::kE2BSetTimeout, "POST", "/sandboxes/" + impl_->stub.id + "/timeout",
                                         json{{"timeout", lease.count()}}.dump());
  request.cancel = call->token();
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (!ex.success()) {
    const std::string said = ex.ok() ? impl_->stub.service_text(ex.response.body) : std::string();
    const auto cause = http::to_transport_error(ex, "set_timeout", said);
    throw_nested(SandboxExecutionError(std::string("set_timeout failed: ") + cause.what(), Stage::kSetTimeout,
                                       http::error_kind(ex)), cause);
  }
}

void E2BSandbox::do_terminate(Timeout timeout) {
  // Calls in flight are cancelled: they return by the contract's rules (docs/backends/e2b.md "terminate").
  if (!impl_->calls.cancel_all()) return;
  const auto& options = impl_->stub.options;
  const auto deadline = Deadline::after(timeout, options.request_timeout * 2);
  auto request = impl_->stub.kill_request(impl_->stub.id);
  request.timeout = deadline.bound(options.request_timeout);
  const auto ex = http::perform_with_retries(impl_->client, request, {}, Impl::deadline_hooks(deadline));
  if (killed(ex)) {
    impl_->calls.mark_terminated();
    impl_->link->end();
    return;
  }
  impl_->calls.terminate_failed();
  const std::string said = ex.ok() ? impl_->stub.service_text(ex.response.body) : std::string();
  const auto cause = http::to_transport_error(ex, "terminate", said);
  throw_nested(SandboxTerminateError("terminate failed; the sandbox " + impl_->stub.id + " may still be running: " +
                                         cause.what(), Stage::kTerminate, http::error_kind(ex)), cause);
}

}  // namespace code_interpreter
