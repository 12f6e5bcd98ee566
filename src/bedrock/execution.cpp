// AgentCore's execute_code: the executeCode tool (docs/protocols/bedrock.md "Tools"), after the attachments are
// uploaded through the file tools, with ExecuteOptions::env emulated by a wrapper.
#include <fstream>
#include <iterator>

#include "core/callback_guard.hpp"
#include "core/defaults.hpp"
#include "core/outcome.hpp"
#include "bedrock/bedrock_impl.hpp"
#include "bedrock/python_error.hpp"

namespace code_interpreter {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string_view language_name(Language language) {
  switch (language) {
    case Language::kJavaScript: return "javascript";
    case Language::kTypeScript: return "typescript";
    default: return "python";
  }
}

// The service has no per-call environment: the code runs inside a wrapper that sets and then restores the
// variables (JSON strings are valid Python string literals).
std::string with_env(const std::string& code, const std::map<std::string, std::string>& env) {
  return "import os as _ci_os\n_ci_env = " + json(env).dump() +
         "\n_ci_saved = {k: _ci_os.environ.get(k) for k in _ci_env}\n_ci_os.environ.update(_ci_env)\ntry:\n"
         "    exec(compile(" + json(code).dump() + ", '<code>', 'exec'))\nfinally:\n"
         "    for _ci_k, _ci_v in _ci_saved.items():\n"
         "        (_ci_os.environ.pop(_ci_k, None) if _ci_v is None else _ci_os.environ.__setitem__(_ci_k, _ci_v))\n"
         "    del _ci_os, _ci_env, _ci_saved, _ci_k, _ci_v\n";
}

}  // namespace

ExecutionResult BedrockAgentCoreSandbox::Impl::execute(std::string_view code_view, const ExecuteOptions& o) {
  const auto call = calls.begin(o.cancel);
  const std::string code(code_view);
  std::unique_lock lock(exec_mutex);

  if (!o.env.empty() && language != Language::kPython)
    return detail::never_ran(code, "env is not supported for " + std::string(language_name(language)) +
                                       " code on Bedrock AgentCore (ExecuteOptions::env)", std::nullopt);
  if (!o.files.empty()) {
    const std::string dir = o.upload_dir.value_or(std::string(detail::kRelativeUploadDir));
    bool session_gone = false;
    try {
      make_directory(dir, call->token(), &session_gone);
      for (const auto& f : o.files) {
        if (f.source) {
          std::ifstream in(*f.source, std::ios::binary);
          if (!in) return detail::never_ran(code, "upload failed: cannot read " + f.source->string(), std::nullopt);
          const std::string bytes((std::istreambuf_iterator<char>(in)), {});
          write(dir + "/" + f.filename, bytes, call->token(), &session_gone);
        } else {
          write(dir + "/" + f.filename, f.data, call->token(), &session_gone);
        }
      }
    } catch (const SandboxNotInitializedError&) {
      throw;
    } catch (const std::exception& e) {
      // e.g. the session expired before the call: a 404 to the first upload
      return detail::never_ran(code, std::string("upload failed: ") + e.what(), FailureDetail{"upload", true}, session_gone);
    }
  }

  const std::string sent = o.env.empty() ? code : with_env(code, o.env);
  const milliseconds budget = o.timeout.value_or(detail::kDefaultExecuteTimeout);
  const auto started = Clock::now();  // duration is the execution itself, after the uploads (execution.hpp)
  detail::OutputStream out(o.on_stdout ? &o.on_stdout : nullptr, stub.options.max_output_bytes);
  detail::OutputStream err(o.on_stderr ? &o.on_stderr : nullptr, stub.options.max_output_bytes);
  json arguments = {{"code", sent}, {"language", language_name(language)}};
  auto inv = invoke(http::Operation::kAgentCoreExecuteCode, "executeCode", std::move(arguments),
                    budget.count() > 0 ? budget : milliseconds(0), call->token(), &out, &err);
  // The last partial lines; a callback that throws on them makes the result kUnknown as one that threw earlier.
  if (auto thrown = detail::deliver_guarded([&] {
        out.finish();
        err.finish();
      }, {&out, &err}))
    inv.callback_threw = std::move(thrown);
  ExecutionResult r;
  std::optional<std::string> text_thrown;  // what a callback threw on the text blocks
  bool code_failed = false;                // the code ran and failed (not a call that failed)
  if (auto failed = failure_of(inv, code, "execute")) {
    r = std::move(*failed);
    if (r.status == ExecutionStatus::kTimeout && r.timeout_kind == TimeoutKind::kExecution)
      r.error = "execute: timed out after " + std::to_string(budget.count()) +
                " ms; Bedrock cannot stop an executeCode, so the code may still be running in the session";
  } else {
    r.code = code;
    const auto exit = inv.exit_code();
    if (!inv.is_error && exit.value_or(0) == 0) {
      r.status = ExecutionStatus::kSuccess;
      r.exit_code = 0;
    } else {
      r.status = ExecutionStatus::kError;
      r.exit_code = exit && *exit != 0 ? *exit : 1;
      code_failed = true;
    }
    // Without structuredContent, the text blocks are the output.
    if (inv.out.empty() && inv.err.empty() && !inv.structured.contains("stdout")) {
      std::string text;
      for (const auto& block : inv.content)
        if (block.is_object() && bedrock::string_member(block, "type", "") == "text" && block.contains("text") && block["text"].is_string())
          text += block["text"].get<std::string>();
      text_thrown = detail::deliver_guarded([&] {
        (r.status == ExecutionStatus::kSuccess ? out : err).feed(text);
        out.finish();
        err.finish();
      }, {&out, &err});
    }
    for (const auto& block : inv.content) {
      if (block.is_object() && bedrock::string_member(block, "type", "") == "image" && block.contains("data") && block["data"].is_string())
        r.results.push_back(RichResult{{{bedrock::string_member(block, "mimeType", "image/png"), block["data"].get<std::string>()}}, false});
    }
  }
  r.truncated = out.truncated() || err.truncated();
  r.stdout_text = out.take_text();
  r.stderr_text = err.take_text();
  if (code_failed && language == Language::kPython) {
    r.code_error = bedrock::parse_python_error(r.stderr_text, r.exit_code);
    if (r.code_error)  // docs/errors.md: the traceback, or "Name: value" when there is none
      r.error = r.code_error->traceback.empty() ? r.code_error->name + ": " + r.code_error->value : r.code_error->traceback;
    else
      r.error = r.stderr_text.empty() ? "the code failed with exit code " + std::to_string(r.exit_code) : r.stderr_text;
  }
  if (text_thrown) detail::mark_callback_threw(r, *text_thrown);
  // Absent when the code was never sent (execution.hpp): e.g. a call cancelled before it started.
  if (inv.exchange.request_written) r.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
  return r;
}

ExecutionResult BedrockAgentCoreSandbox::do_execute_code(std::string_view code, const ExecuteOptions& options) {
  return impl_->calls.settled(impl_->execute(code, options));
}

// ---- interrupt, restart, variables ----

void BedrockAgentCoreSandbox::do_restart() {
  // executeCode's clearContext drops the Python session's globals before it runs the code it carries
  // (docs/protocols/bedrock.md "Tools"); JavaScript and TypeScript ignore it.
  if (impl_->language != Language::kPython)
    throw SandboxExecutionError("restart needs a Python session on Bedrock AgentCore (clearContext is Python only)",
                                Stage::kExecute, ErrorKind::kUnsupported);
  const auto call = impl_->calls.begin();
  std::unique_lock lock(impl_->exec_mutex);
  const std::string code = "pass";
  auto inv = impl_->invoke(http::Operation::kAgentCoreExecuteCode, "executeCode",
                           {{"code", code}, {"language", "python"}, {"clearContext", true}},
                           detail::kDefaultExecuteTimeout, call->token());
  if (auto failed = impl_->failure_of(inv, code, "restart")) {
    throw SandboxExecutionError("restart failed: " + failed->error, Stage::kExecute,
                                detail::error_kind_of(*failed));
  }
  if (!inv.succeeded())
    throw SandboxExecutionError("restart failed: the service answered the clearContext call with an error",
                                Stage::kExecute, ErrorKind::kInternal);
}

void BedrockAgentCoreSandbox::do_set_variable(std::string_view name, const std::string& value_json) {
  set_variable_by_code(name, value_json);
}

nlohmann::json BedrockAgentCoreSandbox::do_get_variable(std::string_view name) { return get_variable_by_code(name); }

}  // namespace code_interpreter
