// E2BSandbox::Impl: the E2B backend's orchestration (docs/architecture.md "Backends"). It owns the stub (requests and
// answers, e2b/stub.hpp) and the calls in flight, sends through the one retry loop (src/http/retry.hpp), and turns
// the stub's facts into results and errors with src/http/outcome.hpp and src/core/outcome.hpp. Its members are
// defined by concept: lifecycle.cpp (create, connect, lost creates, packages, kill), execution.cpp (execute and
// the statuses it shares with commands), commands.cpp, files.cpp.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/e2b_sandbox.hpp"
#include "core/call_registry.hpp"
#include "core/deadline.hpp"
#include "core/process_driver.hpp"
#include "e2b/streams.hpp"
#include "e2b/stub.hpp"
#include "http/http_client.hpp"
#include "http/outcome.hpp"
#include "http/retry.hpp"

namespace code_interpreter {

struct E2BSandbox::Impl {
  http::HttpClient& client = http::HttpClient::shared();
  e2b::E2BStub stub;
  detail::CallRegistry calls;
  Language language = Language::kPython;

  /// Shared with the process handles: ended by terminate and by the sandbox's destruction (core/process_driver.hpp).
  std::shared_ptr<detail::SandboxLink> link = std::make_shared<detail::SandboxLink>();

  explicit Impl(E2BOptions options) : stub(std::move(options)) {}
  ~Impl() { link->end(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// One guard per public call, cancelled by the caller or by terminate.
  /// `interruptible`: an execution, which interrupt() cancels.
  std::unique_ptr<detail::CallRegistry::Call> begin_call(std::stop_token user = {}, bool interruptible = false) {
    return calls.begin(std::move(user), interruptible);
  }

  /// Retry hooks that keep every attempt, and every sleep between them, within `deadline`.
  [[nodiscard]] static http::RetryHooks deadline_hooks(const detail::Deadline& deadline);

  // ---- lifecycle.cpp ----
  [[noreturn]] void throw_start_error(const http::Exchange& ex, Stage stage, std::string_view what) const;
  bool cleanup_by_token(const std::string& token);
  void create_sandbox(const detail::Deadline& deadline);
  void connect_sandbox(std::string_view sandbox_id, const detail::Deadline& deadline);
  void install_packages(const detail::Deadline& deadline, std::chrono::milliseconds budget, E2BSandbox& self);
  void kill_quietly();

  // ---- execution.cpp ----
  ExecutionResult execute(std::optional<std::string_view> context_id, std::string_view code, const ExecuteOptions& o);
  /// Whether the sandbox itself is gone (docs/protocols/e2b.md "envd health and files": GET /health, 502 when gone).
  bool sandbox_gone();
  /// An answered error status (>= 400) to a request that runs code (docs/errors.md "Answered statuses").
  ExecutionResult answered_error(ExecutionResult& r, int status, std::string_view body, std::string_view what) const;
  /// A streamed call (execute, command) whose transport failed: the verdict, relabelled sandbox-lost when the
  /// sandbox itself is gone after the request was written.
  void transport_failure(const http::Exchange& ex, std::string_view what, ExecutionResult& r);

  /// Sends a streamed call (execute, command) once, cancelled by `cancel`: `stream` decodes a 200's body as it
  /// arrives, `error_body` receives another status's body (bounded).
  template <typename Stream>
  http::Exchange perform_streamed(http::Request& request, std::stop_token cancel, Stream& stream,
                                  std::string& error_body) {
    request.cancel = std::move(cancel);
    http::stream_success_body(request, error_body, [&stream](std::string_view piece) { return stream.feed(piece); },
                              e2b::kMaxErrorBody);
    return client.perform(request);
  }

  // ---- commands.cpp ----
  ExecutionResult command(std::string_view cmd, const CommandOptions& o);

  // ---- files.cpp ----
  http::Exchange upload(const std::string& dir, const std::vector<Attachment>& files, std::stop_token cancel);
  [[noreturn]] void throw_file_error(const http::Exchange& ex, Stage stage, std::string_view what) const;
  /// A unary Connect call of envd's filesystem service; its answer's JSON object.
  nlohmann::json rpc(std::string_view method, const nlohmann::json& body, Stage stage, std::string_view what);
  /// A request that was answered without retries or with them, run under a fresh call guard, failing with
  /// throw_file_error (stage `stage`, named `what`).
  http::Exchange call(http::Request request, Stage stage, std::string_view what);
};

namespace e2b {

/// The status fields of `verdict` onto `r` (exit code -1).
void apply(const http::Verdict& verdict, ExecutionResult& r);
/// A stream that our side stopped for cause: hostile bytes or a throwing callback (docs/backends/e2b.md
/// "execute_code and execute_command").
void apply_fault(StreamFault fault, const std::string& detail, ExecutionResult& r);
/// A status that is neither the stream (200) nor a refusal (>= 400): unclassifiable, so cautious (docs/errors.md
/// "FailureDetail").
void unexpected_status(int status, std::string_view what, ExecutionResult& r);
/// A failed unary call as the error a lifecycle or file call throws: SandboxExecutionError (stage `stage`), its kind
/// from the Connect error code or the transport, the service's words (secrets removed), the transport nested.
[[noreturn]] void throw_call_error(const E2BStub& stub, const http::Exchange& ex, Stage stage, std::string_view what);

/// What following a process's stream came to (follow_process).
struct Followed {
  http::Exchange ex;       ///< the last exchange (the Start, or the last Connect)
  std::string error_body;  ///< its body when it was not a 200
  int cuts = 0;            ///< how many times the stream broke mid-run (what was written meanwhile is not replayed)
  int reattached = 0;      ///< how many times the stream was re-attached by pid
  bool not_found = false;  ///< a re-attach found no such process: its fate cannot be learned
  /// kMaxReattachesInARow re-attached streams in a row were cut within a second, before they carried output or the
  /// end: re-attaching was given up (the process may still run).
  bool gave_up = false;
  /// The stream was cut and the deadline had passed by then: envd's own deadline (Connect-Timeout-Ms) ended the
  /// process, or ends it, whatever the cut hid.
  bool deadline_passed = false;
};

/// The most re-attached streams in a row that may be cut within a second before they carry output or the end (a
/// proxy that cuts every stream at once, keep-alive or not, must not loop forever). A stream that carried output
/// bytes or the end, or stayed open a second, resets the count, so a long process with occasional cuts, or a silent
/// one behind a proxy that cuts idle streams, is never given up on. Re-attaches start at least 100 ms apart whatever
/// the streams carried: at most ten Connects a second.
constexpr int kMaxReattachesInARow = 50;

/// Sends `request` (process.Process/Start or Connect), feeding its body to `feed` (which feeds `stream`). A stream
/// that breaks after its `start` and before the `end` (cut by the network or a proxy, or silent for twice the
/// keep-alive interval) does not end a running process: it is re-attached with process.Process/Connect by pid, as
/// long as `deadline` allows (nullopt: no limit) and `cancel` is not requested, and the stream carries on
/// (docs/backends/e2b.md "Processes"). `tick` runs on the calling thread between reads, every
/// detail::kPartialLineDelay / 2 (http::Request::on_tick): it delivers the partial lines no byte completed
/// (ProcessStream::flush_idle); its false stops the stream as `feed`'s does.
Followed follow_process(http::HttpClient& client, const E2BStub& stub, http::Request request, std::stop_token cancel,
                        std::optional<std::chrono::steady_clock::time_point> deadline, ProcessStream& stream,
                        const std::function<bool(std::string_view)>& feed, const std::function<bool()>& tick);

}  // namespace e2b
}  // namespace code_interpreter
