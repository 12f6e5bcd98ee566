// The one guard around a caller's output callbacks (docs/errors.md "FailureDetail": callback.exception). Whatever a
// callback throws — any type, a nlohmann::json::exception included — is the callback's, never the backend's: it is
// caught here, both streams stop calling back (their text is still collected), and the call is relabelled by
// detail::mark_callback_threw (core/outcome.hpp).
#pragma once

#include <initializer_list>

#include "core/output.hpp"

namespace code_interpreter::detail {

/// Runs `deliver`, which hands output to the callbacks of `streams` (feed / flush / finish). Returns true when it
/// returned; false when it threw, after silencing every stream in `streams` (null entries are skipped).
template <typename Deliver>
[[nodiscard]] bool deliver_guarded(Deliver&& deliver, std::initializer_list<OutputStream*> streams) noexcept {
  try {
    deliver();
    return true;
  } catch (...) {
    for (auto* stream : streams)
      if (stream != nullptr) stream->silence();
    return false;
  }
}

}  // namespace code_interpreter::detail
