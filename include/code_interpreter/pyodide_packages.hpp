// The Pyodide sandbox's packages on the host: which of the runtime's pyodide-lock.json packages are in the package
// directory, and fetching them from Pyodide's release location, every file checked against the lock's SHA-256
// (docs/backends/pyodide.md "Packages"). The sandbox itself never reaches a network; this runs in the host.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "code_interpreter/export.hpp"

namespace code_interpreter {

/// Where the packages are and where they come from. Every field has a default.
struct PackageFetchOptions {
  /// The package directory. Default: the one PyodideOptions::wheel_dir defaults to (`packages-<Pyodide version>` in
  /// $XDG_CACHE_HOME/code_interpreter/pyodide, else ~/.cache/code_interpreter/pyodide).
  std::optional<std::filesystem::path> package_dir;
  /// The runtime whose lock is read. Default: PyodideSandbox::default_runtime_dir().
  std::optional<std::filesystem::path> runtime_dir;
  /// A lock in pyodide-lock.json's format instead of the runtime's own (PyodideOptions::package_lock).
  std::optional<std::filesystem::path> package_lock;
  /// Where the lock's files are, a URL ending in '/' (http or https). Default: the release location of the pinned
  /// Pyodide, `https://cdn.jsdelivr.net/pyodide/v<version>/full/`; a mirror with the same file names works too.
  std::optional<std::string> base_url;
  /// The largest file accepted, counted on the bytes received. Default 1 GiB.
  std::uint64_t max_file_bytes = std::uint64_t{1} << 30;
  /// Bound on each file's download; zero or negative: none. Default 10 minutes.
  std::chrono::milliseconds file_timeout{std::chrono::minutes(10)};
  /// Called as bytes arrive: the file, the bytes it has so far (a resumed file's earlier part included), and its total
  /// size (nullopt: not known; this version never learns it, as the lock gives no sizes). Runs on the calling thread.
  std::function<void(const std::string& file_name, std::uint64_t received, std::optional<std::uint64_t> total)>
      on_progress;
  std::stop_token cancel;  ///< stops the fetch; a partial file is kept for a later resume
};

/// One package of a request's closure and what the package directory holds of it.
struct PackageStatus {
  enum class State {
    kPresent,   ///< the file is there and matches the lock's SHA-256
    kMissing,   ///< no such file
    kMismatch,  ///< the file is there but its SHA-256 is not the lock's
  };
  std::string name;
  std::string version;
  std::string file_name;
  State state = State::kMissing;
};

/// What the package directory holds of `names` and their dependencies (every package of the lock when `names` is
/// empty), dependencies first. Reads each file whole to check it. Makes no network call.
/// @throws std::invalid_argument for an unknown name or an invalid one, std::runtime_error for a lock that cannot be
///         read or is not one (naming the fault).
[[nodiscard]] CODE_INTERPRETER_EXPORT std::vector<PackageStatus> list_pyodide_packages(
    const std::vector<std::string>& names, const PackageFetchOptions& options = {});

/// Fetches `names` and their dependencies into the package directory (created when missing): a file already there
/// and matching is kept; any other is downloaded to `<file>.part` (resumed with an HTTP Range request when a part
/// is there and the server honours it), checked against the lock's SHA-256, and renamed into place, so the package
/// directory never holds a file that does not match. A file that does not match after download is deleted.
/// @return the closure's statuses afterwards, all kPresent.
/// @throws std::invalid_argument as list_pyodide_packages, and for a base_url that is not http(s) or does not end
///         in '/'; std::runtime_error naming the file and the cause (an HTTP status, a transport failure, a SHA-256
///         mismatch, a file over max_file_bytes, cancellation). Files fetched before the failure stay.
CODE_INTERPRETER_EXPORT std::vector<PackageStatus> fetch_pyodide_packages(const std::vector<std::string>& names,
                                                                          const PackageFetchOptions& options = {});

}  // namespace code_interpreter
