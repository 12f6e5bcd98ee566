// The guards every backend applies to what a sandbox sends back about its files: a byte cap counted on the bytes
// received (never on a size the sandbox reports) and the checks on list_files entries (docs/errors.md, "File
// guards").
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"

namespace code_interpreter::detail {

/// Counts the bytes of one transfer against its cap. `add` returns false once more than `cap` bytes were seen,
/// and stays false.
class ByteCap {
 public:
  explicit ByteCap(std::uint64_t cap) noexcept : cap_(cap) {}
  [[nodiscard]] bool add(std::uint64_t n) noexcept {
    if (n > cap_ - std::min(cap_, received_)) over_ = true;
    received_ = n > UINT64_MAX - received_ ? UINT64_MAX : received_ + n;
    return !over_;
  }
  [[nodiscard]] bool over() const noexcept { return over_; }
  [[nodiscard]] std::uint64_t cap() const noexcept { return cap_; }
  /// Bytes seen so far (saturating).
  [[nodiscard]] std::uint64_t received() const noexcept { return received_; }
  /// How many more bytes fit before the cap is passed, plus one (asking for that many shows whether it is).
  [[nodiscard]] std::uint64_t room_plus_one() const noexcept {
    if (over_) return 0;
    const std::uint64_t room = cap_ - received_;
    return room == UINT64_MAX ? UINT64_MAX : room + 1;
  }

 private:
  std::uint64_t cap_;
  std::uint64_t received_ = 0;
  bool over_ = false;
};

/// "<op> '<path>': the file is over the cap of N bytes" (never any of the file's content).
std::string over_cap_message(std::string_view op, std::string_view path, std::uint64_t cap);

/// The error read_file throws for a file over its cap: SandboxExecutionError, stage download, kQuotaExceeded.
SandboxExecutionError over_cap_error(std::string_view path, std::uint64_t cap);

/// Logs the warning download_file / download_file_to give for a file over its cap.
void warn_over_cap(std::string_view op, std::string_view path, std::uint64_t cap);

/// Whether `name` may be an entry of a listing: not empty, no '/', '\\' or NUL, not "." or "..".
bool valid_entry_name(std::string_view name) noexcept;

/// Whether a listing entry's `path`, when the backend sent one, is `dir` + '/' + `name`: `dir` with its trailing
/// slashes removed (kept for "/"); a relative `dir` may come back made absolute, so then only the tail must match.
bool entry_path_matches(std::string_view dir, std::string_view name, std::string_view path);

/// The FileInfo of `path` from the stat answer a sandbox sent (Pyodide's runtime, or the Python AgentCore runs):
/// an object with "type" ("file", "directory", "symlink"; any other string is kOther), "size" (bytes, unsigned),
/// "mtime_ms" (milliseconds since the Unix epoch, an integer; clamped to what `system_clock` holds, about the years
/// 1678 to 2262) and "mode" (unsigned; its permission bits, & 07777,
/// are kept). `name` is the last component of `path` (trailing slashes ignored), `path` is `path` as given.
/// @return nullopt when `stat` is not such an object: the caller throws its own protocol error.
std::optional<FileInfo> file_info_from_stat(std::string_view path, const nlohmann::json& stat);

/// Drops the entries of a `dir` listing that fail the checks above, logging one warning with the count.
/// @return how many were dropped.
std::size_t drop_hostile_entries(std::vector<FileInfo>& entries, std::string_view dir);

}  // namespace code_interpreter::detail
