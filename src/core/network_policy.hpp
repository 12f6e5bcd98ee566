// Checking a NetworkPolicy before a create sends anything (include/code_interpreter/execution.hpp states the rules;
// docs/backends.md "Network policy"). One checker, used by every backend's configure step and by the JSON reader.
#pragma once

#include <optional>
#include <string_view>

#include "code_interpreter/execution.hpp"

namespace code_interpreter::detail {

/// Whether `host` is an allowlist entry: 1..253 bytes of letters, digits, '.', '-', ':', '/' and '*', a '*' only
/// as a leading "*." wildcard.
[[nodiscard]] bool valid_allowed_host(std::string_view host) noexcept;

/// @throws SandboxStartError (stage configure, kInvalidArgument) for an allowlist of 0 or more than 100 hosts, a
///         host that is not valid_allowed_host (named by its index, never quoted: it may be anything), or hosts given
///         with another access. Nothing for nullopt.
void check_network_policy(const std::optional<NetworkPolicy>& policy);

/// SandboxStartError (stage configure, kUnsupported) for a policy `backend` cannot honour, "<backend> cannot honour
/// network policy '<access>': <why>".
[[noreturn]] void refuse_network_policy(std::string_view backend, NetworkAccess access, std::string_view why);

}  // namespace code_interpreter::detail
