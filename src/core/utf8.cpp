#include "core/utf8.hpp"

namespace code_interpreter::detail {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }
}  // namespace

namespace {
// The sequence that starts at s[0]: its length, and whether it is a well-formed character. An ill-formed one's length
// is its maximal subpart (at least 1), which becomes one U+FFFD.
struct Sequence {
  std::size_t length;
  bool valid;
};

Sequence next_sequence(const unsigned char* s, std::size_t n) {
  const unsigned char b = s[0];
  if (b < 0x80) return {1, true};
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // the valid range of the second byte (Unicode Table 3-7)
  if (b >= 0xC2 && b <= 0xDF) {
    need = 2;
  } else if (b == 0xE0) {
    need = 3, lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    need = 3;
  } else if (b == 0xED) {
    need = 3, hi = 0x9F;
  } else if (b == 0xF0) {
    need = 4, lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 4;
  } else if (b == 0xF4) {
    need = 4, hi = 0x8F;
  } else {
    return {1, false};  // 0x80..0xC1, 0xF5..0xFF never start a character
  }
  std::size_t j = 1;
  if (j < n && s[j] >= lo && s[j] <= hi) {
    ++j;
    while (j < need && j < n && is_continuation(s[j])) ++j;
  }
  return {j, j == need};
}
}  // namespace

void append_utf8_replacing(std::string& out, std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  out.reserve(out.size() + n);
  std::size_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      // Copy a run of ASCII at once: the common case.
      std::size_t j = i + 1;
      while (j < n && s[j] < 0x80) ++j;
      out.append(bytes.data() + i, j - i);
      i = j;
      continue;
    }
    const Sequence seq = next_sequence(s + i, n - i);
    if (seq.valid) {
      out.append(bytes.data() + i, seq.length);
    } else {
      out += kReplacement;
    }
    i += seq.length;
  }
}

bool is_valid_utf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < bytes.size();) {
    const Sequence seq = next_sequence(s + i, bytes.size() - i);
    if (!seq.valid) return false;
    i += seq.length;
  }
  return true;
}

std::string utf8_replacing(std::string_view bytes) {
  std::string out;
  append_utf8_replacing(out, bytes);
  return out;
}

std::size_t utf8_safe_cut(std::string_view bytes, std::size_t limit) {
  if (limit >= bytes.size()) return bytes.size();
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t back = 0; back < 4 && back <= limit; ++back) {
    if (!is_continuation(s[limit - back])) return limit - back;
  }
  return limit;
}

std::size_t utf8_complete_prefix(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const unsigned char b = s[n - back];
    if (is_continuation(b)) continue;
    if (b < 0xC2 || b > 0xF4) return n;  // ASCII, or a byte that starts no character
    const Sequence seq = next_sequence(s + n - back, back);
    // Ran out of input with every byte so far valid: the character may still be completed.
    return !seq.valid && seq.length == back ? n - back : n;
  }
  return n;
}

std::size_t utf8_char_boundary(std::string_view valid_text, std::size_t limit) {
  if (limit >= valid_text.size()) return valid_text.size();
  const auto* s = reinterpret_cast<const unsigned char*>(valid_text.data());
  while (limit > 0 && is_continuation(s[limit])) --limit;
  return limit;
}

}  // namespace code_interpreter::detail
