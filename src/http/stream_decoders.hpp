// Incremental decoders for the streamed response bodies of the HTTP backends. Both take the body in pieces split
// anywhere (inside a line, a length prefix or a UTF-8 sequence), hold at most one unfinished unit, and refuse a
// unit over their size cap. Everything they read is untrusted; they are fuzzed (tests/fuzz).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace code_interpreter::http {

enum class DecodeStatus {
  kOk,         ///< keep feeding
  kStopped,    ///< the sink asked to stop
  kOversize,   ///< a unit exceeded the cap
  kMalformed,  ///< the bytes cannot be this format (envelopes: an unknown flag bit)
};

/// Newline-delimited records (NDJSON, docs/protocols/e2b.md "The /execute stream"): each complete line, without its "\n" (and without a
/// trailing "\r"), goes to the sink. The sink returns false to stop.
class LineDecoder {
 public:
  using Sink = std::function<bool(std::string_view line)>;
  LineDecoder(Sink sink, std::size_t max_line) : sink_(std::move(sink)), max_line_(max_line) {}

  DecodeStatus feed(std::string_view bytes);
  /// At a clean end of the body: a final line without "\n" is still a line.
  DecodeStatus finish();
  [[nodiscard]] bool has_partial() const noexcept { return !pending_.empty(); }

 private:
  Sink sink_;
  std::size_t max_line_;
  std::string pending_;
};

/// Connect protocol envelopes (docs/protocols/e2b.md "Connect envelopes"): 1 flag byte, a 4-byte big-endian length, then that many bytes.
/// Flags: 0x00 message, 0x02 end-of-stream; 0x01 (compressed) is refused as malformed, as connect-web does.
class EnvelopeDecoder {
 public:
  static constexpr std::uint8_t kEndStream = 0x02;
  using Sink = std::function<bool(std::uint8_t flags, std::string_view payload)>;
  EnvelopeDecoder(Sink sink, std::size_t max_payload) : sink_(std::move(sink)), max_payload_(max_payload) {}

  DecodeStatus feed(std::string_view bytes);
  /// True when bytes of an unfinished envelope are held (a body that ends now was cut mid-envelope).
  [[nodiscard]] bool has_partial() const noexcept { return !pending_.empty(); }

 private:
  Sink sink_;
  std::size_t max_payload_;
  std::string pending_;
};

/// One envelope: flags, big-endian length, payload.
std::string encode_envelope(std::uint8_t flags, std::string_view payload);

}  // namespace code_interpreter::http
