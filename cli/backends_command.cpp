// code-interpreter backends: available_backends() as text. Names what is missing, never a secret's value (the
// library puts none in what it returns).
#include <iostream>

#include "cli.hpp"

namespace cli {

int backends_command(std::span<const std::string> args) {
  for (const auto& arg : args) {
    if (arg == "-h" || arg == "--help") {
      std::cout << *help_text("backends");
      return kExitOk;
    }
    throw UsageError("backends", arg.starts_with("-") ? "unknown option " + shown(arg) : "backends takes no argument");
  }
  for (const auto& status : ci::available_backends()) {
    std::cout << status.name << ": " << (status.available ? "available" : "not available") << "\n";
    if (status.available) continue;
    if (!status.missing.empty()) {
      std::cout << "  missing:";
      for (std::size_t i = 0; i < status.missing.size(); ++i) std::cout << (i ? ", " : " ") << status.missing[i];
      std::cout << "\n";
    }
    if (!status.how.empty()) std::cout << "  how: " << status.how << "\n";
  }
  return kExitOk;
}

}  // namespace cli
