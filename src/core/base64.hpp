// Standard base64 (RFC 4648 §4, with '=' padding), for the byte fields of JSON wire formats (E2B envd process
// output, Bedrock blobs). No library among the project's dependencies offers it; it is fuzzed (tests/fuzz).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace code_interpreter::detail {

std::string base64_encode(std::string_view bytes);

/// Decodes padded or unpadded standard base64. nullopt for any other character, a stray '=', or a length that
/// cannot come from an encoding (one leftover character).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace code_interpreter::detail
