#include "code_interpreter/sandbox.hpp"

#include <exception>
#include <set>
#include <stdexcept>
#include <string>

#include "core/file_guards.hpp"
#include "core/process_driver.hpp"
#include "core/utf8.hpp"

namespace code_interpreter {

namespace {
constexpr std::size_t kMaxPathBytes = 4096;  // PATH_MAX on Linux; every backend's filesystem refuses longer ones

// Code, commands and paths travel as text (JSON strings, Python str) on every backend: bytes that are not UTF-8
// would be refused by one serializer and silently repaired by another, so every backend refuses them here.
void require_utf8(std::string_view text, const char* what) {
  if (!detail::is_valid_utf8(text)) throw std::invalid_argument(std::string(what) + " is not valid UTF-8");
}

void check_path(std::string_view path, const char* what) {
  if (path.empty()) throw std::invalid_argument(std::string(what) + " is empty");
  if (path.size() > kMaxPathBytes) {
    throw std::invalid_argument(std::string(what) + " is longer than " + std::to_string(kMaxPathBytes) + " bytes");
  }
  if (path.find('\0') != std::string_view::npos) {
    throw std::invalid_argument(std::string(what) + " contains a NUL byte");
  }
  require_utf8(path, what);
}

// Environment variables travel as JSON text to every backend: names must be usable as names, and both names and
// values must be valid UTF-8.
void check_env(const std::map<std::string, std::string>& env) {
  for (const auto& [name, value] : env) {
    if (name.empty()) throw std::invalid_argument("env: a variable name is empty");
    if (name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
      throw std::invalid_argument("env: variable name '" + name + "' contains '=' or a NUL byte");
    }
    if (!detail::is_valid_utf8(name)) throw std::invalid_argument("env: a variable name is not valid UTF-8");
    if (value.find('\0') != std::string::npos) {
      throw std::invalid_argument("env: the value of '" + name + "' contains a NUL byte");
    }
    if (!detail::is_valid_utf8(value)) throw std::invalid_argument("env: the value of '" + name + "' is not valid UTF-8");
  }
}

void check_max_bytes(const std::optional<std::uint64_t>& max_bytes) {
  if (max_bytes && *max_bytes == 0) throw std::invalid_argument("max_bytes must be positive");
}

void check_files(const ExecuteOptions& options) {
  std::set<std::string_view> seen;
  for (const auto& file : options.files) {
    validate_attachment_name(file.filename);
    if (!seen.insert(file.filename).second) {
      throw std::invalid_argument("attachment name '" + file.filename + "' is given twice");
    }
  }
  if (options.upload_dir) check_path(*options.upload_dir, "upload_dir");
}
}  // namespace

BaseSandbox::~BaseSandbox() = default;

std::optional<std::string> BaseSandbox::download_file(std::string_view path, Timeout timeout,
                                                      std::optional<std::uint64_t> max_bytes) {
  check_path(path, "path");
  check_max_bytes(max_bytes);
  return do_download_file(path, timeout, max_bytes);
}

void BaseSandbox::terminate(Timeout timeout) {
  if (timeout && timeout->count() <= 0) {
    throw std::invalid_argument("terminate timeout must be positive");
  }
  do_terminate(timeout);
}

bool BaseSandbox::is_transient_create_error(const std::exception& error) noexcept {
  if (const auto* transport = dynamic_cast<const TransportError*>(&error)) {
    switch (transport->kind()) {
      case TransportError::Kind::kConnect:
      case TransportError::Kind::kTimeout:
        return true;
      case TransportError::Kind::kHttpStatus: {
        const int s = transport->http_status();
        return s == 408 || s == 429 || (s >= 500 && s <= 599);
      }
      case TransportError::Kind::kTls:
      case TransportError::Kind::kProtocol:
      case TransportError::Kind::kCancelled:
        return false;
    }
    return false;
  }
  if (const auto* ci = dynamic_cast<const CodeInterpreterError*>(&error)) {
    switch (ci->kind()) {
      case ErrorKind::kUnavailable:
      case ErrorKind::kRateLimited:
      case ErrorKind::kTimeout:
        return true;
      default:
        return false;
    }
  }
  return false;
}

void CodeInterpreterSandbox::check_execute_options(const ExecuteOptions& options) {
  check_files(options);
  check_env(options.env);
}

ExecutionResult CodeInterpreterSandbox::execute_code(std::string_view code, const ExecuteOptions& options) {
  require_utf8(code, "code");
  check_execute_options(options);
  return do_execute_code(code, options);
}

ExecutionResult CodeInterpreterSandbox::execute_command(std::string_view command, const CommandOptions& options) {
  require_utf8(command, "command");
  if (options.cwd) check_path(*options.cwd, "cwd");
  check_env(options.env);
  return do_execute_command(command, options);
}

void CodeInterpreterSandbox::set_timeout(std::chrono::seconds lease) { do_set_timeout(lease); }

// ---- processes ----

ProcessHandle CodeInterpreterSandbox::spawn(std::string_view command, const SpawnOptions& options) {
  if (command.empty()) throw std::invalid_argument("command is empty");
  if (command.find('\0') != std::string_view::npos) throw std::invalid_argument("command contains a NUL byte");
  require_utf8(command, "command");
  if (options.cwd) check_path(*options.cwd, "cwd");
  check_env(options.env);
  return do_spawn(command, options);
}

std::vector<ProcessInfo> CodeInterpreterSandbox::list_processes() { return do_list_processes(); }

ProcessHandle CodeInterpreterSandbox::connect_process(std::string_view id, const ProcessConnectOptions& options) {
  if (id.empty()) throw std::invalid_argument("process id is empty");
  if (id.size() > 256) throw std::invalid_argument("process id is longer than 256 bytes");
  require_utf8(id, "process id");
  return do_connect_process(id, options);
}

ProcessHandle CodeInterpreterSandbox::do_spawn(std::string_view, const SpawnOptions&) {
  detail::refuse_process_operation("spawn", "this sandbox");
}

std::vector<ProcessInfo> CodeInterpreterSandbox::do_list_processes() {
  detail::refuse_process_operation("list_processes", "this sandbox");
}

ProcessHandle CodeInterpreterSandbox::do_connect_process(std::string_view, const ProcessConnectOptions&) {
  detail::refuse_process_operation("connect_process", "this sandbox");
}

void CodeInterpreterSandbox::write_file(std::string_view path, std::string_view data) {
  check_path(path, "path");
  do_write_file(path, data);
}

std::string CodeInterpreterSandbox::read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) {
  check_path(path, "path");
  check_max_bytes(max_bytes);
  return do_read_file(path, max_bytes);
}

std::vector<FileInfo> CodeInterpreterSandbox::list_files(std::string_view dir) {
  check_path(dir, "dir");
  auto entries = do_list_files(dir);
  // The listing comes from the sandbox: a name that is not one path component is never handed on.
  (void)detail::drop_hostile_entries(entries, dir);
  return entries;
}

void CodeInterpreterSandbox::remove_file(std::string_view path) {
  check_path(path, "path");
  do_remove_file(path);
}

void CodeInterpreterSandbox::make_dir(std::string_view path) {
  check_path(path, "path");
  do_make_dir(path);
}

void CodeInterpreterSandbox::write_file(std::string_view path, std::string_view data, bool make_dirs) {
  check_path(path, "path");
  if (!make_dirs) {
    // The parent must be there already: asked first, so nothing is written (or created) when it is not.
    const std::string text(path);
    const auto slash = text.find_last_of('/');
    const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : text.substr(0, slash);
    bool is_dir = false;
    try {
      is_dir = do_get_info(parent).is_directory;
    } catch (const SandboxExecutionError& e) {
      // The check is part of the write: any other failure (a refusal where file_info is not supported, a transport
      // failure) is the write's, at its stage, with the check's error nested.
      if (e.kind() != ErrorKind::kNotFound)
        std::throw_with_nested(SandboxExecutionError(
            "write_file '" + text + "': checking the parent directory '" + parent + "' failed: " + e.what(),
            Stage::kUpload, e.kind()));
    }
    if (!is_dir) {
      throw SandboxExecutionError("write_file '" + text + "': the parent directory '" + parent +
                                      "' does not exist (make_dirs is false)",
                                  Stage::kUpload, ErrorKind::kNotFound);
    }
  }
  do_write_file(path, data);
}

bool CodeInterpreterSandbox::exists(std::string_view path) {
  check_path(path, "path");
  return do_exists(path);
}

FileInfo CodeInterpreterSandbox::get_info(std::string_view path) {
  check_path(path, "path");
  auto info = do_get_info(path);
  // Held to its own word: a type and is_directory that disagree are made to agree with the type.
  if (info.type) info.is_directory = *info.type == FileType::kDirectory;
  return info;
}

void CodeInterpreterSandbox::copy(std::string_view from, std::string_view to) {
  check_path(from, "from");
  check_path(to, "to");
  do_copy(from, to);
}

void CodeInterpreterSandbox::move(std::string_view from, std::string_view to) {
  check_path(from, "from");
  check_path(to, "to");
  do_move(from, to);
}

void CodeInterpreterSandbox::interrupt() { do_interrupt(); }

void CodeInterpreterSandbox::restart() { do_restart(); }

namespace {
[[noreturn]] void refuse(std::string_view what, Stage stage) {
  throw SandboxExecutionError(std::string(what) + " is not supported by this sandbox", stage, ErrorKind::kUnsupported);
}
}  // namespace

bool CodeInterpreterSandbox::do_exists(std::string_view) { refuse("exists", Stage::kDownload); }
FileInfo CodeInterpreterSandbox::do_get_info(std::string_view) { refuse("get_info", Stage::kDownload); }
void CodeInterpreterSandbox::do_copy(std::string_view, std::string_view) { refuse("copy", Stage::kUpload); }
void CodeInterpreterSandbox::do_move(std::string_view, std::string_view) { refuse("move", Stage::kUpload); }
void CodeInterpreterSandbox::do_interrupt() { refuse("interrupt", Stage::kExecute); }
void CodeInterpreterSandbox::do_restart() { refuse("restart", Stage::kExecute); }
void CodeInterpreterSandbox::do_set_variable(std::string_view, const std::string&) {
  refuse("set_variable", Stage::kExecute);
}
nlohmann::json CodeInterpreterSandbox::do_get_variable(std::string_view) { refuse("get_variable", Stage::kExecute); }

bool CodeInterpreterSandbox::download_file_to(std::string_view path, const std::filesystem::path& destination,
                                              Timeout timeout, std::optional<std::uint64_t> max_bytes) {
  check_path(path, "path");
  if (destination.empty()) throw std::invalid_argument("destination is empty");
  check_max_bytes(max_bytes);
  return do_download_file_to(path, destination, timeout, max_bytes);
}

}  // namespace code_interpreter
