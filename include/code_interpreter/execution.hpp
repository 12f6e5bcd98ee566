// The result model shared by every backend: statuses, failure details, attachments, options and capabilities.
// Semantics: docs/errors.md (status table) and the design contract it mirrors.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/export.hpp"

namespace code_interpreter {

/// A timeout of zero or less: no limit (except for `terminate`, which refuses it).
inline constexpr std::chrono::milliseconds kNoTimeout{0};

/// An execution or request timeout. `std::nullopt` means "the backend's default"; `kNoTimeout` (or any value
/// <= 0) means unbounded.
using Timeout = std::optional<std::chrono::milliseconds>;

/// How an execution ended. See docs/errors.md for the fields each status carries.
enum class ExecutionStatus {
  kSuccess,  ///< the code ran to the end (`sys.exit(0)` included); exit_code 0
  kError,    ///< the code failed (exception, SyntaxError, sys.exit(n != 0)), or provably never ran
  kTimeout,  ///< the budget ran out, no answer came, or the sandbox died during the call
  kUnknown,  ///< the outcome cannot be known (broken transport after sending, hostile output, cancellation)
};

/// Why a `kTimeout` happened.
enum class TimeoutKind {
  kExecution,    ///< the execution budget ran out
  kRequest,      ///< no answer came in time
  kSandboxLost,  ///< the sandbox (or its runtime process) died during the call
};

/// Languages a sandbox may run. The Pyodide backend runs only `kPython`.
enum class Language { kPython, kJavaScript, kTypeScript, kBash, kR, kJava };

/// The step of a sandbox's life in which an error happened. `to_string` gives the stable name logged as
/// `error_code` ("configure", "template_build", "create", ...).
enum class Stage {
  kConfigure,
  kTemplateBuild,
  kCreate,
  kStartRuntime,
  kInstallPackages,
  kUpload,
  kExecute,
  kCommand,
  kDownload,
  kSetTimeout,
  kTerminate,
  kNotInitialized,
  kManage,  ///< a SandboxManager call (list, get, kill, pause, resume, sweep)
};

/// What kind of failure an error is, independent of the backend.
enum class ErrorKind {
  kInvalidArgument,
  kUnauthenticated,
  kPermissionDenied,
  kNotFound,
  kQuotaExceeded,
  kRateLimited,
  kUnavailable,
  kTimeout,
  kUnsupported,
  kInternal,
  kUnknown,
};

/// "SUCCESS", "ERROR", "TIMEOUT" or "UNKNOWN".
CODE_INTERPRETER_EXPORT std::string_view to_string(ExecutionStatus status) noexcept;
/// "execution", "request" or "sandbox_lost".
CODE_INTERPRETER_EXPORT std::string_view to_string(TimeoutKind kind) noexcept;
/// "python", "javascript", "typescript", "bash", "r" or "java".
CODE_INTERPRETER_EXPORT std::string_view to_string(Language language) noexcept;
/// The stage's stable name, e.g. "install_packages", "not_initialized".
CODE_INTERPRETER_EXPORT std::string_view to_string(Stage stage) noexcept;
/// The kind's stable name, e.g. "invalid_argument", "rate_limited".
CODE_INTERPRETER_EXPORT std::string_view to_string(ErrorKind kind) noexcept;

/// Why a call failed without a code error: a stable dotted name of the cause and whether a retry can duplicate
/// work. `retry_safe` means "a retry cannot run the code twice", not "a retry will succeed".
struct FailureDetail {
  std::string exception_type;  ///< e.g. "curl.COULDNT_CONNECT", "http.502", "callback.exception", "cancelled"
  bool retry_safe = false;
  friend bool operator==(const FailureDetail&, const FailureDetail&) = default;
};

/// The user's exception: its type name, `str(exception)`, and the formatted traceback without host frames.
struct CodeError {
  std::string name;
  std::string value;
  std::string traceback;
  friend bool operator==(const CodeError&, const CodeError&) = default;
};

/// One rich output: MIME type -> content. Binary types (image/png, image/jpeg, application/pdf) hold base64 text;
/// JSON types hold serialized JSON. The value of the code's last expression has `is_main_result` set.
struct RichResult {
  std::map<std::string, std::string> data;
  bool is_main_result = false;
  friend bool operator==(const RichResult&, const RichResult&) = default;
};

/// The bytes of a binary format of `result` (image/png, image/jpeg: sent as base64 text, as Jupyter does), or
/// nullopt when `result` has no `mime_type` or its text is not base64 (RFC 4648, padded or not).
[[nodiscard]] CODE_INTERPRETER_EXPORT std::optional<std::string> rich_data_bytes(const RichResult& result,
                                                                                std::string_view mime_type);

/// A file handed to the sandbox (uploaded into the upload directory before the code runs) or returned from it.
struct CODE_INTERPRETER_EXPORT Attachment {
  std::string filename;   ///< a plain file name: no '/', '\\', "..", NUL; not empty
  std::string data;       ///< arbitrary bytes (unused when `source` is set)
  std::string mime_type;  ///< informational; may be empty
  std::optional<std::filesystem::path> source;  ///< set by from_file: the bytes are streamed from this file

  /// An attachment holding `data` in memory.
  /// @throws std::invalid_argument if `filename` is not a plain file name.
  static Attachment from_bytes(std::string data, std::string filename);
  /// An attachment streamed from `path` at upload time; its name is the path's file name.
  /// @throws std::invalid_argument if `path` is not a readable regular file.
  static Attachment from_file(const std::filesystem::path& path);

  friend bool operator==(const Attachment&, const Attachment&) = default;
};

/// Checks that `name` is a plain file name (not empty, no '/', '\\', NUL, not "." or ".." and no ".." component).
/// @throws std::invalid_argument naming the problem.
CODE_INTERPRETER_EXPORT void validate_attachment_name(std::string_view name);

/// What a sandbox path names (FileInfo::type).
enum class FileType {
  kFile,
  kDirectory,
  kSymlink,  ///< a symbolic link (get_info describes the link itself where the backend can tell)
  kOther,    ///< a device, FIFO or socket
};

/// "file", "directory", "symlink" or "other".
CODE_INTERPRETER_EXPORT std::string_view to_string(FileType type) noexcept;

/// An entry of a sandbox directory listing, or what get_info tells of one path. `size` is in bytes (0 for
/// directories). The fields after `size` are optional: nullopt where the backend cannot tell (a listing on
/// Bedrock AgentCore carries none of them; docs/backends/*.md "Files" says which call fills which).
struct FileInfo {
  std::string name;
  std::string path;
  bool is_directory = false;
  std::uint64_t size = 0;
  std::optional<FileType> type;  ///< is_directory agrees with it: true exactly for kDirectory
  /// The last modification, as the sandbox reports it.
  std::optional<std::chrono::system_clock::time_point> modified;
  std::optional<std::uint32_t> permissions;  ///< the permission bits (mode & 07777), e.g. 0644
  friend bool operator==(const FileInfo&, const FileInfo&) = default;
};

/// The outcome of `execute_code` / `execute_command`. An aggregate: every member has a default. Which members are
/// set for which status is specified in docs/errors.md.
struct CODE_INTERPRETER_EXPORT ExecutionResult {
  ExecutionStatus status = ExecutionStatus::kUnknown;
  std::string code;         ///< the code or command that was run
  std::string stdout_text;  ///< valid UTF-8 (ill-formed input replaced by U+FFFD as Python's "replace" does)
  std::string stderr_text;  ///< likewise
  std::string error;        ///< a human-readable description; the traceback for a code error
  int exit_code = -1;       ///< 0 on success; 1 for an exception; n for sys.exit(n); -1 when the code did not finish
  /// Wall time of the execution itself, on every backend: from sending the code (after any attachment uploads) to
  /// the answer or the kill; absent when the code was never sent. JSON "duration_ms".
  std::optional<std::chrono::milliseconds> duration;
  std::optional<FailureDetail> failure;               ///< set for kUnknown and for kError-that-never-ran
  std::optional<CodeError> code_error;                ///< set when the user's code raised
  std::vector<RichResult> results;                    ///< rich outputs; the last expression's value is main
  std::optional<TimeoutKind> timeout_kind;            ///< set exactly when status is kTimeout
  bool state_lost = false;  ///< the interpreter's state (variables, files) was lost during or before this call
  /// stdout_text or stderr_text was cut at the output cap (or rich results dropped), or is missing a part: an E2B
  /// command stream cut mid-run was re-attached, and what the command wrote meanwhile is not replayed.
  bool truncated = false;

  /// The text a person (or a language model) should read: stdout, stderr, the error (the traceback if any), the
  /// main result's text/plain and "[output truncated]" if truncated. Each non-empty part has its trailing newlines
  /// removed and the parts are joined with one "\n".
  [[nodiscard]] std::string text() const;

  friend bool operator==(const ExecutionResult&, const ExecutionResult&) = default;
};

/// Options of one `execute_code` call.
struct ExecuteOptions {
  Timeout timeout;                 ///< nullopt: the backend's default (300 s); <= 0: unbounded
  std::vector<Attachment> files;   ///< uploaded into `upload_dir` before the code runs
  std::optional<std::string> upload_dir;  ///< default: `Capabilities::upload_dir`
  /// Called with one line at a time, including its "\n" (the last partial line without); lines longer than
  /// 64 KiB come in 64 KiB pieces; on Pyodide a partial line the code flushed and did not finish within 50 ms comes
  /// as a piece without "\n", the rest of the line after it (docs/errors.md "Output"). Runs on the calling thread.
  /// Must not call back into the same sandbox. A callback that throws is caught: both callbacks go silent, the code
  /// is stopped where it still runs, and the call returns kUnknown with FailureDetail `callback.exception`
  /// (docs/errors.md "Output"); the exception never reaches the caller.
  std::function<void(std::string_view)> on_stdout;
  std::function<void(std::string_view)> on_stderr;
  std::map<std::string, std::string> env;  ///< environment variables for this call only
  std::stop_token cancel;                  ///< cancels this call
};

/// Options of one `execute_command` call.
struct CommandOptions {
  Timeout timeout;  ///< nullopt: the backend's default (30 s); <= 0: unbounded
  std::map<std::string, std::string> env;
  std::optional<std::string> cwd;
  std::function<void(std::string_view)> on_stdout;
  std::function<void(std::string_view)> on_stderr;
  std::stop_token cancel;
};

/// How much of the network the code in a sandbox may reach (docs/backends.md "Network policy").
enum class NetworkAccess {
  kNone,       ///< no network at all
  kAllowlist,  ///< only the hosts in NetworkPolicy::allowed_hosts
  kAll,        ///< the whole internet
};

/// "none", "allowlist" or "all".
CODE_INTERPRETER_EXPORT std::string_view to_string(NetworkAccess access) noexcept;

/// The network a sandbox gets at creation. A policy a backend cannot honour is refused by create
/// (SandboxStartError, stage configure, kUnsupported), never weakened: Pyodide honours only kNone; E2B all three;
/// Bedrock AgentCore what its interpreter's network mode gives (BedrockOptions::interpreter_network_mode).
struct NetworkPolicy {
  NetworkAccess access = NetworkAccess::kAll;
  /// For kAllowlist: host names ("pypi.org") or IPv4 addresses / CIDR ranges ("8.8.8.8", "10.0.0.0/8"), 1..253
  /// bytes each of letters, digits, '.', '-', '*' (a leading "*." wildcard only), ':' and '/'; 1..100 entries.
  /// Must be empty otherwise.
  std::vector<std::string> allowed_hosts;

  [[nodiscard]] static NetworkPolicy none() { return {NetworkAccess::kNone, {}}; }
  [[nodiscard]] static NetworkPolicy all() { return {NetworkAccess::kAll, {}}; }
  [[nodiscard]] static NetworkPolicy allowlist(std::vector<std::string> hosts) {
    return {NetworkAccess::kAllowlist, std::move(hosts)};
  }
  friend bool operator==(const NetworkPolicy&, const NetworkPolicy&) = default;
};

/// What a backend can do; `SandboxCodeInterpreter` writes its tool description from it.
struct Capabilities {
  bool stateful = false;        ///< variables persist between execute_code calls
  bool shell_commands = false;  ///< execute_command runs shell commands
  bool file_download = false;   ///< files can be read back from the sandbox
  bool filesystem = false;      ///< list / remove / make_dir work
  bool packages = false;        ///< additional_packages can be installed
  bool network = false;         ///< the code can reach the network
  bool interrupt = false;       ///< a timeout interrupts the code without losing state
  /// `results` carries the value of the last expression (docs/errors.md "What each result carries"); false: it is
  /// never returned (Bedrock AgentCore), so the code must print what the caller needs.
  bool expression_results = false;
  /// on_stdout / on_stderr receive each line while the code runs; false: every line arrives, in order, only once the
  /// backend's answer does (Bedrock AgentCore sends the output with the result; FakeSandbox after its handler).
  bool streaming_output = false;
  std::vector<Language> languages;
  /// The network policies this sandbox's create accepts (docs/backends.md "Network policy"), in NetworkAccess order.
  std::vector<NetworkAccess> network_policies;
  std::string upload_dir;       ///< where ExecuteOptions::files go by default
  // processes
  bool processes = false;        ///< spawn and a handle's wait / poll / kill / terminate work
  bool process_stdin = false;    ///< send_stdin and close_stdin work
  bool process_connect = false;  ///< connect_process attaches to a process by its id
  bool process_list = false;     ///< list_processes works
  bool process_signals = false;  ///< kill and terminate send SIGKILL and SIGTERM (false: the backend's one stop)
  // filesystem, interrupt, restart, variables
  bool file_info = false;       ///< exists / get_info answer (write_file with make_dirs false relies on them)
  bool file_move = false;       ///< move renames a file or directory
  bool file_copy = false;       ///< copy copies a file or directory tree
  /// interrupt() stops a running execute_code from another thread. Whether the state survives is
  /// `interrupt_keeps_state`; `interrupt` (above) is about timeouts only.
  bool interrupt_call = false;
  /// An interrupted call ends kError with code_error KeyboardInterrupt and the state kept (Pyodide); false: it ends
  /// as a cancelled call does (kUnknown `cancelled`), the state kept or lost as its state_lost says.
  bool interrupt_keeps_state = false;
  bool restart = false;    ///< restart() gives a clean interpreter in the same sandbox
  bool variables = false;  ///< set_variable / get_variable work (Python only)
  friend bool operator==(const Capabilities&, const Capabilities&) = default;
};

}  // namespace code_interpreter
