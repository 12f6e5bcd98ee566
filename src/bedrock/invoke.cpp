// One InvokeCodeInterpreter call (docs/protocols/bedrock.md "InvokeCodeInterpreter", "Events and exception frames")
// and the outcome rules that turn what it produced into a result or an error.
#include <algorithm>
#include <limits>

#include "core/nested.hpp"
#include "core/outcome.hpp"
#include "bedrock/bedrock_impl.hpp"
#include "http/outcome.hpp"

namespace code_interpreter {

using bedrock::Invocation;
using nlohmann::json;
using std::chrono::milliseconds;

Invocation BedrockAgentCoreSandbox::Impl::invoke(http::Operation op, std::string_view tool, json arguments,
                                                 milliseconds timeout, std::stop_token cancel,
                                                 detail::OutputStream* out, detail::OutputStream* err,
                                                 std::optional<std::uint64_t> file_cap) {
  const auto& options = stub.options;
  // A JSON string may spell a byte in up to 6 ("\u0001"), so the payloads of a capped read may be that much
  // larger than its content; they are held one message at a time.
  bedrock::InvocationLimits limits{options.max_message_bytes + 2 * options.max_output_bytes, file_cap, out, err};
  if (file_cap) {
    const std::uint64_t most = std::numeric_limits<std::size_t>::max() - limits.result_budget;
    limits.result_budget += static_cast<std::size_t>(*file_cap > most / 6 ? most : *file_cap * 6);
  }
  Invocation inv;
  std::optional<bedrock::EventStreamDecoder> decoder;
  auto req = stub.invoke_request(op, tool, std::move(arguments));
  req.timeout = timeout;
  req.cancel = std::move(cancel);
  const auto sink = [&](bedrock::EventMessage&& message) { return stub.decode_message(inv, std::move(message), limits); };
  decoder.emplace(sink, options.max_message_bytes);
  http::stream_success_body(req, inv.error_body, [&](std::string_view piece) {
    if (decoder->feed(piece)) return true;
    inv.decode_error = decoder->error();
    return false;
  }, bedrock::kMaxErrorBody, &inv.status);

  if (http::rule(op).resend != http::Resend::kIdempotent) {
    inv.exchange = client.perform(req);
  } else {
    // A tool that only reads (readFiles, listFiles, getTask, mkdir -p) goes through the one retry loop: what never
    // reached the service, or was refused as transient (429, 5xx, a throttling or unavailable first frame), is
    // tried again, every attempt within `timeout`. Each attempt starts from nothing: a refused attempt leaves no
    // partial answer.
    const auto deadline = detail::Deadline::after(timeout, timeout);
    http::RetryHooks hooks;
    hooks.prepare = [&](http::Request& attempt) {
      inv = Invocation{};
      decoder.emplace(sink, options.max_message_bytes);
      attempt.timeout = deadline.bound(timeout);
    };
    hooks.refused = [&](const http::Exchange&) { return inv.exception.has_value() && inv.exception_first; };
    hooks.retryable = [&](const http::Exchange& e) {
      if (inv.over_cap || inv.callback_threw) return false;
      if (inv.exception) {
        // The stream stopped at an exception frame (the read is aborted there, or the body ended with it).
        const auto kind = bedrock::aws_error_kind(inv.exception->substr(4), 0);  // "aws." + the frame's name
        return inv.exception_first && (kind == ErrorKind::kRateLimited || kind == ErrorKind::kUnavailable);
      }
      return http::may_resend(op, e);
    };
    hooks.sleep = [&deadline](milliseconds delay, std::stop_token stop) {
      return deadline.allows(delay) && http::interruptible_sleep(delay, std::move(stop));
    };
    inv.exchange = http::perform_with_retries(client, req, {}, hooks);
  }
  if (inv.exchange.ok() && inv.status == 200 && decoder->has_partial() && !inv.exception && !inv.malformed_event &&
      !inv.too_large && inv.decode_error == bedrock::EventStreamError::kNone)
    inv.truncated = true;  // the body ended cleanly inside a message
  return inv;
}

std::optional<ExecutionResult> BedrockAgentCoreSandbox::Impl::failure_of(const Invocation& inv, const std::string& code,
                                                                         std::string_view what) {
  const auto& ex = inv.exchange;
  ExecutionResult r;
  r.code = code;
  r.exit_code = -1;
  const auto unknown = [&](std::string exception_type, std::string error) {
    r.status = ExecutionStatus::kUnknown;
    r.failure = FailureDetail{std::move(exception_type), false};
    r.error = std::move(error);
    return r;
  };
  if (ex.ok() && inv.status != 0 && inv.status < 400 && inv.status != 200)
    // Not the stream, and not a refusal either (a redirect is never followed): whether it ran is unknown.
    return unknown("http." + std::to_string(inv.status),
                   std::string(what) + ": unexpected HTTP " + std::to_string(inv.status) + "; the call may have run");
  if (ex.ok() && inv.status != 200 && inv.status != 0) {
    // Answered with an error before any frame. A 4xx, or a 5xx in the service's own error shape, is its refusal:
    // nothing ran. A 5xx without that shape may come from a proxy after the service took the call
    // (docs/errors.md "Answered statuses").
    const auto e = stub.aws_error(ex.response, inv.error_body);
    const auto verdict = http::answered(inv.status, !e.code.empty(),
                                        e.code.empty() ? "http." + std::to_string(inv.status) : bedrock::aws_type(e.code),
                                        what, e.code.empty() ? e.message : e.code + (e.message.empty() ? "" : ": " + e.message));
    r.status = verdict.status;
    r.failure = verdict.failure;
    r.error = verdict.message;
    // An expired or stopped session is gone before the call (docs/protocols/bedrock.md "InvokeCodeInterpreter").
    r.state_lost = verdict.status == ExecutionStatus::kError && inv.status == 404;
    return r;
  }
  if (inv.callback_threw) {
    detail::mark_callback_threw(r, *inv.callback_threw);
    return r;
  }
  if (inv.exception) {
    if (inv.exception_first) {
      // The first frame refused the call: the code never ran (docs/protocols/bedrock.md "Error answers and what
      // proves a call never ran").
      auto refused = detail::never_ran(code, std::string(what) + ": " + *inv.exception + ": " + inv.exception_message,
                                       FailureDetail{*inv.exception, true});
      refused.state_lost = inv.exception->find("ResourceNotFound") != std::string::npos;
      return refused;
    }
    return unknown(*inv.exception, std::string(what) + ": the stream failed after a result: " + *inv.exception + ": " +
                                       inv.exception_message);
  }
  if (inv.decode_error != bedrock::EventStreamError::kNone || inv.malformed_event || inv.too_large) {
    const std::string name = inv.malformed_event ? "malformed_event"
                             : inv.too_large     ? "too_large"
                                                 : std::string(bedrock::to_string(inv.decode_error));
    return unknown("eventstream." + name, std::string(what) + ": the answer was not a valid event stream (" + name + ")");
  }
  if (!ex.ok()) {
    const auto verdict = http::classify(ex, TimeoutKind::kExecution, what);
    r.status = verdict.status;
    r.timeout_kind = verdict.timeout_kind;
    r.failure = verdict.failure;
    r.error = verdict.message;
    if (r.status == ExecutionStatus::kUnknown && ex.request_written && ex.failure != http::Failure::kCancelled &&
        status_of_session(std::chrono::seconds(5)) == std::optional<std::string>("TERMINATED")) {
      detail::mark_sandbox_lost(r, std::string(what) + ": the session ended during the call");
    }
    return r;
  }
  if (inv.truncated)
    return unknown("eventstream.truncated", std::string(what) + ": the answer ended inside an event-stream message");
  if (!inv.result_seen) return unknown("eventstream.no_result", std::string(what) + ": the answer carried no result");
  return std::nullopt;
}

void BedrockAgentCoreSandbox::Impl::throw_tool_error(const Invocation& inv, Stage stage, std::string_view what,
                                                     bool* session_gone) {
  if (auto r = failure_of(inv, "", what)) {
    if (session_gone) *session_gone = r->state_lost;
    ErrorKind kind = ErrorKind::kUnknown;
    if (inv.exchange.ok() && inv.status != 200) kind = bedrock::aws_error_kind(stub.aws_error(inv.exchange.response, inv.error_body).code, inv.status);
    else if (!inv.exchange.ok()) kind = http::error_kind(inv.exchange);
    else if (inv.exception) kind = bedrock::aws_error_kind(inv.exception->substr(4), 0);
    detail::throw_nested(SandboxExecutionError(r->error, stage, kind),
                         http::to_transport_error(inv.exchange, what, r->failure ? r->failure->exception_type : ""));
  }
  // A tool that reports isError explains itself in its text.
  std::string text;
  for (const auto& block : inv.content)
    if (block.is_object() && bedrock::string_member(block, "type", "") == "text" && block.contains("text") && block["text"].is_string())
      text += block["text"].get<std::string>();
  std::string lowered = text;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  const ErrorKind kind = lowered.find("not found") != std::string::npos || lowered.find("no such") != std::string::npos
                             ? ErrorKind::kNotFound
                             : ErrorKind::kInvalidArgument;
  throw SandboxExecutionError(std::string(what) + " failed: " + stub.service_text(std::move(text)), stage, kind);
}

}  // namespace code_interpreter
