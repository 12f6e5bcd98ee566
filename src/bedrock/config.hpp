// Where a Bedrock sandbox gets its region, endpoint and credentials: options first, then the environment, then
// the AWS shared config and credentials files for the profile (the AWS CLI / SDK conventions).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "code_interpreter/bedrock_sandbox.hpp"

namespace code_interpreter::bedrock {

/// Sections of an AWS INI file: "[default]", "[profile x]" (config) or "[x]" (credentials) → key → value.
/// Keys are lower-cased; '#' and ';' start comments; values are trimmed. Section names are kept as written.
using IniFile = std::map<std::string, std::map<std::string, std::string>>;
IniFile parse_ini(std::string_view text);

struct ResolvedConfig {
  std::string region;
  std::string endpoint;  ///< scheme://host[:port], no trailing slash
  AwsCredentials credentials;
  std::string credentials_source;  ///< "options", "environment", "credentials file", "config file"
};

/// Resolves everything a session needs before any request.
/// @throws SandboxStartError (stage configure): no credentials (kUnauthenticated), no or a malformed region,
///         a malformed endpoint or access key id (kInvalidArgument). Messages never contain a secret.
ResolvedConfig resolve_config(const BedrockOptions& options);

}  // namespace code_interpreter::bedrock
