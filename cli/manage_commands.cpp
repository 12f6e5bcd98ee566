// code-interpreter list, kill and sweep: SandboxManager (include/code_interpreter/management.hpp) from the command
// line. What a service returns is untrusted text the library has checked; it is printed as such.
#include <algorithm>
#include <ctime>
#include <iostream>

#include "cli.hpp"
#include "code_interpreter/management.hpp"

namespace cli {
namespace {

struct ManageArgs {
  SandboxFlags flags;
  std::optional<std::string> tag;
  std::vector<std::string> operands;
};

ManageArgs parse(std::string_view name, std::span<const std::string> args, bool takes_tag_flag) {
  ManageArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--config" || arg == "--backend") {
      parse_sandbox_flag(name, args, i, parsed.flags);
    } else if (takes_tag_flag && arg == "--tag") {
      if (i + 1 >= args.size()) throw UsageError(name, "--tag needs a value");
      parsed.tag = args[++i];
    } else if (arg == "--") {
      parsed.operands.insert(parsed.operands.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError(name, "unknown option " + shown(arg));
    } else {
      parsed.operands.emplace_back(arg);
    }
  }
  return parsed;
}

// The manager, or nullptr after saying why not (exit 4). A refused configuration or backend name is bad usage.
std::unique_ptr<ci::SandboxManager> manager_for(std::string_view name, const SandboxFlags& flags) {
  const ci::SandboxConfig config = build_config(name, flags);
  try {
    return ci::create_manager(config);
  } catch (const ci::CodeInterpreterError& e) {
    if (e.stage() == ci::Stage::kConfigure && std::string_view(e.what()).rfind("configuration: ", 0) == 0)
      throw UsageError(name, e.what());
    std::cerr << "code-interpreter: no manager for the backend " << config.backend << " ("
              << ci::to_string(e.stage()) << "): " << e.what() << "\n";
    return nullptr;
  }
}

std::string utc(const std::optional<std::chrono::system_clock::time_point>& when) {
  if (!when) return "-";
  const std::time_t t = std::chrono::system_clock::to_time_t(*when);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

int management_failed(const ci::CodeInterpreterError& e) {
  std::cerr << "code-interpreter: " << e.what() << " (" << ci::to_string(e.kind()) << ")\n";
  return kExitManageFailed;
}

int help_or_none(std::string_view name, std::span<const std::string> args) {
  for (const auto& arg : args) {
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help") {
      std::cout << *help_text(name);
      return kExitOk;
    }
  }
  return -1;
}

}  // namespace

int list_command(std::span<const std::string> args) {
  constexpr std::string_view kName = "list";
  if (const int rc = help_or_none(kName, args); rc >= 0) return rc;
  const auto parsed = parse(kName, args, /*takes_tag_flag=*/true);
  if (!parsed.operands.empty()) throw UsageError(kName, "list takes no operand");
  if (parsed.tag && !ci::is_valid_sandbox_tag(*parsed.tag))
    throw UsageError(kName, "a tag is 1 to 32 of A-Z a-z 0-9 _");
  const auto manager = manager_for(kName, parsed.flags);
  if (!manager) return kExitCannotStart;
  ci::SandboxFilter filter;
  filter.tag = parsed.tag;
  try {
    for (const auto& info : manager->list(filter))
      std::cout << info.sandbox_id << "\t" << ci::to_string(info.state) << "\t" << info.tag.value_or("-") << "\t"
                << utc(info.created_at) << "\n";
  } catch (const ci::CodeInterpreterError& e) {
    return management_failed(e);
  }
  return kExitOk;
}

int kill_command(std::span<const std::string> args) {
  constexpr std::string_view kName = "kill";
  if (const int rc = help_or_none(kName, args); rc >= 0) return rc;
  const auto parsed = parse(kName, args, /*takes_tag_flag=*/false);
  if (parsed.operands.empty()) throw UsageError(kName, "kill needs one or more sandbox ids");
  const auto manager = manager_for(kName, parsed.flags);
  if (!manager) return kExitCannotStart;
  int status = kExitOk;
  for (const auto& id : parsed.operands) {
    try {
      if (manager->kill(id)) {
        std::cout << "killed " << id << "\n";
      } else {
        std::cout << "not found " << id << "\n";
        status = std::max(status, static_cast<int>(kExitError));
      }
    } catch (const ci::CodeInterpreterError& e) {
      // An id that is no id at all is the caller's mistake, not the service's (docs/cli.md: 64).
      if (e.kind() == ci::ErrorKind::kInvalidArgument) throw UsageError(kName, std::string(e.what()) + ": " + shown(id));
      status = management_failed(e);  // and go on with the other ids
    }
  }
  return status;
}

int sweep_command(std::span<const std::string> args) {
  constexpr std::string_view kName = "sweep";
  if (const int rc = help_or_none(kName, args); rc >= 0) return rc;
  const auto parsed = parse(kName, args, /*takes_tag_flag=*/false);
  if (parsed.operands.size() != 1) throw UsageError(kName, "sweep needs exactly one tag");
  const std::string& tag = parsed.operands[0];
  if (!ci::is_valid_sandbox_tag(tag)) throw UsageError(kName, "a tag is 1 to 32 of A-Z a-z 0-9 _");
  const auto manager = manager_for(kName, parsed.flags);
  if (!manager) return kExitCannotStart;
  try {
    const auto report = manager->sweep(tag);
    for (const auto& id : report.killed) std::cout << "killed " << id << "\n";
    for (const auto& id : report.failed) std::cout << "failed " << id << "\n";
    return report.failed.empty() ? kExitOk : kExitError;
  } catch (const ci::CodeInterpreterError& e) {
    return management_failed(e);
  }
}

}  // namespace cli
