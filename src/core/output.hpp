// Turns a raw output byte stream into the line callbacks and the capped, valid-UTF-8 text of an ExecutionResult.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace code_interpreter::detail {

/// How long a partial line the program flushed is held for the rest of its line before it is delivered as a piece
/// (docs/errors.md "Output": the flushed-partial-line rule), on every backend that sees output while it runs.
inline constexpr std::chrono::milliseconds kPartialLineDelay{50};

/// One output stream of one execution.
///
/// `feed` takes bytes as they arrive in pieces of any size; every complete line (with its "\n") is decoded
/// (ill-formed UTF-8 replaced) and appended to `text()` and handed to the callback; a line that grows past
/// `kMaxPiece` bytes is delivered in pieces cut where decoding is unaffected. `flush` delivers a partial line the
/// program flushed; `finish` delivers the last partial line. Text beyond `cap` bytes is not kept (`truncated()`
/// becomes true) but still reaches the callback.
/// An exception from the callback propagates out of feed/finish; the text is already updated when it does.
class OutputStream {
 public:
  static constexpr std::size_t kMaxPiece = 64 * 1024;

  OutputStream(const std::function<void(std::string_view)>* callback, std::size_t cap)
      : callback_(callback), cap_(cap) {}

  void feed(std::string_view bytes);
  /// Delivers the partial line held so far (without a trailing incomplete character), as the program flushed it:
  /// the rest of the line follows as its own piece. Called when the program flushed and wrote no more for a while.
  void flush();
  void finish();
  /// Whether a partial line is held (bytes after the last newline delivered).
  [[nodiscard]] bool holding() const noexcept { return !pending_.empty(); }
  /// Stops calling the callback (after it threw); text is still collected.
  void silence() noexcept { callback_ = nullptr; }

  [[nodiscard]] const std::string& text() const noexcept { return text_; }
  [[nodiscard]] std::string take_text() noexcept { return std::move(text_); }
  [[nodiscard]] bool truncated() const noexcept { return truncated_; }

 private:
  void emit(std::string_view raw);

  const std::function<void(std::string_view)>* callback_;
  std::size_t cap_;
  std::string pending_;  // raw bytes of the line being built
  std::string text_;
  bool truncated_ = false;
};

}  // namespace code_interpreter::detail
