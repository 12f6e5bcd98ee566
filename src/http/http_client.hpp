// The one libcurl wrapper shared by every HTTP backend and the LM invokers (docs/architecture.md "HTTP").
//
// It performs one HTTP exchange and reports, besides the response, the two facts the status mapping needs:
// was any byte of the request written, and was the response body complete (by its HTTP framing). Transport
// failures are data here (a Failure in the Exchange), never exceptions: the caller decides whether to throw
// (lifecycle) or to return a result (execution) with http::classify (outcome.hpp).
//
// No silent re-send: libcurl 7.88 re-sends a request on a fresh connection when a reused one dies before any
// response byte (docs/protocols/libcurl.md "No silent re-send"). A request marked non-idempotent sends its body through a
// read callback whose seek callback refuses to rewind once a body byte was read; libcurl then fails with
// CURLE_SEND_FAIL_REWIND instead of delivering the body twice.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/idempotency.hpp"

namespace code_interpreter::http {

/// One part of a multipart/form-data body (RFC 7578). Exactly one of `data` / `file` is the content.
struct MultipartPart {
  std::string name;                           ///< the form field name
  std::string filename;                       ///< the part's filename parameter (may be empty)
  std::string content_type = "application/octet-stream";
  std::string_view data;                      ///< in-memory content; must outlive the perform() call
  std::optional<std::filesystem::path> file;  ///< streamed from disk instead of `data`
};

struct Request {
  std::string method = "GET";                             ///< GET, POST, PUT, DELETE, ...
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  ///< sent as given; values may be secrets (never logged)
  std::string body;                                       ///< the request body (ignored for multipart)
  std::vector<MultipartPart> multipart;                   ///< when non-empty, a multipart/form-data body
  /// false: the body goes through the no-rewind read callback, so a request can never be delivered twice.
  bool idempotent = true;
  /// Whole-exchange limit; zero or negative: none. Exceeded → Failure::kTimeout.
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  /// A response that receives no byte for this long is dead (Failure::kReceive, curl_code "IDLE_TIMEOUT"): for
  /// streams whose server promises keep-alive messages. Checked about once a second. Zero or negative: none.
  std::chrono::milliseconds idle_timeout{0};
  /// HTTP/1.1 only: required for streamed responses whose abort must reach the server as a closed connection.
  bool http1_only = false;
  /// Streamed response body: called for each received piece (any size, split anywhere). Returning false aborts
  /// the transfer (Failure::kAborted). Unset: the body is collected into Response::body up to max_body bytes.
  std::function<bool(std::string_view)> on_body;
  /// Called once the status line and headers of the final response are in (before any body piece).
  std::function<void(int status)> on_headers;
  /// Called on the performing thread about every `tick_interval` while the exchange runs, between libcurl's calls
  /// (never inside one of its callbacks), for what depends on time passing rather than on bytes: a streamed
  /// answer's partial output line that no byte completed (core/output.hpp kPartialLineDelay). Returning false
  /// aborts the transfer (Failure::kAborted). Must not throw (a throw aborts as false does). Unset, or an interval
  /// of zero or less: never called.
  std::function<bool()> on_tick;
  std::chrono::milliseconds tick_interval{0};
  std::size_t max_body = std::size_t{16} << 20;  ///< cap for a collected body; over it → Failure::kTooLarge
  std::stop_token cancel;                         ///< a stop request aborts at once (Failure::kCancelled)
  /// The operation of the idempotency table (idempotency.hpp) this request is for, stamped by for_operation(),
  /// which also set `idempotent` from it; the retry loop reads it. Unset (the LM invokers, tests): `idempotent`
  /// alone decides.
  std::optional<Operation> operation;
  /// Signing that only libcurl does, applied to its handle (`easy` is the CURL*) after the client's own options:
  /// AWS SigV4 through CURLOPT_AWS_SIGV4, set by src/bedrock/sigv4.hpp. The hook must not log or keep what it
  /// sets. A signed request gets no header the signer would sign wrongly (see perform()). Unset: unsigned.
  std::function<void(void* easy)> sign;
};

/// What went wrong in the exchange, if anything. An HTTP error status is not a Failure: the exchange worked.
enum class Failure {
  kNone,
  kConnect,    ///< resolve / connect failed: provably nothing was written
  kTls,        ///< TLS handshake or certificate verification failed
  kTimeout,    ///< Request::timeout elapsed
  kCancelled,  ///< Request::cancel was requested
  kAborted,    ///< the on_body callback returned false
  kTooLarge,   ///< a collected body exceeded Request::max_body
  kSend,       ///< sending failed (incl. CURLE_SEND_FAIL_REWIND: a refused silent re-send)
  kReceive,    ///< the connection broke while receiving, or the body ended inside its framing
  kOther,      ///< anything else libcurl reports
};

std::string_view to_string(Failure failure) noexcept;

struct Response {
  int status = 0;                                            ///< 0 when no status line arrived
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lower-cased; of the final response
  std::string body;                                          ///< collected body (empty when on_body streamed it)

  /// The first header with this (case-insensitive) name.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
  /// Retry-After in seconds (delta-seconds form only; an HTTP date is ignored).
  [[nodiscard]] std::optional<std::chrono::seconds> retry_after() const;
};

/// One exchange: the response (possibly partial) and the facts about the transport.
struct Exchange {
  Response response;
  Failure failure = Failure::kNone;
  std::string curl_code;        ///< libcurl's error name without "CURLE_", e.g. "COULDNT_CONNECT"; empty when OK
  std::string message;          ///< libcurl's error text (never contains header values)
  bool request_written = false; ///< any byte of the request body was read by libcurl (or, bodyless, any byte sent)
  bool body_complete = false;   ///< the response body ended where its HTTP framing says it ends
  std::chrono::milliseconds elapsed{0};

  [[nodiscard]] bool ok() const noexcept { return failure == Failure::kNone; }
  /// A transport success with a 2xx status.
  [[nodiscard]] bool success() const noexcept { return ok() && response.status >= 200 && response.status < 300; }
};

/// A pool of libcurl handles. Connections are kept per handle and handles are reused across calls and
/// sandboxes, so consecutive requests to one origin reuse a connection. Thread-safe: each perform() takes a
/// handle of its own for the duration of the call.
class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// The process-wide client that backends share.
  static HttpClient& shared();

  /// Performs one exchange. Never throws for transport or HTTP failures (they are in the Exchange); throws
  /// std::invalid_argument for a malformed request (empty URL, multipart part with an unreadable file) and
  /// std::bad_alloc.
  [[nodiscard]] Exchange perform(const Request& request);

 private:
  struct Handle;
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

/// Makes `request` a streamed call: the body of a 200 answer goes to `feed` as it arrives (its false aborts the
/// transfer); the body of any other status is kept in `error_body`, at most `max_error_body` bytes of it, for the
/// caller to read the refusal from. `status`, when given, receives each answer's status once its headers are in.
void stream_success_body(Request& request, std::string& error_body, std::function<bool(std::string_view)> feed,
                         std::size_t max_error_body, int* status = nullptr);

/// Percent-encodes a URL component (RFC 3986 unreserved characters pass through).
std::string url_encode(std::string_view text);

}  // namespace code_interpreter::http
