#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "core/base64.hpp"
#include "../support/bytes.hpp"

using code_interpreter::test_support::all_byte_values;
using code_interpreter::detail::base64_decode;
using code_interpreter::detail::base64_encode;

namespace {

}  // namespace

TEST_CASE("base64_encode produces the RFC 4648 section 10 test vectors", "[base64]") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foob") == "Zm9vYg==");
  CHECK(base64_encode("fooba") == "Zm9vYmE=");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
}

TEST_CASE("base64_decode reads the RFC 4648 section 10 test vectors", "[base64]") {
  CHECK(base64_decode("") == std::optional<std::string>(""));
  CHECK(base64_decode("Zg==") == std::optional<std::string>("f"));
  CHECK(base64_decode("Zm8=") == std::optional<std::string>("fo"));
  CHECK(base64_decode("Zm9v") == std::optional<std::string>("foo"));
  CHECK(base64_decode("Zm9vYg==") == std::optional<std::string>("foob"));
  CHECK(base64_decode("Zm9vYmE=") == std::optional<std::string>("fooba"));
  CHECK(base64_decode("Zm9vYmFy") == std::optional<std::string>("foobar"));
}

TEST_CASE("base64 uses the standard alphabet: '+' and '/' for 62 and 63, not the URL-safe '-' and '_'", "[base64]") {
  const std::string bytes("\xfb\xff\xbf", 3);
  CHECK(base64_encode(bytes) == "+/+/");
  CHECK(base64_decode("+/+/") == std::optional<std::string>(bytes));
  CHECK(base64_decode("-_-_") == std::nullopt);
}

TEST_CASE("base64 encodes bytes as unsigned: NUL and high bytes survive", "[base64]") {
  const std::string bytes("\x00\xff\x80", 3);
  CHECK(base64_encode(bytes) == "AP+A");
  CHECK(base64_decode("AP+A") == std::optional<std::string>(bytes));
}

TEST_CASE("every byte value survives encode then decode, at every position in a 3-byte group", "[base64]") {
  const std::string all = all_byte_values();
  for (std::size_t shift = 0; shift < 3; ++shift) {
    const std::string input = std::string(shift, 'x') + all;
    CAPTURE(shift);
    CHECK(base64_decode(base64_encode(input)) == std::optional<std::string>(input));
  }
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    CAPTURE(b);
    CHECK(base64_decode(base64_encode(one)) == std::optional<std::string>(one));
  }
}

TEST_CASE("base64_decode accepts unpadded input", "[base64]") {
  CHECK(base64_decode("Zg") == std::optional<std::string>("f"));
  CHECK(base64_decode("Zm8") == std::optional<std::string>("fo"));
  CHECK(base64_decode("Zm9vYg") == std::optional<std::string>("foob"));
  CHECK(base64_decode("Zm9vYmE") == std::optional<std::string>("fooba"));
}

TEST_CASE("base64_decode rejects characters outside the alphabet, whitespace included", "[base64]") {
  CHECK(base64_decode("Zm9v!") == std::nullopt);
  CHECK(base64_decode("Zm 9v") == std::nullopt);
  CHECK(base64_decode("Zm9v\n") == std::nullopt);
  CHECK(base64_decode("Zm9v\r\n") == std::nullopt);
  CHECK(base64_decode(std::string_view("Zm\0v", 4)) == std::nullopt);
  CHECK(base64_decode("Zm9\x80") == std::nullopt);
}

TEST_CASE("base64_decode rejects '=' anywhere but at the end", "[base64]") {
  CHECK(base64_decode("Zg==Zg==") == std::nullopt);
  CHECK(base64_decode("Z=g=") == std::nullopt);
  CHECK(base64_decode("=Zm9") == std::nullopt);
  CHECK(base64_decode("Zm=v") == std::nullopt);
}

TEST_CASE("base64_decode rejects a length that no encoding has (one character left over)", "[base64]") {
  CHECK(base64_decode("Z") == std::nullopt);
  CHECK(base64_decode("Zm9vY") == std::nullopt);
  CHECK(base64_decode("Zm9vY=") == std::nullopt);
  CHECK(base64_decode("Zm9vY==") == std::nullopt);
}

TEST_CASE("base64_decode rejects padding that does not complete the last 4-character group", "[base64]") {
  CHECK(base64_decode("=") == std::nullopt);
  CHECK(base64_decode("==") == std::nullopt);
  CHECK(base64_decode("===") == std::nullopt);
  CHECK(base64_decode("====") == std::nullopt);
  CHECK(base64_decode("Zg=") == std::nullopt);
  CHECK(base64_decode("Zg===") == std::nullopt);
  CHECK(base64_decode("Zm8==") == std::nullopt);
  CHECK(base64_decode("Zm9v=") == std::nullopt);
  CHECK(base64_decode("Zm9v====") == std::nullopt);
}
