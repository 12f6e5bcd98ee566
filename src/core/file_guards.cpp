#include "core/file_guards.hpp"

#include <algorithm>
#include <chrono>

#include "code_interpreter/logging.hpp"
#include "core/untrusted.hpp"

namespace code_interpreter::detail {

std::string over_cap_message(std::string_view op, std::string_view path, std::uint64_t cap) {
  return std::string(op) + " '" + std::string(path) + "': the file is over the cap of " + std::to_string(cap) +
         " bytes (max_bytes)";
}

SandboxExecutionError over_cap_error(std::string_view path, std::uint64_t cap) {
  return SandboxExecutionError(over_cap_message("read_file", path, cap), Stage::kDownload, ErrorKind::kQuotaExceeded);
}

std::optional<FileInfo> file_info_from_stat(std::string_view path, const nlohmann::json& stat) {
  if (!stat.is_object()) return std::nullopt;
  const auto type = stat.find("type");
  const auto size = stat.find("size");
  const auto mtime = stat.find("mtime_ms");
  const auto mode = stat.find("mode");
  if (type == stat.end() || !type->is_string() || size == stat.end() || !size->is_number_unsigned() ||
      mtime == stat.end() || !mtime->is_number_integer() || mode == stat.end() || !mode->is_number_unsigned())
    return std::nullopt;
  FileInfo info;
  std::string_view trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
  const auto slash = trimmed.find_last_of('/');
  info.name = std::string(slash == std::string_view::npos ? trimmed : trimmed.substr(slash + 1));
  info.path = std::string(path);
  const auto& t = type->get_ref<const std::string&>();
  info.type = t == "file"        ? FileType::kFile
              : t == "directory" ? FileType::kDirectory
              : t == "symlink"   ? FileType::kSymlink
                                 : FileType::kOther;
  info.is_directory = info.type == FileType::kDirectory;
  info.size = size->get<std::uint64_t>();
  info.modified = clamped_system_time(std::chrono::milliseconds(
      mtime->is_number_unsigned() && mtime->get<std::uint64_t>() > std::uint64_t(INT64_MAX) ? INT64_MAX
                                                                                           : mtime->get<std::int64_t>()));
  info.permissions = static_cast<std::uint32_t>(mode->get<std::uint64_t>() & 07777);
  return info;
}

void warn_over_cap(std::string_view op, std::string_view path, std::uint64_t cap) {
  logger()->warn("{}", over_cap_message(op, path, cap));
}

bool valid_entry_name(std::string_view name) noexcept {
  if (name.empty() || name == "." || name == "..") return false;
  return name.find_first_of(std::string_view("/\\\0", 3)) == std::string_view::npos;
}

namespace {
std::string collapse_slashes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out += c;
  }
  return out;
}
}  // namespace

bool entry_path_matches(std::string_view dir_view, std::string_view name, std::string_view path_view) {
  if (path_view.empty()) return true;  // the backend sent no path: the name alone was checked
  std::string dir = collapse_slashes(dir_view);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const bool absolute = !dir.empty() && dir.front() == '/';
  while (dir.rfind("./", 0) == 0) dir.erase(0, 2);
  if (dir == ".") dir.clear();
  const std::string expected = dir.empty() ? std::string(name) : (dir == "/" ? dir : dir + "/") + std::string(name);
  const std::string path = collapse_slashes(path_view);
  if (path == expected) return true;
  if (absolute) return false;
  // A relative dir may come back resolved against the sandbox's working directory.
  const std::string tail = "/" + expected;
  return path.size() > tail.size() && path.front() == '/' &&
         path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
}

std::size_t drop_hostile_entries(std::vector<FileInfo>& entries, std::string_view dir) {
  const auto before = entries.size();
  std::erase_if(entries, [&](const FileInfo& e) {
    return !valid_entry_name(e.name) || !entry_path_matches(dir, e.name, e.path);
  });
  const auto dropped = before - entries.size();
  if (dropped > 0) {
    logger()->warn("list_files '{}': dropped {} {} with an invalid name or path", std::string(dir), dropped,
                   dropped == 1 ? "entry" : "entries");
  }
  return dropped;
}

}  // namespace code_interpreter::detail
