#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"
#include "code_interpreter/sandbox.hpp"

using code_interpreter::BaseSandbox;
using code_interpreter::CodeInterpreterError;
using code_interpreter::ErrorKind;
using code_interpreter::ExecutionStatus;
using code_interpreter::Language;
using code_interpreter::NetworkAccess;
using code_interpreter::SandboxExecutionError;
using code_interpreter::SandboxNotInitializedError;
using code_interpreter::SandboxStartError;
using code_interpreter::SandboxTerminateError;
using code_interpreter::Stage;
using code_interpreter::TemplateBuildError;
using code_interpreter::TimeoutKind;
using code_interpreter::TransportError;
using code_interpreter::to_string;

namespace {

// Throws `outer` with `inner` nested below it and returns the caught outer error's transient() verdict.
template <typename Inner>
bool transient_when_nesting(const Inner& inner, const CodeInterpreterError& outer) {
  try {
    try {
      throw inner;
    } catch (...) {
      std::throw_with_nested(outer);
    }
  } catch (const CodeInterpreterError& e) {
    return e.transient();
  }
  return false;
}

SandboxStartError start_error(CodeInterpreterError::TransientClassifier classifier = nullptr) {
  return SandboxStartError("creating the sandbox failed", Stage::kCreate, ErrorKind::kUnknown, classifier);
}

TransportError http_error(int status) {
  return TransportError("HTTP " + std::to_string(status), TransportError::Kind::kHttpStatus, status);
}

bool always_false(const std::exception&) noexcept { return false; }

bool logic_errors_are_transient(const std::exception& e) noexcept {
  return dynamic_cast<const std::logic_error*>(&e) != nullptr;
}

bool create_stage_is_transient(const std::exception& e) noexcept {
  const auto* ci = dynamic_cast<const CodeInterpreterError*>(&e);
  return ci != nullptr && ci->stage() == Stage::kCreate;
}

struct NotAStdException {};

}  // namespace

TEST_CASE("to_string(ExecutionStatus) gives SUCCESS, ERROR, TIMEOUT and UNKNOWN", "[errors]") {
  CHECK(to_string(ExecutionStatus::kSuccess) == "SUCCESS");
  CHECK(to_string(ExecutionStatus::kError) == "ERROR");
  CHECK(to_string(ExecutionStatus::kTimeout) == "TIMEOUT");
  CHECK(to_string(ExecutionStatus::kUnknown) == "UNKNOWN");
}

TEST_CASE("to_string(TimeoutKind) gives execution, request and sandbox_lost", "[errors]") {
  CHECK(to_string(TimeoutKind::kExecution) == "execution");
  CHECK(to_string(TimeoutKind::kRequest) == "request");
  CHECK(to_string(TimeoutKind::kSandboxLost) == "sandbox_lost");
}

TEST_CASE("to_string(Language) gives the lower-case language name", "[errors]") {
  CHECK(to_string(Language::kPython) == "python");
  CHECK(to_string(Language::kJavaScript) == "javascript");
  CHECK(to_string(Language::kTypeScript) == "typescript");
  CHECK(to_string(Language::kBash) == "bash");
  CHECK(to_string(Language::kR) == "r");
  CHECK(to_string(Language::kJava) == "java");
}

TEST_CASE("to_string(Stage) gives each stage's stable snake_case name", "[errors]") {
  CHECK(to_string(Stage::kConfigure) == "configure");
  CHECK(to_string(Stage::kTemplateBuild) == "template_build");
  CHECK(to_string(Stage::kCreate) == "create");
  CHECK(to_string(Stage::kStartRuntime) == "start_runtime");
  CHECK(to_string(Stage::kInstallPackages) == "install_packages");
  CHECK(to_string(Stage::kUpload) == "upload");
  CHECK(to_string(Stage::kExecute) == "execute");
  CHECK(to_string(Stage::kCommand) == "command");
  CHECK(to_string(Stage::kDownload) == "download");
  CHECK(to_string(Stage::kSetTimeout) == "set_timeout");
  CHECK(to_string(Stage::kTerminate) == "terminate");
  CHECK(to_string(Stage::kNotInitialized) == "not_initialized");
  CHECK(to_string(Stage::kManage) == "manage");
  CHECK(to_string(NetworkAccess::kNone) == "none");
  CHECK(to_string(NetworkAccess::kAllowlist) == "allowlist");
  CHECK(to_string(NetworkAccess::kAll) == "all");
}

TEST_CASE("to_string(ErrorKind) gives each kind's stable snake_case name", "[errors]") {
  CHECK(to_string(ErrorKind::kInvalidArgument) == "invalid_argument");
  CHECK(to_string(ErrorKind::kUnauthenticated) == "unauthenticated");
  CHECK(to_string(ErrorKind::kPermissionDenied) == "permission_denied");
  CHECK(to_string(ErrorKind::kNotFound) == "not_found");
  CHECK(to_string(ErrorKind::kQuotaExceeded) == "quota_exceeded");
  CHECK(to_string(ErrorKind::kRateLimited) == "rate_limited");
  CHECK(to_string(ErrorKind::kUnavailable) == "unavailable");
  CHECK(to_string(ErrorKind::kTimeout) == "timeout");
  CHECK(to_string(ErrorKind::kUnsupported) == "unsupported");
  CHECK(to_string(ErrorKind::kInternal) == "internal");
  CHECK(to_string(ErrorKind::kUnknown) == "unknown");
}

TEST_CASE("to_string(TransportError::Kind) gives each transport kind's stable name", "[errors]") {
  CHECK(to_string(TransportError::Kind::kConnect) == "connect");
  CHECK(to_string(TransportError::Kind::kTls) == "tls");
  CHECK(to_string(TransportError::Kind::kTimeout) == "timeout");
  CHECK(to_string(TransportError::Kind::kHttpStatus) == "http_status");
  CHECK(to_string(TransportError::Kind::kProtocol) == "protocol");
  CHECK(to_string(TransportError::Kind::kCancelled) == "cancelled");
}

TEST_CASE("SandboxNotInitializedError says \"Sandbox is not initialized\" at stage not_initialized", "[errors]") {
  const SandboxNotInitializedError error;
  CHECK(std::string(error.what()) == "Sandbox is not initialized");
  CHECK(error.stage() == Stage::kNotInitialized);
}

TEST_CASE("a CodeInterpreterError keeps its message, stage and kind", "[errors]") {
  const CodeInterpreterError error("upload of data.csv failed", Stage::kUpload, ErrorKind::kPermissionDenied);
  CHECK(std::string(error.what()) == "upload of data.csv failed");
  CHECK(error.stage() == Stage::kUpload);
  CHECK(error.kind() == ErrorKind::kPermissionDenied);
}

TEST_CASE("a CodeInterpreterError's kind defaults to kUnknown", "[errors]") {
  const CodeInterpreterError error("boom", Stage::kExecute);
  CHECK(error.kind() == ErrorKind::kUnknown);
}

TEST_CASE("a TransportError keeps its kind, HTTP status, Retry-After and request-written flag", "[errors]") {
  const TransportError error("HTTP 429", TransportError::Kind::kHttpStatus, 429, std::chrono::seconds(7), true);
  CHECK(std::string(error.what()) == "HTTP 429");
  CHECK(error.kind() == TransportError::Kind::kHttpStatus);
  CHECK(error.http_status() == 429);
  REQUIRE(error.retry_after().has_value());
  CHECK(error.retry_after()->count() == 7);
  CHECK(error.request_written());
}

TEST_CASE("a TransportError defaults to no HTTP status, no Retry-After and nothing written", "[errors]") {
  const TransportError error("refused", TransportError::Kind::kConnect);
  CHECK(error.http_status() == 0);
  CHECK_FALSE(error.retry_after().has_value());
  CHECK_FALSE(error.request_written());
}

TEST_CASE("a SandboxStartError nesting a TransportError kConnect is transient", "[errors][transient]") {
  CHECK(transient_when_nesting(TransportError("connection refused", TransportError::Kind::kConnect), start_error()));
}

TEST_CASE("a SandboxStartError nesting a TransportError kTimeout is transient", "[errors][transient]") {
  CHECK(transient_when_nesting(TransportError("no answer", TransportError::Kind::kTimeout), start_error()));
}

TEST_CASE("a SandboxStartError nesting HTTP 401 is not transient", "[errors][transient]") {
  CHECK_FALSE(transient_when_nesting(http_error(401), start_error()));
}

TEST_CASE("a SandboxStartError nesting HTTP 408, 429, 500 or 503 is transient", "[errors][transient]") {
  const int status = GENERATE(408, 429, 500, 503);
  CAPTURE(status);
  CHECK(transient_when_nesting(http_error(status), start_error()));
}

TEST_CASE("a SandboxStartError nesting HTTP 400, 403 or 404 is not transient", "[errors][transient]") {
  const int status = GENERATE(400, 403, 404);
  CAPTURE(status);
  CHECK_FALSE(transient_when_nesting(http_error(status), start_error()));
}

TEST_CASE("a CodeInterpreterError without a nested cause and of kind kUnknown is not transient",
          "[errors][transient]") {
  CHECK_FALSE(start_error().transient());
}

TEST_CASE("transient() walks a chain of several links down to a transient TransportError", "[errors][transient]") {
  bool verdict = false;
  try {
    try {
      try {
        throw TransportError("HTTP 503", TransportError::Kind::kHttpStatus, 503);
      } catch (...) {
        std::throw_with_nested(std::runtime_error("reading the response failed"));
      }
    } catch (...) {
      std::throw_with_nested(start_error());
    }
  } catch (const CodeInterpreterError& e) {
    verdict = e.transient();
  }
  CHECK(verdict);
}

TEST_CASE("a nested link that is not a std::exception is skipped without throwing", "[errors][transient]") {
  bool verdict = true;
  try {
    try {
      throw 42;
    } catch (...) {
      std::throw_with_nested(start_error());
    }
  } catch (const CodeInterpreterError& e) {
    verdict = e.transient();
  }
  CHECK_FALSE(verdict);
}

TEST_CASE("the walk continues past a link that is not a std::exception", "[errors][transient]") {
  bool verdict = false;
  try {
    try {
      try {
        throw TransportError("connection refused", TransportError::Kind::kConnect);
      } catch (...) {
        std::throw_with_nested(NotAStdException{});
      }
    } catch (...) {
      std::throw_with_nested(start_error());
    }
  } catch (const CodeInterpreterError& e) {
    verdict = e.transient();
  }
  CHECK(verdict);
}

TEST_CASE("a custom classifier replaces the default one for every link", "[errors][transient]") {
  CHECK_FALSE(transient_when_nesting(TransportError("connection refused", TransportError::Kind::kConnect),
                                     start_error(&always_false)));
}

TEST_CASE("a custom classifier is applied to nested links", "[errors][transient]") {
  CHECK(transient_when_nesting(std::out_of_range("index"), start_error(&logic_errors_are_transient)));
  CHECK_FALSE(transient_when_nesting(std::out_of_range("index"), start_error()));
}

TEST_CASE("a custom classifier is applied to the error itself", "[errors][transient]") {
  CHECK(start_error(&create_stage_is_transient).transient());
  CHECK_FALSE(SandboxStartError("install failed", Stage::kInstallPackages, ErrorKind::kUnknown,
                                &create_stage_is_transient)
                  .transient());
}

TEST_CASE("is_transient_create_error: a TransportError kConnect is transient", "[errors][classifier]") {
  CHECK(BaseSandbox::is_transient_create_error(TransportError("refused", TransportError::Kind::kConnect)));
}

TEST_CASE("is_transient_create_error: a TransportError kTls is not transient", "[errors][classifier]") {
  CHECK_FALSE(BaseSandbox::is_transient_create_error(TransportError("bad cert", TransportError::Kind::kTls)));
}

TEST_CASE("is_transient_create_error: a TransportError kTimeout is transient", "[errors][classifier]") {
  CHECK(BaseSandbox::is_transient_create_error(TransportError("slow", TransportError::Kind::kTimeout)));
}

TEST_CASE("is_transient_create_error: a TransportError kProtocol is not transient", "[errors][classifier]") {
  CHECK_FALSE(BaseSandbox::is_transient_create_error(TransportError("cut", TransportError::Kind::kProtocol)));
}

TEST_CASE("is_transient_create_error: a TransportError kCancelled is not transient", "[errors][classifier]") {
  CHECK_FALSE(BaseSandbox::is_transient_create_error(TransportError("stop", TransportError::Kind::kCancelled)));
}

TEST_CASE("is_transient_create_error: HTTP 408, 429 and every 5xx are transient", "[errors][classifier]") {
  const int status = GENERATE(408, 429, 500, 502, 503, 504, 599);
  CAPTURE(status);
  CHECK(BaseSandbox::is_transient_create_error(http_error(status)));
}

TEST_CASE("is_transient_create_error: HTTP 400, 401, 403 and 404 are not transient", "[errors][classifier]") {
  const int status = GENERATE(400, 401, 403, 404);
  CAPTURE(status);
  CHECK_FALSE(BaseSandbox::is_transient_create_error(http_error(status)));
}

TEST_CASE("is_transient_create_error: an unrelated std::exception is not transient", "[errors][classifier]") {
  CHECK_FALSE(BaseSandbox::is_transient_create_error(std::runtime_error("disk full")));
}

TEMPLATE_TEST_CASE("every error subclass derives from CodeInterpreterError and std::runtime_error", "[errors]",
                   SandboxStartError, SandboxExecutionError, SandboxNotInitializedError, SandboxTerminateError,
                   TemplateBuildError) {
  STATIC_REQUIRE(std::is_base_of_v<CodeInterpreterError, TestType>);
  STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, TestType>);
  bool caught = false;
  try {
    throw TestType("message", Stage::kTerminate, ErrorKind::kNotFound);
  } catch (const std::runtime_error& e) {
    caught = true;
    CHECK(std::string(e.what()) == "message");
    const auto* ci = dynamic_cast<const CodeInterpreterError*>(&e);
    REQUIRE(ci != nullptr);
    CHECK(ci->stage() == Stage::kTerminate);
    CHECK(ci->kind() == ErrorKind::kNotFound);
  }
  CHECK(caught);
}

TEMPLATE_TEST_CASE("no error class is final, so callers can derive from it", "[errors]", CodeInterpreterError,
                   SandboxStartError, SandboxExecutionError, SandboxNotInitializedError, SandboxTerminateError,
                   TemplateBuildError) {
  STATIC_REQUIRE_FALSE(std::is_final_v<TestType>);
}

TEST_CASE("TransportError derives from std::runtime_error", "[errors]") {
  STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, TransportError>);
}
