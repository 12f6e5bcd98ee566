#include "interpreter/prompt.hpp"

#include <fmt/format.h>

namespace code_interpreter::interpreter {
std::string upload_directory(const Capabilities& capabilities) {
  std::string dir = capabilities.upload_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string language_name(Language language) {
  switch (language) {
    case Language::kPython: return "Python";
    case Language::kJavaScript: return "JavaScript";
    case Language::kTypeScript: return "TypeScript";
    case Language::kBash: return "Bash";
    case Language::kR: return "R";
    case Language::kJava: return "Java";
  }
  return "Python";
}

std::string system_prompt(const SandboxFacts& facts, const std::string& instructions) {
  const auto& caps = facts.capabilities;
  std::string out = fmt::format(
      "You answer the user's request. You can run {} code with the execute_code tool: use it for any computation "
      "and to read or write files rather than guessing. When you are done, answer in plain text without calling a "
      "tool.",
      language_name(facts.language));
  if (!facts.file_names.empty()) {
    out += fmt::format(" The user's files are in {}/.", upload_directory(caps));
  }
  if (caps.file_download) {
    out += fmt::format(
        " To hand over a file, write it under {0}/ and link it in your final answer as [name](sandbox:{0}/name); only "
        "files linked that way reach the user.",
        upload_directory(caps));
  }
  if (!instructions.empty()) out += "\n\n" + instructions;
  return out;
}

}  // namespace code_interpreter::interpreter
