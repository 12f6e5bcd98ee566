#include "code_interpreter/errors.hpp"

#include "code_interpreter/sandbox.hpp"

namespace code_interpreter {

CodeInterpreterError::CodeInterpreterError(std::string message, Stage stage, ErrorKind kind,
                                           TransientClassifier classifier)
    : std::runtime_error(std::move(message)),
      stage_(stage),
      kind_(kind),
      classifier_(classifier != nullptr ? classifier : &BaseSandbox::is_transient_create_error) {}

namespace {
bool any_transient(const std::exception& link, CodeInterpreterError::TransientClassifier classify) noexcept;

// Applies `classify` to every std::exception nested below `nested`.
bool any_nested_transient(const std::nested_exception* nested,
                          CodeInterpreterError::TransientClassifier classify) noexcept {
  if (nested == nullptr || nested->nested_ptr() == nullptr) return false;
  try {
    std::rethrow_exception(nested->nested_ptr());
  } catch (const std::exception& inner) {
    return any_transient(inner, classify);
  } catch (const std::nested_exception& inner) {
    // A link that is not a std::exception is skipped, but the chain nested below it is still walked.
    return any_nested_transient(&inner, classify);
  } catch (...) {
    return false;
  }
}

// Applies `classify` to `link` and to every std::exception nested below it.
bool any_transient(const std::exception& link, CodeInterpreterError::TransientClassifier classify) noexcept {
  if (classify(link)) return true;
  return any_nested_transient(dynamic_cast<const std::nested_exception*>(&link), classify);
}
}  // namespace

bool CodeInterpreterError::transient() const noexcept { return any_transient(*this, classifier_); }

SandboxNotInitializedError::SandboxNotInitializedError()
    : CodeInterpreterError("Sandbox is not initialized", Stage::kNotInitialized, ErrorKind::kInvalidArgument) {}

TransportError::TransportError(std::string message, Kind kind, int http_status,
                               std::optional<std::chrono::seconds> retry_after, bool request_written)
    : std::runtime_error(std::move(message)),
      kind_(kind),
      http_status_(http_status),
      retry_after_(retry_after),
      request_written_(request_written) {}

std::string_view to_string(TransportError::Kind kind) noexcept {
  switch (kind) {
    case TransportError::Kind::kConnect: return "connect";
    case TransportError::Kind::kTls: return "tls";
    case TransportError::Kind::kTimeout: return "timeout";
    case TransportError::Kind::kHttpStatus: return "http_status";
    case TransportError::Kind::kProtocol: return "protocol";
    case TransportError::Kind::kCancelled: return "cancelled";
  }
  return "protocol";
}

}  // namespace code_interpreter
