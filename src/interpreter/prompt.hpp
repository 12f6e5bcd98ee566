// The words the model reads about its sandbox: the execute_code tool's description and the system prompt, both
// written from Capabilities so that nothing is promised that the backend cannot do.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "code_interpreter/execution.hpp"

namespace code_interpreter::interpreter {

struct SandboxFacts {
  Capabilities capabilities;
  Language language = Language::kPython;
  std::vector<std::string> packages;    ///< additional_packages installed at creation
  std::vector<std::string> file_names;  ///< the input files, uploaded to capabilities.upload_dir
  std::chrono::seconds execution_limit{300};
};

/// "Python", "JavaScript", "TypeScript", "Bash", "R" or "Java".
std::string language_name(Language language);

/// The description of execute_code.
std::string tool_description(const SandboxFacts& facts);

/// The JSON Schema of execute_code's arguments: {"code": string}, required.
std::string tool_parameters(Language language);

/// The built-in system prompt, with `instructions` appended when not empty.
std::string system_prompt(const SandboxFacts& facts, const std::string& instructions);

}  // namespace code_interpreter::interpreter
