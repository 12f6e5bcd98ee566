#include "interpreter/prompt.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace code_interpreter::interpreter {
namespace {

std::string directory(const Capabilities& capabilities) {
  std::string dir = capabilities.upload_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string join(const std::vector<std::string>& items, const std::string& prefix) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += prefix + item;
  }
  return out;
}

}  // namespace

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

std::string tool_description(const SandboxFacts& facts) {
  const auto& caps = facts.capabilities;
  const std::string dir = directory(caps);
  const std::string language = language_name(facts.language);
  std::string out = fmt::format(
      "Runs {} code in a sandbox and returns what it printed (stdout, then stderr), the error with its traceback if "
      "it failed{}",
      language,
      caps.expression_results ? ", and the value of the last expression."
                              : ". The value of the last expression is not returned: print what you need.");
  out += caps.stateful
             ? " The sandbox keeps its state between calls: variables, imports and files persist from one call to the "
               "next."
             : " Each call starts from a fresh interpreter: nothing persists between calls, so every call must be "
               "complete on its own.";
  if (!facts.file_names.empty()) {
    out += fmt::format(" The user's files are in {}/: {}.", dir, join(facts.file_names, dir + "/"));
  }
  if (caps.file_download) {
    out += fmt::format(
        " To return a file to the user, write it under {0}/ and link it in the final answer as "
        "[name](sandbox:{0}/name).",
        dir);
  } else {
    out += " Files cannot be returned from this sandbox: put the results in the answer text.";
  }
  out += caps.network ? " The code can reach the network."
                      : " The code cannot reach the network, so nothing can be downloaded or installed.";
  if (!facts.packages.empty()) out += " Installed packages besides the standard library: " + join(facts.packages, "") + ".";
  out += fmt::format(" Each call may run for at most {} seconds.", facts.execution_limit.count());
  return out;
}

std::string tool_parameters(Language language) {
  const nlohmann::json schema = {
      {"type", "object"},
      {"properties",
       {{"code", {{"type", "string"}, {"description", "The " + language_name(language) + " code to run."}}}}},
      {"required", {"code"}}};
  return schema.dump();
}

std::string system_prompt(const SandboxFacts& facts, const std::string& instructions) {
  const auto& caps = facts.capabilities;
  std::string out = fmt::format(
      "You answer the user's request. You can run {} code with the execute_code tool: use it for any computation "
      "and to read or write files rather than guessing. When you are done, answer in plain text without calling a "
      "tool.",
      language_name(facts.language));
  if (!facts.file_names.empty()) {
    out += fmt::format(" The user's files are in {}/.", directory(caps));
  }
  if (caps.file_download) {
    out += fmt::format(
        " To hand over a file, write it under {0}/ and link it in your final answer as [name](sandbox:{0}/name); only "
        "files linked that way reach the user.",
        directory(caps));
  }
  if (!instructions.empty()) out += "\n\n" + instructions;
  return out;
}

}  // namespace code_interpreter::interpreter
