// Fuzzes the decoder of frames from the Pyodide runtime (src/pyodide/frame.hpp), which reads hostile input.
// Properties: it never crashes or throws anything but FrameError; it never buffers a frame over its limit; every
// frame it returns re-encodes to bytes that decode to the same frame.
#include <cstring>

#include "fuzz_target.hpp"
#include "pyodide/frame.hpp"

using code_interpreter::detail::encode_frame;
using code_interpreter::detail::FrameDecoder;
using code_interpreter::detail::FrameError;

namespace {
constexpr std::size_t kLimit = 4096;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte chooses how the rest is split into reads, as a pipe may split it anywhere.
  const std::size_t step = 1 + data[0] % 97;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  FrameDecoder decoder(kLimit);
  try {
    for (std::size_t off = 0; off < input.size(); off += step) {
      decoder.push(input.substr(off, step));
      while (auto frame = decoder.next()) {
        FUZZ_CHECK(frame->header.is_object());
        FUZZ_CHECK(frame->header.at("t").is_string());
        FUZZ_CHECK(frame->body.size() <= kLimit);
        FrameDecoder again(kLimit + 1024);
        again.push(encode_frame(frame->header, frame->body));
        auto copy = again.next();
        FUZZ_CHECK(copy.has_value());
        FUZZ_CHECK(copy->header == frame->header);
        FUZZ_CHECK(copy->body == frame->body);
      }
      FUZZ_CHECK(decoder.buffered() <= input.size());
    }
  } catch (const FrameError&) {
    // A malformed frame is reported, never acted on.
  }
  return 0;
}

std::vector<std::string> fuzz_seeds() {
  std::vector<std::string> seeds;
  const nlohmann::json headers[] = {
      {{"t", "out"}, {"id", 1}, {"s", 1}},
      {{"t", "result"}, {"id", 2}, {"status", "ok"}, {"value", "42"}},
      {{"t", "fs"}, {"id", 3}, {"ok", false}, {"code", "ENOENT"}, {"message", "x"}},
      {{"t", "ready"}, {"protocol", 1}, {"pyodide", "314.0.7"}},
  };
  for (std::size_t i = 0; i < std::size(headers); ++i) {
    std::string s(1, static_cast<char>(i * 13));
    s += encode_frame(headers[i], i % 2 ? std::string_view("line\n") : std::string_view("\0\xff\x80", 3));
    s += encode_frame(headers[(i + 1) % std::size(headers)]);
    seeds.push_back(s);
  }
  seeds.push_back(std::string("\x05\x7f\xff\xff\xff\0\0\0\0", 9));  // an oversize length
  seeds.push_back(std::string("\x01\0\0\0\x02\0\0\0\0[]", 11));     // a header that is not an object
  return seeds;
}
