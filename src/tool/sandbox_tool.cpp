// SandboxTool: the one place where the model's words about a sandbox (description, schema) are written and its
// arguments are read and its results rendered; the loop and the MCP server both go through it.
#include "code_interpreter/tool.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/defaults.hpp"
#include "core/untrusted.hpp"
#include "interpreter/prompt.hpp"
#include "interpreter/tool_result.hpp"

namespace code_interpreter {
namespace {

// Every backend's execute_code default (docs/errors.md "Timeouts", core/defaults.hpp); what the model is told when no
// budget is set.
constexpr auto kDefaultExecutionLimit = std::chrono::duration_cast<std::chrono::seconds>(detail::kDefaultExecuteTimeout);

// Arguments nest no deeper than an array in an object; a deeper document is refused before its DOM is built.
constexpr int kMaxArgumentNesting = 8;
constexpr std::size_t kMaxArgumentValues = 4096;

constexpr std::string_view kNothingRun = " Nothing was run.]";
constexpr std::string_view kBadShape = "[error: the arguments must be a JSON object with a string \"code\". Nothing was run.]";

std::string join(const std::vector<std::string>& items, const std::string& prefix) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += prefix + item;
  }
  return out;
}

void check_options(const SandboxToolOptions& options) {
  const auto& name = options.name;
  if (name.empty() || name.size() > 64 ||
      !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-'; })) {
    throw std::invalid_argument("SandboxToolOptions::name must match [a-zA-Z0-9_-]{1,64}");
  }
  if (options.max_result_bytes < 1024) throw std::invalid_argument("SandboxToolOptions::max_result_bytes must be at least 1024");
  if (options.max_timeout && options.max_timeout->count() <= 0) {
    throw std::invalid_argument("SandboxToolOptions::max_timeout must be positive");
  }
  if (options.max_timeout && options.execution_timeout && *options.execution_timeout > *options.max_timeout) {
    throw std::invalid_argument("SandboxToolOptions::execution_timeout must not exceed max_timeout");
  }
}

// A duration as the model reads it: "1 second", "30 seconds", "0.001 seconds", "1.5 seconds".
std::string seconds_text(std::chrono::milliseconds limit) {
  const auto ms = limit.count();
  if (ms % 1000 == 0) return fmt::format("{} second{}", ms / 1000, ms == 1000 ? "" : "s");
  std::string fraction = fmt::format("{:03}", ms % 1000);
  while (fraction.back() == '0') fraction.pop_back();
  return fmt::format("{}.{} seconds", ms / 1000, fraction);
}

// What the model is told of a call's time limit: the options' budget (nullopt: the backend's default; <= 0: none)
// and, when offered, the most `timeout` may ask for.
std::string limit_text(const SandboxToolOptions& options) {
  const bool unbounded = options.execution_timeout && options.execution_timeout->count() <= 0;
  const std::string upto =
      options.max_timeout ? seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(*options.max_timeout)) : "";
  if (unbounded) {
    return options.max_timeout ? fmt::format(" Calls have no time limit unless `timeout` sets one, up to {}.", upto)
                               : std::string(" Calls have no time limit.");
  }
  const std::string limit =
      seconds_text(options.execution_timeout ? *options.execution_timeout
                                             : std::chrono::milliseconds(kDefaultExecutionLimit));
  return options.max_timeout
             ? fmt::format(" Each call may run for at most {} unless `timeout` sets another limit, up to {}.", limit, upto)
             : fmt::format(" Each call may run for at most {}.", limit);
}

std::string description_of(const SandboxProfile& profile, const SandboxToolOptions& options) {
  const auto& caps = profile.capabilities;
  const std::string dir = interpreter::upload_directory(caps);
  const std::string language = interpreter::language_name(profile.language);
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
  if (!options.input_files.empty()) {
    out += fmt::format(" The user's files are in {}/: {}.", dir, join(options.input_files, dir + "/"));
  }
  if (options.file_arguments) {
    out += fmt::format(
        " Name files the code needs from {0}/ in `files` (plain names, no paths) to have them checked before it runs; "
        "the code reads them as {0}/name.",
        dir);
  }
  if (!options.returns_linked_files) {
    out += " Files written in the sandbox stay there: put the results in the answer text.";
  } else if (caps.file_download) {
    out += fmt::format(
        " To return a file to the user, write it under {0}/ and link it in the final answer as "
        "[name](sandbox:{0}/name).",
        dir);
  } else {
    out += " Files cannot be returned from this sandbox: put the results in the answer text.";
  }
  out += caps.network ? " The code can reach the network."
                      : " The code cannot reach the network, so nothing can be downloaded or installed.";
  if (!profile.packages.empty()) out += " Installed packages besides the standard library: " + join(profile.packages, "") + ".";
  out += limit_text(options);
  if (!options.description_note.empty()) out += " " + options.description_note;
  return out;
}

std::string parameters_of(const SandboxProfile& profile, const SandboxToolOptions& options) {
  nlohmann::json properties = {
      {"code", {{"type", "string"}, {"description", "The " + interpreter::language_name(profile.language) + " code to run."}}}};
  if (options.max_timeout) {
    properties["timeout"] = {{"type", "number"},
                             {"exclusiveMinimum", 0},
                             {"maximum", options.max_timeout->count()},
                             {"description", "The most this call may run, in seconds."}};
  }
  if (options.file_arguments) {
    properties["files"] = {{"type", "array"},
                           {"maxItems", options.max_files},
                           {"items", {{"type", "string"}}},
                           {"description", "Names of files already in " + interpreter::upload_directory(profile.capabilities) +
                                               "/ that the code uses."}};
  }
  nlohmann::json schema = {{"type", "object"}, {"properties", properties}, {"required", {"code"}}};
  // The loop's schema predates the optional arguments and is kept as it was; with them, unknown ones are refused.
  if (options.max_timeout || options.file_arguments) schema["additionalProperties"] = false;
  return schema.dump();
}

ToolResult refused(std::string text) {
  ToolResult r;
  r.text = std::move(text);
  r.is_error = true;
  return r;
}

}  // namespace

SandboxProfile profile_of(const CodeInterpreterSandbox& sandbox) {
  return {sandbox.capabilities(), sandbox.language(), sandbox.additional_packages()};
}

SandboxTool::SandboxTool(CodeInterpreterSandbox& sandbox, SandboxToolOptions options)
    : sandbox_(sandbox), options_(std::move(options)) {
  check_options(options_);
}

ToolDefinition SandboxTool::describe(const SandboxProfile& profile, const SandboxToolOptions& options) {
  check_options(options);
  return {options.name, description_of(profile, options), parameters_of(profile, options)};
}

std::string SandboxTool::description() const { return description_of(profile_of(sandbox_), options_); }
std::string SandboxTool::parameters() const { return parameters_of(profile_of(sandbox_), options_); }
ToolDefinition SandboxTool::definition() const { return describe(profile_of(sandbox_), options_); }

namespace {

// The model's arguments as far as they can be checked without the sandbox: the refusal, or what the call runs.
struct CheckedArguments {
  std::optional<ToolResult> refusal;
  nlohmann::json parsed;
  Timeout timeout;  // the `timeout` argument, else options.execution_timeout
  std::vector<std::string> names;  // `files`
};

CheckedArguments check(std::string_view arguments, const SandboxToolOptions& options) {
  CheckedArguments out;
  const auto refused = [&](std::string text) {
    out.refusal = code_interpreter::refused(std::move(text));
    return out;
  };
  if (arguments.size() > options.max_arguments_bytes) {
    return refused(fmt::format("[error: the arguments are {} bytes, more than the {} this tool takes.{}",
                               arguments.size(), options.max_arguments_bytes, kNothingRun));
  }
  out.parsed = detail::parse_untrusted_json(arguments, kMaxArgumentNesting, kMaxArgumentValues);
  const auto& parsed = out.parsed;
  if (!parsed.is_object() || !parsed.contains("code") || !parsed["code"].is_string()) {
    return refused(std::string(kBadShape));
  }
  std::vector<std::string> known = {"code"};
  if (options.max_timeout) known.push_back("timeout");
  if (options.file_arguments) known.push_back("files");
  for (const auto& [key, value] : parsed.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return refused(fmt::format("[error: unknown argument '{}'; the arguments are {}.{}", interpreter::quoted_name(key),
                                 join(known, ""), kNothingRun));
    }
  }
  const auto& code = parsed["code"].get_ref<const std::string&>();
  if (code.size() > options.max_code_bytes) {
    return refused(fmt::format("[error: the code is {} bytes, more than the {} this tool takes.{}", code.size(),
                               options.max_code_bytes, kNothingRun));
  }

  out.timeout = options.execution_timeout;
  if (parsed.contains("timeout")) {
    const auto& t = parsed["timeout"];
    const double max = static_cast<double>(options.max_timeout->count());
    const double seconds = t.is_number() ? t.get<double>() : std::nan("");
    if (!(seconds > 0 && seconds <= max)) {
      return refused(fmt::format("[error: timeout must be a number of seconds greater than 0 and at most {}.{}",
                                 options.max_timeout->count(), kNothingRun));
    }
    out.timeout = std::max(std::chrono::milliseconds(1),
                           std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000))));
  }
  if (parsed.contains("files")) {
    const auto& files = parsed["files"];
    if (!files.is_array() || !std::all_of(files.begin(), files.end(), [](const auto& f) { return f.is_string(); })) {
      return refused(fmt::format("[error: files must be an array of file names.{}", kNothingRun));
    }
    if (files.size() > options.max_files) {
      return refused(fmt::format("[error: files names {} files, more than the {} this tool takes.{}", files.size(),
                                 options.max_files, kNothingRun));
    }
    std::set<std::string> seen;
    for (const auto& f : files) {
      const auto& name = f.get_ref<const std::string&>();
      try {
        validate_attachment_name(name);
      } catch (const std::invalid_argument&) {
        return refused(fmt::format("[error: '{}' in files is not a plain file name in the upload directory.{}",
                                   interpreter::quoted_name(name), kNothingRun));
      }
      if (!seen.insert(name).second) {
        return refused(fmt::format("[error: '{}' is named twice in files.{}", interpreter::quoted_name(name), kNothingRun));
      }
      out.names.push_back(name);
    }
  }

  return out;
}

}  // namespace

std::optional<ToolResult> SandboxTool::check_arguments(std::string_view arguments, const SandboxToolOptions& options) {
  return check(arguments, options).refusal;
}

ToolResult SandboxTool::call(std::string_view arguments, const ToolCallOptions& call_options) const {
  auto checked = check(arguments, options_);
  if (checked.refusal) return std::move(*checked.refusal);
  const auto& code = checked.parsed["code"].get_ref<const std::string&>();
  const auto& names = checked.names;
  ExecuteOptions execute;
  execute.cancel = call_options.cancel;
  execute.timeout = checked.timeout;
  if (call_options.max_budget) {
    const auto left = std::max(*call_options.max_budget, std::chrono::milliseconds(1));
    const bool unbounded = execute.timeout && execute.timeout->count() <= 0;
    const auto budget = execute.timeout && !unbounded ? *execute.timeout
                        : unbounded                   ? left
                                                      : std::chrono::milliseconds(kDefaultExecutionLimit);
    execute.timeout = std::min(budget, left);
  }

  ToolResult result;
  result.code = code;
  try {
    if (!names.empty()) {
      const auto caps = sandbox_.capabilities();
      const std::string dir = interpreter::upload_directory(caps);
      std::set<std::string> present;
      if (caps.filesystem) {
        for (const auto& entry : sandbox_.list_files(dir)) {
          if (!entry.is_directory) present.insert(entry.name);
        }
      }
      for (const auto& attachment : call_options.files) present.insert(attachment.filename);
      for (const auto& name : names) {
        if (!present.contains(name)) {
          return refused(fmt::format("[error: there is no file '{}' in {}/.{}", interpreter::quoted_name(name), dir, kNothingRun));
        }
      }
    }
    execute.files = call_options.files;
    result.execution = sandbox_.execute_code(code, execute);
  } catch (const std::exception& e) {
    result.error = std::current_exception();
    result.text = std::string("[error: the sandbox failed: ") + e.what() + "]";
    result.is_error = true;
    return result;
  }

  const auto& executed = *result.execution;
  const auto text = interpreter::format_tool_result(executed, options_.max_result_bytes);
  result.text = text.content;
  result.is_error = text.is_error;
  std::size_t dropped = 0;
  result.images = interpreter::tool_result_images(executed, options_.max_images, options_.max_image_bytes, dropped);
  if (dropped > 0) {
    result.text += fmt::format("\n[{} image{} not sent: at most {} per result, each at most {} bytes]", dropped,
                               dropped == 1 ? "" : "s", options_.max_images, options_.max_image_bytes);
  }
  return result;
}

}  // namespace code_interpreter
