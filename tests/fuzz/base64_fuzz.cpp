// Fuzzes base64 (src/core/base64.hpp), which decodes hostile output bytes of envd's process stream.
// Properties: decoding never crashes and yields exactly 3 bytes per 4 characters (fewer for the last group);
// what decodes re-encodes to text that decodes to the same bytes; any bytes survive encode then decode.
#include "core/base64.hpp"
#include "fuzz_target.hpp"

using code_interpreter::detail::base64_decode;
using code_interpreter::detail::base64_encode;

namespace {

bool in_alphabet(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  const auto decoded = base64_decode(input);
  if (decoded) {
    std::string_view text = input;
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
    FUZZ_CHECK(input.size() - text.size() <= 2);
    for (const char c : text) FUZZ_CHECK(in_alphabet(c));
    FUZZ_CHECK(text.size() % 4 != 1);
    FUZZ_CHECK(decoded->size() == text.size() * 6 / 8);
    FUZZ_CHECK(base64_decode(base64_encode(*decoded)) == decoded);
  }

  const std::string encoded = base64_encode(input);
  FUZZ_CHECK(encoded.size() == (input.size() + 2) / 3 * 4);
  FUZZ_CHECK(base64_decode(encoded) == std::optional<std::string>(input));
  // Unpadded, as some encoders write it, too.
  std::string_view unpadded = encoded;
  while (!unpadded.empty() && unpadded.back() == '=') unpadded.remove_suffix(1);
  FUZZ_CHECK(base64_decode(unpadded) == std::optional<std::string>(input));
  return 0;
}

std::vector<std::string> fuzz_seeds() {
  return {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYmFy", "Zm9vYg", "aGkK", "+/+/", "Zg==Zg==", "===", "Z", "-_",
          std::string("\0\xff\x80", 3), "QR==", "ZXJyCg==\n"};
}
