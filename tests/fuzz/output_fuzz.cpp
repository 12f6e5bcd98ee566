// Fuzzes the output path (src/core/output.hpp and utf8.hpp) with arbitrary bytes split arbitrarily.
// Properties: the callbacks' concatenation equals the whole input repaired as Python's decode("utf-8", "replace");
// the kept text is a prefix of it and at most the cap; every piece is at most 64 KiB and valid UTF-8.
#include "core/output.hpp"
#include "core/utf8.hpp"
#include "fuzz_target.hpp"

using code_interpreter::detail::OutputStream;
using code_interpreter::detail::utf8_replacing;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t step = 1 + data[0] % 61;
  const std::size_t cap = data[1] % 2 ? 1u << 20 : data[1];
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  std::string streamed;
  std::size_t pieces = 0;
  const std::function<void(std::string_view)> callback = [&](std::string_view piece) {
    FUZZ_CHECK(!piece.empty());
    FUZZ_CHECK(piece.size() <= OutputStream::kMaxPiece);
    FUZZ_CHECK(utf8_replacing(piece) == piece);  // already valid
    streamed += piece;
    ++pieces;
  };
  OutputStream out(&callback, cap);
  for (std::size_t off = 0; off < input.size(); off += step) out.feed(input.substr(off, step));
  out.finish();
  const std::string expected = utf8_replacing(input);
  FUZZ_CHECK(streamed == expected);
  FUZZ_CHECK(out.text().size() <= cap);
  FUZZ_CHECK(expected.compare(0, out.text().size(), out.text()) == 0);
  FUZZ_CHECK(out.truncated() == (expected.size() > cap));
  return 0;
}

std::vector<std::string> fuzz_seeds() {
  return {std::string("\x03\x01hello\nworld\n", 14), std::string("\x07\x01\xe2\x82\xac\xf0\x9f\x98\x80\xff\n", 12),
          std::string("\x01\x10") + std::string(200, 'a') + "\xed\xa0\x80\xc0\x80\n",
          std::string("\x02\x01") + std::string(70000, 'z')};
}
