// The local E2B-protocol server (tests/servers/e2b) for one test case, with its control API: fault directives,
// the sandboxes alive, and the request log.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/e2b_sandbox.hpp"
#include "http/http_client.hpp"
#include "node_server.hpp"

namespace code_interpreter::test {

inline const std::string kTestApiKey = "e2b_" + std::string(40, '0');

class E2BServer {
 public:
  E2BServer() : node_("servers/e2b/server.mjs") {}
  ~E2BServer() {
    if (check_on_exit_ && std::uncaught_exceptions() == 0) check_none_alive();
  }
  E2BServer(const E2BServer&) = delete;
  E2BServer& operator=(const E2BServer&) = delete;

  [[nodiscard]] std::string api_url() const { return node_.url("api_url"); }
  [[nodiscard]] std::string sandbox_url() const { return node_.url("sandbox_url"); }

  /// Options that point the client at this server.
  [[nodiscard]] E2BOptions options() const {
    E2BOptions o;
    o.api_key = kTestApiKey;
    o.api_url = api_url();
    o.sandbox_url = sandbox_url();
    return o;
  }

  /// Appends fault directives (tests/servers/e2b/README.md).
  void fault(nlohmann::json directive) {
    const auto ex = control("POST", "/_control/faults", nlohmann::json{{"faults", nlohmann::json::array({directive})}});
    REQUIRE(ex.response.status == 200);
  }
  void clear_faults() { (void)control("DELETE", "/_control/faults"); }

  [[nodiscard]] std::vector<std::string> alive() {
    const auto ex = control("GET", "/_control/alive");
    return nlohmann::json::parse(ex.response.body).at("sandboxes").get<std::vector<std::string>>();
  }

  /// The requests the server saw, optionally only those with this method and path.
  [[nodiscard]] std::vector<nlohmann::json> requests(const std::string& method = {}, const std::string& path = {}) {
    const auto ex = control("GET", "/_control/requests");
    std::vector<nlohmann::json> out;
    const auto log = nlohmann::json::parse(ex.response.body);  // kept alive for the loop below
    for (const auto& r : log.at("requests")) {
      if (!method.empty() && r.at("method") != method) continue;
      if (!path.empty() && r.at("path").get<std::string>().rfind(path, 0) != 0) continue;
      out.push_back(r);
    }
    return out;
  }

  /// Every test case ends with no sandbox alive on its server: the sandboxes a test made are declared after the server,
  /// so they are destroyed first, and a destructor tears its sandbox down. `keep_alive_allowed()` opts out.
  void check_none_alive() {
    http::Request r;
    r.method = "GET";
    r.url = api_url() + "/_control/alive";
    r.timeout = std::chrono::seconds(10);
    const auto ex = http::HttpClient::shared().perform(r);
    CHECK(ex.ok());
    if (!ex.ok()) return;
    const auto body = nlohmann::json::parse(ex.response.body, nullptr, false);
    CHECK(body.is_object());
    if (!body.is_object()) return;
    INFO("sandboxes left alive: " << body.value("sandboxes", nlohmann::json::array()).dump());
    CHECK(body.value("sandboxes", nlohmann::json::array()).empty());
  }
  void keep_alive_allowed() { check_on_exit_ = false; }

 private:
  http::Exchange control(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr) {
    http::Request r;
    r.method = method;
    r.url = api_url() + path;
    if (!body.is_null()) {
      r.body = body.dump();
      r.headers = {{"Content-Type", "application/json"}};
    }
    r.timeout = std::chrono::seconds(10);
    auto ex = http::HttpClient::shared().perform(r);
    REQUIRE(ex.ok());
    return ex;
  }

  NodeServer node_;
  bool check_on_exit_ = true;
};

/// Walks an error's nested chain to its TransportError (nullptr when there is none).
inline const TransportError* nested_transport(const std::exception& e) {
  static thread_local std::optional<TransportError> found;
  found.reset();
  std::function<void(const std::exception&)> walk = [&](const std::exception& link) {
    if (const auto* t = dynamic_cast<const TransportError*>(&link)) {
      found = *t;
      return;
    }
    try {
      std::rethrow_if_nested(link);
    } catch (const std::exception& inner) {
      walk(inner);
    } catch (...) {
    }
  };
  walk(e);
  return found ? &*found : nullptr;
}

}  // namespace code_interpreter::test
