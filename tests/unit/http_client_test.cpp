// The HTTP wrapper against real sockets: every transport branch, the two facts (request written, body complete),
// the status mapping, and the retry loop.
#include <catch2/catch.hpp>

#include <thread>

#include "http/http_client.hpp"
#include "http/outcome.hpp"
#include "http/retry.hpp"
#include "local_http_server.hpp"

using namespace code_interpreter;
using namespace std::chrono_literals;
using code_interpreter::test::LocalHttpServer;
using code_interpreter::test::ServerConnection;

namespace {

http::Request post(std::string url, std::string body, bool idempotent) {
  http::Request request;
  request.method = "POST";
  request.url = std::move(url);
  request.body = std::move(body);
  request.idempotent = idempotent;
  request.headers = {{"Content-Type", "application/json"}};
  request.timeout = 10s;
  return request;
}

// A port that nobody listens on: bind, read the port, close.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

TEST_CASE("a GET collects the body, the status and lower-cased headers", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (auto r = c.read_request()) c.respond(200, "hello", "X-Thing: Value\r\nRetry-After: 7\r\n");
  });
  http::HttpClient client;
  http::Request request;
  request.url = server.url("/a");
  const auto exchange = client.perform(request);
  REQUIRE(exchange.success());
  CHECK(exchange.body_complete);
  CHECK(exchange.response.status == 200);
  CHECK(exchange.response.body == "hello");
  CHECK(exchange.response.header("x-THING") == std::optional<std::string_view>("Value"));
  CHECK(exchange.response.retry_after() == std::optional<std::chrono::seconds>(7s));
  CHECK(exchange.curl_code.empty());
}

TEST_CASE("a header value with a line break is refused before anything is sent, and not quoted", "[http]") {
  // libcurl sends header lines verbatim: a key read from a file with its newline, or a token with CRLF, would
  // inject headers (or end them early).
  LocalHttpServer server([](ServerConnection& c, int) {
    while (c.read_request()) c.respond(200, "ok");
  });
  const std::vector<std::string> values{"sk-secret\n", "sk-secret\r\nX-Injected: 1", std::string("sk-\0secret", 10)};
  for (const auto& value : values) {
    http::Request request;
    request.url = server.url("/");
    request.headers = {{"Authorization", "Bearer " + value}};
    try {
      (void)http::HttpClient().perform(request);
      FAIL("perform must refuse");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("secret") == std::string::npos);
      CHECK(std::string(e.what()).find("Authorization") != std::string::npos);
    }
  }
  CHECK(server.connections() == 0);
}

TEST_CASE("consecutive requests to one origin reuse one connection", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (auto r = c.read_request()) c.respond(200, r->method + " " + r->target + " " + r->body);
  });
  http::HttpClient client;
  for (const std::string method : {"GET", "POST", "PUT", "DELETE"}) {
    http::Request request;
    request.method = method;
    request.url = server.url("/x");
    if (method == "POST" || method == "PUT") request.body = "b";
    const auto exchange = client.perform(request);
    REQUIRE(exchange.success());
    CHECK(exchange.response.body == method + " /x " + request.body);
  }
  CHECK(server.connections() == 1);
}

TEST_CASE("a non-idempotent POST whose reused connection dies unanswered is sent exactly once and is UNKNOWN",
          "[http]") {
  // docs/protocols/libcurl.md "No silent re-send": the server answers the first POST, then reads the second POST whole and closes without an
  // answer. libcurl would reconnect and send the body again; the no-rewind seek callback forbids that.
  LocalHttpServer server([&](ServerConnection& c, int) {
    int n = 0;
    while (auto r = c.read_request()) {
      server.record(*r);
      if (++n == 1) {
        c.respond(200, "first");
      } else {
        return;  // closes without answering
      }
    }
  });
  http::HttpClient client;
  REQUIRE(client.perform(post(server.url("/execute"), R"({"code":"1"})", false)).success());
  const auto exchange = client.perform(post(server.url("/execute"), R"({"code":"2"})", false));

  CHECK(exchange.failure == http::Failure::kSend);
  CHECK(exchange.curl_code == "SEND_FAIL_REWIND");
  CHECK(exchange.request_written);
  CHECK_FALSE(exchange.body_complete);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].body == R"({"code":"2"})");
  // libcurl may open the fresh connection before it asks to rewind; what matters is that no body reached it.

  const auto verdict = http::classify(exchange, TimeoutKind::kExecution, "execute");
  CHECK(verdict.status == ExecutionStatus::kUnknown);
  REQUIRE(verdict.failure);
  CHECK(verdict.failure->exception_type == "curl.SEND_FAIL_REWIND");
  CHECK_FALSE(verdict.failure->retry_safe);
  CHECK_FALSE(verdict.timeout_kind);
}

TEST_CASE("an idempotent POST in the same situation is re-sent by libcurl, which is why execute is not idempotent",
          "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int index) {
    int n = 0;
    while (auto r = c.read_request()) {
      server.record(*r);
      if (index == 0 && ++n == 2) return;
      c.respond(200, "ok");
    }
  });
  http::HttpClient client;
  REQUIRE(client.perform(post(server.url("/kill"), "1", true)).success());
  const auto exchange = client.perform(post(server.url("/kill"), "2", true));
  CHECK(exchange.success());
  const auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[1].body == "2");
  CHECK(requests[2].body == "2");
  CHECK(server.connections() == 2);
}

TEST_CASE("a refused connection proves nothing was written: ERROR, retry_safe", "[http]") {
  http::HttpClient client;
  const auto exchange = client.perform(post("http://127.0.0.1:" + std::to_string(closed_port()) + "/", "x", false));
  CHECK(exchange.failure == http::Failure::kConnect);
  CHECK(exchange.curl_code == "COULDNT_CONNECT");
  CHECK_FALSE(exchange.request_written);
  const auto verdict = http::classify(exchange, TimeoutKind::kExecution, "execute");
  CHECK(verdict.status == ExecutionStatus::kError);
  REQUIRE(verdict.failure);
  CHECK(verdict.failure->exception_type == "curl.COULDNT_CONNECT");
  CHECK(verdict.failure->retry_safe);
  CHECK(http::is_transient(exchange, false));
  const auto error = http::to_transport_error(exchange, "create");
  CHECK(error.kind() == TransportError::Kind::kConnect);
  CHECK_FALSE(error.request_written());
}

TEST_CASE("an unresolvable host is a connect failure", "[http]") {
  http::HttpClient client;
  http::Request request;
  request.url = "http://no-such-host.invalid/";
  const auto exchange = client.perform(request);
  CHECK(exchange.failure == http::Failure::kConnect);
  CHECK(exchange.curl_code == "COULDNT_RESOLVE_HOST");
  CHECK_FALSE(exchange.request_written);
}

TEST_CASE("a server that never answers is a timeout of the kind the caller names", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (c.read_request()) c.wait_for_close(5s);
  });
  http::HttpClient client;
  auto request = post(server.url("/execute"), "{}", false);
  request.timeout = 300ms;
  const auto exchange = client.perform(request);
  CHECK(exchange.failure == http::Failure::kTimeout);
  CHECK(exchange.curl_code == "OPERATION_TIMEDOUT");
  CHECK(exchange.request_written);
  const auto verdict = http::classify(exchange, TimeoutKind::kRequest, "execute");
  CHECK(verdict.status == ExecutionStatus::kTimeout);
  CHECK(verdict.timeout_kind == TimeoutKind::kRequest);
  CHECK_FALSE(verdict.failure);
  CHECK(http::to_transport_error(exchange, "create").kind() == TransportError::Kind::kTimeout);
}

TEST_CASE("a stop request aborts a waiting call at once and closes its connection", "[http][concurrency]") {
  std::atomic<bool> peer_closed{false};
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (c.read_request()) peer_closed = c.wait_for_close(5s);
  });
  http::HttpClient client;
  std::stop_source stop;
  auto request = post(server.url("/execute"), "{}", false);
  request.cancel = stop.get_token();
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  const auto exchange = client.perform(request);
  canceller.join();
  CHECK(exchange.failure == http::Failure::kCancelled);
  CHECK(exchange.elapsed < 1500ms);
  CHECK(exchange.request_written);
  const auto verdict = http::classify(exchange, TimeoutKind::kExecution, "execute");
  CHECK(verdict.status == ExecutionStatus::kUnknown);
  REQUIRE(verdict.failure);
  CHECK(verdict.failure->exception_type == "cancelled");
  CHECK_FALSE(verdict.failure->retry_safe);
  for (int i = 0; i < 100 && !peer_closed; ++i) std::this_thread::sleep_for(20ms);
  CHECK(peer_closed);
}

TEST_CASE("a call cancelled before it starts sends nothing: ERROR, retry_safe", "[http][concurrency]") {
  LocalHttpServer server([&](ServerConnection& c, int) { while (c.read_request()) c.respond(200, ""); });
  http::HttpClient client;
  std::stop_source stop;
  stop.request_stop();
  auto request = post(server.url("/execute"), "{}", false);
  request.cancel = stop.get_token();
  const auto exchange = client.perform(request);
  CHECK(exchange.failure == http::Failure::kCancelled);
  CHECK_FALSE(exchange.request_written);
  CHECK(server.connections() == 0);
  const auto verdict = http::classify(exchange, TimeoutKind::kExecution, "execute");
  CHECK(verdict.status == ExecutionStatus::kError);
  REQUIRE(verdict.failure);
  CHECK(verdict.failure->retry_safe);
}

TEST_CASE("a chunked body cut inside its framing is incomplete and UNKNOWN", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (!c.read_request()) return;
    c.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nline1\n\r\n5\r\nlin");
  });
  http::HttpClient client;
  std::string streamed;
  auto request = post(server.url("/execute"), "{}", false);
  request.on_body = [&](std::string_view piece) {
    streamed += piece;
    return true;
  };
  const auto exchange = client.perform(request);
  CHECK(exchange.failure == http::Failure::kReceive);
  CHECK_FALSE(exchange.body_complete);
  CHECK(exchange.response.status == 200);
  CHECK(streamed.rfind("line1\n", 0) == 0);  // what arrived before the cut was delivered
  const auto verdict = http::classify(exchange, TimeoutKind::kExecution, "execute");
  CHECK(verdict.status == ExecutionStatus::kUnknown);
  REQUIRE(verdict.failure);
  CHECK_FALSE(verdict.failure->retry_safe);
  CHECK(verdict.failure->exception_type == "curl." + exchange.curl_code);
}

TEST_CASE("a Content-Length body cut short is PARTIAL_FILE", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (c.read_request()) c.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  });
  http::HttpClient client;
  http::Request request;
  request.url = server.url();
  const auto exchange = client.perform(request);
  CHECK(exchange.failure == http::Failure::kReceive);
  CHECK(exchange.curl_code == "PARTIAL_FILE");
  CHECK(exchange.response.body == "abc");
}

TEST_CASE("a body delimited by the connection's close is complete", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (c.read_request()) c.write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it");
  });
  http::HttpClient client;
  http::Request request;
  request.url = server.url();
  const auto exchange = client.perform(request);
  CHECK(exchange.success());
  CHECK(exchange.body_complete);
  CHECK(exchange.response.body == "all of it");
}

TEST_CASE("the response headers are reported before the body streams", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (c.read_request()) c.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nhi");
  });
  http::HttpClient client;
  std::vector<std::string> events;
  http::Request request = post(server.url(), "x", true);
  request.on_headers = [&](int status) { events.push_back("headers " + std::to_string(status)); };
  request.on_body = [&](std::string_view piece) {
    events.push_back("body " + std::string(piece));
    return true;
  };
  const auto exchange = client.perform(request);
  CHECK(exchange.success());
  CHECK(events == std::vector<std::string>{"headers 201", "body hi"});
}

TEST_CASE("a streaming callback that returns false aborts the transfer", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (c.read_request()) c.respond(200, std::string(100000, 'x'));
  });
  http::HttpClient client;
  http::Request request;
  request.url = server.url();
  request.on_body = [](std::string_view) { return false; };
  const auto exchange = client.perform(request);
  CHECK(exchange.failure == http::Failure::kAborted);
  CHECK(http::classify(exchange, TimeoutKind::kExecution, "").failure->exception_type == "protocol.aborted");
}

TEST_CASE("a streaming callback that throws aborts the transfer, the exception does not cross libcurl", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (c.read_request()) c.respond(200, "body");
  });
  http::HttpClient client;
  http::Request request;
  request.url = server.url();
  request.on_body = [](std::string_view) -> bool { throw std::runtime_error("boom"); };
  const auto exchange = client.perform(request);
  CHECK(exchange.failure == http::Failure::kAborted);
}

TEST_CASE("a collected body over max_body is refused", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (c.read_request()) c.respond(200, std::string(5000, 'x'));
  });
  http::HttpClient client;
  http::Request request;
  request.url = server.url();
  request.max_body = 4096;
  const auto exchange = client.perform(request);
  CHECK(exchange.failure == http::Failure::kTooLarge);
  const auto verdict = http::classify(exchange, TimeoutKind::kExecution, "");
  CHECK(verdict.status == ExecutionStatus::kUnknown);
  CHECK(verdict.failure->exception_type == "protocol.oversize");
}

TEST_CASE("an answered error status is a working exchange that the service refused", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (c.read_request()) c.respond(429, R"({"code":429,"message":"Rate limit exceeded"})", "Retry-After: 3\r\n");
  });
  http::HttpClient client;
  const auto exchange = client.perform(post(server.url(), "{}", false));
  CHECK(exchange.ok());
  CHECK_FALSE(exchange.success());
  CHECK(exchange.response.status == 429);
  const auto verdict = http::classify(exchange, TimeoutKind::kExecution, "execute");
  CHECK(verdict.status == ExecutionStatus::kError);
  CHECK(verdict.failure->exception_type == "http.429");
  CHECK(verdict.failure->retry_safe);
  const auto error = http::to_transport_error(exchange, "create", "Rate limit exceeded");
  CHECK(error.kind() == TransportError::Kind::kHttpStatus);
  CHECK(error.http_status() == 429);
  CHECK(error.retry_after() == std::optional<std::chrono::seconds>(3s));
  CHECK(std::string(error.what()) == "create: HTTP 429: Rate limit exceeded");
  CHECK(http::error_kind(exchange) == ErrorKind::kRateLimited);
}

TEST_CASE("a multipart body carries each part's name, filename and exact bytes", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (auto r = c.read_request()) {
      server.record(*r);
      c.respond(200, "[]");
    }
  });
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  http::HttpClient client;
  http::Request request;
  request.method = "POST";
  request.url = server.url("/files?path=%2Fa");
  request.multipart.push_back({"file", "/files/data.bin", "application/octet-stream", binary, std::nullopt});
  const auto exchange = client.perform(request);
  REQUIRE(exchange.success());
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].headers.at("content-type").rfind("multipart/form-data; boundary=", 0) == 0);
  const auto& body = requests[0].body;
  CHECK(body.find("Content-Disposition: form-data; name=\"file\"; filename=\"/files/data.bin\"") != std::string::npos);
  CHECK(body.find("\r\n\r\n" + binary + "\r\n--") != std::string::npos);
}

TEST_CASE("error messages never carry header values", "[http]") {
  http::HttpClient client;
  http::Request request = post("http://127.0.0.1:" + std::to_string(closed_port()) + "/", "x", false);
  request.headers.emplace_back("X-API-Key", "e2b_secretvalue");
  const auto exchange = client.perform(request);
  const auto error = http::to_transport_error(exchange, "create");
  CHECK(std::string(error.what()).find("secretvalue") == std::string::npos);
  CHECK(exchange.message.find("secretvalue") == std::string::npos);
}

TEST_CASE("url_encode leaves unreserved characters and encodes the rest", "[http]") {
  CHECK(http::url_encode("a-b_c.d~e") == "a-b_c.d~e");
  CHECK(http::url_encode("/files/a b?&=") == "%2Ffiles%2Fa%20b%3F%26%3D");
}

// ---- the status mapping as a table ----

TEST_CASE("error_kind maps answered statuses and transport failures", "[http]") {
  const auto answered = [](int status) {
    http::Exchange e;
    e.response.status = status;
    return http::error_kind(e);
  };
  CHECK(answered(400) == ErrorKind::kInvalidArgument);
  CHECK(answered(401) == ErrorKind::kUnauthenticated);
  CHECK(answered(403) == ErrorKind::kPermissionDenied);
  CHECK(answered(404) == ErrorKind::kNotFound);
  CHECK(answered(408) == ErrorKind::kTimeout);
  CHECK(answered(429) == ErrorKind::kRateLimited);
  CHECK(answered(500) == ErrorKind::kUnavailable);
  CHECK(answered(503) == ErrorKind::kUnavailable);
  CHECK(answered(507) == ErrorKind::kQuotaExceeded);
  http::Exchange broken;
  broken.failure = http::Failure::kConnect;
  CHECK(http::error_kind(broken) == ErrorKind::kUnavailable);
  broken.failure = http::Failure::kTimeout;
  CHECK(http::error_kind(broken) == ErrorKind::kTimeout);
}

TEST_CASE("is_transient follows the idempotency rule", "[http]") {
  http::Exchange e;
  for (int status : {408, 429, 500, 502, 503, 504}) {
    e.response.status = status;
    CHECK(http::is_transient(e, false));
  }
  for (int status : {400, 401, 403, 404, 409}) {
    e.response.status = status;
    CHECK_FALSE(http::is_transient(e, true));
  }
  e.response.status = 0;
  e.failure = http::Failure::kReceive;
  e.request_written = true;
  CHECK(http::is_transient(e, true));
  CHECK_FALSE(http::is_transient(e, false));
  e.request_written = false;
  CHECK(http::is_transient(e, false));
  e.failure = http::Failure::kTls;
  CHECK_FALSE(http::is_transient(e, true));
  e.failure = http::Failure::kCancelled;
  CHECK_FALSE(http::is_transient(e, true));
}

// ---- the retry loop ----

TEST_CASE("backoff doubles from the initial delay with jitter, is capped, and honours Retry-After", "[http][retry]") {
  http::RetryPolicy policy;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200; ++i) {
    const auto d1 = http::backoff_delay(policy, 1, std::nullopt, rng);
    CHECK((d1 >= 100ms && d1 <= 200ms));
    const auto d2 = http::backoff_delay(policy, 2, std::nullopt, rng);
    CHECK((d2 >= 200ms && d2 <= 400ms));
    const auto d10 = http::backoff_delay(policy, 10, std::nullopt, rng);
    CHECK((d10 >= 5000ms && d10 <= 10000ms));
  }
  CHECK(http::backoff_delay(policy, 1, 5s, rng) == 5000ms);
  CHECK(http::backoff_delay(policy, 1, 120s, rng) == 30000ms);
}

TEST_CASE("transient answers are retried with backoff until one succeeds", "[http][retry]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    int n = 0;
    while (auto r = c.read_request()) {
      server.record(*r);
      ++n;
      if (n == 1) c.respond(503, "busy");
      else if (n == 2) c.respond(429, "slow down", "Retry-After: 2\r\n");
      else c.respond(201, "made");
    }
  });
  http::HttpClient client;
  std::vector<std::chrono::milliseconds> sleeps;
  http::RetryHooks hooks;
  hooks.sleep = [&](std::chrono::milliseconds d, std::stop_token) {
    sleeps.push_back(d);
    return true;
  };
  int attempts = 0;
  const auto exchange = http::perform_with_retries(client, post(server.url(), "{}", true), {}, hooks, &attempts);
  CHECK(exchange.response.status == 201);
  CHECK(attempts == 3);
  REQUIRE(sleeps.size() == 2);
  CHECK((sleeps[0] >= 100ms && sleeps[0] <= 200ms));
  CHECK(sleeps[1] == 2000ms);
  CHECK(server.requests().size() == 3);
}

TEST_CASE("retries stop after max_attempts and return the last answer", "[http][retry]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (c.read_request()) c.respond(500, "no");
  });
  http::HttpClient client;
  http::RetryHooks hooks;
  hooks.sleep = [](std::chrono::milliseconds, std::stop_token) { return true; };
  int attempts = 0;
  const auto exchange = http::perform_with_retries(client, post(server.url(), "{}", true), {}, hooks, &attempts);
  CHECK(exchange.response.status == 500);
  CHECK(attempts == 3);
}

TEST_CASE("a non-idempotent request that was written and then broke is never retried", "[http][retry]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (auto r = c.read_request()) {
      server.record(*r);
      c.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab");
    }
  });
  http::HttpClient client;
  http::RetryHooks hooks;
  hooks.sleep = [](std::chrono::milliseconds, std::stop_token) { return true; };
  int attempts = 0;
  const auto exchange = http::perform_with_retries(client, post(server.url(), "{}", false), {}, hooks, &attempts);
  CHECK(exchange.failure == http::Failure::kReceive);
  CHECK(attempts == 1);
  CHECK(server.requests().size() == 1);
}

TEST_CASE("before_retry can stop the loop, and a cancelled sleep ends it", "[http][retry][concurrency]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (c.read_request()) c.respond(503, "");
  });
  http::HttpClient client;
  int hook_calls = 0;
  http::RetryHooks hooks;
  hooks.before_retry = [&](const http::Exchange& e) {
    ++hook_calls;
    CHECK(e.response.status == 503);
    return false;
  };
  int attempts = 0;
  (void)http::perform_with_retries(client, post(server.url(), "{}", true), {}, hooks, &attempts);
  CHECK(attempts == 1);
  CHECK(hook_calls == 1);

  std::stop_source stop;
  stop.request_stop();
  CHECK_FALSE(http::interruptible_sleep(10s, stop.get_token()));
  std::stop_source live;
  const auto start = std::chrono::steady_clock::now();
  CHECK(http::interruptible_sleep(20ms, live.get_token()));
  CHECK(std::chrono::steady_clock::now() - start >= 20ms);
}

TEST_CASE("on_tick runs between reads while a stream is silent, and its false aborts the transfer", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    if (!c.read_request()) return;
    c.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
    (void)c.wait_for_close(10s);  // then silent
  });
  http::HttpClient client;
  http::Request request;
  request.url = server.url("/stream");
  std::string body;
  request.on_body = [&](std::string_view piece) {
    body += piece;
    return true;
  };
  int ticks = 0;
  request.tick_interval = 20ms;
  request.on_tick = [&] { return ++ticks < 10; };
  const auto started = std::chrono::steady_clock::now();
  const auto exchange = client.perform(request);
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  CHECK(exchange.failure == http::Failure::kAborted);
  CHECK(ticks == 10);
  CHECK(body == "hello");
}

TEST_CASE("without on_tick, or with an interval of 0, no tick is made", "[http]") {
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (auto r = c.read_request()) c.respond(200, "ok");
  });
  http::HttpClient client;
  http::Request request;
  request.url = server.url("/a");
  int ticks = 0;
  request.on_tick = [&] { return ++ticks > 0; };
  const auto exchange = client.perform(request);
  CHECK(exchange.success());
  CHECK(ticks == 0);
}
