// A local protocol server (tests/servers/<name>/server.mjs) for one test case, with the control API the E2B and
// Bedrock servers share (POST/DELETE /_control/faults, GET /_control/alive, GET /_control/requests). Every test case
// ends by asking it what is still alive, and fails if anything is: the sandboxes or sessions a test made are
// declared after the server, so they are destroyed first, and a destructor tears its sandbox down.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/http_client.hpp"
#include "node_server.hpp"

namespace code_interpreter::test {

class ControlledServer {
 public:
  ControlledServer(const ControlledServer&) = delete;
  ControlledServer& operator=(const ControlledServer&) = delete;

  /// Appends a fault directive (the server's README lists them).
  void fault(nlohmann::json directive) {
    const auto ex = control("POST", "/_control/faults", nlohmann::json{{"faults", nlohmann::json::array({directive})}});
    REQUIRE(ex.response.status == 200);
  }
  void clear_faults() { (void)control("DELETE", "/_control/faults"); }

  /// The ids of the sandboxes (E2B) or sessions (Bedrock) alive now.
  [[nodiscard]] std::vector<std::string> alive() {
    const auto ex = control("GET", "/_control/alive");
    return nlohmann::json::parse(ex.response.body).at(alive_key_).get<std::vector<std::string>>();
  }

  /// Fails the test case if anything is alive; the destructor calls it unless `keep_alive_allowed()` was.
  void check_none_alive() {
    http::Request r;
    r.method = "GET";
    r.url = control_url_ + "/_control/alive";
    r.timeout = std::chrono::seconds(10);
    const auto ex = http::HttpClient::shared().perform(r);  // no REQUIRE: this runs in a destructor
    CHECK(ex.ok());
    if (!ex.ok()) return;
    const auto body = nlohmann::json::parse(ex.response.body, nullptr, false);
    CHECK(body.is_object());
    if (!body.is_object()) return;
    const auto left = body.value(alive_key_, nlohmann::json::array());
    INFO(alive_key_ << " left alive: " << left.dump());
    CHECK(left.empty());
  }
  void keep_alive_allowed() { check_on_exit_ = false; }

 protected:
  /// `control_key`: the field of the server's address line whose URL serves /_control; `alive_key`: the field of
  /// GET /_control/alive that lists what is alive.
  ControlledServer(const std::string& script, std::vector<std::string> args, const char* control_key,
                   std::string alive_key)
      : node_(script, std::move(args)), control_url_(node_.url(control_key)), alive_key_(std::move(alive_key)) {}
  ~ControlledServer() {
    if (check_on_exit_ && std::uncaught_exceptions() == 0) check_none_alive();
  }

  /// Every request the server logged, oldest first.
  [[nodiscard]] nlohmann::json request_log() {
    return nlohmann::json::parse(control("GET", "/_control/requests").response.body).at("requests");
  }

  http::Exchange control(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr) {
    http::Request r;
    r.method = method;
    r.url = control_url_ + path;
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

 private:
  std::string control_url_;
  std::string alive_key_;
  bool check_on_exit_ = true;
};

}  // namespace code_interpreter::test
