// The local AgentCore-protocol server (tests/servers/bedrock) for one test case, with its control API: fault
// directives, the sessions alive, and the request log (which records whether every signature verified).
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/bedrock_sandbox.hpp"
#include "controlled_server.hpp"

namespace code_interpreter::test {

inline const AwsCredentials kTestCredentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};

class BedrockServer : public ControlledServer {
 public:
  explicit BedrockServer(std::vector<std::string> args = {})
      : ControlledServer("servers/bedrock/server.mjs", std::move(args), "url", "sessions") {}

  [[nodiscard]] std::string url() const { return node_.url("url"); }

  [[nodiscard]] BedrockOptions options(AwsCredentials credentials = kTestCredentials) const {
    BedrockOptions o;
    o.region = "us-east-1";
    o.endpoint_url = url();
    o.credentials = std::move(credentials);
    return o;
  }

  /// Data-plane requests, optionally only one operation (and tool).
  [[nodiscard]] std::vector<nlohmann::json> requests(const std::string& operation = {}, const std::string& tool = {}) {
    std::vector<nlohmann::json> out;
    for (const auto& r : request_log()) {
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
};

}  // namespace code_interpreter::test
