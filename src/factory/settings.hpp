// Which common settings of a SandboxConfig each backend honours (docs/backends.md "The factory"): one table, read by
// create_sandbox and by sandbox_config_from_json, so a setting is refused by the same rule however it was given.
#pragma once

#include <string_view>

#include "code_interpreter/factory.hpp"

namespace code_interpreter::detail {

/// @throws SandboxStartError (stage kConfigure, kInvalidArgument) for an unknown backend name, (kUnsupported) for
///         a common setting that `config.backend` cannot honour. A setting is named by its field, or by its JSON key
///         when `json_keys` (the error then reads as the configuration document's words). Values are never named.
void check_settings(const SandboxConfig& config, bool json_keys);

/// The SandboxStartError of a configuration: stage kConfigure, the given kind, "configuration: " + `message`.
[[noreturn]] void configuration_error(ErrorKind kind, const std::string& message);

}  // namespace code_interpreter::detail
