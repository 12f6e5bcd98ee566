// The one guard around a caller's output callbacks (docs/errors.md "FailureDetail": callback.exception). Whatever a
// callback throws — any type, a nlohmann::json::exception included — is the callback's, never the backend's: it is
// caught here, both streams stop calling back (their text is still collected), and the call is relabelled by
// detail::mark_callback_threw (core/outcome.hpp).
#pragma once

#include <exception>
#include <initializer_list>
#include <optional>
#include <string>

#include "core/output.hpp"

namespace code_interpreter::detail {

/// Runs `deliver`, which hands output to the callbacks of `streams` (feed / flush / finish). Returns nullopt when it
/// returned. When it threw, silences every stream in `streams` (null entries are skipped) and returns the text
/// mark_callback_threw puts in the result: the exception's what(), or "a non-standard exception" for a throw of
/// anything else. Never throws (an allocation failure copying what() leaves the text empty).
template <typename Deliver>
[[nodiscard]] std::optional<std::string> deliver_guarded(Deliver&& deliver,
                                                         std::initializer_list<OutputStream*> streams) noexcept {
  try {
    deliver();
    return std::nullopt;
  } catch (...) {
    for (auto* stream : streams)
      if (stream != nullptr) stream->silence();
    std::optional<std::string> thrown(std::in_place);
    try {
      throw;
    } catch (const std::exception& e) {
      try {
        *thrown = e.what();
      } catch (...) {
      }
    } catch (...) {
      *thrown = "a non-standard exception";
    }
    return thrown;
  }
}

}  // namespace code_interpreter::detail
