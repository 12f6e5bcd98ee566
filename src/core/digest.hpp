// Message digests (OpenSSL's libcrypto).
#pragma once

#include <string>
#include <string_view>

namespace code_interpreter::detail {

/// SHA-256 of `data` as 64 lowercase hex digits. @throws std::bad_alloc when OpenSSL cannot compute it.
std::string sha256_hex(std::string_view data);

}  // namespace code_interpreter::detail
