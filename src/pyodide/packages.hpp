// Packages by name for the Pyodide sandbox: the pinned runtime's pyodide-lock.json read into a table, a request's
// dependency closure resolved from it, and each file checked against the SHA-256 the lock gives before it is loaded
// (docs/backends/pyodide.md "Packages"; the lock's format: docs/protocols/pyodide.md "pyodide-lock.json").
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace code_interpreter::detail {

/// A distribution name as PEP 503 compares them: lower case, runs of '-', '_' and '.' as one '_'.
std::string normalize_distribution(std::string_view name);
/// 1..200 bytes of letters, digits, '-', '_' and '.'.
bool valid_distribution_name(std::string_view name);

/// One package of the lock: what to load and how to check it.
struct LockedPackage {
  std::string name;       ///< as the lock spells it ("python-dateutil")
  std::string version;
  std::string file_name;  ///< a plain file name (checked: no directory part)
  std::string sha256;     ///< 64 lowercase hex digits (checked)
  std::string package_type;  ///< "package" or "shared_library"
  std::vector<std::string> depends;  ///< names of other packages of the lock (checked: each is in the lock)
  std::vector<std::string> imports;  ///< top-level modules it provides
};

/// The lock could not be read, or a request names a package it does not hold.
class PackageLockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// pyodide-lock.json as a table keyed by normalized name.
class PackageLock {
 public:
  /// @throws PackageLockError naming the package and field for a document that is not a lock: not JSON, no
  ///         "packages" object, a package without a string name/version/file_name, a sha256 that is not 64 hex
  ///         digits, a file_name with a '/' or that is "." or "..", a dependency the lock does not hold.
  static PackageLock parse(std::string_view json_text);
  /// parse() of a file. @throws PackageLockError (also when the file cannot be read).
  static PackageLock read(const std::filesystem::path& file);

  /// The package `name` names (compared normalized), or nullptr.
  [[nodiscard]] const LockedPackage* find(std::string_view name) const;
  /// Every package `names` need, each once, every package after its dependencies (a dependency cycle is cut where
  /// it closes). @throws PackageLockError "unknown package '<name>'" for a name the lock does not hold.
  [[nodiscard]] std::vector<const LockedPackage*> closure(const std::vector<std::string>& names) const;
  [[nodiscard]] const std::map<std::string, LockedPackage>& packages() const noexcept { return packages_; }

 private:
  std::map<std::string, LockedPackage> packages_;  // by normalized name
};

/// What check_package_file found.
enum class PackageFileState { kOk, kMissing, kMismatch };

/// Reads `dir / package.file_name` whole and compares its SHA-256 with the lock's.
[[nodiscard]] PackageFileState check_package_file(const std::filesystem::path& dir, const LockedPackage& package);

/// The lock of the runtime in `runtime_dir`: node_modules/pyodide/pyodide-lock.json.
[[nodiscard]] std::filesystem::path runtime_lock_file(const std::filesystem::path& runtime_dir);

/// Where packages are kept when PyodideOptions::wheel_dir is not set: `packages-<Pyodide version>` in the snapshot
/// cache directory ($XDG_CACHE_HOME/code_interpreter/pyodide, else $HOME/.cache/code_interpreter/pyodide); nullopt
/// when neither variable is an absolute path.
[[nodiscard]] std::optional<std::filesystem::path> default_package_dir();

}  // namespace code_interpreter::detail
