// The Bedrock AgentCore backend's SandboxManager (include/code_interpreter/management.hpp; docs/backends/bedrock.md
// "Managing sessions"): list, get and stop the sessions of one code interpreter.
#pragma once

#include <memory>

#include "code_interpreter/bedrock_sandbox.hpp"
#include "code_interpreter/management.hpp"

namespace code_interpreter::bedrock {

/// @throws SandboxStartError (stage configure) as BedrockAgentCoreSandbox::create does for missing credentials or
///         region.
std::unique_ptr<SandboxManager> make_manager(BedrockOptions options);

}  // namespace code_interpreter::bedrock
