#include "code_interpreter/execution.hpp"

#include "core/base64.hpp"

#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "core/utf8.hpp"

namespace code_interpreter {

std::string_view to_string(ExecutionStatus status) noexcept {
  switch (status) {
    case ExecutionStatus::kSuccess: return "SUCCESS";
    case ExecutionStatus::kError: return "ERROR";
    case ExecutionStatus::kTimeout: return "TIMEOUT";
    case ExecutionStatus::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

std::string_view to_string(TimeoutKind kind) noexcept {
  switch (kind) {
    case TimeoutKind::kExecution: return "execution";
    case TimeoutKind::kRequest: return "request";
    case TimeoutKind::kSandboxLost: return "sandbox_lost";
  }
  return "execution";
}

std::string_view to_string(Language language) noexcept {
  switch (language) {
    case Language::kPython: return "python";
    case Language::kJavaScript: return "javascript";
    case Language::kTypeScript: return "typescript";
    case Language::kBash: return "bash";
    case Language::kR: return "r";
    case Language::kJava: return "java";
  }
  return "python";
}

std::string_view to_string(Stage stage) noexcept {
  switch (stage) {
    case Stage::kConfigure: return "configure";
    case Stage::kTemplateBuild: return "template_build";
    case Stage::kCreate: return "create";
    case Stage::kStartRuntime: return "start_runtime";
    case Stage::kInstallPackages: return "install_packages";
    case Stage::kUpload: return "upload";
    case Stage::kExecute: return "execute";
    case Stage::kCommand: return "command";
    case Stage::kDownload: return "download";
    case Stage::kSetTimeout: return "set_timeout";
    case Stage::kTerminate: return "terminate";
    case Stage::kNotInitialized: return "not_initialized";
    case Stage::kManage: return "manage";
  }
  return "execute";
}

std::string_view to_string(FileType type) noexcept {
  switch (type) {
    case FileType::kFile: return "file";
    case FileType::kDirectory: return "directory";
    case FileType::kSymlink: return "symlink";
    case FileType::kOther: return "other";
  }
  return "other";
}

std::string_view to_string(NetworkAccess access) noexcept {
  switch (access) {
    case NetworkAccess::kNone: return "none";
    case NetworkAccess::kAllowlist: return "allowlist";
    case NetworkAccess::kAll: return "all";
  }
  return "all";
}

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid_argument";
    case ErrorKind::kUnauthenticated: return "unauthenticated";
    case ErrorKind::kPermissionDenied: return "permission_denied";
    case ErrorKind::kNotFound: return "not_found";
    case ErrorKind::kQuotaExceeded: return "quota_exceeded";
    case ErrorKind::kRateLimited: return "rate_limited";
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kInternal: return "internal";
    case ErrorKind::kUnknown: return "unknown";
  }
  return "unknown";
}

void validate_attachment_name(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("attachment name is empty");
  if (name.find('\0') != std::string_view::npos) throw std::invalid_argument("attachment name contains a NUL byte");
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos) {
    throw std::invalid_argument("attachment name '" + std::string(name) +
                                "' must be a plain file name, without '/' or '\\'");
  }
  if (name == "." || name == ".." || name.find("..") != std::string_view::npos) {
    throw std::invalid_argument("attachment name '" + std::string(name) + "' must not contain '..'");
  }
  if (!detail::is_valid_utf8(name)) throw std::invalid_argument("attachment name is not valid UTF-8");
}

Attachment Attachment::from_bytes(std::string data, std::string filename) {
  validate_attachment_name(filename);
  Attachment a;
  a.filename = std::move(filename);
  a.data = std::move(data);
  return a;
}

Attachment Attachment::from_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::not_found)
    throw std::invalid_argument("attachment source '" + path.string() + "' does not exist");
  if (type != std::filesystem::file_type::regular) {
    throw std::invalid_argument("attachment source '" + path.string() + "' is not a regular file");
  }
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw std::invalid_argument("attachment source '" + path.string() + "' cannot be read");
  Attachment a;
  a.filename = path.filename().string();
  // A file on disk may be named in any bytes; an attachment name travels as text. Say which file, and the way out.
  if (!detail::is_valid_utf8(a.filename))
    throw std::invalid_argument("attachment source '" + detail::utf8_replacing(path.string()) +
                                "': its file name is not valid UTF-8; set Attachment::filename to a UTF-8 name");
  validate_attachment_name(a.filename);
  a.source = path;
  return a;
}

namespace {
void append_part(std::string& out, std::string_view part) {
  while (!part.empty() && part.back() == '\n') part.remove_suffix(1);
  if (part.empty()) return;
  if (!out.empty()) out += '\n';
  out += part;
}
}  // namespace

std::string ExecutionResult::text() const {
  std::string out;
  append_part(out, stdout_text);
  append_part(out, stderr_text);
  if (code_error && !code_error->traceback.empty()) {
    append_part(out, code_error->traceback);
  } else {
    append_part(out, error);
  }
  for (const auto& r : results) {
    if (!r.is_main_result) continue;
    auto it = r.data.find("text/plain");
    if (it != r.data.end()) append_part(out, it->second);
  }
  if (truncated) append_part(out, "[output truncated]");
  return out;
}

std::optional<std::string> rich_data_bytes(const RichResult& result, std::string_view mime_type) {
  const auto it = result.data.find(std::string(mime_type));
  if (it == result.data.end()) return std::nullopt;
  return detail::base64_decode(it->second);
}

}  // namespace code_interpreter
