#include "core/random_id.hpp"

#include <random>

namespace code_interpreter::detail {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_hex(std::string& out, unsigned byte) {
  out += kHex[(byte >> 4) & 15];
  out += kHex[byte & 15];
}

}  // namespace

std::string random_hex(std::size_t bytes) {
  std::random_device device;
  std::string out;
  out.reserve(2 * bytes);
  for (std::size_t i = 0; i < bytes; ++i) append_hex(out, static_cast<unsigned>(device()) & 0xFF);
  return out;
}

std::string uuid4() {
  std::random_device device;
  unsigned char b[16];
  for (auto& byte : b) byte = static_cast<unsigned char>(device() & 0xFF);
  b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);  // variant 10
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    append_hex(out, b[i]);
  }
  return out;
}

}  // namespace code_interpreter::detail
