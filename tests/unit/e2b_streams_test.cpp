#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/execution.hpp"
#include "e2b/streams.hpp"
#include "http/stream_decoders.hpp"
#include "../support/bytes.hpp"

using code_interpreter::test_support::Recorder;
using code_interpreter::CodeError;
using code_interpreter::ExecutionResult;
using code_interpreter::RichResult;
using code_interpreter::e2b::ExecuteStream;
using code_interpreter::e2b::ProcessStream;
using code_interpreter::e2b::StreamFault;
using code_interpreter::e2b::strip_ansi;
using code_interpreter::http::encode_envelope;

namespace {

constexpr std::size_t kMaxOutput = 10u * 1024 * 1024;
constexpr std::size_t kMaxLine = 16u * 1024 * 1024;

using Callback = std::function<void(std::string_view)>;

// The composed example of docs/protocols/e2b.md "Fields of the /execute events" (`print("hi"); 1+1`).
const std::string kExecuteExample =
    "{\"type\": \"number_of_executions\", \"execution_count\": 1}\n"
    "{\"type\": \"stdout\", \"text\": \"hi\\n\", \"timestamp\": \"2026-08-20T10:00:00.123456+00:00\"}\n"
    "{\"type\": \"result\", \"text\": \"2\", \"extra\": {}, \"is_main_result\": true}\n"
    "{\"type\": \"end_of_execution\"}\n";

std::string line(const nlohmann::json& event) { return event.dump() + "\n"; }

std::string message(const nlohmann::json& event) { return encode_envelope(0x00, nlohmann::json{{"event", event}}.dump()); }

std::string end_stream(const nlohmann::json& body) { return encode_envelope(0x02, body.dump()); }

const nlohmann::json kStart = {{"start", {{"pid", 812}}}};

// The composed example of docs/protocols/e2b.md "process.Process/Start" (`commands.run("echo hi")`).
const std::string kProcessExample = message(kStart) + message({{"data", {{"stdout", "aGkK"}}}}) +
                                    message({{"end", {{"exited", true}, {"status", "exit status 0"}}}}) +
                                    end_stream(nlohmann::json::object());

// The process's peak resident set so far, in bytes (Linux reports ru_maxrss in KiB).
std::size_t peak_rss() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;
}

// 8 MiB of open brackets: half the default line cap. Built as a DOM it would take some 600 MiB.
const std::string kDeepBrackets(std::size_t{8} << 20, '[');
constexpr std::size_t kDeepLineBudget = std::size_t{64} << 20;

ExecutionResult collect(ExecuteStream& stream) {
  ExecutionResult r;
  stream.collect(r);
  return r;
}

ExecutionResult collect(ProcessStream& stream) {
  ExecutionResult r;
  stream.collect(r);
  return r;
}

}  // namespace

// ---- ExecuteStream (/execute NDJSON) ----

TEST_CASE("ExecuteStream decodes the composed /execute example identically wherever the body is cut",
          "[e2b_streams]") {
  const RichResult two{{{"text/plain", "2"}}, true};
  for (std::size_t i = 0; i <= kExecuteExample.size(); ++i) {
    Recorder out;
    ExecuteStream stream(&out.callback, nullptr, kMaxOutput, kMaxLine);
    CHECK(stream.feed(std::string_view(kExecuteExample).substr(0, i)));
    CHECK(stream.feed(std::string_view(kExecuteExample).substr(i)));
    CHECK(stream.finish());
    CAPTURE(i);
    REQUIRE(stream.fault() == StreamFault::kNone);
    REQUIRE(stream.saw_end_of_execution());
    REQUIRE(stream.started());
    REQUIRE(out.lines == std::vector<std::string>{"hi\n"});
    const ExecutionResult r = collect(stream);
    REQUIRE(r.stdout_text == "hi\n");
    REQUIRE(r.stderr_text == "");
    REQUIRE(r.results == std::vector<RichResult>{two});
    REQUIRE_FALSE(r.code_error.has_value());
    REQUIRE_FALSE(r.truncated);
  }
}

TEST_CASE("ExecuteStream keeps stderr apart from stdout", "[e2b_streams]") {
  Recorder out, err;
  ExecuteStream stream(&out.callback, &err.callback, kMaxOutput, kMaxLine);
  CHECK(stream.feed(line({{"type", "stderr"}, {"text", "warn\n"}}) + line({{"type", "stdout"}, {"text", "ok\n"}})));
  CHECK(stream.finish());
  CHECK(out.lines == std::vector<std::string>{"ok\n"});
  CHECK(err.lines == std::vector<std::string>{"warn\n"});
  const ExecutionResult r = collect(stream);
  CHECK(r.stdout_text == "ok\n");
  CHECK(r.stderr_text == "warn\n");
}

TEST_CASE("ExecuteStream turns an error event into the code error, with ANSI colours stripped from the traceback",
          "[e2b_streams]") {
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(line({{"type", "error"},
                          {"name", "ZeroDivisionError"},
                          {"value", "division by zero"},
                          {"traceback", "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero\n\x1b[1;32m1\x1b[0m/0"}})));
  CHECK(stream.finish());
  const ExecutionResult r = collect(stream);
  CHECK(r.code_error == CodeError{"ZeroDivisionError", "division by zero", "ZeroDivisionError: division by zero\n1/0"});
}

TEST_CASE("ExecuteStream keeps the first error event and ignores a second one", "[e2b_streams]") {
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(line({{"type", "error"}, {"name", "NameError"}, {"value", "x"}, {"traceback", "t1"}})));
  CHECK(stream.feed(line({{"type", "error"}, {"name", "UnexpectedEndOfExecution"}, {"value", "y"}, {"traceback", "t2"}})));
  CHECK(stream.finish());
  CHECK(stream.code_error() == CodeError{"NameError", "x", "t1"});
}

TEST_CASE("ExecuteStream maps short result keys back to MIME types, JSON objects are serialized", "[e2b_streams]") {
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(
      "{\"type\": \"result\", \"png\": \"iVBORw0KGgo=\", \"json\": {\"a\": [1, 2]}, "
      "\"chart\": {\"type\": \"line\", \"title\": \"t\", \"elements\": []}, \"html\": \"<b>x</b>\", "
      "\"extra\": {}, \"is_main_result\": false}\n"));
  CHECK(stream.finish());
  const ExecutionResult r = collect(stream);
  const RichResult expected{{{"image/png", "iVBORw0KGgo="},
                             {"application/json", "{\"a\":[1,2]}"},
                             {"e2b/chart", "{\"elements\":[],\"title\":\"t\",\"type\":\"line\"}"},
                             {"text/html", "<b>x</b>"}},
                            false};
  CHECK(r.results == std::vector<RichResult>{expected});
}

TEST_CASE("ExecuteStream takes MIME types from extra only for keys that contain a '/'", "[e2b_streams]") {
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(
      "{\"type\": \"result\", \"text\": \"t\", \"extra\": {\"application/geo+json\": {\"k\": 1}, "
      "\"text/x-custom\": \"c\", \"not_a_mime\": \"n\"}, \"is_main_result\": true}\n"));
  CHECK(stream.finish());
  const ExecutionResult r = collect(stream);
  const RichResult expected{
      {{"text/plain", "t"}, {"application/geo+json", "{\"k\":1}"}, {"text/x-custom", "c"}}, true};
  CHECK(r.results == std::vector<RichResult>{expected});
}

TEST_CASE("ExecuteStream hands the stdout callback whole lines including their newline, the last partial line at finish",
          "[e2b_streams]") {
  Recorder out;
  ExecuteStream stream(&out.callback, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(line({{"type", "stdout"}, {"text", "a\nb"}})));
  CHECK(out.lines == std::vector<std::string>{"a\n"});
  CHECK(stream.feed(line({{"type", "stdout"}, {"text", "c\nd"}})));
  CHECK(out.lines == std::vector<std::string>{"a\n", "bc\n"});
  CHECK(stream.finish());
  CHECK(out.lines == std::vector<std::string>{"a\n", "bc\n", "d"});
  CHECK(collect(stream).stdout_text == "a\nbc\nd");
}

TEST_CASE("ExecuteStream stops as malformed on a line that is not JSON, keeping the output before it",
          "[e2b_streams]") {
  Recorder out;
  ExecuteStream stream(&out.callback, nullptr, kMaxOutput, kMaxLine);
  CHECK_FALSE(stream.feed(line({{"type", "stdout"}, {"text", "kept\n"}}) + "not json\n" +
                          line({{"type", "stdout"}, {"text", "after\n"}})));
  CHECK(stream.fault() == StreamFault::kMalformed);
  CHECK_FALSE(stream.feed(line({{"type", "stdout"}, {"text", "later\n"}})));
  stream.finish_output();
  CHECK(out.lines == std::vector<std::string>{"kept\n"});
  CHECK(collect(stream).stdout_text == "kept\n");
}

TEST_CASE("ExecuteStream stops as malformed on JSON that is not an event object", "[e2b_streams]") {
  for (const std::string bad : {"[1, 2]\n", "\"stdout\"\n", "{\"text\": \"no type\"}\n", "{\"type\": 7}\n",
                                "{\"type\": \"stdout\"}\n", "{\"type\": \"stdout\", \"text\": 5}\n"}) {
    ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
    CAPTURE(bad);
    CHECK_FALSE(stream.feed(bad));
    CHECK(stream.fault() == StreamFault::kMalformed);
  }
}

TEST_CASE("ExecuteStream accepts an event nested 1000 levels deep, as deep as Python's json.dumps can write",
          "[e2b_streams]") {
  // The event object is the first level; 999 arrays nest inside it.
  const std::string nested = std::string(999, '[') + std::string(999, ']');
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed("{\"type\": \"result\", \"json\": " + nested + ", \"is_main_result\": true}\n"));
  CHECK(stream.finish());
  const ExecutionResult r = collect(stream);
  CHECK(r.results == std::vector<RichResult>{RichResult{{{"application/json", nested}}, true}});
}

TEST_CASE("ExecuteStream stops as malformed on an event nested deeper than 1000 levels, without overflowing the stack",
          "[e2b_streams]") {
  for (const std::size_t arrays : {std::size_t{1000}, std::size_t{1000000}}) {
    const std::string nested = std::string(arrays, '[') + std::string(arrays, ']');
    ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
    CAPTURE(arrays);
    CHECK_FALSE(stream.feed("{\"type\": \"result\", \"json\": " + nested + "}\n"));
    CHECK(stream.fault() == StreamFault::kMalformed);
    CHECK(collect(stream).results.empty());
  }
}

TEST_CASE("ExecuteStream refuses a line of nested brackets as it parses, never building it in memory",
          "[e2b_streams]") {
  const std::string hostile = "{\"type\": \"result\", \"json\": " + kDeepBrackets + "\n";
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  const std::size_t before = peak_rss();
  CHECK_FALSE(stream.feed(hostile));
  CHECK(peak_rss() - before < kDeepLineBudget);
  CHECK(stream.fault() == StreamFault::kMalformed);
  CHECK(stream.fault_detail() == "a line of the answer is not JSON, or nests too deeply");
}

TEST_CASE("ExecuteStream refuses a line of more than 2^20 JSON values as it parses", "[e2b_streams]") {
  std::string many = "{\"type\": \"result\", \"json\": [0";
  for (int i = 0; i < (1 << 20); ++i) many += ",0";
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK_FALSE(stream.feed(many + "]}\n"));
  CHECK(stream.fault() == StreamFault::kMalformed);
  CHECK(collect(stream).results.empty());
}

TEST_CASE("ExecuteStream stops as oversize on a line over the cap", "[e2b_streams]") {
  const std::string ok = line({{"type", "stdout"}, {"text", "x\n"}});
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, ok.size() - 1);  // the cap excludes the "\n"
  CHECK(stream.feed(ok));
  CHECK_FALSE(stream.feed(line({{"type", "stdout"}, {"text", "xx\n"}})));
  CHECK(stream.fault() == StreamFault::kOversize);
  CHECK(collect(stream).stdout_text == "x\n");
}

TEST_CASE("ExecuteStream reports a throwing callback as kCallbackThrew and lets no exception escape",
          "[e2b_streams]") {
  int calls = 0;
  const Callback boom = [&](std::string_view) {
    ++calls;
    throw std::runtime_error("boom");
  };
  ExecuteStream stream(&boom, nullptr, kMaxOutput, kMaxLine);
  bool fed = true;
  REQUIRE_NOTHROW(fed = stream.feed(line({{"type", "stdout"}, {"text", "a\n"}}) +
                                    line({{"type", "stdout"}, {"text", "b\n"}})));
  CHECK_FALSE(fed);
  CHECK(stream.fault() == StreamFault::kCallbackThrew);
  REQUIRE_NOTHROW(stream.finish_output());
  CHECK(calls == 1);  // never called again once it threw
  CHECK(stream.fault() == StreamFault::kCallbackThrew);
}

TEST_CASE("ExecuteStream reports a callback that throws a JSON exception as kCallbackThrew, not as malformed",
          "[e2b_streams]") {
  // A callback may well parse the program's output as JSON itself; its exception is still the callback's.
  const Callback parse = [](std::string_view text) { const auto value = nlohmann::json::parse(text); };
  ExecuteStream stream(&parse, nullptr, kMaxOutput, kMaxLine);
  REQUIRE_NOTHROW(stream.feed(line({{"type", "stdout"}, {"text", "not json\n"}})));
  CHECK(stream.fault() == StreamFault::kCallbackThrew);
}

TEST_CASE("ExecuteStream reports a callback that throws on the last partial line as kCallbackThrew",
          "[e2b_streams]") {
  const Callback boom = [](std::string_view) { throw 42; };
  ExecuteStream stream(&boom, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(line({{"type", "stdout"}, {"text", "partial"}})));
  bool clean = true;
  REQUIRE_NOTHROW(clean = stream.finish());
  CHECK_FALSE(clean);
  CHECK(stream.fault() == StreamFault::kCallbackThrew);
  CHECK(collect(stream).stdout_text == "partial");
}

TEST_CASE("ExecuteStream::finish parses a final line that has no newline", "[e2b_streams]") {
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(kExecuteExample.substr(0, kExecuteExample.size() - 1)));
  CHECK_FALSE(stream.saw_end_of_execution());
  CHECK(stream.finish());
  CHECK(stream.saw_end_of_execution());
}

TEST_CASE("ExecuteStream::finish on a malformed final line keeps the partial output line before it",
          "[e2b_streams]") {
  // Output received before an error is kept (docs/errors.md "Output"), the unfinished output line included.
  Recorder out;
  ExecuteStream stream(&out.callback, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(line({{"type", "stdout"}, {"text", "a\npartial"}}) + "{\"type\": \"stdo"));
  CHECK_FALSE(stream.finish());
  CHECK(stream.fault() == StreamFault::kMalformed);
  CHECK(out.lines == std::vector<std::string>{"a\n", "partial"});
  CHECK(collect(stream).stdout_text == "a\npartial");
}

TEST_CASE("ExecuteStream::finish_output after a cut drops the unfinished event but delivers the partial output line",
          "[e2b_streams]") {
  Recorder out;
  ExecuteStream stream(&out.callback, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(line({{"type", "stdout"}, {"text", "partial"}}) + "{\"type\": \"stdout\", \"text\": \"nev"));
  stream.finish_output();
  CHECK(stream.fault() == StreamFault::kNone);
  CHECK(out.lines == std::vector<std::string>{"partial"});
  CHECK(collect(stream).stdout_text == "partial");
}

TEST_CASE("ExecuteStream ignores keepalive, number_of_executions and unknown event types", "[e2b_streams]") {
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed("{\"type\": \"keepalive\"}\n{\"type\": \"number_of_executions\", \"execution_count\": 3}\n"
                    "{\"type\": \"something_new\", \"x\": [1]}\n"));
  CHECK(stream.finish());
  CHECK(stream.started());
  CHECK_FALSE(stream.saw_end_of_execution());
  const ExecutionResult r = collect(stream);
  CHECK(r.stdout_text == "");
  CHECK(r.results.empty());
  CHECK_FALSE(r.code_error.has_value());
}

TEST_CASE("ExecuteStream decodes JSON unicode escapes in output text, surrogate pairs included", "[e2b_streams]") {
  // Python's json.dumps escapes every non-ASCII character by default.
  ExecuteStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed("{\"type\": \"stdout\", \"text\": \"\\u00e9\\ud83d\\ude00\\n\"}\n"));
  CHECK(stream.finish());
  CHECK(collect(stream).stdout_text == "\xc3\xa9\xf0\x9f\x98\x80\n");
}

// ---- ProcessStream (process.Process/Start envelopes) ----

TEST_CASE("ProcessStream decodes the composed process example identically wherever the body is cut",
          "[e2b_streams]") {
  for (std::size_t i = 0; i <= kProcessExample.size(); ++i) {
    Recorder out;
    ProcessStream stream(&out.callback, nullptr, kMaxOutput, kMaxLine);
    CHECK(stream.feed(std::string_view(kProcessExample).substr(0, i)));
    CHECK(stream.feed(std::string_view(kProcessExample).substr(i)));
    stream.finish();
    CAPTURE(i);
    REQUIRE(stream.fault() == StreamFault::kNone);
    REQUIRE(stream.started());
    REQUIRE(stream.ended());
    REQUIRE(stream.stream_closed());
    REQUIRE_FALSE(stream.partial_envelope());
    REQUIRE(stream.stream_error() == "");
    REQUIRE(stream.end()->exit_code == 0);
    REQUIRE(stream.end()->exited);
    REQUIRE(stream.end()->status == "exit status 0");
    REQUIRE(stream.end()->error == "");
    REQUIRE(out.lines == std::vector<std::string>{"hi\n"});
    const ExecutionResult r = collect(stream);
    REQUIRE(r.stdout_text == "hi\n");
    REQUIRE(r.stderr_text == "");
  }
}

TEST_CASE("ProcessStream reads a missing exitCode as 0, as protojson omits default values", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(message(kStart) + message({{"end", nlohmann::json::object()}})));
  REQUIRE(stream.ended());
  CHECK(stream.end()->exit_code == 0);
  CHECK_FALSE(stream.end()->exited);
}

TEST_CASE("ProcessStream reads an exitCode beyond int as 1, never wrapped to 0", "[e2b_streams]") {
  for (const auto& code : {nlohmann::json(4294967296ULL), nlohmann::json(-1099511627776LL)}) {
    ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
    CHECK(stream.feed(message(kStart) + message({{"end", {{"exitCode", code}, {"exited", true}}}})));
    REQUIRE(stream.ended());
    CHECK(stream.end()->exit_code == 1);
  }
}

TEST_CASE("ProcessStream reads exitCode written as digits or an integral float, and a malformed one as 1",
          "[e2b_streams]") {
  const std::vector<std::pair<nlohmann::json, int>> cases = {
      {"3", 3}, {"-2", -2}, {2.0, 2}, {"0", 0}, {1.5, 1}, {true, 1}, {"abc", 1}, {" 3", 1}, {"", 1},
      {nlohmann::json::array(), 1}, {"99999999999", 1}};
  for (const auto& [code, expected] : cases) {
    INFO(code.dump());
    ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
    CHECK(stream.feed(message(kStart) + message({{"end", {{"exitCode", code}, {"exited", true}}}})));
    REQUIRE(stream.ended());
    CHECK(stream.end()->exit_code == expected);
  }
}

TEST_CASE("ProcessStream reads exitCode, status and error of a failed command", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(message(kStart) +
                    message({{"end",
                              {{"exitCode", 3}, {"exited", true}, {"status", "exit status 3"}, {"error", "exit status 3"}}}}) +
                    end_stream(nlohmann::json::object())));
  REQUIRE(stream.ended());
  CHECK(stream.end()->exit_code == 3);
  CHECK(stream.end()->exited);
  CHECK(stream.end()->status == "exit status 3");
  CHECK(stream.end()->error == "exit status 3");
  CHECK(stream.stream_closed());
}

TEST_CASE("ProcessStream reports the end-of-stream error code and message of a deadline", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(
      message(kStart) +
      message({{"end", {{"exitCode", -1}, {"status", "signal: killed"}, {"error", "signal: killed"}}}}) +
      end_stream({{"error", {{"code", "deadline_exceeded"}, {"message", "context deadline exceeded"}}}})));
  CHECK(stream.fault() == StreamFault::kNone);
  CHECK(stream.stream_closed());
  CHECK(stream.stream_error() == "deadline_exceeded");
  CHECK(stream.stream_error_message() == "context deadline exceeded");
  REQUIRE(stream.ended());
  CHECK(stream.end()->exit_code == -1);
  CHECK_FALSE(stream.end()->exited);
}

TEST_CASE("ProcessStream stops as malformed on data before the start event", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK_FALSE(stream.feed(message({{"data", {{"stdout", "aGkK"}}}})));
  CHECK(stream.fault() == StreamFault::kMalformed);
  CHECK_FALSE(stream.started());
  CHECK(collect(stream).stdout_text == "");
}

TEST_CASE("ProcessStream stops as malformed on output that is not base64, keeping the output before it",
          "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK_FALSE(stream.feed(message(kStart) + message({{"data", {{"stdout", "aGkK"}}}}) +
                          message({{"data", {{"stdout", "not base64!"}}}})));
  CHECK(stream.fault() == StreamFault::kMalformed);
  stream.finish();
  CHECK(collect(stream).stdout_text == "hi\n");
}

TEST_CASE("ProcessStream stops as malformed on bytes after the end-of-stream envelope, in a later read",
          "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(kProcessExample));
  CHECK_FALSE(stream.feed("x"));
  CHECK(stream.fault() == StreamFault::kMalformed);
}

TEST_CASE("ProcessStream stops as malformed on bytes after the end-of-stream envelope, in the same read",
          "[e2b_streams]") {
  // Whether the trailing bytes form a whole envelope or not, and however the reads fall, the answer is the same.
  for (const std::string tail : {std::string("x"), message({{"keepalive", nlohmann::json::object()}})}) {
    ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
    CAPTURE(tail.size());
    CHECK_FALSE(stream.feed(kProcessExample + tail));
    CHECK(stream.fault() == StreamFault::kMalformed);
  }
}

TEST_CASE("ProcessStream stops as malformed on an envelope whose payload is not a JSON object", "[e2b_streams]") {
  for (const std::string bad : {encode_envelope(0x00, "nope"), encode_envelope(0x00, "[]"),
                                encode_envelope(0x00, "{\"noevent\":1}"), encode_envelope(0x02, "")}) {
    ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
    CHECK_FALSE(stream.feed(message(kStart) + bad));
    CHECK(stream.fault() == StreamFault::kMalformed);
  }
}

TEST_CASE("ProcessStream refuses an envelope of nested brackets as it parses, never building it in memory",
          "[e2b_streams]") {
  const std::string hostile = encode_envelope(0x00, "{\"event\": {\"keepalive\": " + kDeepBrackets);
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  REQUIRE(stream.feed(message(kStart)));
  const std::size_t before = peak_rss();
  CHECK_FALSE(stream.feed(hostile));
  CHECK(peak_rss() - before < kDeepLineBudget);
  CHECK(stream.fault() == StreamFault::kMalformed);
  CHECK(stream.fault_detail() == "an envelope that is not JSON");
}

TEST_CASE("ProcessStream refuses a well-formed envelope nested deeper than 1000 levels", "[e2b_streams]") {
  const std::string nested = std::string(1000, '[') + std::string(1000, ']');
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK_FALSE(stream.feed(message(kStart) + encode_envelope(0x00, "{\"event\": {\"keepalive\": " + nested + "}}")));
  CHECK(stream.fault() == StreamFault::kMalformed);
}

TEST_CASE("ProcessStream stops as malformed on a compressed envelope", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK_FALSE(stream.feed(message(kStart) + encode_envelope(0x01, "{}")));
  CHECK(stream.fault() == StreamFault::kMalformed);
}

TEST_CASE("ProcessStream stops as oversize on an envelope longer than the cap", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, 64);
  CHECK_FALSE(stream.feed(encode_envelope(0x00, std::string(65, ' '))));
  CHECK(stream.fault() == StreamFault::kOversize);
}

TEST_CASE("ProcessStream::partial_envelope tells a body that ended inside an envelope", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(kProcessExample.substr(0, kProcessExample.size() - 3)));
  CHECK(stream.partial_envelope());
  CHECK_FALSE(stream.stream_closed());
  CHECK(stream.fault() == StreamFault::kNone);
}

TEST_CASE("ProcessStream keeps stderr data apart from stdout data", "[e2b_streams]") {
  Recorder out, err;
  ProcessStream stream(&out.callback, &err.callback, kMaxOutput, kMaxLine);
  CHECK(stream.feed(message(kStart) + message({{"data", {{"stderr", "ZXJyCg=="}}}}) +
                    message({{"data", {{"stdout", "b3V0"}}}})));
  stream.finish();
  CHECK(out.lines == std::vector<std::string>{"out"});
  CHECK(err.lines == std::vector<std::string>{"err\n"});
  const ExecutionResult r = collect(stream);
  CHECK(r.stdout_text == "out");
  CHECK(r.stderr_text == "err\n");
}

TEST_CASE("ProcessStream ignores keepalive events", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  const std::string keepalive = message({{"keepalive", nlohmann::json::object()}});
  CHECK(stream.feed(message(kStart) + keepalive + message({{"data", {{"stdout", "aGkK"}}}}) + keepalive));
  stream.finish();
  CHECK(stream.fault() == StreamFault::kNone);
  CHECK_FALSE(stream.ended());
  CHECK(collect(stream).stdout_text == "hi\n");
}

TEST_CASE("ProcessStream reports a callback that throws a JSON exception as kCallbackThrew", "[e2b_streams]") {
  const Callback parse = [](std::string_view text) { const auto value = nlohmann::json::parse(text); };
  ProcessStream stream(&parse, nullptr, kMaxOutput, kMaxLine);
  REQUIRE_NOTHROW(stream.feed(message(kStart) + message({{"data", {{"stdout", "aGkK"}}}})));
  CHECK(stream.fault() == StreamFault::kCallbackThrew);
}

TEST_CASE("ProcessStream repairs ill-formed UTF-8 in decoded output", "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(message(kStart) + message({{"data", {{"stdout", "Yf9iCg=="}}}})));  // "a\xffb\n"
  stream.finish();
  CHECK(collect(stream).stdout_text == "a\xef\xbf\xbd" "b\n");
}

// ---- strip_ansi ----

TEST_CASE("strip_ansi removes CSI escape sequences and keeps everything else", "[e2b_streams]") {
  CHECK(strip_ansi("\x1b[0;31mred\x1b[0m plain") == "red plain");
  CHECK(strip_ansi("\x1b[38;5;196mX\x1b[39m") == "X");
  CHECK(strip_ansi("\x1b[1A\x1b[2Kline") == "line");
  CHECK(strip_ansi("no escapes\n") == "no escapes\n");
  CHECK(strip_ansi("a\x1b" "b") == "a\x1b" "b");  // ESC without '[' is not a CSI sequence
  CHECK(strip_ansi("tail\x1b") == "tail\x1b");
  CHECK(strip_ansi("cut\x1b[12") == "cut");  // an unfinished sequence runs to the end
  CHECK(strip_ansi("") == "");
}

TEST_CASE("ProcessStream refuses a start event without a pid of 1 to 4294967295", "[e2b_streams]") {
  for (const nlohmann::json& start : {nlohmann::json::object(), nlohmann::json{{"pid", 0}},
                                      nlohmann::json{{"pid", 4294967296ULL}}, nlohmann::json{{"pid", -3}},
                                      nlohmann::json{{"pid", "812"}}, nlohmann::json{{"pid", 8.5}}}) {
    CAPTURE(start.dump());
    ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
    CHECK_FALSE(stream.feed(message({{"start", start}})));
    CHECK(stream.fault() == StreamFault::kMalformed);
    CHECK(stream.fault_detail() == "a start event without a pid of 1 to 4294967295");
    CHECK_FALSE(stream.started());
  }
  ProcessStream largest(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(largest.feed(message({{"start", {{"pid", 4294967295ULL}}}})));
  CHECK(largest.pid() == std::optional<std::uint32_t>(4294967295U));
}

TEST_CASE("ProcessStream refuses a second start, and on a re-attach a start of another pid", "[e2b_streams]") {
  ProcessStream twice(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK_FALSE(twice.feed(message(kStart) + message({{"start", {{"pid", 813}}}})));
  CHECK(twice.fault_detail() == "a second start event");
  CHECK(twice.pid() == std::optional<std::uint32_t>(812));

  ProcessStream reattached(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(reattached.feed(message(kStart)));
  reattached.reattach();
  CHECK_FALSE(reattached.feed(message({{"start", {{"pid", 813}}}})));
  CHECK(reattached.fault_detail() == "a start event of pid 813 on a stream of pid 812");

  ProcessStream same(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(same.feed(message(kStart)));
  same.reattach();
  CHECK(same.feed(message(kStart)));
  CHECK(same.fault() == StreamFault::kNone);

  ProcessStream connected(nullptr, nullptr, kMaxOutput, kMaxLine);
  connected.expect_pid(9);
  CHECK_FALSE(connected.feed(message(kStart)));
  CHECK(connected.fault_detail() == "a start event of pid 812 on a stream of pid 9");
}

TEST_CASE("ProcessStream counts the data and end events after start, across re-attaches, not keep-alives",
          "[e2b_streams]") {
  ProcessStream stream(nullptr, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(message(kStart)));
  CHECK(stream.events() == 0);
  CHECK(stream.feed(message({{"keepalive", nlohmann::json::object()}}) + message({{"data", {{"stdout", "aGkK"}}}})));
  CHECK(stream.events() == 1);
  CHECK(stream.feed(message({{"keepalive", nlohmann::json::object()}}) + message({{"unknown", 1}})));
  CHECK(stream.events() == 1);
  CHECK(stream.feed(message({{"data", nlohmann::json::object()}}) + message({{"data", {{"stdout", ""}}}})));
  CHECK(stream.events() == 1);
  stream.reattach();
  CHECK(stream.feed(message(kStart)));
  CHECK(stream.events() == 1);
  CHECK(stream.feed(message({{"data", {{"stdout", "aGkK"}}}}) + message({{"end", {{"exitCode", 0}}}})));
  CHECK(stream.events() == 3);
}

TEST_CASE("ProcessStream delivers a partial line held for the partial-line delay, not before", "[e2b_streams]") {
  Recorder out;
  ProcessStream stream(&out.callback, nullptr, kMaxOutput, kMaxLine);
  CHECK(stream.feed(message(kStart) + message({{"data", {{"stdout", "bmFtZT8g"}}}})));  // "name? "
  CHECK(stream.flush_idle());
  CHECK(out.lines.empty());
  std::this_thread::sleep_for(code_interpreter::detail::kPartialLineDelay + std::chrono::milliseconds(10));
  CHECK(stream.flush_idle());
  CHECK(out.lines == std::vector<std::string>{"name? "});
  CHECK(stream.feed(message({{"data", {{"stdout", "Ym9iCg=="}}}})));  // "bob\n"
  CHECK(out.lines == std::vector<std::string>{"name? ", "bob\n"});
  CHECK(collect(stream).stdout_text == "name? bob\n");
}

TEST_CASE("ProcessStream delivers what one stream holds before output of the other", "[e2b_streams]") {
  std::vector<std::string> order;
  Callback o = [&](std::string_view l) { order.push_back("out:" + std::string(l)); };
  Callback e = [&](std::string_view l) { order.push_back("err:" + std::string(l)); };
  ProcessStream stream(&o, &e, kMaxOutput, kMaxLine);
  CHECK(stream.feed(message(kStart) + message({{"data", {{"stdout", "YQ=="}}}}) +  // "a"
                    message({{"data", {{"stderr", "Ygo="}}}})));                     // "b\n"
  CHECK(order == std::vector<std::string>{"out:a", "err:b\n"});
}
