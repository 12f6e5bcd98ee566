// What the managers of every backend share (include/code_interpreter/management.hpp): the errors they throw and the
// checks of what the services answer. The non-virtual SandboxManager functions (core/manager.cpp) check arguments
// once and filter every listing again on the client side; the backends' managers (src/<backend>/manager.cpp) only
// speak their protocols.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "code_interpreter/management.hpp"

namespace code_interpreter::detail {

/// The longest text a SandboxInfo keeps of a field the service chose (a state word, a template id, a name, a
/// metadata key or value); a longer one makes the entry malformed.
constexpr std::size_t kMaxInfoText = 1024;
/// The most metadata pairs a listed sandbox may carry.
constexpr std::size_t kMaxInfoMetadata = 64;

/// The most bytes of a listing's answer (a page of 100 sandboxes of 40 KiB each: far beyond real ones).
constexpr std::size_t kMaxListingBody = std::size_t{4} << 20;

/// The string member `key` of a listed sandbox's object when it is acceptable_text; nullopt when it is missing, not a
/// string or not acceptable.
[[nodiscard]] std::optional<std::string> info_text(const nlohmann::json& object, const char* key);

/// SandboxManagementError, stage manage.
[[noreturn]] void management_error(ErrorKind kind, const std::string& message);

/// Whether `text` may stand in a SandboxInfo: valid UTF-8, no control character, at most kMaxInfoText bytes.
[[nodiscard]] bool acceptable_text(std::string_view text) noexcept;

/// An RFC 3339 date-time ("2026-01-02T03:04:05.678Z", "...+02:00"), as E2B and AgentCore send them; nullopt for
/// anything else.
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

}  // namespace code_interpreter::detail
