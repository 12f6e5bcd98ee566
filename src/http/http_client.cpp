#include "http/http_client.hpp"


#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace code_interpreter::http {
namespace {

// libcurl's names for the codes a caller may see in FailureDetail::exception_type ("curl." + name).
std::string curl_code_name(CURLcode code) {
  switch (code) {
    case CURLE_OK: return {};
    case CURLE_UNSUPPORTED_PROTOCOL: return "UNSUPPORTED_PROTOCOL";
    case CURLE_URL_MALFORMAT: return "URL_MALFORMAT";
    case CURLE_COULDNT_RESOLVE_PROXY: return "COULDNT_RESOLVE_PROXY";
    case CURLE_COULDNT_RESOLVE_HOST: return "COULDNT_RESOLVE_HOST";
    case CURLE_COULDNT_CONNECT: return "COULDNT_CONNECT";
    case CURLE_WEIRD_SERVER_REPLY: return "WEIRD_SERVER_REPLY";
    case CURLE_HTTP2: return "HTTP2";
    case CURLE_PARTIAL_FILE: return "PARTIAL_FILE";
    case CURLE_WRITE_ERROR: return "WRITE_ERROR";
    case CURLE_READ_ERROR: return "READ_ERROR";
    case CURLE_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case CURLE_OPERATION_TIMEDOUT: return "OPERATION_TIMEDOUT";
    case CURLE_ABORTED_BY_CALLBACK: return "ABORTED_BY_CALLBACK";
    case CURLE_SSL_CONNECT_ERROR: return "SSL_CONNECT_ERROR";
    case CURLE_GOT_NOTHING: return "GOT_NOTHING";
    case CURLE_SEND_ERROR: return "SEND_ERROR";
    case CURLE_RECV_ERROR: return "RECV_ERROR";
    case CURLE_SSL_CERTPROBLEM: return "SSL_CERTPROBLEM";
    case CURLE_SSL_CIPHER: return "SSL_CIPHER";
    case CURLE_PEER_FAILED_VERIFICATION: return "PEER_FAILED_VERIFICATION";
    case CURLE_BAD_CONTENT_ENCODING: return "BAD_CONTENT_ENCODING";
    case CURLE_SEND_FAIL_REWIND: return "SEND_FAIL_REWIND";
    case CURLE_SSL_CACERT_BADFILE: return "SSL_CACERT_BADFILE";
    case CURLE_HTTP2_STREAM: return "HTTP2_STREAM";
    case CURLE_HTTP3: return "HTTP3";
    default: return "CODE_" + std::to_string(static_cast<int>(code));
  }
}

Failure failure_of(CURLcode code) {
  switch (code) {
    case CURLE_OK: return Failure::kNone;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT: return Failure::kConnect;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS: return Failure::kTls;
    case CURLE_OPERATION_TIMEDOUT: return Failure::kTimeout;
    case CURLE_SEND_ERROR:
    case CURLE_SEND_FAIL_REWIND:
    case CURLE_READ_ERROR: return Failure::kSend;
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING: return Failure::kReceive;
    default: return Failure::kOther;
  }
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n'))
    text.remove_suffix(1);
  return text;
}

// Reads an in-memory view for a multipart part (curl_mime_data_cb), so the caller's bytes are not copied.
struct ViewReader {
  std::string_view data;
  std::size_t offset = 0;
};

size_t view_read(char* buffer, size_t size, size_t items, void* arg) {
  auto* reader = static_cast<ViewReader*>(arg);
  const std::size_t n = std::min(size * items, reader->data.size() - reader->offset);
  std::memcpy(buffer, reader->data.data() + reader->offset, n);
  reader->offset += n;
  return n;
}

int view_seek(void* arg, curl_off_t offset, int origin) {
  auto* reader = static_cast<ViewReader*>(arg);
  if (origin != SEEK_SET || offset < 0 || static_cast<std::size_t>(offset) > reader->data.size())
    return CURL_SEEKFUNC_CANTSEEK;
  reader->offset = static_cast<std::size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// The per-call state the libcurl callbacks see. Callbacks never let an exception escape into libcurl.
struct Transfer {
  const Request* request = nullptr;
  Response response;
  std::size_t body_offset = 0;
  bool body_byte_read = false;
  bool headers_done = false;
  bool too_large = false;
  bool aborted = false;
  // The idle watchdog (Request::idle_timeout): when the last byte of the response arrived, and whether it fired.
  std::chrono::steady_clock::time_point last_byte = std::chrono::steady_clock::now();
  bool idle_expired = false;
};

size_t read_body(char* buffer, size_t size, size_t items, void* arg) {
  auto* t = static_cast<Transfer*>(arg);
  const std::string& body = t->request->body;
  const std::size_t n = std::min(size * items, body.size() - t->body_offset);
  std::memcpy(buffer, body.data() + t->body_offset, n);
  t->body_offset += n;
  if (n > 0) t->body_byte_read = true;
  return n;
}

// libcurl asks to rewind before it re-sends a request on a fresh connection (docs/protocols/libcurl.md "No silent re-send"). A non-idempotent
// request may be rewound only while no body byte has been read: then it provably was not delivered.
int seek_body(void* arg, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(arg);
  if (origin != SEEK_SET || offset < 0 || static_cast<std::size_t>(offset) > t->request->body.size())
    return CURL_SEEKFUNC_FAIL;
  if (!t->request->idempotent && t->body_byte_read) return CURL_SEEKFUNC_FAIL;
  t->body_offset = static_cast<std::size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t on_header(char* data, size_t size, size_t items, void* arg) {
  auto* t = static_cast<Transfer*>(arg);
  const std::size_t n = size * items;
  try {
    std::string_view line(data, n);
    if (line.rfind("HTTP/", 0) == 0) {
      // A new response (an interim 1xx or the final one): start its headers afresh.
      t->response.headers.clear();
      t->response.status = 0;
      const auto space = line.find(' ');
      if (space != std::string_view::npos) {
        int status = 0;
        const auto digits = line.substr(space + 1, 3);
        std::from_chars(digits.data(), digits.data() + digits.size(), status);
        t->response.status = status;
      }
      return n;
    }
    const auto stripped = trim(line);
    if (stripped.empty()) {
      if (t->response.status >= 200 && !t->headers_done) {
        t->headers_done = true;
        if (t->request->on_headers) t->request->on_headers(t->response.status);
      }
      return n;
    }
    const auto colon = stripped.find(':');
    if (colon != std::string_view::npos)
      t->response.headers.emplace_back(lower(stripped.substr(0, colon)), std::string(trim(stripped.substr(colon + 1))));
    return n;
  } catch (...) {
    t->aborted = true;
    return 0;  // makes libcurl fail the transfer with CURLE_WRITE_ERROR
  }
}

size_t on_write(char* data, size_t size, size_t items, void* arg) {
  auto* t = static_cast<Transfer*>(arg);
  const std::size_t n = size * items;
  t->last_byte = std::chrono::steady_clock::now();
  try {
    if (t->request->on_body) {
      if (!t->request->on_body(std::string_view(data, n))) {
        t->aborted = true;
        return 0;
      }
      return n;
    }
    if (t->response.body.size() + n > t->request->max_body) {
      t->too_large = true;
      return 0;
    }
    t->response.body.append(data, n);
    return n;
  } catch (...) {
    t->aborted = true;
    return 0;
  }
}

int on_progress(void* arg, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(arg);
  if (t->request->cancel.stop_requested()) return 1;
  const auto idle = t->request->idle_timeout;
  if (idle.count() > 0 && std::chrono::steady_clock::now() - t->last_byte > idle) {
    t->idle_expired = true;
    return 1;
  }
  return 0;
}

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace

std::string_view to_string(Failure failure) noexcept {
  switch (failure) {
    case Failure::kNone: return "none";
    case Failure::kConnect: return "connect";
    case Failure::kTls: return "tls";
    case Failure::kTimeout: return "timeout";
    case Failure::kCancelled: return "cancelled";
    case Failure::kAborted: return "aborted";
    case Failure::kTooLarge: return "too_large";
    case Failure::kSend: return "send";
    case Failure::kReceive: return "receive";
    case Failure::kOther: return "other";
  }
  return "other";
}

std::optional<std::string_view> Response::header(std::string_view name) const {
  const std::string key = lower(name);
  for (const auto& [k, v] : headers)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

std::optional<std::chrono::seconds> Response::retry_after() const {
  const auto value = header("retry-after");
  if (!value) return std::nullopt;
  long long seconds = 0;
  const auto* end = value->data() + value->size();
  const auto [ptr, ec] = std::from_chars(value->data(), end, seconds);
  if (ec != std::errc() || ptr != end || seconds < 0) return std::nullopt;
  return std::chrono::seconds(std::min<long long>(seconds, 86400));
}

// A multi handle with one easy handle: the multi owns the connection cache, so connections survive between
// calls that use this pair, and curl_multi_wakeup lets a stop request interrupt a wait at once.
struct HttpClient::Handle {
  CURLM* multi = curl_multi_init();
  CURL* easy = curl_easy_init();
  ~Handle() {
    if (easy) curl_easy_cleanup(easy);
    if (multi) curl_multi_cleanup(multi);
  }
};

struct HttpClient::Pool {
  std::mutex mutex;
  std::vector<std::unique_ptr<Handle>> idle;
  static constexpr std::size_t kMaxIdle = 64;

  std::unique_ptr<Handle> take() {
    {
      std::lock_guard lock(mutex);
      if (!idle.empty()) {
        auto handle = std::move(idle.back());
        idle.pop_back();
        return handle;
      }
    }
    auto handle = std::make_unique<Handle>();
    if (!handle->multi || !handle->easy) throw std::bad_alloc();
    return handle;
  }
  void give_back(std::unique_ptr<Handle> handle) {
    std::lock_guard lock(mutex);
    if (idle.size() < kMaxIdle) idle.push_back(std::move(handle));
  }
};

HttpClient::HttpClient() : pool_(std::make_unique<Pool>()) {
  static CurlGlobal global;
}

HttpClient::~HttpClient() = default;

HttpClient& HttpClient::shared() {
  // Never destroyed: backends may still be tearing down from other static destructors at exit.
  static HttpClient* client = new HttpClient();
  return *client;
}

Exchange HttpClient::perform(const Request& request) {
  if (request.url.empty()) throw std::invalid_argument("HTTP request without a URL");
  // libcurl sends header lines verbatim: a line break would inject headers, a NUL would cut the value. Values may
  // be secrets, so only the name is quoted.
  constexpr std::string_view kBreaks("\r\n\0", 3);
  for (const auto& [name, value] : request.headers)
    if (name.find_first_of(kBreaks) != std::string::npos || name.find(':') != std::string::npos ||
        value.find_first_of(kBreaks) != std::string::npos)
      throw std::invalid_argument("HTTP header '" + name.substr(0, name.find_first_of(kBreaks)) +
                                  "' contains a line break, NUL or a colon in its name");
  for (const auto& part : request.multipart)
    if (part.file && !std::filesystem::is_regular_file(*part.file))
      throw std::invalid_argument("multipart file is not a readable regular file: " + part.file->string());

  auto handle = pool_->take();
  CURL* easy = handle->easy;
  curl_easy_reset(easy);  // keeps the live connections (curl_easy_reset(3))

  Transfer transfer;
  transfer.request = &request;
  char error_buffer[CURL_ERROR_SIZE] = {0};

  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max<long long>(1, request.connect_timeout.count())));
  if (request.timeout.count() > 0) curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION,
                   request.http1_only ? CURL_HTTP_VERSION_1_1 : CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
  if (request.sign) request.sign(easy);

  curl_slist* headers = nullptr;
  bool has_content_type = false;
  for (const auto& [name, value] : request.headers) {
    if (lower(name) == "content-type") has_content_type = true;
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  // No "Expect: 100-continue" round trip: the servers we talk to answer at once. libcurl 7.88's SigV4 signer
  // signs the removal directive "Expect:" as an empty header that is never sent, which breaks the signature; a
  // signed request instead keeps libcurl's Expect (bodies over 1 MiB, unsigned) and does not wait for the 100.
  const bool signed_request = static_cast<bool>(request.sign);
  if (signed_request) curl_easy_setopt(easy, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  else headers = curl_slist_append(headers, "Expect:");

  curl_mime* mime = nullptr;
  std::vector<std::unique_ptr<ViewReader>> readers;
  const bool has_body = !request.body.empty() || !request.multipart.empty() ||
                        (request.method != "GET" && request.method != "HEAD" && request.method != "DELETE");
  if (!request.multipart.empty()) {
    mime = curl_mime_init(easy);
    for (const auto& part : request.multipart) {
      curl_mimepart* p = curl_mime_addpart(mime);
      curl_mime_name(p, part.name.c_str());
      if (part.file) {
        curl_mime_filedata(p, part.file->c_str());  // streamed from disk
      } else {
        auto reader = std::make_unique<ViewReader>(ViewReader{part.data, 0});
        curl_mime_data_cb(p, static_cast<curl_off_t>(part.data.size()), view_read, view_seek, nullptr, reader.get());
        readers.push_back(std::move(reader));
      }
      // After filedata: curl_mime_filedata also sets the remote filename from the local path.
      curl_mime_filename(p, part.filename.empty() ? nullptr : part.filename.c_str());
      curl_mime_type(p, part.content_type.c_str());
    }
    curl_easy_setopt(easy, CURLOPT_MIMEPOST, mime);
    if (request.method != "POST") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (has_body) {
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(easy, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(easy, CURLOPT_READDATA, &transfer);
    curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, seek_body);
    curl_easy_setopt(easy, CURLOPT_SEEKDATA, &transfer);
    if (!has_content_type && !signed_request) headers = curl_slist_append(headers, "Content-Type:");
    if (request.method != "POST") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (request.method == "HEAD") {
    curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET") {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);

  const auto started = std::chrono::steady_clock::now();
  CURLcode result = CURLE_OK;
  bool cancelled = request.cancel.stop_requested();
  bool ticked_abort = false;  // Request::on_tick asked to stop
  if (!cancelled) {
    curl_multi_add_handle(handle->multi, easy);
    {
      std::stop_callback wake(request.cancel, [multi = handle->multi] { curl_multi_wakeup(multi); });
      int running = 1;
      const bool ticks = request.on_tick && request.tick_interval.count() > 0;
      const int wait_ms =
          ticks ? static_cast<int>(std::clamp<long long>(request.tick_interval.count(), 1, 1000)) : 1000;
      auto next_tick = std::chrono::steady_clock::now() + request.tick_interval;
      while (true) {
        if (curl_multi_perform(handle->multi, &running) != CURLM_OK) {
          result = CURLE_OUT_OF_MEMORY;
          break;
        }
        if (running == 0) {
          int left = 0;
          while (CURLMsg* msg = curl_multi_info_read(handle->multi, &left))
            if (msg->msg == CURLMSG_DONE) result = msg->data.result;
          break;
        }
        if (request.cancel.stop_requested()) {
          cancelled = true;
          break;
        }
        curl_multi_poll(handle->multi, nullptr, 0, wait_ms, nullptr);
        if (ticks && std::chrono::steady_clock::now() >= next_tick) {
          next_tick = std::chrono::steady_clock::now() + request.tick_interval;
          bool go_on = false;
          try {
            go_on = request.on_tick();
          } catch (...) {
          }
          if (!go_on) {
            ticked_abort = true;
            break;
          }
        }
      }
    }
    // Removing a transfer in progress halts it and closes its connection (curl_multi_remove_handle(3)), so an
    // abandoned HTTP/1.1 request reaches the server as a closed connection.
    curl_multi_remove_handle(handle->multi, easy);
  }

  Exchange exchange;
  exchange.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (cancelled || ticked_abort) result = CURLE_ABORTED_BY_CALLBACK;
  exchange.curl_code = curl_code_name(result);
  exchange.failure = failure_of(result);
  if (result == CURLE_ABORTED_BY_CALLBACK) exchange.failure = cancelled || request.cancel.stop_requested()
                                                                  ? Failure::kCancelled : Failure::kAborted;
  if (result == CURLE_WRITE_ERROR) exchange.failure = transfer.too_large ? Failure::kTooLarge : Failure::kAborted;
  if (result != CURLE_OK) exchange.message = error_buffer[0] ? error_buffer : curl_easy_strerror(result);
  if (result == CURLE_ABORTED_BY_CALLBACK && exchange.failure == Failure::kAborted && transfer.idle_expired) {
    // A stream silent for longer than its keep-alive promise is dead, not waiting: a broken receive.
    exchange.failure = Failure::kReceive;
    exchange.curl_code = "IDLE_TIMEOUT";
    exchange.message = "no byte arrived for " + std::to_string(request.idle_timeout.count()) + " ms";
  }
  exchange.body_complete = result == CURLE_OK;

  if (exchange.failure == Failure::kConnect || exchange.failure == Failure::kTls) {
    exchange.request_written = false;
  } else if (has_body && mime == nullptr) {
    exchange.request_written = transfer.body_byte_read;
  } else {
    long request_size = 0;
    curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_size);
    exchange.request_written = request_size > 0 || transfer.body_byte_read;
  }
  exchange.response = std::move(transfer.response);

  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(easy, CURLOPT_MIMEPOST, nullptr);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(headers);
  if (mime) curl_mime_free(mime);
  pool_->give_back(std::move(handle));
  return exchange;
}

void stream_success_body(Request& request, std::string& error_body, std::function<bool(std::string_view)> feed,
                         std::size_t max_error_body, int* status) {
  auto seen = std::make_shared<int>(0);
  request.on_headers = [seen, status](int s) {
    *seen = s;
    if (status != nullptr) *status = s;
  };
  request.on_body = [seen, &error_body, feed = std::move(feed), max_error_body](std::string_view piece) {
    if (*seen != 200) {
      error_body.append(piece.substr(0, max_error_body - std::min(max_error_body, error_body.size())));
      return true;
    }
    return feed(piece);
  };
}

std::string url_encode(std::string_view text) {
  static CurlGlobal global;
  // Since libcurl 7.82 curl_easy_escape takes no handle.
  char* escaped = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  if (!escaped) throw std::bad_alloc();
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

}  // namespace code_interpreter::http
