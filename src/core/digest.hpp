// Message digests (OpenSSL's libcrypto).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace code_interpreter::detail {

/// SHA-256 of `data` as 64 lowercase hex digits. @throws std::bad_alloc when OpenSSL cannot compute it.
std::string sha256_hex(std::string_view data);

/// Computes SHA-256 over a data stream fed in pieces, for files too large to hold (package wheels).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view piece);
  /// The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string finish_hex();

 private:
  void* ctx_;  // EVP_MD_CTX
};

/// SHA-256 of a whole file as 64 lowercase hex digits, read in 1 MiB pieces; nullopt when it cannot be read.
std::optional<std::string> sha256_file_hex(const std::filesystem::path& file);

}  // namespace code_interpreter::detail
