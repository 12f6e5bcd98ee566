// Fuzzes the decoder of envd's process stream (src/e2b/streams.hpp ProcessStream over
// src/http/stream_decoders.hpp EnvelopeDecoder and src/core/base64.hpp), which reads hostile Connect envelopes.
// Properties: nothing throws out of it, even from a throwing callback; the kept text is valid UTF-8 and a prefix
// of what the callbacks received; the body fed whole and fed in pieces decodes to the same state and fault.
#include <functional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/utf8.hpp"
#include "e2b/streams.hpp"
#include "fuzz_target.hpp"
#include "http/stream_decoders.hpp"

using code_interpreter::ExecutionResult;
using code_interpreter::detail::is_valid_utf8;
using code_interpreter::e2b::ProcessStream;
using code_interpreter::e2b::StreamFault;
using code_interpreter::http::encode_envelope;

namespace {

struct Outcome {
  ExecutionResult result;
  StreamFault fault = StreamFault::kNone;
  bool started = false, closed = false, partial = false;
  std::optional<ProcessStream::End> end;
  std::string stream_error, stream_error_message, streamed_out, streamed_err;
};

// Feeds `body` in pieces of `step` bytes (all of it at once when step is 0), then finishes.
Outcome decode(std::string_view body, std::size_t step, std::size_t max_output, std::size_t max_payload,
               int throw_after) {
  Outcome o;
  int calls = 0;
  const std::function<void(std::string_view)> on_out = [&](std::string_view piece) {
    FUZZ_CHECK(is_valid_utf8(piece));
    o.streamed_out += piece;
    if (throw_after > 0 && ++calls == throw_after) throw std::runtime_error("callback");
  };
  const std::function<void(std::string_view)> on_err = [&](std::string_view piece) {
    FUZZ_CHECK(is_valid_utf8(piece));
    o.streamed_err += piece;
  };
  ProcessStream stream(&on_out, &on_err, max_output, max_payload);
  try {
    bool go_on = true;
    if (step == 0) {
      go_on = stream.feed(body);
    } else {
      for (std::size_t off = 0; go_on && off < body.size(); off += step) go_on = stream.feed(body.substr(off, step));
    }
    FUZZ_CHECK(go_on == (stream.fault() == StreamFault::kNone));
    stream.finish();
  } catch (...) {
    FUZZ_CHECK(!"an exception escaped ProcessStream");
  }
  o.fault = stream.fault();
  o.started = stream.started();
  o.closed = stream.stream_closed();
  o.partial = stream.partial_envelope();
  o.end = stream.end();
  o.stream_error = stream.stream_error();
  o.stream_error_message = stream.stream_error_message();
  FUZZ_CHECK(o.stream_error_message.empty() || !o.stream_error.empty());
  FUZZ_CHECK(o.stream_error.empty() || o.closed);
  stream.collect(o.result);
  return o;
}

void check_output(const std::string& text, const std::string& streamed, std::size_t cap, bool threw) {
  FUZZ_CHECK(is_valid_utf8(text));
  FUZZ_CHECK(text.size() <= cap);
  if (!threw) FUZZ_CHECK(streamed.compare(0, text.size(), text) == 0);
}

bool same_end(const std::optional<ProcessStream::End>& a, const std::optional<ProcessStream::End>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->exit_code == b->exit_code && a->exited == b->exited && a->status == b->status &&
                a->error == b->error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // Byte 0 chooses how the body is split into reads; byte 1 the caps and whether the stdout callback throws.
  const std::size_t step = 1 + data[0] % 97;
  const std::size_t max_payload = data[1] & 1 ? 32 + data[1] : 1u << 20;
  const std::size_t max_output = data[1] & 2 ? data[1] : 1u << 20;
  const int throw_after = (data[1] >> 4) % 4;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Outcome whole = decode(body, 0, max_output, max_payload, throw_after);
  const Outcome split = decode(body, step, max_output, max_payload, throw_after);
  for (const Outcome* o : {&whole, &split}) {
    const bool threw = o->fault == StreamFault::kCallbackThrew;
    check_output(o->result.stdout_text, o->streamed_out, max_output, threw);
    check_output(o->result.stderr_text, o->streamed_err, max_output, threw);
  }
  FUZZ_CHECK(whole.fault == split.fault);
  FUZZ_CHECK(whole.started == split.started);
  FUZZ_CHECK(whole.closed == split.closed);
  // After a fault the rest of the body is not read, so how much of it is held depends on the reads.
  if (whole.fault == StreamFault::kNone) FUZZ_CHECK(whole.partial == split.partial);
  FUZZ_CHECK(same_end(whole.end, split.end));
  FUZZ_CHECK(whole.stream_error == split.stream_error);
  FUZZ_CHECK(whole.stream_error_message == split.stream_error_message);
  FUZZ_CHECK(whole.result == split.result);
  FUZZ_CHECK(whole.streamed_out == split.streamed_out);
  FUZZ_CHECK(whole.streamed_err == split.streamed_err);
  return 0;
}

std::vector<std::string> fuzz_seeds() {
  using nlohmann::json;
  const auto message = [](const json& event) { return encode_envelope(0x00, json{{"event", event}}.dump()); };
  const std::string start = message({{"start", {{"pid", 812}}}});
  const std::string example = start + message({{"data", {{"stdout", "aGkK"}}}}) +
                              message({{"end", {{"exited", true}, {"status", "exit status 0"}}}}) +
                              encode_envelope(0x02, "{}");
  const std::string failure =
      start + message({{"data", {{"stderr", "ZXJyCg=="}}}}) + message({{"keepalive", json::object()}}) +
      message({{"data", {{"stdout", "Yf9i"}}}}) +
      message({{"end", {{"exitCode", 3}, {"exited", true}, {"status", "exit status 3"}, {"error", "exit status 3"}}}}) +
      encode_envelope(0x02, "{}");
  const std::string deadline =
      start + message({{"data", {{"stdout", "8J+YgA"}}}}) +
      message({{"end", {{"exitCode", -1}, {"status", "signal: killed"}, {"error", "signal: killed"}}}}) +
      encode_envelope(0x02, R"({"error":{"code":"deadline_exceeded","message":"context deadline exceeded"},"metadata":{"k":["v"]}})");
  return {std::string("\x03\x00", 2) + example,
          std::string("\x10\x01", 2) + example,
          std::string("\x05\x12", 2) + failure,
          std::string("\x01\x00", 2) + deadline,
          std::string("\x07\x03", 2) + example + "x",
          std::string("\x02\x20", 2) + failure + deadline,
          std::string("\x04\x00", 2) + message({{"data", {{"stdout", "aGkK"}}}}) + start,
          std::string("\x06\x00", 2) + start + encode_envelope(0x01, "{}"),
          std::string("\x08\x01", 2) + start + std::string("\x00\x7f\xff\xff\xff", 5)};
}
