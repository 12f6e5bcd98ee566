// The local AgentCore-protocol server (tests/servers/bedrock) for one test case, with its control API: fault
// directives, the sessions alive, and the request log (which records whether every signature verified).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/bedrock_sandbox.hpp"
#include "http/http_client.hpp"
#include "node_server.hpp"

namespace code_interpreter::test {

inline const AwsCredentials kTestCredentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};

class BedrockServer {
 public:
  explicit BedrockServer(std::vector<std::string> args = {}) : node_("servers/bedrock/server.mjs", std::move(args)) {}
  ~BedrockServer() {
    if (check_on_exit_ && std::uncaught_exceptions() == 0) check_none_alive();
  }
  BedrockServer(const BedrockServer&) = delete;
  BedrockServer& operator=(const BedrockServer&) = delete;

  [[nodiscard]] std::string url() const { return node_.url("url"); }

  [[nodiscard]] BedrockOptions options(AwsCredentials credentials = kTestCredentials) const {
    BedrockOptions o;
    o.region = "us-east-1";
    o.endpoint_url = url();
    o.credentials = std::move(credentials);
    return o;
  }

  void fault(nlohmann::json directive) {
    const auto ex = control("POST", "/_control/faults", nlohmann::json{{"faults", nlohmann::json::array({directive})}});
    REQUIRE(ex.response.status == 200);
  }
  void clear_faults() { (void)control("DELETE", "/_control/faults"); }

  [[nodiscard]] std::vector<std::string> alive() {
    const auto ex = control("GET", "/_control/alive");
    return nlohmann::json::parse(ex.response.body).at("sessions").get<std::vector<std::string>>();
  }

  /// Data-plane requests, optionally only one operation (and tool).
  [[nodiscard]] std::vector<nlohmann::json> requests(const std::string& operation = {}, const std::string& tool = {}) {
    const auto ex = control("GET", "/_control/requests");
    const auto log = nlohmann::json::parse(ex.response.body);  // kept alive for the loop below
    std::vector<nlohmann::json> out;
    for (const auto& r : log.at("requests")) {
      if (!operation.empty() && r.value("operation", nlohmann::json()) != operation) continue;
      if (!tool.empty() && r.value("tool", nlohmann::json()) != tool) continue;
      out.push_back(r);
    }
    return out;
  }

  /// Every request so far carried a signature the official signer verified.
  [[nodiscard]] bool all_signatures_valid() {
    for (const auto& r : requests())
      if (r.value("signature_valid", false) != true) return false;
    return true;
  }

  /// Every test case ends with no session alive on its server: the sessions a test made are declared after the server,
  /// so they are destroyed first, and a destructor tears its session down. `keep_alive_allowed()` opts out.
  void check_none_alive() {
    http::Request r;
    r.method = "GET";
    r.url = url() + "/_control/alive";
    r.timeout = std::chrono::seconds(10);
    const auto ex = http::HttpClient::shared().perform(r);
    CHECK(ex.ok());
    if (!ex.ok()) return;
    const auto body = nlohmann::json::parse(ex.response.body, nullptr, false);
    CHECK(body.is_object());
    if (!body.is_object()) return;
    INFO("sessions left alive: " << body.value("sessions", nlohmann::json::array()).dump());
    CHECK(body.value("sessions", nlohmann::json::array()).empty());
  }
  void keep_alive_allowed() { check_on_exit_ = false; }

 private:
  http::Exchange control(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr) {
    http::Request r;
    r.method = method;
    r.url = url() + path;
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

}  // namespace code_interpreter::test
