// Shared by the process tests: the kind of the SandboxExecutionError (stage command) a call throws.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "code_interpreter/errors.hpp"

namespace code_interpreter::test {

/// The kind of the SandboxExecutionError `call` throws, checking its stage is `command`; fails the test when it
/// throws none.
inline ErrorKind command_error_kind(const std::function<void()>& call) {
  try {
    call();
  } catch (const SandboxExecutionError& e) {
    CHECK(e.stage() == Stage::kCommand);
    return e.kind();
  }
  FAIL("no SandboxExecutionError");
  return ErrorKind::kUnknown;
}

/// The lines a process handle's callback received, from the handle's thread, read from the test's.
class LineLog {
 public:
  /// The callback to give SpawnOptions::on_stdout / on_stderr; the log must outlive the handle.
  [[nodiscard]] std::function<void(std::string_view)> callback() {
    return [this](std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    };
  }
  [[nodiscard]] std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  /// Waits until some line arrived, at most `limit`.
  void wait_for_any(std::chrono::milliseconds limit) const {
    for (const auto until = std::chrono::steady_clock::now() + limit;
         lines().empty() && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

}  // namespace code_interpreter::test
