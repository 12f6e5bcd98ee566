// The library's tag on the sandboxes it creates (include/code_interpreter/management.hpp): which one a create uses,
// checked once for every backend.
#pragma once

#include <optional>
#include <string>

namespace code_interpreter::detail {

/// `tag`, or process_sandbox_tag() when it is nullopt (logged at info the first time).
/// @throws SandboxStartError (stage configure, kInvalidArgument) for a tag that is not is_valid_sandbox_tag.
[[nodiscard]] std::string tag_for_create(const std::optional<std::string>& tag);

}  // namespace code_interpreter::detail
