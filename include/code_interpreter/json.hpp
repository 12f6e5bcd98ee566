// JSON conversion of the result model (nlohmann::json), for logs, caches and language-model tool messages.
//
// ExecutionResult's JSON object: {"status": "SUCCESS"|"ERROR"|"TIMEOUT"|"UNKNOWN", "code", "stdout", "stderr",
// "error", "exit_code", "duration_ms" (integer or null), "failure": {"exception_type", "retry_safe"} or null,
// "code_error": {"name", "value", "traceback"} or null, "results": [{"data": {mime: content}, "is_main_result"}],
// "timeout_kind": "execution"|"request"|"sandbox_lost" or null, "state_lost", "truncated"}.
//
// FileInfo's JSON object: {"name" (string), "path" (string), "is_directory" (bool), "size" (bytes, an unsigned
// integer)}, and, only when the FileInfo has them, "type" ("file"|"directory"|"symlink"|"other"), "modified_ms" (the
// modification time in milliseconds since the Unix epoch, an integer) and "permissions" (the permission bits,
// mode & 07777, as a decimal number: 420 for 0644). An absent member reads back as nullopt.
// from_json accepts exactly what to_json writes and throws nlohmann::json::exception on anything else.
#pragma once

#include <nlohmann/json.hpp>

#include "code_interpreter/execution.hpp"
#include "code_interpreter/export.hpp"

namespace code_interpreter {

CODE_INTERPRETER_EXPORT void to_json(nlohmann::json& j, const FailureDetail& value);
CODE_INTERPRETER_EXPORT void from_json(const nlohmann::json& j, FailureDetail& value);
CODE_INTERPRETER_EXPORT void to_json(nlohmann::json& j, const CodeError& value);
CODE_INTERPRETER_EXPORT void from_json(const nlohmann::json& j, CodeError& value);
CODE_INTERPRETER_EXPORT void to_json(nlohmann::json& j, const RichResult& value);
CODE_INTERPRETER_EXPORT void from_json(const nlohmann::json& j, RichResult& value);
CODE_INTERPRETER_EXPORT void to_json(nlohmann::json& j, const FileInfo& value);
CODE_INTERPRETER_EXPORT void from_json(const nlohmann::json& j, FileInfo& value);
CODE_INTERPRETER_EXPORT void to_json(nlohmann::json& j, const ExecutionResult& value);
CODE_INTERPRETER_EXPORT void from_json(const nlohmann::json& j, ExecutionResult& value);

}  // namespace code_interpreter
