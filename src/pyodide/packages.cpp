#include "pyodide/packages.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "core/digest.hpp"
#include "core/untrusted.hpp"
#include "pyodide/runtime.hpp"
#include "pyodide/snapshot.hpp"

namespace code_interpreter::detail {
namespace fs = std::filesystem;

std::string normalize_distribution(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '.' || c == '_') {
      if (out.empty() || out.back() != '_') out += '_';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

bool valid_distribution_name(std::string_view name) {
  if (name.empty() || name.size() > 200) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

namespace {

bool is_sha256_hex(std::string_view s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string string_field(const nlohmann::json& entry, const std::string& key, const char* field) {
  const auto it = entry.find(field);
  if (it == entry.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    throw PackageLockError("pyodide-lock.json: package '" + key + "' has no string '" + field + "'");
  }
  return it->get<std::string>();
}

std::vector<std::string> string_list(const nlohmann::json& entry, const std::string& key, const char* field) {
  std::vector<std::string> out;
  const auto it = entry.find(field);
  if (it == entry.end()) return out;
  if (!it->is_array()) throw PackageLockError("pyodide-lock.json: package '" + key + "' has a '" + field + "' that is not a list");
  for (const auto& v : *it) {
    if (!v.is_string()) {
      throw PackageLockError("pyodide-lock.json: package '" + key + "' has a '" + field + "' entry that is not a string");
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

PackageLock PackageLock::parse(std::string_view json_text) {
  const nlohmann::json doc = parse_untrusted_json(json_text);
  if (doc.is_discarded()) throw PackageLockError("pyodide-lock.json: not a JSON document");
  if (!doc.is_object() || !doc.contains("packages") || !doc["packages"].is_object()) {
    throw PackageLockError("pyodide-lock.json: no 'packages' object");
  }
  PackageLock lock;
  for (const auto& [raw_key, entry] : doc["packages"].items()) {
    // The key is the lock's word, named in errors: control characters shown as '?', cut after 64 bytes.
    std::string key = raw_key.substr(0, 64);
    for (auto& c : key)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    if (!entry.is_object()) throw PackageLockError("pyodide-lock.json: package '" + key + "' is not an object");
    LockedPackage p;
    p.name = string_field(entry, key, "name");
    if (!valid_distribution_name(p.name)) throw PackageLockError("pyodide-lock.json: package '" + key + "' has an invalid name");
    p.version = string_field(entry, key, "version");
    // Printed by `packages list` and named in errors: no control character may ride along (a tab would forge a
    // column, an escape sequence reach the terminal).
    if (std::any_of(p.version.begin(), p.version.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      throw PackageLockError("pyodide-lock.json: package '" + key + "' has a version with a control character");
    }
    p.file_name = string_field(entry, key, "file_name");
    if (p.file_name.find('/') != std::string::npos || p.file_name.find('\\') != std::string::npos ||
        p.file_name == "." || p.file_name == ".." ||
        std::any_of(p.file_name.begin(), p.file_name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      throw PackageLockError("pyodide-lock.json: package '" + key + "' has a file_name that is not a plain file name");
    }
    p.sha256 = string_field(entry, key, "sha256");
    if (!is_sha256_hex(p.sha256)) {
      throw PackageLockError("pyodide-lock.json: package '" + key + "' has a sha256 that is not 64 lowercase hex digits");
    }
    const auto type = entry.find("package_type");
    p.package_type = type != entry.end() && type->is_string() ? type->get<std::string>() : "package";
    p.depends = string_list(entry, key, "depends");
    p.imports = string_list(entry, key, "imports");
    const auto norm = normalize_distribution(p.name);
    if (!lock.packages_.emplace(norm, std::move(p)).second) {
      throw PackageLockError("pyodide-lock.json: package '" + key + "' is named twice");
    }
  }
  for (const auto& [norm, p] : lock.packages_) {
    for (const auto& d : p.depends) {
      if (lock.find(d) == nullptr) {
        throw PackageLockError("pyodide-lock.json: package '" + p.name + "' depends on '" + d +
                               "', which the lock does not hold");
      }
    }
  }
  return lock;
}

PackageLock PackageLock::read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw PackageLockError("cannot read the package lock '" + file.string() + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

const LockedPackage* PackageLock::find(std::string_view name) const {
  const auto it = packages_.find(normalize_distribution(name));
  return it == packages_.end() ? nullptr : &it->second;
}

std::vector<const LockedPackage*> PackageLock::closure(const std::vector<std::string>& names) const {
  std::vector<const LockedPackage*> order;
  std::set<const LockedPackage*> entered;
  // Depth-first, dependencies first; a package entered but not yet placed closes a cycle, which is cut there.
  std::function<void(const LockedPackage&)> visit = [&](const LockedPackage& p) {
    if (!entered.insert(&p).second) return;
    for (const auto& d : p.depends) visit(*find(d));  // parse() checked that every dependency is held
    order.push_back(&p);
  };
  for (const auto& n : names) {
    const auto* p = find(n);
    if (p == nullptr) throw PackageLockError("unknown package '" + n + "'");
    visit(*p);
  }
  return order;
}

PackageFileState check_package_file(const fs::path& dir, const LockedPackage& package) {
  std::error_code ec;
  const auto file = dir / package.file_name;
  if (!fs::is_regular_file(file, ec)) return PackageFileState::kMissing;
  const auto digest = sha256_file_hex(file);
  if (!digest) return PackageFileState::kMissing;
  return *digest == package.sha256 ? PackageFileState::kOk : PackageFileState::kMismatch;
}

fs::path runtime_lock_file(const fs::path& runtime_dir) {
  return runtime_dir / "node_modules" / "pyodide" / "pyodide-lock.json";
}

std::optional<fs::path> default_package_dir() {
  auto cache = snapshot_cache_dir(std::nullopt);
  if (!cache) return std::nullopt;
  return *cache / (std::string("packages-") + kPyodideVersion);
}

}  // namespace code_interpreter::detail
