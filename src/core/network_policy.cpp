#include "core/network_policy.hpp"

#include <algorithm>
#include <string>

#include "code_interpreter/errors.hpp"

namespace code_interpreter::detail {

bool valid_allowed_host(std::string_view host) noexcept {
  if (host.empty() || host.size() > 253) return false;
  std::string_view rest = host;
  if (rest.rfind("*.", 0) == 0) rest.remove_prefix(2);
  if (rest.empty()) return false;
  return std::all_of(rest.begin(), rest.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == ':' || c == '/';
  });
}

void check_network_policy(const std::optional<NetworkPolicy>& policy) {
  if (!policy) return;
  const auto refuse = [](const std::string& why) {
    throw SandboxStartError("network_policy: " + why, Stage::kConfigure, ErrorKind::kInvalidArgument);
  };
  const auto& hosts = policy->allowed_hosts;
  if (policy->access != NetworkAccess::kAllowlist) {
    if (!hosts.empty())
      refuse("allowed_hosts must be empty unless access is allowlist (it is " +
             std::string(to_string(policy->access)) + ")");
    return;
  }
  if (hosts.empty() || hosts.size() > 100) refuse("an allowlist needs 1..100 hosts (it has " + std::to_string(hosts.size()) + ")");
  for (std::size_t i = 0; i < hosts.size(); ++i)
    if (!valid_allowed_host(hosts[i]))
      refuse("allowed_hosts[" + std::to_string(i) + "] is not a host name, an IPv4 address or a CIDR range");
}

void refuse_network_policy(std::string_view backend, NetworkAccess access, std::string_view why) {
  throw SandboxStartError(std::string(backend) + " cannot honour network policy '" + std::string(to_string(access)) +
                              "': " + std::string(why),
                          Stage::kConfigure, ErrorKind::kUnsupported);
}

}  // namespace code_interpreter::detail
