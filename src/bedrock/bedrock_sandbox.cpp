#include "code_interpreter/bedrock_sandbox.hpp"

#include <algorithm>
#include <cstdint>
#include <cctype>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "bedrock/config.hpp"
#include "bedrock/event_stream.hpp"
#include "code_interpreter/logging.hpp"
#include "core/base64.hpp"
#include "core/call_registry.hpp"
#include "core/deadline.hpp"
#include "core/file_guards.hpp"
#include "core/nested.hpp"
#include "core/outcome.hpp"
#include "core/output.hpp"
#include "core/untrusted.hpp"
#include "core/utf8.hpp"
#include "http/http_client.hpp"
#include "http/outcome.hpp"
#include "http/retry.hpp"

namespace code_interpreter {
namespace {

using nlohmann::json;
using detail::Deadline;
using detail::throw_nested;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kDefaultExecuteTimeout{std::chrono::seconds(300)};
constexpr milliseconds kDefaultCommandTimeout{std::chrono::seconds(30)};
constexpr milliseconds kDefaultCreateTimeout{std::chrono::minutes(5)};
constexpr std::size_t kMaxErrorBody = 64 * 1024;
constexpr const char* kSessionHeader = "x-amzn-code-interpreter-session-id";  // docs/protocols/bedrock.md "InvokeCodeInterpreter"

// A version-4 UUID: the clientToken the AWS SDKs generate (docs/protocols/bedrock.md "Session operations").
std::string uuid4() {
  std::random_device device;
  unsigned char b[16];
  for (auto& byte : b) byte = static_cast<unsigned char>(device() & 0xFF);
  b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 15];
  }
  return out;
}

// libcurl 7.88 signs the path as sent, encoded once; AWS signs it encoded twice (docs/protocols/bedrock.md
// "Endpoints and SigV4 signing"). Both agree exactly when the identifier needs no percent-encoding.
bool plain_identifier(std::string_view id) {
  if (id.empty() || id.size() > 256) return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == '~';
  });
}

bool valid_session_id(std::string_view id) {  // ^[0-9a-zA-Z]{1,40}$ (docs/protocols/bedrock.md "Session operations")
  return !id.empty() && id.size() <= 40 &&
         std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isalnum(c); });
}

// One shell word: single-quoted, each ' written as '\''.
std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string bounded_text(std::string_view text, std::size_t limit = 300) {
  std::string cut(text.substr(0, detail::utf8_safe_cut(text, std::min(limit, text.size()))));
  std::string clean;
  detail::append_utf8_replacing(clean, cut);
  return text.size() > limit ? clean + "..." : clean;
}

// A name the service chose (an error code, an exception type) as it may appear in exception_type: a stable dotted
// name, so only letters, digits, '.', '_' and '-' are kept, and at most 100 characters.
std::string safe_name(std::string_view text) {
  std::string out(text.substr(0, std::min<std::size_t>(text.size(), 100)));
  for (auto& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return out;
}

// A request signature the service echoed (an Authorization header or a presigned query quoted in a message) is a
// secret too, but libcurl computed it, so it is found by its shape: the hex digits after "signature=", any case.
void redact_signatures(std::string& text) {
  static constexpr std::string_view kKey = "signature=";
  for (std::size_t at = 0; at + kKey.size() <= text.size(); ++at) {
    bool match = true;
    for (std::size_t i = 0; i < kKey.size() && match; ++i)
      match = std::tolower(static_cast<unsigned char>(text[at + i])) == kKey[i];
    if (!match) continue;
    const std::size_t from = at + kKey.size();
    std::size_t end = from;
    while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end > from) text.replace(from, end - from, "[redacted]");
    at = from - 1;
  }
}

// The service's own words, bounded, valid UTF-8 and with every secret it echoed redacted (docs/backends/bedrock.md "Secrets").
std::string service_text(std::string text, const AwsCredentials& secrets, std::size_t limit = 300) {
  detail::redact(text, {secrets.secret_access_key, secrets.session_token});
  redact_signatures(text);
  return bounded_text(text, limit);
}

// A string member of an untrusted JSON object, else `fallback` (json::value would throw for another type).
std::string string_member(const json& object, const char* key, std::string fallback = {}) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string_view language_name(Language language) {
  switch (language) {
    case Language::kJavaScript: return "javascript";
    case Language::kTypeScript: return "typescript";
    default: return "python";
  }
}

// A restJson1 error (docs/protocols/bedrock.md "Error answers and what proves a call never ran"): the code from x-amzn-ErrorType, else the body's code or __type, trimmed of a
// "prefix#" and of ":suffix" / ",suffix"; the message from message / Message.
struct AwsError {
  std::string code;
  std::string message;
};

AwsError aws_error(const http::Response& response, std::string_view body,
                   const AwsCredentials& secrets) {
  AwsError e;
  const json parsed = detail::parse_untrusted_json(body);
  if (auto header = response.header("x-amzn-errortype")) e.code = std::string(*header);
  if (parsed.is_object()) {
    if (e.code.empty()) {
      if (parsed.contains("code") && parsed["code"].is_string()) e.code = parsed["code"].get<std::string>();
      else if (parsed.contains("__type") && parsed["__type"].is_string()) e.code = parsed["__type"].get<std::string>();
    }
    for (const char* key : {"message", "Message"})
      if (parsed.contains(key) && parsed[key].is_string()) e.message = parsed[key].get<std::string>();
  }
  if (const auto colon = e.code.find_first_of(":,"); colon != std::string::npos) e.code.resize(colon);
  if (const auto hash = e.code.find('#'); hash != std::string::npos) e.code = e.code.substr(hash + 1);
  detail::redact(e.code, {secrets.secret_access_key, secrets.session_token});
  redact_signatures(e.code);
  e.code = safe_name(e.code);
  e.message = service_text(std::move(e.message), secrets);
  return e;
}

ErrorKind aws_error_kind(std::string_view code, int status) {
  std::string c(code);
  std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (c.find("throttl") != std::string::npos || status == 429) return ErrorKind::kRateLimited;
  if (c.find("notfound") != std::string::npos) return ErrorKind::kNotFound;
  if (c.find("accessdenied") != std::string::npos) return ErrorKind::kPermissionDenied;
  if (c.find("quota") != std::string::npos) return ErrorKind::kQuotaExceeded;
  if (c.find("validation") != std::string::npos || c.find("conflict") != std::string::npos) return ErrorKind::kInvalidArgument;
  if (c.find("signature") != std::string::npos || c.find("unrecognizedclient") != std::string::npos ||
      c.find("authenticationtoken") != std::string::npos || c.find("expiredtoken") != std::string::npos)
    return ErrorKind::kUnauthenticated;
  if (c.find("internalserver") != std::string::npos || c.find("serviceunavailable") != std::string::npos)
    return ErrorKind::kUnavailable;
  http::Exchange answered;
  answered.response.status = status;
  return http::error_kind(answered);
}

// "aws." + the name with its first letter upper-cased (docs/backends/bedrock.md "execute_code and execute_command").
std::string aws_type(std::string_view name) {
  std::string out = "aws." + std::string(name);
  if (out.size() > 4) out[4] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[4])));
  return out;
}

// The last "Name: value" line of a Python traceback in stderr (the service reports exceptions only as text).
// A linear scan, not std::regex: libstdc++'s matcher recurses once per character and overflows the stack on a
// line of ~100 KB, and an exception's message can be that long.
std::optional<CodeError> parse_python_error(const std::string& stderr_text) {
  if (stderr_text.find("Traceback (most recent call last)") == std::string::npos) return std::nullopt;
  std::size_t end = stderr_text.size();
  while (end > 0) {
    const auto start = stderr_text.rfind('\n', end - 1);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    const std::string_view line = std::string_view(stderr_text).substr(from, end - from);
    end = start == std::string::npos ? 0 : start;
    if (line.empty()) continue;
    // ^([A-Za-z_][A-Za-z0-9_.]*)(?::\s?(.*))?$
    const auto ident = [](unsigned char c) { return std::isalpha(c) || c == '_'; };
    if (!ident(static_cast<unsigned char>(line[0]))) return std::nullopt;
    std::size_t n = 1;
    while (n < line.size() && (ident(static_cast<unsigned char>(line[n])) || std::isdigit(static_cast<unsigned char>(line[n])) ||
                               line[n] == '.'))
      ++n;
    if (n == line.size()) return CodeError{std::string(line), "", stderr_text};
    if (line[n] != ':') return std::nullopt;
    std::size_t value = n + 1;
    if (value < line.size() && std::isspace(static_cast<unsigned char>(line[value]))) ++value;
    // '.' in the pattern stops at '\r' as it does at '\n'.
    if (line.find('\r', value) != std::string_view::npos) return std::nullopt;
    return CodeError{std::string(line.substr(0, n)), std::string(line.substr(value)), stderr_text};
  }
  return std::nullopt;
}

using detail::never_ran;

// What one InvokeCodeInterpreter call produced.
struct Invocation {
  http::Exchange exchange;
  int status = 0;
  std::string error_body;
  bool result_seen = false;
  json content = json::array();  // every result event's content[], concatenated
  json structured = json::object();  // the latest non-null scalar of each structuredContent member
  std::string out, err;          // stdout / stderr concatenated across result events
  bool is_error = false;
  std::optional<std::string> exception;  // "aws.<Name>"
  std::string exception_message;
  bool exception_first = false;
  bedrock::EventStreamError decode_error = bedrock::EventStreamError::kNone;
  bool truncated = false;
  bool malformed_event = false;
  bool too_large = false;              // the result events together exceeded their budget
  std::size_t result_bytes = 0;        // payload bytes of the result events so far
  std::uint64_t file_bytes = 0;        // decoded file content (resource text / blob) of the result events so far
  bool over_cap = false;               // file_bytes passed the read's cap: the transfer was stopped
  bool callback_threw = false;
};

}  // namespace

struct BedrockAgentCoreSandbox::Impl {
  http::HttpClient& client = http::HttpClient::shared();
  BedrockOptions options;  // credentials cleared after resolution
  bedrock::ResolvedConfig config;
  std::string sigv4;
  std::string userpwd;
  std::string session_id;
  Language language = Language::kPython;
  std::mutex exec_mutex;  // executions on one session run one at a time
  detail::CallRegistry calls;

  explicit Impl(BedrockOptions opts) : options(std::move(opts)) {
    if (options.language != Language::kPython && options.language != Language::kJavaScript &&
        options.language != Language::kTypeScript)
      throw SandboxStartError("Bedrock AgentCore runs python, javascript or typescript, not " +
                                  std::string(to_string(options.language)),
                              Stage::kConfigure, ErrorKind::kUnsupported);
    // "." and ".." are dot segments: libcurl removes them from the path, so the requests would go to other paths.
    if (options.code_interpreter_identifier == "." || options.code_interpreter_identifier == "..")
      throw SandboxStartError("code interpreter identifier '" + options.code_interpreter_identifier +
                                  "' is not an interpreter id, e.g. aws.codeinterpreter.v1",
                              Stage::kConfigure, ErrorKind::kInvalidArgument);
    if (!plain_identifier(options.code_interpreter_identifier))
      throw SandboxStartError("code interpreter identifier '" + bounded_text(options.code_interpreter_identifier, 80) +
                                  "' needs percent-encoding (an ARN?): pass the interpreter id instead, e.g. "
                                  "aws.codeinterpreter.v1",
                              Stage::kConfigure, ErrorKind::kInvalidArgument);
    if (options.session_timeout.count() < 1 || options.session_timeout.count() > 28800)
      throw SandboxStartError("session_timeout must be 1..28800 seconds", Stage::kConfigure, ErrorKind::kInvalidArgument);
    // Both go into JSON text (nlohmann's dump() throws type_error on bytes that are not UTF-8); the model's length
    // counts characters, not bytes.
    if (options.session_name) {
      const auto& name = *options.session_name;
      const auto characters = std::count_if(name.begin(), name.end(),
                                            [](unsigned char c) { return (c & 0xC0) != 0x80; });
      if (!detail::is_valid_utf8(name) || characters < 1 || characters > 100)
        throw SandboxStartError("session_name must be 1..100 characters of UTF-8", Stage::kConfigure,
                                ErrorKind::kInvalidArgument);
    }
    for (const auto& package : options.additional_packages)
      if (package.empty() || !detail::is_valid_utf8(package) || package.find('\0') != std::string::npos)
        throw SandboxStartError("additional_packages: a package name is empty, has a NUL byte or is not UTF-8",
                                Stage::kConfigure, ErrorKind::kInvalidArgument);
    config = bedrock::resolve_config(options);
    options.credentials.reset();
    language = options.language;
    sigv4 = "aws:amz:" + config.region + ":bedrock-agentcore";  // docs/protocols/bedrock.md "Endpoints and SigV4 signing"
    userpwd = config.credentials.access_key_id + ":" + config.credentials.secret_access_key;
  }

  std::string base_path() const { return "/code-interpreters/" + options.code_interpreter_identifier; }

  http::Request request(std::string method, std::string path, std::string body = {}) const {
    http::Request r;
    r.method = std::move(method);
    r.url = config.endpoint + path;
    r.body = std::move(body);
    if (!r.body.empty()) r.headers.emplace_back("Content-Type", "application/json");
    // libcurl does not add the session token; as a header it is signed too (docs/protocols/bedrock.md "Endpoints and SigV4 signing").
    if (!config.credentials.session_token.empty())
      r.headers.emplace_back("x-amz-security-token", config.credentials.session_token);
    r.aws_sigv4 = sigv4;
    r.aws_credentials = userpwd;
    r.timeout = options.request_timeout;
    return r;
  }

  http::RetryHooks deadline_hooks(const Deadline& deadline) const {
    http::RetryHooks hooks;
    // Each attempt gets only what is left, so retries cannot stretch the operation past its deadline.
    hooks.prepare = [deadline](http::Request& request) { request.timeout = deadline.bound(request.timeout); };
    hooks.sleep = [deadline](milliseconds delay, std::stop_token cancel) {
      return deadline.allows(delay) && http::interruptible_sleep(delay, cancel);
    };
    return hooks;
  }

  template <typename Error>
  [[noreturn]] void throw_service_error(const http::Exchange& ex, Stage stage, std::string_view what) const {
    if (ex.ok()) {
      const auto e = aws_error(ex.response, ex.response.body, config.credentials);
      const std::string said = e.code + (e.message.empty() ? "" : ": " + e.message);
      throw_nested(Error(std::string(what) + " failed: HTTP " + std::to_string(ex.response.status) + " " + said, stage,
                         aws_error_kind(e.code, ex.response.status)),
                   http::to_transport_error(ex, what, said));
    }
    const auto cause = http::to_transport_error(ex, what);
    if (ex.failure == http::Failure::kCancelled)
      throw_nested(Error(std::string(what) + " was cancelled", stage, ErrorKind::kUnknown), cause);
    throw_nested(Error(std::string(what) + " failed: " + cause.what(), stage, http::error_kind(ex)), cause);
  }

  // ---- sessions (docs/protocols/bedrock.md "Session operations") ----

  void start(const Deadline& deadline) {
    json body = {{"sessionTimeoutSeconds", options.session_timeout.count()}, {"clientToken", uuid4()}};
    if (options.session_name) body["name"] = *options.session_name;
    // One clientToken for every attempt: the service's idempotency key makes the retries safe.
    auto req = request("PUT", base_path() + "/sessions/start", body.dump());
    req.cancel = options.cancel;
    req.timeout = deadline.bound(options.request_timeout);
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
    auto id = session_id_of(ex);
    if (!id)
      throw SandboxStartError("StartCodeInterpreterSession answered without a usable sessionId", Stage::kCreate,
                              ErrorKind::kInternal);
    session_id = std::move(*id);
  }

  static std::optional<std::string> session_id_of(const http::Exchange& ex) {
    const json answer = detail::parse_untrusted_json(ex.response.body);
    if (!answer.is_object() || !answer.contains("sessionId") || !answer["sessionId"].is_string() ||
        !valid_session_id(answer["sessionId"].get<std::string>()))
      return std::nullopt;
    return answer["sessionId"].get<std::string>();
  }

  // A session whose Start answer was lost would run, billed, until its timeout with no handle to stop it. Start is
  // idempotent by its clientToken (docs/protocols/bedrock.md "Session operations"): the same request again answers with that session (or starts
  // it), which is then stopped. Best effort, with a budget of its own: the caller's deadline or cancellation may be
  // what ended the Start, and must not skip the cleanup (create may so overrun create_timeout by up to 20 s).
  void stop_lost_session(http::Request start_request) {
    constexpr milliseconds kCleanup{std::chrono::seconds(10)};
    start_request.cancel = {};
    start_request.timeout = Deadline::after(kCleanup, kCleanup).bound(options.request_timeout);
    const auto again = client.perform(start_request);
    auto id = again.success() ? session_id_of(again) : std::nullopt;
    if (!id) {
      logger()->warn("bedrock: a Start was sent but not answered, and its session could not be found to stop it; "
                     "if it started, it ends by itself after {} s",
                     options.session_timeout.count());
      return;
    }
    session_id = std::move(*id);
    if (!stopped(stop(Deadline::after(kCleanup, kCleanup))))
      logger()->warn("bedrock: session {} started without an answer and could not be stopped; it ends by itself after "
                     "{} s", session_id, options.session_timeout.count());
    session_id.clear();
  }

  // True when the session is stopped (or was already gone).
  http::Exchange stop(const Deadline& deadline) {
    auto req = request("PUT", base_path() + "/sessions/stop?sessionId=" + session_id,
                       json{{"clientToken", uuid4()}}.dump());
    req.timeout = deadline.bound(options.request_timeout);
    return http::perform_with_retries(client, req, {}, deadline_hooks(deadline));
  }

  static bool stopped(const http::Exchange& ex) {
    // ResourceNotFound: already stopped or expired (docs/protocols/bedrock.md "Session operations").
    return ex.success() || (ex.ok() && ex.response.status == 404);
  }

  std::optional<std::string> status_of_session(milliseconds timeout) {
    auto req = request("GET", base_path() + "/sessions/get?sessionId=" + session_id);
    req.timeout = timeout;
    const auto ex = client.perform(req);
    if (ex.ok() && ex.response.status == 404) return std::string("TERMINATED");
    if (!ex.success()) return std::nullopt;
    const json answer = detail::parse_untrusted_json(ex.response.body);
    if (!answer.is_object() || !answer.contains("status") || !answer["status"].is_string()) return std::nullopt;
    return answer["status"].get<std::string>();
  }

  // ---- InvokeCodeInterpreter (docs/protocols/bedrock.md "InvokeCodeInterpreter", "Events and exception frames") ----

  // `file_cap`: for readFiles, the most bytes of file content the answer may carry, counted as each result event
  // arrives (never on a size the service states); past it the transfer stops and `over_cap` is set.
  // `retry_reads`: the tool only reads, so it may be repeated (see below); otherwise it is sent once.
  Invocation invoke(std::string_view tool, json arguments, milliseconds timeout, std::stop_token cancel,
                    bool idempotent, detail::OutputStream* out = nullptr, detail::OutputStream* err = nullptr,
                    std::optional<std::uint64_t> file_cap = std::nullopt, bool retry_reads = false) {
    // A JSON string may spell a byte in up to 6 ("\u0001"), so the payloads of a capped read may be that much
    // larger than its content; they are held one message at a time.
    std::size_t result_budget = options.max_message_bytes + 2 * options.max_output_bytes;
    if (file_cap) {
      const std::uint64_t most = std::numeric_limits<std::size_t>::max() - result_budget;
      result_budget += static_cast<std::size_t>(*file_cap > most / 6 ? most : *file_cap * 6);
    }
    Invocation inv;
    std::optional<bedrock::EventStreamDecoder> decoder;
    auto req = request("POST", base_path() + "/tools/invoke",
                       json{{"name", tool}, {"arguments", std::move(arguments)}}.dump());
    req.headers.emplace_back(kSessionHeader, session_id);
    req.idempotent = idempotent;  // tools that run code or change files are never re-sent once a byte was read
    req.http1_only = true;
    req.timeout = timeout;
    req.cancel = std::move(cancel);
    req.on_headers = [&](int s) { inv.status = s; };

    const auto sink = [&](bedrock::EventMessage&& message) {
          const auto type = message.string_header(":message-type").value_or("");
          if (type == "event") {
            if (message.string_header(":event-type").value_or("") != "result") return true;  // unknown events are skipped
            // Each message is capped, but not their number: what is kept from all of them is bounded too.
            inv.result_bytes += message.payload.size();
            if (inv.result_bytes > result_budget) {
              inv.too_large = true;
              return false;
            }
            const json payload = detail::parse_untrusted_json(message.payload);
            if (!payload.is_object()) {
              inv.malformed_event = true;
              return false;
            }
            merge_result(inv, payload, out, err);
            if (file_cap) {
              inv.file_bytes = file_content_bytes(inv.content);
              if (inv.file_bytes > *file_cap) {
                inv.over_cap = true;
                return false;
              }
            }
            return !inv.callback_threw;
          }
          if (type != "exception" && type != "error") {
            // No, an unknown or a non-string message type: not a refusal the service made, a malformed frame.
            inv.malformed_event = true;
            return false;
          }
          // An exception or an error frame: names are matched case-insensitively (docs/protocols/bedrock.md "Events and exception frames").
          std::string name(type == "exception" ? message.string_header(":exception-type").value_or("")
                                               : message.string_header(":error-code").value_or(""));
          detail::redact(name, {config.credentials.secret_access_key, config.credentials.session_token});
          redact_signatures(name);
          name = safe_name(name);
          if (name.empty()) name = type == "exception" ? "UnknownException" : "InternalFailure";
          inv.exception = aws_type(name);
          inv.exception_first = !inv.result_seen;
          if (type == "exception") {
            const json payload = detail::parse_untrusted_json(message.payload);
            if (payload.is_object() && payload.contains("message") && payload["message"].is_string())
              inv.exception_message = service_text(payload["message"].get<std::string>(), config.credentials);
          } else {
            inv.exception_message =
                service_text(std::string(message.string_header(":error-message").value_or("")), config.credentials);
          }
          return false;
        };
    decoder.emplace(sink, options.max_message_bytes);

    req.on_body = [&](std::string_view piece) {
      if (inv.status != 200) {
        inv.error_body.append(piece.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, inv.error_body.size())));
        return true;
      }
      if (!decoder->feed(piece)) {
        inv.decode_error = decoder->error();
        return false;
      }
      return true;
    };
    if (!retry_reads) {
      inv.exchange = client.perform(req);
    } else {
      // A tool that only reads (readFiles, listFiles, getTask) goes through the one retry loop: what never reached
      // the service, or was refused as transient (429, 5xx, a throttling or unavailable first frame), is tried again,
      // every attempt within `timeout`. Each attempt starts from nothing: a refused attempt leaves no partial answer.
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
          const auto kind = aws_error_kind(inv.exception->substr(4), 0);  // "aws." + the frame's name
          return inv.exception_first && (kind == ErrorKind::kRateLimited || kind == ErrorKind::kUnavailable);
        }
        return http::is_transient(e, true);
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

  // The decoded size of the file content in a readFiles answer's blocks (a blob's base64 counted as the bytes it
  // decodes to, never more), so a file of exactly the cap passes.
  static std::uint64_t file_content_bytes(const json& content) {
    std::uint64_t total = 0;
    for (const auto& block : content) {
      if (!block.is_object()) continue;
      const auto resource = block.find("resource");
      if (resource == block.end() || !resource->is_object()) continue;
      if (const auto t = resource->find("text"); t != resource->end() && t->is_string())
        total += t->get_ref<const std::string&>().size();
      if (const auto b = resource->find("blob"); b != resource->end() && b->is_string()) {
        const auto& text = b->get_ref<const std::string&>();
        std::size_t n = text.size();
        while (n > 0 && text[n - 1] == '=') --n;
        total += n / 4 * 3 + (n % 4 > 1 ? n % 4 - 1 : 0);
      }
    }
    return total;
  }

  // Several result events are folded together (docs/protocols/bedrock.md "Events and exception frames"): content concatenated, stdout / stderr
  // concatenated, the latest non-null scalar kept, isError OR-ed.
  static void merge_result(Invocation& inv, const json& payload, detail::OutputStream* out, detail::OutputStream* err) {
    inv.result_seen = true;
    if (const auto c = payload.find("content"); c != payload.end() && c->is_array())
      for (const auto& block : *c) inv.content.push_back(block);
    if (const auto e = payload.find("isError"); e != payload.end() && e->is_boolean()) inv.is_error |= e->get<bool>();
    const auto s = payload.find("structuredContent");
    if (s == payload.end() || !s->is_object()) return;
    for (const auto& [key, value] : s->items()) {
      if (value.is_null()) continue;
      if ((key == "stdout" || key == "stderr") && value.is_string()) {
        const auto& text = value.get_ref<const std::string&>();
        (key == "stdout" ? inv.out : inv.err) += text;
        try {
          if (key == "stdout" && out) out->feed(text);
          if (key == "stderr" && err) err->feed(text);
        } catch (...) {
          if (out) out->silence();
          if (err) err->silence();
          inv.callback_threw = true;
        }
        continue;
      }
      inv.structured[key] = value;
    }
  }

  // The result of an invocation that did not end in a result: the rows of docs/errors.md "Statuses and what each result carries" for refusals, faults and loss.
  // Returns nullopt when a result arrived and the caller should read it.
  std::optional<ExecutionResult> failure_of(const Invocation& inv, const std::string& code, std::string_view what) {
    const auto& ex = inv.exchange;
    ExecutionResult r;
    r.code = code;
    r.exit_code = -1;
    if (ex.ok() && inv.status != 0 && inv.status < 400 && inv.status != 200) {
      // Not the stream, and not a refusal either (a redirect is never followed): whether it ran is unknown.
      r.status = ExecutionStatus::kUnknown;
      r.failure = FailureDetail{"http." + std::to_string(inv.status), false};
      r.error = std::string(what) + ": unexpected HTTP " + std::to_string(inv.status) + "; the call may have run";
      return r;
    }
    if (ex.ok() && inv.status != 200 && inv.status != 0) {
      // Answered with an error before any frame. A 4xx, or a 5xx in the service's own error shape, is its refusal:
      // nothing ran. A 5xx without that shape may come from a proxy after the service took the call
      // (docs/errors.md "Answered statuses").
      const auto e = aws_error(ex.response, inv.error_body, config.credentials);
      const auto verdict =
          http::answered(inv.status, !e.code.empty(), e.code.empty() ? "http." + std::to_string(inv.status) : aws_type(e.code),
                         what, e.code.empty() ? e.message : e.code + (e.message.empty() ? "" : ": " + e.message));
      r.status = verdict.status;
      r.failure = verdict.failure;
      r.error = verdict.message;
      // An expired or stopped session is gone before the call (docs/protocols/bedrock.md "InvokeCodeInterpreter").
      r.state_lost = verdict.status == ExecutionStatus::kError && inv.status == 404;
      return r;
    }
    if (inv.callback_threw) {
      r.status = ExecutionStatus::kUnknown;
      r.failure = FailureDetail{"callback.exception", false};
      r.error = "an output callback threw; the call was cancelled";
      return r;
    }
    if (inv.exception) {
      if (inv.exception_first) {
        // The first frame refused the call: the code never ran (docs/protocols/bedrock.md "Error answers and what proves a call never ran").
        auto refused = never_ran(code, std::string(what) + ": " + *inv.exception + ": " + inv.exception_message,
                                 FailureDetail{*inv.exception, true});
        refused.state_lost = inv.exception->find("ResourceNotFound") != std::string::npos;
        return refused;
      }
      r.status = ExecutionStatus::kUnknown;
      r.failure = FailureDetail{*inv.exception, false};
      r.error = std::string(what) + ": the stream failed after a result: " + *inv.exception + ": " + inv.exception_message;
      return r;
    }
    if (inv.decode_error != bedrock::EventStreamError::kNone || inv.malformed_event || inv.too_large) {
      r.status = ExecutionStatus::kUnknown;
      const std::string name = inv.malformed_event ? "malformed_event"
                               : inv.too_large     ? "too_large"
                                                   : std::string(bedrock::to_string(inv.decode_error));
      r.failure = FailureDetail{"eventstream." + name, false};
      r.error = std::string(what) + ": the answer was not a valid event stream (" + name + ")";
      return r;
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
    if (inv.truncated) {
      r.status = ExecutionStatus::kUnknown;
      r.failure = FailureDetail{"eventstream.truncated", false};
      r.error = std::string(what) + ": the answer ended inside an event-stream message";
      return r;
    }
    if (!inv.result_seen) {
      r.status = ExecutionStatus::kUnknown;
      r.failure = FailureDetail{"eventstream.no_result", false};
      r.error = std::string(what) + ": the answer carried no result";
      return r;
    }
    return std::nullopt;
  }

  // The service's exitCode, if it sent one; untrusted, so never wrapped or read as success when malformed
  // (core/untrusted.hpp).
  static std::optional<int> exit_code_of(const Invocation& inv) {
    const auto it = inv.structured.find("exitCode");
    if (it == inv.structured.end()) return std::nullopt;
    return detail::untrusted_exit_code(*it);
  }

  // ---- files: through the file tools, paths relative to the session's working directory (docs/protocols/bedrock.md "File tools") ----

  // `session_gone`, when given, learns whether the failure showed the session already gone (an upload reports it
  // as state_lost).
  [[noreturn]] void throw_tool_error(const Invocation& inv, Stage stage, std::string_view what,
                                     bool* session_gone = nullptr) {
    if (auto r = failure_of(inv, "", what)) {
      if (session_gone) *session_gone = r->state_lost;
      ErrorKind kind = ErrorKind::kUnknown;
      if (inv.exchange.ok() && inv.status != 200) kind = aws_error_kind(aws_error(inv.exchange.response, inv.error_body, config.credentials).code, inv.status);
      else if (!inv.exchange.ok()) kind = http::error_kind(inv.exchange);
      else if (inv.exception) kind = aws_error_kind(inv.exception->substr(4), 0);
      throw_nested(SandboxExecutionError(r->error, stage, kind),
                   http::to_transport_error(inv.exchange, what, r->failure ? r->failure->exception_type : ""));
    }
    // A tool that reports isError explains itself in its text.
    std::string text;
    for (const auto& block : inv.content)
      if (block.is_object() && string_member(block, "type", "") == "text" && block.contains("text") && block["text"].is_string())
        text += block["text"].get<std::string>();
    std::string lowered = text;
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
    const ErrorKind kind = lowered.find("not found") != std::string::npos || lowered.find("no such") != std::string::npos
                               ? ErrorKind::kNotFound
                               : ErrorKind::kInvalidArgument;
    throw SandboxExecutionError(std::string(what) + " failed: " + service_text(std::move(text), config.credentials), stage,
                                kind);
  }

  Invocation file_tool(std::string_view tool, json arguments, std::stop_token cancel, bool idempotent,
                       Timeout timeout = std::nullopt, std::optional<std::uint64_t> file_cap = std::nullopt) {
    const milliseconds t = timeout ? (timeout->count() > 0 ? *timeout : milliseconds(0)) : options.request_timeout;
    if (!idempotent) return invoke(tool, std::move(arguments), t, std::move(cancel), false);
    return invoke_read(tool, arguments, t, cancel, file_cap);
  }

  // A tool that only reads (readFiles, listFiles, getTask): retried through the one retry loop (invoke).
  Invocation invoke_read(std::string_view tool, const json& arguments, milliseconds t, std::stop_token cancel,
                         std::optional<std::uint64_t> file_cap = std::nullopt) {
    return invoke(tool, arguments, t, std::move(cancel), true, nullptr, nullptr, file_cap, true);
  }

  void ensure_parent(std::string_view path, std::stop_token cancel, bool* session_gone) {
    const auto slash = path.rfind('/');
    if (slash == std::string_view::npos || slash == 0) return;
    // writeFiles may not create parent directories (docs/protocols/bedrock.md "File tools").
    make_directory(path.substr(0, slash), cancel, session_gone);
  }

  void make_directory(std::string_view path, std::stop_token cancel, bool* session_gone = nullptr) {
    const auto inv = file_tool("executeCommand", {{"command", "mkdir -p -- " + shell_quote(path)}}, cancel, true);
    if (inv.exchange.success() && inv.result_seen && !inv.is_error && !inv.exception) return;
    throw_tool_error(inv, Stage::kUpload, "make_dir", session_gone);
  }

  void write(std::string_view path, std::string_view data, std::stop_token cancel, bool* session_gone = nullptr) {
    ensure_parent(path, cancel, session_gone);
    json block = {{"path", path}};
    // Text stays text; anything else is a blob, base64-encoded exactly once (docs/protocols/bedrock.md "File tools").
    if (detail::is_valid_utf8(data) && data.find('\0') == std::string_view::npos) block["text"] = data;
    else block["blob"] = detail::base64_encode(data);
    const auto inv = file_tool("writeFiles", {{"content", json::array({block})}}, cancel, false);
    if (inv.exchange.success() && inv.result_seen && !inv.is_error && !inv.exception) return;
    throw_tool_error(inv, Stage::kUpload, "write_file", session_gone);
  }

  // Throws the over-cap error (detail::over_cap_error) for a file of more than `cap` bytes.
  std::string read(std::string_view path, std::uint64_t cap, std::stop_token cancel, Timeout timeout = std::nullopt) {
    const auto inv = file_tool("readFiles", {{"paths", json::array({path})}}, cancel, true, timeout, cap);
    if (inv.over_cap) throw detail::over_cap_error(path, cap);
    if (!(inv.exchange.success() && inv.result_seen && !inv.is_error && !inv.exception))
      throw_tool_error(inv, Stage::kDownload, "read_file");
    for (const auto& block : inv.content) {
      if (!block.is_object() || string_member(block, "type", "") != "resource" || !block.contains("resource")) continue;
      const auto& resource = block["resource"];
      if (resource.contains("text") && resource["text"].is_string()) return resource["text"].get<std::string>();
      if (resource.contains("blob") && resource["blob"].is_string()) {
        auto bytes = detail::base64_decode(resource["blob"].get<std::string>());
        if (!bytes) throw SandboxExecutionError("read_file: the file's blob is not base64", Stage::kDownload, ErrorKind::kInternal);
        if (bytes->size() > cap) throw detail::over_cap_error(path, cap);
        return std::move(*bytes);
      }
    }
    throw SandboxExecutionError("read_file: the answer carried no file content", Stage::kDownload, ErrorKind::kInternal);
  }

  // read() for the calls that answer std::nullopt on failure; over the cap, one warning naming `op` and the cap.
  std::optional<std::string> download(std::string_view path, std::uint64_t cap, std::stop_token cancel,
                                      Timeout timeout, std::string_view op) {
    try {
      return read(path, cap, std::move(cancel), timeout);
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const SandboxExecutionError& e) {
      if (e.kind() == ErrorKind::kQuotaExceeded) detail::warn_over_cap(op, path, cap);
      return std::nullopt;
    } catch (...) {
      return std::nullopt;
    }
  }

  // ---- execute ----

  ExecutionResult upload_refused(const std::string& code, const std::exception& e) {
    return never_ran(code, std::string("upload failed: ") + e.what(), FailureDetail{"upload", true});
  }

  ExecutionResult execute(std::string_view code_view, const ExecuteOptions& o) {
    const auto call = calls.begin(o.cancel);
    const std::string code(code_view);
    std::unique_lock lock(exec_mutex);

    if (!o.env.empty() && language != Language::kPython)
      return never_ran(code, "env is not supported for " + std::string(language_name(language)) +
                                 " code on Bedrock AgentCore (ExecuteOptions::env)", std::nullopt);
    if (!o.files.empty()) {
      const std::string dir = o.upload_dir.value_or("files");
      bool session_gone = false;
      try {
        make_directory(dir, call->token(), &session_gone);
        for (const auto& f : o.files) {
          if (f.source) {
            std::ifstream in(*f.source, std::ios::binary);
            if (!in) return never_ran(code, "upload failed: cannot read " + f.source->string(), std::nullopt);
            const std::string bytes((std::istreambuf_iterator<char>(in)), {});
            write(dir + "/" + f.filename, bytes, call->token(), &session_gone);
          } else {
            write(dir + "/" + f.filename, f.data, call->token(), &session_gone);
          }
        }
      } catch (const SandboxNotInitializedError&) {
        throw;
      } catch (const std::exception& e) {
        auto refused = upload_refused(code, e);
        refused.state_lost = session_gone;  // e.g. the session expired before the call: a 404 to the first upload
        return refused;
      }
    }

    std::string sent = code;
    if (!o.env.empty()) {
      // The service has no per-call environment: the code runs inside a wrapper that sets and then restores the
      // variables (JSON strings are valid Python string literals).
      sent = "import os as _ci_os\n_ci_env = " + json(o.env).dump() +
             "\n_ci_saved = {k: _ci_os.environ.get(k) for k in _ci_env}\n_ci_os.environ.update(_ci_env)\ntry:\n"
             "    exec(compile(" + json(code).dump() + ", '<code>', 'exec'))\nfinally:\n"
             "    for _ci_k, _ci_v in _ci_saved.items():\n"
             "        (_ci_os.environ.pop(_ci_k, None) if _ci_v is None else _ci_os.environ.__setitem__(_ci_k, _ci_v))\n"
             "    del _ci_os, _ci_env, _ci_saved, _ci_k, _ci_v\n";
    }
    const milliseconds budget = o.timeout.value_or(kDefaultExecuteTimeout);
    const auto started = Clock::now();  // duration is the execution itself, after the uploads (execution.hpp)
    detail::OutputStream out(o.on_stdout ? &o.on_stdout : nullptr, options.max_output_bytes);
    detail::OutputStream err(o.on_stderr ? &o.on_stderr : nullptr, options.max_output_bytes);
    json arguments = {{"code", sent}, {"language", language_name(language)}};
    const auto inv = invoke("executeCode", std::move(arguments), budget.count() > 0 ? budget : milliseconds(0),
                            call->token(), false, &out, &err);
    try {
      out.finish();
      err.finish();
    } catch (...) {
    }
    ExecutionResult r;
    if (auto failed = failure_of(inv, code, "execute")) {
      r = std::move(*failed);
      if (r.status == ExecutionStatus::kTimeout && r.timeout_kind == TimeoutKind::kExecution)
        r.error = "execute: timed out after " + std::to_string(budget.count()) +
                  " ms; Bedrock cannot stop an executeCode, so the code may still be running in the session";
    } else {
      r.code = code;
      const auto exit = exit_code_of(inv);
      if (!inv.is_error && exit.value_or(0) == 0) {
        r.status = ExecutionStatus::kSuccess;
        r.exit_code = 0;
      } else {
        r.status = ExecutionStatus::kError;
        r.exit_code = exit && *exit != 0 ? *exit : 1;
      }
      // Without structuredContent, the text blocks are the output.
      if (inv.out.empty() && inv.err.empty() && !inv.structured.contains("stdout")) {
        std::string text;
        for (const auto& block : inv.content)
          if (block.is_object() && string_member(block, "type", "") == "text" && block.contains("text") && block["text"].is_string())
            text += block["text"].get<std::string>();
        try {
          (r.status == ExecutionStatus::kSuccess ? out : err).feed(text);
          out.finish();
          err.finish();
        } catch (...) {
        }
      }
      for (const auto& block : inv.content) {
        if (block.is_object() && string_member(block, "type", "") == "image" && block.contains("data") && block["data"].is_string())
          r.results.push_back(RichResult{{{string_member(block, "mimeType", "image/png"), block["data"].get<std::string>()}}, false});
      }
    }
    r.truncated = out.truncated() || err.truncated();
    r.stdout_text = out.take_text();
    r.stderr_text = err.take_text();
    if (r.status == ExecutionStatus::kError && r.exit_code > 0 && language == Language::kPython) {
      r.code_error = parse_python_error(r.stderr_text);
      r.error = r.stderr_text.empty() ? "the code failed with exit code " + std::to_string(r.exit_code) : r.stderr_text;
    }
    r.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
    return r;
  }

  // ---- commands: startCommandExecution / getTask / stopTask, so a timeout really stops the command ----

  ExecutionResult command(std::string_view cmd, const CommandOptions& o) {
    const auto call = calls.begin(o.cancel);
    std::unique_lock lock(exec_mutex);
    std::string full;
    for (const auto& [name, value] : o.env) {
      const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                              std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
      if (!identifier)
        return never_ran(std::string(cmd), "env: '" + bounded_text(name, 64) + "' is not a shell variable name (CommandOptions::env)",
                         std::nullopt);
      full += "export " + name + "=" + shell_quote(value) + "; ";
    }
    // A cwd that cannot be entered fails the command: `cd dir && cmd` alone would still run the rest of a list
    // such as `a; b` in the wrong directory, so the command goes in a group (on lines of its own, so that a
    // trailing comment or here-document cannot swallow the closing brace).
    if (o.cwd) full += "cd -- " + shell_quote(*o.cwd) + " && {\n" + std::string(cmd) + "\n}";
    else full += cmd;

    const milliseconds budget = o.timeout.value_or(kDefaultCommandTimeout);
    const auto limit = Deadline::after(budget, budget);  // none for <= 0, or for a budget the clock cannot reach
    const bool bounded = limit.at.has_value();
    const auto deadline = limit.at.value_or(Clock::time_point::max());
    // Each request gets at most what is left of the budget, so a service that stalls cannot stretch the call.
    const auto request_budget = [&] { return limit.bound(options.request_timeout); };
    const auto started = Clock::now();
    const auto started_task = invoke("startCommandExecution", {{"command", full}}, request_budget(), call->token(), false);
    if (auto failed = failure_of(started_task, std::string(cmd), "command")) return *failed;
    const auto task_it = started_task.structured.find("taskId");
    if (task_it == started_task.structured.end() || !task_it->is_string()) {
      ExecutionResult r;
      r.code = std::string(cmd);
      r.status = ExecutionStatus::kUnknown;
      r.failure = FailureDetail{"bedrock.no_task_id", false};
      r.error = "command: startCommandExecution answered without a taskId";
      return r;
    }
    const std::string task_id = task_it->get<std::string>();

    Invocation last;
    std::string task_status;
    milliseconds poll{50};
    bool timed_out = false, cancelled = false;
    std::optional<ExecutionResult> poll_failed;
    while (true) {
      const milliseconds left = bounded ? std::chrono::duration_cast<milliseconds>(deadline - Clock::now()) : milliseconds(0);
      if (bounded && left.count() <= 0) {
        timed_out = true;
        break;
      }
      // A poll only reads: one throttled or lost poll must not end a command that is still running.
      auto polled = invoke_read("getTask", {{"taskId", task_id}}, request_budget(), call->token());
      if (call->token().stop_requested()) {
        cancelled = true;
        break;
      }
      if (bounded && polled.exchange.failure == http::Failure::kTimeout && Clock::now() + milliseconds(50) >= deadline) {
        timed_out = true;  // the poll ran into the command's budget; the output of the previous poll is kept
        break;
      }
      if (auto failed = failure_of(polled, std::string(cmd), "command")) {
        // The task was started: whatever breaks now, it may be running.
        if (failed->status == ExecutionStatus::kError) {
          failed->status = ExecutionStatus::kUnknown;
          if (failed->failure) failed->failure->retry_safe = false;
        }
        stop_task(task_id);
        poll_failed = std::move(*failed);  // it keeps the output of the previous poll, below
        break;
      }
      last = std::move(polled);
      const auto s = last.structured.find("taskStatus");
      task_status = s != last.structured.end() && s->is_string() ? s->get<std::string>() : "";
      if (task_status == "completed" || task_status == "failed" || task_status == "canceled") break;
      const auto nap = bounded ? std::min(poll, std::max(milliseconds(1), left)) : poll;
      if (!http::interruptible_sleep(nap, call->token())) {
        cancelled = true;
        break;
      }
      poll = std::min(milliseconds(500), poll * 3 / 2);
    }

    ExecutionResult r;
    r.code = std::string(cmd);
    detail::OutputStream out(o.on_stdout ? &o.on_stdout : nullptr, options.max_output_bytes);
    detail::OutputStream err(o.on_stderr ? &o.on_stderr : nullptr, options.max_output_bytes);
    bool callback_threw = false;
    try {
      // getTask reports everything so far; the callbacks get it line by line after the answer.
      out.feed(last.out);
      err.feed(last.err);
      out.finish();
      err.finish();
    } catch (...) {
      callback_threw = true;
    }
    r.truncated = out.truncated() || err.truncated();
    r.stdout_text = out.take_text();
    r.stderr_text = err.take_text();
    r.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
    if (poll_failed) {
      poll_failed->stdout_text = std::move(r.stdout_text);
      poll_failed->stderr_text = std::move(r.stderr_text);
      poll_failed->truncated = r.truncated;
      poll_failed->duration = r.duration;
      return std::move(*poll_failed);
    }
    if (timed_out || cancelled) {
      stop_task(task_id);
      if (timed_out) {
        r.status = ExecutionStatus::kTimeout;
        r.timeout_kind = TimeoutKind::kExecution;
        r.error = "command: timed out after " + std::to_string(budget.count()) + " ms; the task was stopped";
      } else {
        r.status = ExecutionStatus::kUnknown;
        r.failure = FailureDetail{"cancelled", false};
        r.error = "command: cancelled after the command started; the task was stopped";
      }
      return r;
    }
    if (callback_threw) {
      r.status = ExecutionStatus::kUnknown;
      r.failure = FailureDetail{"callback.exception", false};
      r.error = "an output callback threw; the call was cancelled";
      return r;
    }
    const std::optional<int> code = exit_code_of(last);
    if (task_status == "canceled") {
      r.status = ExecutionStatus::kError;
      r.exit_code = -1;
      r.error = "command: the task was canceled";
    } else {
      // TaskStatus completed / failed (docs/protocols/bedrock.md "Tools"); the exit code decides.
      r.exit_code = code.value_or(task_status == "completed" ? 0 : 1);
      if (task_status == "failed" && r.exit_code == 0) r.exit_code = 1;  // failed is never SUCCESS, as for isError
      r.status = r.exit_code == 0 ? ExecutionStatus::kSuccess : ExecutionStatus::kError;
      if (r.exit_code != 0) r.error = "exit status " + std::to_string(r.exit_code);
    }
    return r;
  }

  void stop_task(const std::string& task_id) {
    // A quick kill: a stalled answer must not hold the caller long past the command's budget.
    constexpr milliseconds kStopTaskTimeout{std::chrono::seconds(10)};
    const auto inv = invoke("stopTask", {{"taskId", task_id}},
                            Deadline::after(kStopTaskTimeout, kStopTaskTimeout).bound(options.request_timeout), {}, true);
    if (!inv.exchange.success() || !inv.result_seen)
      // The task id is the service's text: bounded, one line, no echoed secret.
      logger()->warn("bedrock: session {}: could not stop task {}", session_id, safe_name(service_text(task_id, config.credentials, 100)));
  }

  // ---- packages ----

  // `budget`: the caller's create_timeout, which `deadline` bounds.
  void install_packages(const Deadline& deadline, milliseconds budget, const std::vector<std::string>& packages) {
    if (packages.empty()) return;
    if (language != Language::kPython) {
      logger()->warn("bedrock: additional_packages skipped: the session's language is {}, not python",
                     to_string(language));
      return;
    }
    std::string cmd = "python3 -m pip install --disable-pip-version-check -q --";
    for (const auto& p : packages) cmd += " " + shell_quote(p);
    CommandOptions install;
    install.timeout = deadline.at ? std::optional(deadline.bound(milliseconds(0))) : std::optional(kNoTimeout);
    install.cancel = options.cancel;
    const auto result = command(cmd, install);
    if (result.status == ExecutionStatus::kSuccess) return;
    if (!stopped(stop(Deadline::after(std::nullopt, options.request_timeout * 2))))
      logger()->warn("bedrock: could not stop session {} after a failed install", session_id);
    calls.mark_terminated();
    throw detail::install_packages_error(result, options.cancel, budget);
  }
};

// ---- BedrockAgentCoreSandbox ----

BedrockAgentCoreSandbox::BedrockAgentCoreSandbox(std::unique_ptr<Impl> impl, Language language,
                                                 std::vector<std::string> packages)
    : CodeInterpreterSandbox(language, std::move(packages)), impl_(std::move(impl)) {}

std::unique_ptr<BedrockAgentCoreSandbox> BedrockAgentCoreSandbox::create(BedrockOptions options) {
  const auto deadline = Deadline::after(options.create_timeout, kDefaultCreateTimeout);
  const milliseconds budget = options.create_timeout.value_or(kDefaultCreateTimeout);
  const Language language = options.language;
  auto packages = options.additional_packages;
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->start(deadline);
  std::unique_ptr<BedrockAgentCoreSandbox> sandbox(
      new BedrockAgentCoreSandbox(std::move(impl), language, std::move(packages)));
  sandbox->impl_->install_packages(deadline, budget, sandbox->additional_packages());
  return sandbox;
}

BedrockAgentCoreSandbox::~BedrockAgentCoreSandbox() {
  if (impl_->calls.terminated()) return;
  try {
    do_terminate(std::nullopt);
  } catch (const std::exception& e) {
    logger()->warn("bedrock: session {} could not be stopped on destruction: {}", impl_->session_id, e.what());
  } catch (...) {
    logger()->warn("bedrock: session {} could not be stopped on destruction", impl_->session_id);
  }
}

std::optional<std::string> BedrockAgentCoreSandbox::sandbox_id() const { return impl_->session_id; }

Capabilities BedrockAgentCoreSandbox::capabilities() const {
  Capabilities c;
  c.stateful = true;
  c.shell_commands = true;
  c.file_download = true;
  c.filesystem = true;
  c.packages = true;
  c.network = false;    // the built-in interpreter's SANDBOX network mode reaches S3 and DNS only (docs/protocols/bedrock.md "Interpreters and session lifetime")
  c.interrupt = false;  // an executeCode cannot be stopped
  c.languages = {Language::kPython, Language::kJavaScript, Language::kTypeScript};
  c.upload_dir = "files";  // relative: the service rejects absolute paths (docs/protocols/bedrock.md "File tools")
  return c;
}

std::string BedrockAgentCoreSandbox::session_status() {
  const auto call = impl_->calls.begin();
  auto status = impl_->status_of_session(impl_->options.request_timeout);
  if (!status)
    throw SandboxExecutionError("GetCodeInterpreterSession failed", Stage::kExecute, ErrorKind::kUnavailable);
  return *status;
}

ExecutionResult BedrockAgentCoreSandbox::do_execute_code(std::string_view code, const ExecuteOptions& options) {
  return impl_->execute(code, options);
}

ExecutionResult BedrockAgentCoreSandbox::do_execute_command(std::string_view command, const CommandOptions& options) {
  return impl_->command(command, options);
}

void BedrockAgentCoreSandbox::do_set_timeout(std::chrono::seconds lease) {
  const auto call = impl_->calls.begin();
  // A session's lifetime is fixed at start; nothing extends it (docs/protocols/bedrock.md "Interpreters and session lifetime").
  logger()->debug("bedrock: set_timeout({} s) ignored: session {} ends {} s after its start", lease.count(),
                  impl_->session_id, impl_->options.session_timeout.count());
}

void BedrockAgentCoreSandbox::do_write_file(std::string_view path, std::string_view data) {
  const auto call = impl_->calls.begin();
  impl_->write(path, data, call->token());
}

std::string BedrockAgentCoreSandbox::do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->calls.begin();
  return impl_->read(path, max_bytes.value_or(impl_->options.max_download_bytes), call->token());
}

std::vector<FileInfo> BedrockAgentCoreSandbox::do_list_files(std::string_view dir) {
  const auto call = impl_->calls.begin();
  const auto inv = impl_->file_tool("listFiles", {{"directoryPath", dir}}, call->token(), true);
  if (!(inv.exchange.success() && inv.result_seen && !inv.is_error && !inv.exception))
    impl_->throw_tool_error(inv, Stage::kDownload, "list_files");
  std::vector<FileInfo> files;
  for (const auto& block : inv.content) {
    if (!block.is_object() || string_member(block, "type", "") != "resource_link") continue;
    FileInfo info;
    info.name = string_member(block, "name", "");
    std::string uri = string_member(block, "uri", "");
    if (uri.rfind("file:///", 0) == 0) uri = uri.substr(8);
    else if (uri.rfind("file://", 0) == 0) uri = uri.substr(7);
    info.path = uri;
    info.is_directory = string_member(block, "description", "") == "Directory" || string_member(block, "mimeType", "") == "inode/directory";
    if (const auto size = block.find("size"); size != block.end() && size->is_number_unsigned()) info.size = size->get<std::uint64_t>();
    files.push_back(std::move(info));
  }
  return files;
}

void BedrockAgentCoreSandbox::do_remove_file(std::string_view path) {
  const auto call = impl_->calls.begin();
  const auto inv = impl_->file_tool("removeFiles", {{"paths", json::array({path})}}, call->token(), false);
  if (!(inv.exchange.success() && inv.result_seen && !inv.is_error && !inv.exception))
    impl_->throw_tool_error(inv, Stage::kUpload, "remove_file");
}

void BedrockAgentCoreSandbox::do_make_dir(std::string_view path) {
  const auto call = impl_->calls.begin();
  impl_->make_directory(path, call->token());
}

std::optional<std::string> BedrockAgentCoreSandbox::do_download_file(std::string_view path, Timeout timeout,
                                                                     std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->calls.begin();
  return impl_->download(path, max_bytes.value_or(impl_->options.max_download_bytes), call->token(), timeout,
                         "download_file");
}

bool BedrockAgentCoreSandbox::do_download_file_to(std::string_view path, const std::filesystem::path& destination,
                                                  Timeout timeout, std::optional<std::uint64_t> max_bytes) {
  // The service returns a file inside one JSON answer, so it is read whole (within the cap), then written beside
  // the destination and renamed into place.
  std::optional<std::string> bytes;
  {
    const auto call = impl_->calls.begin();
    bytes = impl_->download(path, max_bytes.value_or(impl_->options.max_download_bytes), call->token(), timeout,
                            "download_file_to");
  }
  if (!bytes) return false;
  std::random_device device;
  const auto partial = std::filesystem::path(destination.string() + ".part-" + std::to_string(device()));
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(partial, ec);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, destination, ec);
  if (ec) std::filesystem::remove(partial, ec);
  return !ec;
}

void BedrockAgentCoreSandbox::do_terminate(Timeout timeout) {
  if (!impl_->calls.cancel_all()) return;
  const auto ex = impl_->stop(Deadline::after(timeout, impl_->options.request_timeout * 2));
  if (Impl::stopped(ex)) {
    impl_->calls.mark_terminated();
    return;
  }
  impl_->throw_service_error<SandboxTerminateError>(ex, Stage::kTerminate, "StopCodeInterpreterSession");
}

}  // namespace code_interpreter
