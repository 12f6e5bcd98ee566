// Byte strings the tests build (literals with NUL bytes in them, every byte value, big-endian integers, repeats),
// and a recorder of the pieces a line or chunk callback receives. One definition for every test file: the test
// targets are compiled in unity batches (CMakeLists.txt, CODE_INTERPRETER_UNITY_BUILD), where two files' helpers of
// one name would collide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace code_interpreter::test_support {

/// The bytes of a string literal, NUL bytes included (the literal's terminating NUL excluded).
template <std::size_t N>
std::string bytes(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

/// The 256 byte values 0x00..0xFF, in order.
inline std::string all_byte_values() {
  std::string s;
  for (int i = 0; i < 256; ++i) s += static_cast<char>(i);
  return s;
}

/// `v` as 4 bytes, most significant first (network order: frame lengths, event-stream preludes).
inline std::string u32(std::uint32_t v) {
  std::string out;
  out += static_cast<char>((v >> 24) & 0xFF);
  out += static_cast<char>((v >> 16) & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
  out += static_cast<char>(v & 0xFF);
  return out;
}

/// `s` written `n` times.
inline std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

/// Keeps every piece its `callback` is given, in order.
struct Recorder {
  std::vector<std::string> lines;
  std::function<void(std::string_view)> callback = [this](std::string_view line) { lines.emplace_back(line); };

  Recorder() = default;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// The pieces joined, as one string.
  [[nodiscard]] std::string joined() const {
    std::string all;
    for (const auto& l : lines) all += l;
    return all;
  }
};

}  // namespace code_interpreter::test_support
