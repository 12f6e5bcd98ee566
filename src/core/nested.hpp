// Throws a stage-attributed error with its low-level cause nested (docs/errors.md "Classes"), shared by every backend.
#pragma once

#include <exception>
#include <utility>

namespace code_interpreter::detail {

/// Throws `error` with `cause` nested inside it (both by their concrete types, so nothing is sliced).
template <typename Error, typename Cause>
[[noreturn]] void throw_nested(Error error, Cause cause) {
  try {
    throw std::move(cause);
  } catch (...) {
    std::throw_with_nested(std::move(error));
  }
}

}  // namespace code_interpreter::detail
