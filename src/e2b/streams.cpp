#include "e2b/streams.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/base64.hpp"
#include "core/callback_guard.hpp"
#include "core/untrusted.hpp"

namespace code_interpreter::e2b {
namespace {

using nlohmann::json;

// The code interpreter renames MIME types to short keys in `result` events (docs/protocols/e2b.md "Fields of the /execute events"); this maps them back.
constexpr std::pair<std::string_view, std::string_view> kMimeKeys[] = {
    {"text", "text/plain"},       {"html", "text/html"},        {"markdown", "text/markdown"},
    {"svg", "image/svg+xml"},     {"png", "image/png"},         {"jpeg", "image/jpeg"},
    {"pdf", "application/pdf"},   {"latex", "text/latex"},      {"json", "application/json"},
    {"javascript", "application/javascript"}, {"data", "e2b/data"}, {"chart", "e2b/chart"},
};

std::string as_text(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

const std::string* string_field(const json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
}

// The one handler for what a stream's event throws: a nlohmann::json::exception is a malformed event; anything else
// came out of a caller's callback (core/callback_guard.hpp), so both streams stop calling back.
template <typename Fail>
bool fault_of_current_exception(detail::OutputStream& out, detail::OutputStream& err, Fail&& fail) {
  try {
    throw;
  } catch (const nlohmann::json::exception&) {
    return fail(StreamFault::kMalformed, "a malformed event");
  } catch (...) {
    // Reached only by a throw outside deliver_guarded; its text is taken the same way.
    auto thrown = detail::deliver_guarded([] { throw; }, {&out, &err});
    return fail(StreamFault::kCallbackThrew, std::move(*thrown));
  }
}

}  // namespace

std::string strip_ansi(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      std::size_t j = i + 2;
      while (j < text.size() && !(text[j] >= '@' && text[j] <= '~')) ++j;
      i = j;  // skips the final byte too
      continue;
    }
    out.push_back(text[i]);
  }
  return out;
}

// ---- /execute ----

ExecuteStream::ExecuteStream(const std::function<void(std::string_view)>* on_stdout,
                             const std::function<void(std::string_view)>* on_stderr, std::size_t max_output,
                             std::size_t max_line)
    : out_(on_stdout, max_output),
      err_(on_stderr, max_output),
      lines_([this](std::string_view line) { return on_line(line); }, max_line),
      results_cap_(max_output) {}

bool ExecuteStream::fail(StreamFault fault, std::string detail) {
  if (fault_ == StreamFault::kNone) {
    fault_ = fault;
    fault_detail_ = std::move(detail);
  }
  return false;
}

bool ExecuteStream::feed(std::string_view bytes) {
  if (fault_ != StreamFault::kNone) return false;
  const auto status = lines_.feed(bytes);
  if (status == http::DecodeStatus::kOversize) return fail(StreamFault::kOversize, "an output line exceeded the size limit");
  return status == http::DecodeStatus::kOk;
}

bool ExecuteStream::finish() {
  if (fault_ == StreamFault::kNone) lines_.finish();
  finish_output();  // output received before a fault is kept (docs/errors.md "Output"), the unfinished line included
  return fault_ == StreamFault::kNone;
}

void ExecuteStream::finish_output() {
  if (auto thrown = detail::deliver_guarded([this] {
        out_.finish();
        err_.finish();
      }, {&out_, &err_}))
    fail(StreamFault::kCallbackThrew, std::move(*thrown));
}

bool ExecuteStream::on_line(std::string_view line) {
  if (line.empty()) return true;  // tolerated, though the server never sends one
  // Refused while it is parsed: a line of nested brackets would otherwise grow a DOM ~75 times its size (over a
  // GiB for one line at the default cap) before the depth could be judged, and dump() recurses once per level.
  json event = detail::parse_untrusted_json(line);
  if (event.is_discarded() || !event.is_object())
    return fail(StreamFault::kMalformed, "a line of the answer is not JSON, or nests too deeply");
  const std::string* type = string_field(event, "type");
  if (type == nullptr) return fail(StreamFault::kMalformed, "an event without a type");
  started_ = true;
  try {
    if (*type == "stdout" || *type == "stderr") {
      const std::string* text = string_field(event, "text");
      if (text == nullptr) return fail(StreamFault::kMalformed, "an output event without text");
      // Whatever the callback throws, a nlohmann::json::exception included, is the callback's.
      if (auto thrown = detail::deliver_guarded([&] { (*type == "stdout" ? out_ : err_).feed(*text); }, {&out_, &err_}))
        return fail(StreamFault::kCallbackThrew, std::move(*thrown));
    } else if (*type == "result") {
      RichResult result;
      for (const auto& [key, mime] : kMimeKeys) {
        const auto it = event.find(key);
        if (it != event.end() && !it->is_null()) result.data[std::string(mime)] = as_text(*it);
      }
      // Other MIME types travel in `extra` under their own names.
      if (const auto extra = event.find("extra"); extra != event.end() && extra->is_object())
        for (const auto& [mime, value] : extra->items())
          if (mime.find('/') != std::string::npos) result.data.emplace(mime, as_text(value));
      const auto main = event.find("is_main_result");
      result.is_main_result = main != event.end() && main->is_boolean() && main->get<bool>();
      std::size_t size = 0;
      for (const auto& [mime, data] : result.data) size += mime.size() + data.size();
      // Past the cap a result is dropped, like output past it: the result says so with `truncated`.
      if (size > results_cap_ - std::min(results_cap_, results_bytes_)) {
        results_truncated_ = true;
      } else {
        results_bytes_ += size;
        results_.push_back(std::move(result));
      }
    } else if (*type == "error") {
      if (!error_) {  // at most one per execution (docs/protocols/e2b.md "The /execute stream")
        CodeError error;
        if (const auto* s = string_field(event, "name")) error.name = *s;
        if (const auto* s = string_field(event, "value")) error.value = *s;
        if (const auto it = event.find("traceback"); it != event.end()) {
          if (it->is_string()) error.traceback = strip_ansi(it->get<std::string>());
          else if (it->is_array())
            for (const auto& part : *it) error.traceback += strip_ansi(as_text(part)) + "\n";
        }
        error_ = std::move(error);
      }
    } else if (*type == "end_of_execution") {
      end_ = true;
    }
    // number_of_executions, keepalive and unknown types carry nothing for the result.
  } catch (...) {
    return fault_of_current_exception(out_, err_, [this](StreamFault f, std::string d) { return fail(f, std::move(d)); });
  }
  return true;
}

void ExecuteStream::collect(ExecutionResult& result) {
  result.truncated = out_.truncated() || err_.truncated() || results_truncated_;
  result.stdout_text = out_.take_text();
  result.stderr_text = err_.take_text();
  result.results = std::move(results_);
  if (error_) result.code_error = error_;
}

// ---- process.Process/Start ----

ProcessStream::ProcessStream(const std::function<void(std::string_view)>* on_stdout,
                             const std::function<void(std::string_view)>* on_stderr, std::size_t max_output,
                             std::size_t max_payload)
    : out_(on_stdout, max_output),
      err_(on_stderr, max_output),
      max_payload_(max_payload),
      envelopes_([this](std::uint8_t flags, std::string_view payload) { return on_envelope(flags, payload); },
                 max_payload) {}

void ProcessStream::reattach() {
  envelopes_ = http::EnvelopeDecoder(
      [this](std::uint8_t flags, std::string_view payload) { return on_envelope(flags, payload); }, max_payload_);
  if (pid_) expected_pid_ = pid_;
  pid_.reset();
  closed_ = false;
  stream_error_.clear();
  stream_error_message_.clear();
}

bool ProcessStream::fail(StreamFault fault, std::string detail) {
  if (fault_ == StreamFault::kNone) {
    fault_ = fault;
    fault_detail_ = std::move(detail);
  }
  return false;
}

bool ProcessStream::feed(std::string_view bytes) {
  if (fault_ != StreamFault::kNone) return false;
  if (bytes.empty()) return true;
  if (closed_) return fail(StreamFault::kMalformed, "bytes after the end-of-stream envelope");
  const auto status = envelopes_.feed(bytes);
  // Bytes after the end-of-stream envelope in the same read are as wrong as in a later one.
  if (closed_ && envelopes_.has_partial()) return fail(StreamFault::kMalformed, "bytes after the end-of-stream envelope");
  if (status == http::DecodeStatus::kOversize) return fail(StreamFault::kOversize, "an envelope exceeded the size limit");
  if (status == http::DecodeStatus::kMalformed) return fail(StreamFault::kMalformed, "an envelope with unknown flags");
  return status == http::DecodeStatus::kOk;
}

bool ProcessStream::flush_idle() {
  if (fault_ != StreamFault::kNone) return false;
  if (!flush_at_ || std::chrono::steady_clock::now() < *flush_at_) return true;
  flush_at_.reset();
  if (auto thrown = detail::deliver_guarded([this] {
        out_.flush();
        err_.flush();
      }, {&out_, &err_}))
    return fail(StreamFault::kCallbackThrew, std::move(*thrown));
  return true;
}

void ProcessStream::finish() {
  flush_at_.reset();
  if (auto thrown = detail::deliver_guarded([this] {
        out_.finish();
        err_.finish();
      }, {&out_, &err_}))
    fail(StreamFault::kCallbackThrew, std::move(*thrown));
}

bool ProcessStream::on_envelope(std::uint8_t flags, std::string_view payload) {
  if (closed_) return fail(StreamFault::kMalformed, "an envelope after the end-of-stream envelope");
  json message = detail::parse_untrusted_json(payload);
  if (message.is_discarded() || !message.is_object()) return fail(StreamFault::kMalformed, "an envelope that is not JSON");
  try {
    if (flags & http::EnvelopeDecoder::kEndStream) {
      closed_ = true;
      if (const auto error = message.find("error"); error != message.end() && error->is_object()) {
        if (const auto* code = string_field(*error, "code")) stream_error_ = *code;
        else stream_error_ = "unknown";
        if (const auto* text = string_field(*error, "message")) stream_error_message_ = *text;
      }
      return true;
    }
    const auto event_it = message.find("event");
    if (event_it == message.end() || !event_it->is_object()) return fail(StreamFault::kMalformed, "a message without an event");
    const json& event = *event_it;
    if (const auto start = event.find("start"); start != event.end()) {
      // One `start`, first, with the pid of a process (docs/protocols/e2b.md "process.Process/Start"): anything else
      // would name a process we could then signal or re-attach to by mistake.
      if (pid_) return fail(StreamFault::kMalformed, "a second start event");
      const auto p = start->is_object() ? start->find("pid") : start->end();
      if (p == start->end() || !p->is_number_unsigned() || p->get<std::uint64_t>() == 0 ||
          p->get<std::uint64_t>() > 0xffffffffULL)
        return fail(StreamFault::kMalformed, "a start event without a pid of 1 to 4294967295");
      const auto pid = static_cast<std::uint32_t>(p->get<std::uint64_t>());
      if (expected_pid_ && pid != *expected_pid_)
        return fail(StreamFault::kMalformed, "a start event of pid " + std::to_string(pid) + " on a stream of pid " +
                                                 std::to_string(*expected_pid_));
      pid_ = pid;
      return true;
    }
    // The first message is always `start` (docs/protocols/e2b.md "process.Process/Start").
    if (!pid_) return fail(StreamFault::kMalformed, "the stream did not begin with a start event");
    if (const auto data = event.find("data"); data != event.end()) {
      for (const char* name : {"stdout", "stderr"}) {
        const auto* field = string_field(*data, name);
        if (field == nullptr) continue;
        auto bytes = detail::base64_decode(*field);
        if (!bytes) return fail(StreamFault::kMalformed, "output that is not base64");
        if (!bytes->empty()) ++events_;  // an empty data event is no more progress than a keep-alive
        auto& stream = name[3] == 'o' ? out_ : err_;
        auto& other = name[3] == 'o' ? err_ : out_;
        // Whatever the callback throws, a nlohmann::json::exception included, is the callback's. What the other
        // stream holds was written first: delivered first, so the order across the streams is kept.
        if (auto thrown = detail::deliver_guarded([&] {
              if (other.holding()) other.flush();
              stream.feed(*bytes);
            }, {&out_, &err_}))
          return fail(StreamFault::kCallbackThrew, std::move(*thrown));
        if (!out_.holding() && !err_.holding()) flush_at_.reset();
        else if (!flush_at_) flush_at_ = std::chrono::steady_clock::now() + detail::kPartialLineDelay;
      }
    } else if (const auto end = event.find("end"); end != event.end()) {
      End e;
      // protojson omits fields at their default: a missing exitCode is 0 (docs/protocols/e2b.md "Connect calls and their JSON").
      if (const auto c = end->find("exitCode"); c != end->end()) e.exit_code = detail::untrusted_exit_code(*c);
      if (const auto x = end->find("exited"); x != end->end() && x->is_boolean()) e.exited = x->get<bool>();
      if (const auto* s = string_field(*end, "status")) e.status = *s;
      if (const auto* s = string_field(*end, "error")) e.error = *s;
      ++events_;
      end_ = std::move(e);
    }
    // keepalive and unknown events carry nothing, and are not counted: a server that sends only keep-alives proves
    // nothing about the process.
  } catch (...) {
    return fault_of_current_exception(out_, err_, [this](StreamFault f, std::string d) { return fail(f, std::move(d)); });
  }
  return true;
}

void ProcessStream::collect(ExecutionResult& result) {
  result.truncated = out_.truncated() || err_.truncated();
  result.stdout_text = out_.take_text();
  result.stderr_text = err_.take_text();
}

}  // namespace code_interpreter::e2b
