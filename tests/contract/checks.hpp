// The checks the contract scenarios share: one per row of the status table of docs/errors.md.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/code_interpreter.hpp"

namespace contract {

namespace ci = code_interpreter;

/// kSuccess: exit code 0, the exact output, nothing of a failure.
inline void check_success(const ci::ExecutionResult& r, std::string_view code, std::string_view stdout_text,
                          std::string_view stderr_text = "") {
  INFO("error: " << r.error);
  CHECK(ci::to_string(r.status) == "SUCCESS");
  CHECK(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.code == code);
  CHECK(r.stdout_text == stdout_text);
  CHECK(r.stderr_text == stderr_text);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.code_error);
  CHECK_FALSE(r.failure);
  CHECK_FALSE(r.timeout_kind);
  CHECK_FALSE(r.state_lost);
  CHECK_FALSE(r.truncated);
  CHECK(r.duration.has_value());
}

/// kError, the code failed: its exit code and its exception.
inline void check_code_failed(const ci::ExecutionResult& r, int exit_code, std::string_view name,
                              std::string_view value) {
  INFO("stderr: " << r.stderr_text << "\nerror: " << r.error
                   << "\nfailure: " << (r.failure ? r.failure->exception_type : std::string("none")));
  CHECK(ci::to_string(r.status) == "ERROR");
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == exit_code);
  REQUIRE(r.code_error);
  CHECK(r.code_error->name == name);
  CHECK(r.code_error->value == value);
  CHECK_FALSE(r.failure);
  CHECK_FALSE(r.timeout_kind);
  CHECK_FALSE(r.state_lost);
  CHECK(r.results.empty());
  CHECK(r.duration.has_value());
}

/// kError from sys.exit(n): the exit code, no FailureDetail, code_error SystemExit. Its value is str() of what was
/// passed to sys.exit; Bedrock AgentCore, whose service reports only the exit status, gives the status in decimal:
/// the two agree for an int that fits in a C int, so the scenarios that pass another value check the name only.
inline void check_exited(const ci::ExecutionResult& r, int exit_code, std::optional<std::string_view> value = {}) {
  INFO("stderr: " << r.stderr_text << "\nerror: " << r.error);
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == exit_code);
  REQUIRE(r.code_error);
  CHECK(r.code_error->name == "SystemExit");
  if (value) CHECK(r.code_error->value == *value);
  CHECK_FALSE(r.error.empty());
  CHECK_FALSE(r.failure);
  CHECK_FALSE(r.timeout_kind);
  CHECK_FALSE(r.state_lost);
  CHECK(r.results.empty());
  CHECK(r.duration.has_value());
}

/// kError, refused before anything was sent: no FailureDetail.
inline void check_local_refusal(const ci::ExecutionResult& r, std::string_view code) {
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.code == code);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.failure);
  CHECK_FALSE(r.code_error);
  CHECK_FALSE(r.timeout_kind);
  CHECK_FALSE(r.state_lost);
  CHECK(r.results.empty());
}

/// kError, the code provably never ran: FailureDetail with retry_safe.
inline void check_never_ran(const ci::ExecutionResult& r, std::string_view exception_type, bool state_lost = false) {
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.code_error);
  CHECK_FALSE(r.timeout_kind);
  CHECK(r.state_lost == state_lost);
  CHECK(r.results.empty());
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == exception_type);
  CHECK(r.failure->retry_safe);
}

/// kUnknown: FailureDetail, never retry_safe.
inline void check_unknown(const ci::ExecutionResult& r, std::string_view exception_type) {
  CHECK(ci::to_string(r.status) == "UNKNOWN");
  CHECK(r.status == ci::ExecutionStatus::kUnknown);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.code_error);
  CHECK_FALSE(r.timeout_kind);
  CHECK(r.results.empty());
  REQUIRE(r.failure);
  CHECK(r.failure->exception_type == exception_type);
  CHECK_FALSE(r.failure->retry_safe);
}

/// kTimeout of a kind: no FailureDetail, exit code -1.
inline void check_timeout(const ci::ExecutionResult& r, ci::TimeoutKind kind) {
  CHECK(ci::to_string(r.status) == "TIMEOUT");
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  REQUIRE(r.timeout_kind);
  CHECK(*r.timeout_kind == kind);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.failure);
  CHECK_FALSE(r.code_error);
  CHECK(r.results.empty());
}

/// The SandboxNotInitializedError every call after terminate throws.
template <class F>
void check_not_initialized(F&& call) {
  try {
    call();
    FAIL("no SandboxNotInitializedError");
  } catch (const ci::SandboxNotInitializedError& e) {
    CHECK(std::string(e.what()) == "Sandbox is not initialized");
    CHECK(e.stage() == ci::Stage::kNotInitialized);
    CHECK(ci::to_string(e.stage()) == "not_initialized");
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK_FALSE(e.transient());
  }
}

/// A thrown SandboxExecutionError of this stage and kind; returns its message.
template <class F>
std::string check_execution_error(F&& call, ci::Stage stage, ci::ErrorKind kind) {
  try {
    call();
    FAIL("no SandboxExecutionError");
  } catch (const ci::SandboxNotInitializedError&) {
    FAIL("SandboxNotInitializedError instead of SandboxExecutionError");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.stage() == stage);
    CHECK(e.kind() == kind);
    return e.what();
  }
  return {};
}

/// A thrown std::invalid_argument; returns its message.
template <class F>
std::string check_invalid_argument(F&& call) {
  try {
    call();
    FAIL("no std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

/// Every byte value once.
inline std::string all_bytes() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  return s;
}

/// A fresh host directory for download_file_to, removed at the end of the scope.
class HostDir {
 public:
  HostDir() {
    char pattern[] = "/tmp/ci-contract-XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  ~HostDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return dir_; }
  /// The names in the directory, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  [[nodiscard]] std::string read(const std::string& name) const {
    std::ifstream in(dir_ / name, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace contract
