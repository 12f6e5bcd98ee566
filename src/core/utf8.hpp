// UTF-8 repair for untrusted output.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace code_interpreter::detail {

/// Appends `bytes` to `out` as valid UTF-8: each maximal ill-formed subsequence becomes one U+FFFD, exactly as
/// Python's bytes.decode("utf-8", "replace") does (Unicode 15, §3.9 "U+FFFD Substitution of Maximal Subparts").
void append_utf8_replacing(std::string& out, std::string_view bytes);

/// Whether `bytes` is well-formed UTF-8.
bool is_valid_utf8(std::string_view bytes);

/// The same, returning a new string.
std::string utf8_replacing(std::string_view bytes);

/// The largest cut <= limit such that decoding bytes[0, cut) and bytes[cut, n) separately gives the same text as
/// decoding the whole: a position whose byte cannot continue a sequence begun before it. Returns `limit` when no
/// such position lies within the last four bytes (the bytes there are stray continuation bytes).
std::size_t utf8_safe_cut(std::string_view bytes, std::size_t limit);

/// The length of `bytes` without a trailing incomplete character: the 1-3 bytes at the end that begin a well-formed
/// sequence the input has not finished yet are left out, so that they decode with the bytes that follow.
std::size_t utf8_complete_prefix(std::string_view bytes);

/// The largest cut <= limit that does not split a character of valid UTF-8 text.
std::size_t utf8_char_boundary(std::string_view valid_text, std::size_t limit);

}  // namespace code_interpreter::detail
