// A scripted HTTP/1.1 server on 127.0.0.1 for the HTTP wrapper's unit tests: each accepted connection is handed
// to a handler that reads requests and writes whatever bytes the test wants (including broken framing), so every
// transport branch meets a real socket.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace code_interpreter::test {

struct ReceivedRequest {
  std::string method, target, body;
  std::map<std::string, std::string> headers;  // lower-cased names
};

class ServerConnection {
 public:
  explicit ServerConnection(int fd) : fd_(fd) {}

  /// Reads one request (headers, then a Content-Length or chunked body). nullopt on EOF.
  std::optional<ReceivedRequest> read_request() {
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return std::nullopt;
    ReceivedRequest request;
    std::string head = buffer_.substr(0, end);
    buffer_.erase(0, end + 4);
    std::size_t line_end = head.find("\r\n");
    const std::string first = head.substr(0, line_end);
    const auto sp1 = first.find(' '), sp2 = first.rfind(' ');
    request.method = first.substr(0, sp1);
    request.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
    while (line_end != std::string::npos) {
      const std::size_t next = head.find("\r\n", line_end + 2);
      const std::string line = head.substr(line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        request.headers[name] = value;
      }
      line_end = next;
    }
    if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
      const std::size_t length = std::stoul(it->second);
      while (buffer_.size() < length)
        if (!fill()) return std::nullopt;
      request.body = buffer_.substr(0, length);
      buffer_.erase(0, length);
    }
    return request;
  }

  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  /// A complete response with a Content-Length body.
  void respond(int status, std::string_view body, std::string_view extra_headers = {}) {
    write("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
          std::string(extra_headers) + "\r\n");
    write(body);
  }

  /// Waits until the peer closes (or `limit` passes); true when it closed.
  bool wait_for_close(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      char c;
      timeval tv{0, 50'000};
      setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      const ssize_t n = ::recv(fd_, &c, 1, 0);
      if (n == 0) return true;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return true;
    }
    return false;
  }

 private:
  bool fill() {
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_;
  std::string buffer_;
};

class LocalHttpServer {
 public:
  using Handler = std::function<void(ServerConnection&, int connection_index)>;

  explicit LocalHttpServer(Handler handler) : handler_(std::move(handler)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 64) != 0)
      throw std::runtime_error("test server: cannot listen");
    socklen_t length = sizeof address;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~LocalHttpServer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    {
      // Clients keep idle connections open; end the handlers blocked reading them.
      std::lock_guard lock(mutex_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : workers_) t.join();
    for (int fd : fds_) ::close(fd);
  }

  [[nodiscard]] std::string url(std::string_view path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }
  [[nodiscard]] int connections() const { return connections_.load(); }

  /// Requests the handlers recorded with record().
  void record(const ReceivedRequest& request) {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
  }
  [[nodiscard]] std::vector<ReceivedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      const int index = connections_++;
      {
        std::lock_guard lock(mutex_);
        fds_.push_back(fd);
      }
      workers_.emplace_back([this, fd, index] {
        ServerConnection connection(fd);
        handler_(connection, index);
        ::shutdown(fd, SHUT_RDWR);
      });
    }
  }

  Handler handler_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  mutable std::mutex mutex_;
  std::vector<ReceivedRequest> requests_;
  std::vector<int> fds_;  // closed by the destructor, after the handlers ended
};

}  // namespace code_interpreter::test
