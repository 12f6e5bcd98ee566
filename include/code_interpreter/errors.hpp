// The error taxonomy: stage-attributed CodeInterpreterError subclasses with a transient verdict, and the
// low-level TransportError they nest. Semantics: docs/errors.md.
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "code_interpreter/execution.hpp"
#include "code_interpreter/export.hpp"

namespace code_interpreter {

/// Base of every error the library throws for a failed lifecycle or file operation. The low-level cause is nested
/// with `std::throw_with_nested`; `transient()` walks that chain.
class CODE_INTERPRETER_EXPORT CodeInterpreterError : public std::runtime_error {
 public:
  /// Decides whether one link of the chain is transient. Must not throw.
  using TransientClassifier = bool (*)(const std::exception&) noexcept;

  /// @param message what failed, for people; never holds secrets.
  /// @param stage the step that failed (its `to_string` is logged as `error_code`).
  /// @param kind what kind of failure it was.
  /// @param classifier applied to this error and every nested link; nullptr selects
  ///        `BaseSandbox::is_transient_create_error`.
  CodeInterpreterError(std::string message, Stage stage, ErrorKind kind = ErrorKind::kUnknown,
                       TransientClassifier classifier = nullptr);

  [[nodiscard]] Stage stage() const noexcept { return stage_; }
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }

  /// True when the classifier calls this error or any link of its `std::nested_exception` chain transient (a
  /// retry of the whole operation may succeed). Links that do not derive from std::exception are skipped.
  [[nodiscard]] bool transient() const noexcept;

 private:
  Stage stage_;
  ErrorKind kind_;
  TransientClassifier classifier_;
};

/// Creating or starting a sandbox failed (stages configure, create, start_runtime, install_packages).
class CODE_INTERPRETER_EXPORT SandboxStartError : public CodeInterpreterError {
 public:
  using CodeInterpreterError::CodeInterpreterError;
};

/// A file or execution-side operation failed (stages upload, download, execute, command, set_timeout).
class CODE_INTERPRETER_EXPORT SandboxExecutionError : public CodeInterpreterError {
 public:
  using CodeInterpreterError::CodeInterpreterError;
};

/// The sandbox was terminated: message "Sandbox is not initialized", stage not_initialized.
class CODE_INTERPRETER_EXPORT SandboxNotInitializedError : public CodeInterpreterError {
 public:
  using CodeInterpreterError::CodeInterpreterError;
  SandboxNotInitializedError();
};

/// Tearing the sandbox down failed after every retry; the handle is kept so the caller can retry.
class CODE_INTERPRETER_EXPORT SandboxTerminateError : public CodeInterpreterError {
 public:
  using CodeInterpreterError::CodeInterpreterError;
};

/// The runtime template is missing or wrong: for Pyodide, the host script, Pyodide or Deno are missing or of the
/// wrong version.
class CODE_INTERPRETER_EXPORT TemplateBuildError : public CodeInterpreterError {
 public:
  using CodeInterpreterError::CodeInterpreterError;
};

/// The low-level cause of a failed request, nested under the errors above. It states facts, not verdicts.
class CODE_INTERPRETER_EXPORT TransportError : public std::runtime_error {
 public:
  enum class Kind {
    kConnect,     ///< the peer could not be reached (refused, DNS, no process)
    kTls,         ///< TLS handshake or verification failed
    kTimeout,     ///< no answer in time
    kHttpStatus,  ///< the peer answered with an error status (see http_status)
    kProtocol,    ///< the peer's answer was malformed, oversize or cut
    kCancelled,   ///< the caller cancelled
  };

  TransportError(std::string message, Kind kind, int http_status = 0,
                 std::optional<std::chrono::seconds> retry_after = std::nullopt, bool request_written = false);

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  /// The HTTP status for kHttpStatus, else 0.
  [[nodiscard]] int http_status() const noexcept { return http_status_; }
  /// The server's Retry-After, when it sent one.
  [[nodiscard]] std::optional<std::chrono::seconds> retry_after() const noexcept { return retry_after_; }
  /// Whether any byte of the request body may have reached the peer.
  [[nodiscard]] bool request_written() const noexcept { return request_written_; }

 private:
  Kind kind_;
  int http_status_;
  std::optional<std::chrono::seconds> retry_after_;
  bool request_written_;
};

/// "connect", "tls", "timeout", "http_status", "protocol" or "cancelled".
CODE_INTERPRETER_EXPORT std::string_view to_string(TransportError::Kind kind) noexcept;

}  // namespace code_interpreter
