// One call of generated Python through execute_code whose answer is a JSON object: for the operations a backend
// has no protocol call for (variables everywhere; exists, get_info, copy, move on Bedrock AgentCore).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "code_interpreter/sandbox.hpp"

namespace code_interpreter::detail {

/// Runs, through sb.execute_code, a Python function whose body is `body` (lines indented by four spaces): it sees
/// `args` (this JSON, decoded from base64 text), the modules `base64`, `builtins` and `json`, and must set `text` to
/// a JSON text. That text comes back printed as base64 between two markers holding a fresh 128-bit nonce, and is
/// parsed as untrusted (parse_untrusted_json). The function is defined and deleted in the interpreter's globals, as
/// `_code_interpreter_call`.
/// @return the answer, a JSON object.
/// @throws SandboxExecutionError at `stage`: the call's kind (detail::error_kind_of, core/outcome.hpp) when the code
///         did not succeed; kInternal when no framed JSON object came back (the message names the output cap when
///         the output was cut there). Messages begin with `what`.
nlohmann::json run_python_for_json(CodeInterpreterSandbox& sb, std::string_view what, const nlohmann::json& args,
                                   std::string_view body, Stage stage);

}  // namespace code_interpreter::detail
