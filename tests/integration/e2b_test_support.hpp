// The local E2B-protocol server (tests/servers/e2b) for one test case, with its control API: fault directives,
// the sandboxes alive (none may be left when the test case ends), and the request log.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/e2b_sandbox.hpp"
#include "controlled_server.hpp"

namespace code_interpreter::test {

inline const std::string kTestApiKey = "e2b_" + std::string(40, '0');

class E2BServer : public ControlledServer {
 public:
  E2BServer() : ControlledServer("servers/e2b/server.mjs", {}, "api_url", "sandboxes") {}

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

  /// The requests the server saw, optionally only those with this method and path.
  [[nodiscard]] std::vector<nlohmann::json> requests(const std::string& method = {}, const std::string& path = {}) {
    std::vector<nlohmann::json> out;
    for (const auto& r : request_log()) {
      if (!method.empty() && r.at("method") != method) continue;
      if (!path.empty() && r.at("path").get<std::string>().rfind(path, 0) != 0) continue;
      out.push_back(r);
    }
    return out;
  }
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

/// How many POST requests `server` received on `path`.
inline std::size_t count_requests(E2BServer& server, const std::string& path) {
  return server.requests("POST", path).size();
}

}  // namespace code_interpreter::test
