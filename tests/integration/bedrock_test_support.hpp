// The local AgentCore-protocol server (tests/servers/bedrock) for one test case, with its control API: fault
// directives, the sessions alive, and the request log (which records whether every signature verified).
#pragma once

#include <catch2/catch.hpp>

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
};

}  // namespace code_interpreter::test
