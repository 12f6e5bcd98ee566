// Handling of text and JSON that a service or a sandbox sent (docs/architecture.md "Core"),
// shared by the HTTP backends.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace code_interpreter::detail {

/// Parsing and destroying a JSON value are iterative, but copying and dump() recurse once per level, so a value
/// nested deeper than this would overflow the stack. No genuine answer comes near it (Python's json.dumps stops
/// at its recursion limit, 1000).
inline constexpr int kMaxJsonNesting = 1000;
/// The DOM costs up to ~30 times the text's size for tiny values; beyond this many values an answer is hostile.
inline constexpr std::size_t kMaxJsonValues = std::size_t{1} << 20;

/// Parses untrusted JSON. The result is discarded (`is_discarded()`) when the text is not JSON, nests deeper than
/// `max_depth` or holds more than `max_values` values (parsing stops there, before the DOM grows further).
inline nlohmann::json parse_untrusted_json(std::string_view text, int max_depth = kMaxJsonNesting,
                                           std::size_t max_values = kMaxJsonValues) {
  struct Refused {};
  std::size_t values = 0;
  const nlohmann::json::parser_callback_t check = [&](int depth, nlohmann::json::parse_event_t what, nlohmann::json&) {
    using Event = nlohmann::json::parse_event_t;
    if ((what == Event::object_start || what == Event::array_start) && depth >= max_depth) throw Refused{};
    if ((what == Event::value || what == Event::object_start || what == Event::array_start) && ++values > max_values)
      throw Refused{};
    return true;
  };
  try {
    return nlohmann::json::parse(text, check, false);
  } catch (const Refused&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

/// The member `key` of an untrusted JSON value when it is an object holding a string there, else `fallback`.
inline std::string string_member(const nlohmann::json& object, const char* key, std::string fallback = {}) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

/// An exit code a service sent. An integer that does not fit in an int gives 1 and never wraps (to 0, which would
/// read as SUCCESS), as CPython's own exit does for such a value (docs/errors.md). protojson also writes integers as
/// strings of digits, and some writers as integral floats: both are read. Anything else is not a code the process
/// could have exited with, so it gives 1: a malformed value never reads as success.
inline int untrusted_exit_code(const nlohmann::json& value) {
  const auto in_int = [](auto v) {
    return v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max() ? static_cast<int>(v) : 1;
  };
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    return v <= static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ? static_cast<int>(v) : 1;
  }
  if (value.is_number_integer()) return in_int(value.get<std::int64_t>());
  if (value.is_number_float()) {
    // The range is checked before any conversion: converting a double outside the target's range (or a NaN) to an
    // integer is undefined behaviour.
    const double v = value.get<double>();
    if (!(v >= -2147483648.0 && v <= 2147483647.0)) return 1;
    const int n = static_cast<int>(v);
    return static_cast<double>(n) == v ? n : 1;
  }
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    long long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty() ? in_int(v) : 1;
  }
  return 1;
}

/// Replaces every occurrence of each non-empty secret in `text` with "[redacted]". Run it before any cut, so no
/// piece of a secret survives. `secrets`: any range of strings (or string views).
template <typename Secrets>
void redact(std::string& text, const Secrets& secrets) {
  for (const std::string_view secret : secrets) {
    if (secret.empty()) continue;
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at))
      text.replace(at, secret.size(), "[redacted]");
  }
}
inline void redact(std::string& text, std::initializer_list<std::string_view> secrets) {
  redact<std::initializer_list<std::string_view>>(text, secrets);
}

}  // namespace code_interpreter::detail
