// The system prompt the loop gives the model, written from Capabilities so that nothing is promised that the backend
// cannot do (the tool's own description is SandboxTool's, code_interpreter/tool.hpp).
#pragma once

#include <string>
#include <vector>

#include "code_interpreter/execution.hpp"

namespace code_interpreter::interpreter {

struct SandboxFacts {
  Capabilities capabilities;
  Language language = Language::kPython;
  std::vector<std::string> file_names;  ///< the input files, uploaded to capabilities.upload_dir
};

/// "Python", "JavaScript", "TypeScript", "Bash", "R" or "Java".
std::string language_name(Language language);

/// capabilities.upload_dir without trailing slashes ("/files", "files"), as the model is told it.
std::string upload_directory(const Capabilities& capabilities);

/// The built-in system prompt, with `instructions` appended when not empty.
std::string system_prompt(const SandboxFacts& facts, const std::string& instructions);

}  // namespace code_interpreter::interpreter
