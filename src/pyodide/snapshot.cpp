#include "pyodide/snapshot.hpp"

#include "core/digest.hpp"
#include "core/temporary_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <system_error>
#include <tuple>

namespace code_interpreter::detail {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_all(const fs::path& file, std::size_t max) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec || size > max) return std::nullopt;
  std::string data(static_cast<std::size_t>(size), '\0');
  if (!in.read(data.data(), static_cast<std::streamsize>(data.size()))) return std::nullopt;
  return data;
}

// Files found valid in this process, and files that did not check or that a restore failed from, by path, with the
// size and modification time they had then.
std::mutex g_checked_mu;
std::map<fs::path, std::tuple<std::uintmax_t, fs::file_time_type>> g_checked;
std::map<fs::path, std::tuple<std::uintmax_t, fs::file_time_type>> g_unusable;

}  // namespace

std::string snapshot_key(const Runtime& rt) {
  std::string material = "code_interpreter pyodide snapshot\n";
  material += std::string(kPyodideVersion) + '\n' + kDenoVersion + '\n' + std::to_string(kHostProtocolVersion) + '\n';
  for (const char* name : {"python_worker.mjs", "host.mjs", "package-lock.json", "node_modules/pyodide/package.json",
                           "node_modules/pyodide/pyodide-lock.json"}) {
    const auto bytes = read_all(rt.dir / name, std::size_t{64} << 20);
    material += name;
    material += '\n';
    material += sha256_hex(bytes.value_or(std::string{}));
    material += '\n';
  }
  return sha256_hex(material);
}

std::optional<fs::path> snapshot_cache_dir(const std::optional<fs::path>& dir) {
  // Absolute: the runtime resolves the image's path from "/", the library from its own working directory.
  if (dir) {
    std::error_code ec;
    auto absolute = fs::absolute(*dir, ec);
    return ec ? *dir : absolute;
  }
  for (const auto& [var, tail] : {std::pair{"XDG_CACHE_HOME", "code_interpreter/pyodide"},
                                  std::pair{"HOME", ".cache/code_interpreter/pyodide"}}) {
    const char* value = std::getenv(var);
    if (value != nullptr && value[0] == '/') return fs::path(value) / tail;
  }
  return std::nullopt;
}

fs::path snapshot_path(const fs::path& cache, const std::string& key) { return cache / ("snapshot-" + key + ".bin"); }

bool snapshot_valid(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return false;
  const auto mtime = fs::last_write_time(file, ec);
  if (ec) return false;
  {
    std::lock_guard lock(g_checked_mu);
    if (const auto bad = g_unusable.find(file); bad != g_unusable.end() && bad->second == std::tuple{size, mtime}) {
      return false;
    }
    const auto it = g_checked.find(file);
    if (it != g_checked.end() && it->second == std::tuple{size, mtime}) return true;
  }
  // A file that does not check is not read again either, until it changes.
  const auto refuse = [&] {
    std::lock_guard lock(g_checked_mu);
    g_unusable[file] = {size, mtime};
    return false;
  };
  {
    // The header first: a file that is not an image is not read whole.
    char header[kSnapshotHeaderBytes];
    std::ifstream in(file, std::ios::binary);
    if (!in.read(header, sizeof header) || std::string_view(header, kSnapshotMagic.size()) != kSnapshotMagic ||
        header[kSnapshotHeaderBytes - 1] != '\n') {
      return refuse();
    }
  }
  const auto data = read_all(file, kMaxSnapshotBytes + kSnapshotHeaderBytes);
  if (!data || data->size() <= kSnapshotHeaderBytes || data->compare(0, kSnapshotMagic.size(), kSnapshotMagic) != 0 ||
      (*data)[kSnapshotHeaderBytes - 1] != '\n') {
    return refuse();
  }
  const std::string_view image = std::string_view(*data).substr(kSnapshotHeaderBytes);
  if (std::string_view(*data).substr(kSnapshotMagic.size(), 64) != sha256_hex(image)) return refuse();
  std::lock_guard lock(g_checked_mu);
  g_checked[file] = {size, mtime};
  return true;
}

void mark_snapshot_unusable(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return;
  const auto mtime = fs::last_write_time(file, ec);
  if (ec) return;
  std::lock_guard lock(g_checked_mu);
  g_checked.erase(file);
  g_unusable[file] = {size, mtime};
}

void write_snapshot(const fs::path& file, std::string_view image) {
  fs::create_directories(file.parent_path());
  // write_via_temporary says only whether the file is in place; errno, taken where each step failed, says why.
  bool opened = false;
  int write_error = 0;
  const bool written = write_via_temporary(file, [&](std::ofstream& out) {
    opened = true;
    out << kSnapshotMagic << sha256_hex(image) << "       \n";
    out.write(image.data(), static_cast<std::streamsize>(image.size()));
    out.flush();
    if (!out) write_error = errno ? errno : EIO;
    return static_cast<bool>(out);
  });
  if (!written) {
    const int error = write_error != 0 ? write_error : (errno ? errno : EIO);
    const char* step = !opened ? "creating a temporary file for " : write_error != 0 ? "writing " : "renaming into ";
    throw std::system_error(error, std::generic_category(), step + file.string());
  }
  // Written from the image just hashed: snapshot_valid need not read it back.
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  const auto mtime = fs::last_write_time(file, ec);
  if (!ec) {
    std::lock_guard lock(g_checked_mu);
    g_unusable.erase(file);
    g_checked[file] = {size, mtime};
  }
}

}  // namespace code_interpreter::detail
