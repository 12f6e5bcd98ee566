// Fuzzes the decoder of the code interpreter's /execute body (src/e2b/streams.hpp ExecuteStream over
// src/http/stream_decoders.hpp LineDecoder), which reads hostile NDJSON.
// Properties: nothing throws out of it, even from a throwing callback; the kept text is valid UTF-8 and a prefix
// of what the callbacks received; the body fed whole and fed in pieces decodes to the same result and fault.
#include <functional>
#include <stdexcept>

#include "core/utf8.hpp"
#include "e2b/streams.hpp"
#include "fuzz_target.hpp"

using code_interpreter::ExecutionResult;
using code_interpreter::detail::is_valid_utf8;
using code_interpreter::e2b::ExecuteStream;
using code_interpreter::e2b::StreamFault;

namespace {

struct Outcome {
  ExecutionResult result;
  StreamFault fault = StreamFault::kNone;
  bool finished = false, end = false, started = false;
  std::string streamed_out, streamed_err;
};

// Feeds `body` in pieces of `step` bytes (all of it at once when step is 0), then finishes as a clean body does.
Outcome decode(std::string_view body, std::size_t step, std::size_t max_output, std::size_t max_line,
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
  ExecuteStream stream(&on_out, &on_err, max_output, max_line);
  try {
    bool go_on = true;
    if (step == 0) {
      go_on = stream.feed(body);
    } else {
      for (std::size_t off = 0; go_on && off < body.size(); off += step) go_on = stream.feed(body.substr(off, step));
    }
    FUZZ_CHECK(go_on == (stream.fault() == StreamFault::kNone));
    o.finished = stream.finish();
    FUZZ_CHECK(o.finished == (stream.fault() == StreamFault::kNone));
  } catch (...) {
    FUZZ_CHECK(!"an exception escaped ExecuteStream");
  }
  o.fault = stream.fault();
  o.end = stream.saw_end_of_execution();
  o.started = stream.started();
  stream.collect(o.result);
  return o;
}

void check_output(const std::string& text, const std::string& streamed, std::size_t cap, bool threw) {
  FUZZ_CHECK(is_valid_utf8(text));
  FUZZ_CHECK(text.size() <= cap);
  // After a callback threw it is silenced, so it received less than the text holds.
  if (!threw) FUZZ_CHECK(streamed.compare(0, text.size(), text) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // Byte 0 chooses how the body is split into reads; byte 1 the caps and whether the stdout callback throws.
  const std::size_t step = 1 + data[0] % 97;
  const std::size_t max_line = data[1] & 1 ? 64 + data[1] : 1u << 20;
  const std::size_t max_output = data[1] & 2 ? data[1] : 1u << 20;
  const int throw_after = (data[1] >> 4) % 4;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Outcome whole = decode(body, 0, max_output, max_line, throw_after);
  const Outcome split = decode(body, step, max_output, max_line, throw_after);
  for (const Outcome* o : {&whole, &split}) {
    const bool threw = o->fault == StreamFault::kCallbackThrew;
    check_output(o->result.stdout_text, o->streamed_out, max_output, threw);
    check_output(o->result.stderr_text, o->streamed_err, max_output, threw);
    if (o->result.code_error) {
      FUZZ_CHECK(o->result.code_error->traceback.find("\x1b[") == std::string::npos);
    }
  }
  FUZZ_CHECK(whole.fault == split.fault);
  FUZZ_CHECK(whole.finished == split.finished);
  FUZZ_CHECK(whole.end == split.end);
  FUZZ_CHECK(whole.started == split.started);
  FUZZ_CHECK(whole.result == split.result);
  FUZZ_CHECK(whole.streamed_out == split.streamed_out);
  FUZZ_CHECK(whole.streamed_err == split.streamed_err);
  return 0;
}

std::vector<std::string> fuzz_seeds() {
  const std::string example =
      "{\"type\": \"number_of_executions\", \"execution_count\": 1}\n"
      "{\"type\": \"stdout\", \"text\": \"hi\\n\", \"timestamp\": \"2026-08-20T10:00:00.123456+00:00\"}\n"
      "{\"type\": \"result\", \"text\": \"2\", \"extra\": {}, \"is_main_result\": true}\n"
      "{\"type\": \"end_of_execution\"}\n";
  const std::string error =
      "{\"type\": \"stderr\", \"text\": \"warn\\u00e9\\npart\"}\r\n"
      "{\"type\": \"error\", \"name\": \"ZeroDivisionError\", \"value\": \"division by zero\", "
      "\"traceback\": \"\\u001b[0;31mZeroDivisionError\\u001b[0m: division by zero\"}\n"
      "{\"type\": \"error\", \"name\": \"X\", \"value\": \"y\", \"traceback\": [\"a\", 1, {\"b\": null}]}\n"
      "{\"type\": \"error\", \"name\": \"ValueError\", \"value\": \"\\udcff\\ud83d\\ude00\", \"traceback\": \"\\ud800\"}\n"
      "{\"type\": \"keepalive\"}\n{\"type\": \"end_of_execution\"}";
  const std::string rich =
      "{\"type\": \"result\", \"png\": \"iVBORw0KGgo=\", \"json\": {\"a\": [1, 2.5, true]}, "
      "\"chart\": {\"type\": \"line\", \"title\": \"t\", \"elements\": []}, \"html\": \"<b>x</b>\", "
      "\"extra\": {\"application/geo+json\": {\"k\": 1}, \"plain\": 2}, \"is_main_result\": false}\n"
      "{\"type\": \"stdout\", \"text\": \"a\\nb\\nc\"}\n{\"type\": \"stdout\", \"text\": \"\\ud83d\\ude00\\n\"}\n";
  return {std::string("\x03\x00", 2) + example, std::string("\x10\x01", 2) + example,
          std::string("\x05\x12", 2) + example + example, std::string("\x01\x00", 2) + error,
          std::string("\x07\x03", 2) + rich, std::string("\x00\x00", 2) + "not json\n" + example,
          std::string("\x02\x20", 2) + rich + error,
          std::string("\x09\x00", 2) + "{\"type\": \"result\", \"json\": " + std::string(1200, '[') +
              std::string(1200, ']') + "}\n"};
}
