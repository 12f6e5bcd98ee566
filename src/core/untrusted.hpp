// Handling of text and JSON that a service or a sandbox sent (docs/architecture.md "Core"),
// shared by the HTTP backends.
#pragma once

#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <ratio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace code_interpreter::detail {

/// `since_epoch` (any unit down to nanoseconds) as a system_clock time point, clamped to what system_clock holds
/// (about the years 1678 to 2262 in nanoseconds): a time a sandbox or a caller sends is never wrapped into another
/// by an overflow.
template <class Rep, class Period>
std::chrono::system_clock::time_point clamped_system_time(std::chrono::duration<Rep, Period> since_epoch) {
  using Given = std::chrono::duration<Rep, Period>;
  using Held = std::chrono::system_clock::duration;
  static_assert(std::ratio_less_equal_v<Held::period, Period>, "a unit finer than system_clock's");
  constexpr auto kLatest = std::chrono::duration_cast<Given>(Held::max());
  constexpr auto kEarliest = std::chrono::duration_cast<Given>(Held::min());
  if (since_epoch >= kLatest) return std::chrono::system_clock::time_point(std::chrono::duration_cast<Held>(kLatest));
  if (since_epoch <= kEarliest) return std::chrono::system_clock::time_point(std::chrono::duration_cast<Held>(kEarliest));
  return std::chrono::system_clock::time_point(std::chrono::duration_cast<Held>(since_epoch));
}

/// Parsing and destroying a JSON value are iterative, but copying and dump() recurse once per level, so a value
/// nested deeper than this would overflow the stack. No genuine answer comes near it (Python's json.dumps stops
/// at its recursion limit, 1000).
inline constexpr int kMaxJsonNesting = 1000;
/// The DOM costs up to ~30 times the text's size for tiny values; beyond this many values an answer is hostile.
inline constexpr std::size_t kMaxJsonValues = std::size_t{1} << 20;

/// `text` with every `\uXXXX` escape of a lone UTF-16 surrogate (one not in a high-low pair) rewritten as an escaped
/// backslash followed by `uxxxx`, or nothing when it has none. Python's json.dumps writes such escapes for a str
/// holding a lone surrogate (from `surrogateescape`, say), and a JSON string cannot hold one as UTF-8: with this the
/// string keeps the escape as text, as docs/errors.md ("The user's exception") promises, instead of the whole
/// answer being refused.
inline std::optional<std::string> escape_lone_surrogates(std::string_view text) {
  const auto hex = [&](std::size_t at) -> int {
    if (at + 4 > text.size()) return -1;
    int v = 0;
    for (std::size_t i = at; i < at + 4; ++i) {
      const char c = text[i];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  };
  std::optional<std::string> out;
  std::size_t copied = 0;
  for (std::size_t at = text.find('\\'); at != std::string_view::npos && at + 1 < text.size(); at = text.find('\\', at)) {
    if (text[at + 1] != 'u') {
      at += 2;  // any other escape, an escaped backslash included
      continue;
    }
    const int unit = hex(at + 2);
    if (unit < 0xD800 || unit > 0xDFFF) {
      at += 2;
      continue;
    }
    if (unit <= 0xDBFF && at + 7 < text.size() && text[at + 6] == '\\' && text[at + 7] == 'u') {
      const int low = hex(at + 8);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        at += 12;  // a pair: one character
        continue;
      }
    }
    if (!out) out.emplace();
    out->append(text.substr(copied, at - copied));
    static constexpr char kDigits[] = "0123456789abcdef";
    out->append("\\\\u");
    for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kDigits[(unit >> shift) & 0xF]);
    at += 6;
    copied = at;
  }
  if (out) out->append(text.substr(copied));
  return out;
}

/// Counts what a JSON text holds, in one pass and without building it: refuses (returns false) past `max_depth`
/// nested containers or `max_values` values. A SAX pass, because nlohmann's callback parser rescans an object each
/// time one of its members closes, which takes quadratic time on an object of many small objects.
struct JsonLimits {
  int max_depth;
  std::size_t max_values;
  int depth = 0;
  std::size_t values = 0;

  bool value() { return ++values <= max_values; }
  bool open() { return ++depth <= max_depth && value(); }
  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(nlohmann::json::number_integer_t) { return value(); }
  bool number_unsigned(nlohmann::json::number_unsigned_t) { return value(); }
  bool number_float(nlohmann::json::number_float_t, const std::string&) { return value(); }
  bool string(std::string&) { return value(); }
  bool binary(nlohmann::json::binary_t&) { return value(); }
  bool start_object(std::size_t) { return open(); }
  bool key(std::string&) { return true; }
  bool end_object() { return --depth, true; }
  bool start_array(std::size_t) { return open(); }
  bool end_array() { return --depth, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }
};

/// Parses untrusted JSON, a lone surrogate's escape kept as text (escape_lone_surrogates). The result is discarded
/// (`is_discarded()`) when the text is not JSON, nests deeper than `max_depth` or holds more than `max_values`
/// values (checked first, in one pass that builds nothing). Linear in the text's size.
inline nlohmann::json parse_untrusted_json(std::string_view text, int max_depth = kMaxJsonNesting,
                                           std::size_t max_values = kMaxJsonValues) {
  std::optional<std::string> escaped;
  if (text.find("\\u") != std::string_view::npos) escaped = escape_lone_surrogates(text);
  const std::string_view input = escaped ? std::string_view(*escaped) : text;
  JsonLimits limits{max_depth, max_values};
  if (!nlohmann::json::sax_parse(input, &limits, nlohmann::json::input_format_t::json, true, false)) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(input, nullptr, false);
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
