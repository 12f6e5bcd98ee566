// code-interpreter packages: the Pyodide sandbox's packages on the host (include/code_interpreter/pyodide_packages.hpp):
// which of the runtime's pyodide-lock.json packages are in the package directory, and fetching them, every file
// checked against the lock's SHA-256. The fetch runs in this process; the sandbox never reaches a network.
#include <unistd.h>

#include <iostream>

#include "cli.hpp"
#include "code_interpreter/pyodide_packages.hpp"

namespace cli {
namespace {

struct PackagesArgs {
  ci::PackageFetchOptions options;
  std::vector<std::string> names;
};

PackagesArgs parse(std::span<const std::string> args, bool fetch) {
  PackagesArgs parsed;
  auto value = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw UsageError("packages", std::string(args[i]) + " needs a value");
    return args[++i];
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--dir") {
      parsed.options.package_dir = value(i);
    } else if (arg == "--lock") {
      parsed.options.package_lock = value(i);
    } else if (arg == "--runtime") {
      parsed.options.runtime_dir = value(i);
    } else if (fetch && arg == "--base-url") {
      parsed.options.base_url = value(i);
    } else if (arg == "--") {
      parsed.names.insert(parsed.names.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("packages", "unknown option " + shown(arg));
    } else {
      parsed.names.emplace_back(arg);
    }
  }
  return parsed;
}

std::string_view state_name(ci::PackageStatus::State state) {
  switch (state) {
    case ci::PackageStatus::State::kPresent: return "present";
    case ci::PackageStatus::State::kMissing: return "missing";
    case ci::PackageStatus::State::kMismatch: return "mismatch";
  }
  return "missing";
}

int list(std::span<const std::string> args) {
  const auto parsed = parse(args, false);
  std::vector<ci::PackageStatus> statuses;
  try {
    statuses = ci::list_pyodide_packages(parsed.names, parsed.options);
  } catch (const std::invalid_argument& e) {
    throw UsageError("packages", e.what());
  } catch (const std::runtime_error& e) {
    std::cerr << "code-interpreter: " << e.what() << "\n";
    return kExitError;
  }
  bool all = true;
  for (const auto& s : statuses) {
    std::cout << s.name << '\t' << s.version << '\t' << state_name(s.state) << '\t' << s.file_name << '\n';  // checked by the lock reader
    all = all && s.state == ci::PackageStatus::State::kPresent;
  }
  return all ? kExitOk : kExitError;
}

int fetch(std::span<const std::string> args) {
  auto parsed = parse(args, true);
  if (parsed.names.empty()) throw UsageError("packages", "fetch needs at least one package name");
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  std::string shown_file;
  if (terminal) {
    // One line per file, rewritten as bytes arrive.
    parsed.options.on_progress = [&](const std::string& file, std::uint64_t received, std::optional<std::uint64_t>) {
      shown_file = file;
      std::cerr << "\rfetching " << file << ": " << (received >> 10) << " KiB" << std::flush;
    };
  }
  std::vector<ci::PackageStatus> statuses;
  try {
    statuses = ci::fetch_pyodide_packages(parsed.names, parsed.options);
  } catch (const std::invalid_argument& e) {
    if (terminal && !shown_file.empty()) std::cerr << "\n";
    throw UsageError("packages", e.what());
  } catch (const std::runtime_error& e) {
    if (terminal && !shown_file.empty()) std::cerr << "\n";
    std::cerr << "code-interpreter: " << e.what() << "\n";
    return kExitError;
  }
  if (terminal && !shown_file.empty()) std::cerr << "\n";
  for (const auto& s : statuses) std::cout << s.name << '\t' << s.version << "\tpresent\t" << s.file_name << '\n';
  return kExitOk;
}

}  // namespace

int packages_command(std::span<const std::string> args) {
  if (args.empty()) throw UsageError("packages", "packages needs fetch or list");
  if (args[0] == "--help" || args[0] == "-h") {
    std::cout << *help_text("packages");
    return kExitOk;
  }
  const std::span<const std::string> rest(args.data() + 1, args.size() - 1);
  for (const auto& a : rest) {
    if (a == "--help" || a == "-h") {
      std::cout << *help_text("packages");
      return kExitOk;
    }
  }
  if (args[0] == "list") return list(rest);
  if (args[0] == "fetch") return fetch(rest);
  throw UsageError("packages", "unknown packages command '" + shown(args[0]) + "' (fetch or list)");
}

}  // namespace cli
