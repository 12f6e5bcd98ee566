// The two streamed answers of an E2B sandbox, decoded into an execution's output as they arrive:
//  - ExecuteStream: the code interpreter's /execute body, NDJSON events (docs/protocols/e2b.md "The /execute stream");
//  - ProcessStream: envd's process.Process/Start body, Connect envelopes of ProcessEvents (docs/protocols/e2b.md "Connect envelopes", "process.Process/Start").
// Everything in them is untrusted: a line or envelope that is not the protocol stops the stream as malformed.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/execution.hpp"
#include "core/output.hpp"
#include "http/stream_decoders.hpp"

namespace code_interpreter::e2b {

/// Why a stream stopped early (other than the sink's consumer aborting the transfer).
enum class StreamFault { kNone, kMalformed, kOversize, kCallbackThrew };

class ExecuteStream {
 public:
  ExecuteStream(const std::function<void(std::string_view)>* on_stdout,
                const std::function<void(std::string_view)>* on_stderr, std::size_t max_output, std::size_t max_line);

  /// Feeds body bytes; false when the stream must stop (see fault()).
  bool feed(std::string_view bytes);
  /// The body ended cleanly: a last line without "\n" still counts. False on a fault.
  bool finish();
  /// The body broke: an unfinished line is dropped; the output lines received so far are delivered.
  void finish_output();

  [[nodiscard]] StreamFault fault() const noexcept { return fault_; }
  [[nodiscard]] const std::string& fault_detail() const noexcept { return fault_detail_; }
  [[nodiscard]] bool saw_end_of_execution() const noexcept { return end_; }
  [[nodiscard]] bool started() const noexcept { return started_; }

  /// Moves the decoded output into `result` (stdout/stderr text, truncated, results, code_error).
  void collect(ExecutionResult& result);
  [[nodiscard]] const std::optional<CodeError>& code_error() const noexcept { return error_; }

 private:
  bool on_line(std::string_view line);
  bool fail(StreamFault fault, std::string detail);

  detail::OutputStream out_, err_;
  http::LineDecoder lines_;
  std::vector<RichResult> results_;
  std::size_t results_cap_;        // rich results share the per-stream output cap: memory stays bounded
  std::size_t results_bytes_ = 0;
  bool results_truncated_ = false;
  std::optional<CodeError> error_;
  StreamFault fault_ = StreamFault::kNone;
  std::string fault_detail_;
  bool end_ = false;
  bool started_ = false;
};

class ProcessStream {
 public:
  ProcessStream(const std::function<void(std::string_view)>* on_stdout,
                const std::function<void(std::string_view)>* on_stderr, std::size_t max_output, std::size_t max_payload);

  bool feed(std::string_view bytes);
  /// Delivers the partial output lines held, once no byte completed them for detail::kPartialLineDelay since a
  /// data event first left one held (docs/errors.md "Output"): call it now and then while the stream is open, on
  /// the thread that feeds it. False when the stream must stop (a callback threw: see fault()).
  bool flush_idle();
  /// Flushes the last partial output lines.
  void finish();

  [[nodiscard]] StreamFault fault() const noexcept { return fault_; }
  [[nodiscard]] const std::string& fault_detail() const noexcept { return fault_detail_; }
  [[nodiscard]] bool started() const noexcept { return pid_.has_value(); }
  [[nodiscard]] bool ended() const noexcept { return end_.has_value(); }
  [[nodiscard]] bool stream_closed() const noexcept { return closed_; }   ///< the end-of-stream envelope came
  [[nodiscard]] bool partial_envelope() const noexcept { return envelopes_.has_partial(); }
  /// The end-of-stream envelope's error code ("deadline_exceeded", ...); empty when it carried none.
  [[nodiscard]] const std::string& stream_error() const noexcept { return stream_error_; }
  [[nodiscard]] const std::string& stream_error_message() const noexcept { return stream_error_message_; }

  struct End {
    int exit_code = 0;
    bool exited = false;
    std::string status;
    std::string error;
  };
  [[nodiscard]] const std::optional<End>& end() const noexcept { return end_; }

  void collect(ExecutionResult& result);
  /// The output so far, left in place (a process handle reads it while the process runs).
  [[nodiscard]] const detail::OutputStream& out() const noexcept { return out_; }
  [[nodiscard]] const detail::OutputStream& err() const noexcept { return err_; }
  /// The pid of the stream's `start` event.
  [[nodiscard]] std::optional<std::uint32_t> pid() const noexcept { return pid_; }

  /// Prepares for a new stream of the same process (process.Process/Connect after a cut): a fresh envelope decoder
  /// that again expects `start` first, for the pid of the stream that was cut (a `start` of another pid is
  /// malformed); the output, a partial line held included, carries on.
  void reattach();
  /// After a re-attach that never began: the stream is again the one that was cut, of the process `pid` (what the
  /// failed Connect said is forgotten).
  void abandon_reattach(std::uint32_t pid) {
    reattach();
    pid_ = pid;
  }
  /// The stream's `start` must name `pid` (process.Process/Connect to a known pid); another pid is malformed.
  void expect_pid(std::uint32_t pid) noexcept { expected_pid_ = pid; }
  /// How many pieces of output (each non-empty stdout or stderr of a `data` envelope) and `end` envelopes the streams
  /// carried after `start` so far, across re-attaches (keep-alives, empty data and unknown events are not counted).
  [[nodiscard]] std::size_t events() const noexcept { return events_; }

 private:
  bool on_envelope(std::uint8_t flags, std::string_view payload);
  bool fail(StreamFault fault, std::string detail);

  detail::OutputStream out_, err_;
  std::size_t max_payload_;
  http::EnvelopeDecoder envelopes_;
  std::optional<std::uint32_t> pid_;
  std::optional<std::uint32_t> expected_pid_;
  std::size_t events_ = 0;
  std::optional<std::chrono::steady_clock::time_point> flush_at_;  // when the partial lines held are delivered
  std::optional<End> end_;
  bool closed_ = false;
  std::string stream_error_, stream_error_message_;
  StreamFault fault_ = StreamFault::kNone;
  std::string fault_detail_;
};

/// Removes ANSI escape sequences (Jupyter colours tracebacks).
std::string strip_ansi(std::string_view text);

}  // namespace code_interpreter::e2b
