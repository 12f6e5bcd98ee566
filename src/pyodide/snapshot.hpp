// Memory snapshots of a freshly loaded Pyodide runtime: where they live, what they are keyed by, and how a file is
// checked before a runtime restores it (docs/backends/pyodide.md "Snapshots", docs/protocols/pyodide.md "Memory snapshots (private API, pinned by the tests)").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "pyodide/runtime.hpp"

namespace code_interpreter::detail {

/// The file's first 80 bytes: magic, the 64 lowercase hex digits of the image's SHA-256, 7 spaces, '\n'; the
/// image follows, at an offset that keeps Pyodide's typed-array views of it aligned.
inline constexpr std::string_view kSnapshotMagic = "CISNAP1 ";
inline constexpr std::size_t kSnapshotHeaderBytes = 80;
/// Larger images are refused (today's is 30 MiB).
inline constexpr std::size_t kMaxSnapshotBytes = std::size_t{256} << 20;

/// What shapes an image: the library's Pyodide and Deno versions, the host protocol, and the bytes of the host
/// scripts and lock files of `rt` (a different Pyodide build or worker makes a different key). 64 hex digits.
std::string snapshot_key(const Runtime& rt);

/// The cache directory: `dir` when given (made absolute against the working directory); else
/// `$XDG_CACHE_HOME/code_interpreter/pyodide`, else `$HOME/.cache/code_interpreter/pyodide`; nullopt when neither
/// variable is set (or set to a relative path).
std::optional<std::filesystem::path> snapshot_cache_dir(const std::optional<std::filesystem::path>& dir);

/// `<cache>/snapshot-<key>.bin`. The base image made at build time (tools/make_snapshot.cpp) has this name in the
/// runtime directory itself, and is installed with it.
std::filesystem::path snapshot_path(const std::filesystem::path& cache, const std::string& key);

/// Whether `file` holds a well-formed image whose SHA-256 matches its header, and was not marked unusable. A file
/// checked once in this process, whatever the answer, is not read again while its size and modification time stay
/// the same; a file whose 80-byte header is not an image's is not read further.
bool snapshot_valid(const std::filesystem::path& file);

/// A runtime restoring `file` failed: snapshot_valid answers false for it in this process from now on, while its
/// size and modification time stay the same. For an image the library may not remove (the one installed beside
/// the runtime); an image in the cache is removed instead, and made again.
void mark_snapshot_unusable(const std::filesystem::path& file);

/// Writes `image` to `file` atomically (a temporary file in the same directory, renamed over it), creating the
/// directory, and counts the file as checked by snapshot_valid. @throws std::filesystem::filesystem_error or std::system_error when it cannot.
void write_snapshot(const std::filesystem::path& file, std::string_view image);

}  // namespace code_interpreter::detail
