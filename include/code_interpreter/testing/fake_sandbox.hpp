// Scripted stand-ins for a sandbox and a language model, so agent code (a SandboxCodeInterpreter loop, or your
// own) can be tested offline, fast and deterministically. Header-only.
//
//   testing::FakeSandbox sandbox;                       // Pyodide-like capabilities, upload_dir "/files"
//   sandbox.push_result({.status = ExecutionStatus::kSuccess, .stdout_text = "42\n", .exit_code = 0},
//                       {{"/files/out.csv", "a,b\n"}});  // this execution also "writes" a file
//   testing::FakeLMInvoker lm;
//   lm.push_code("print(6 * 7)").push_answer("It is 42: [out.csv](sandbox:/files/out.csv)");
//   auto result = SandboxCodeInterpreter(sandbox, lm).execute("what is 6 * 7?");
//   // sandbox.execute_calls()[0].code == "print(6 * 7)"; lm.calls()[1].messages.back().content == "42"
//
// Guide: docs/interpreter.md ("Testing with FakeSandbox").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/execution.hpp"
#include "code_interpreter/interpreter.hpp"
#include "code_interpreter/sandbox.hpp"

namespace code_interpreter::testing {

/// One recorded execute_code (or execute_command) call.
struct ExecuteCall {
  std::string code;                       ///< the code (or command) as given
  std::vector<Attachment> files;          ///< ExecuteOptions::files
  std::optional<std::string> upload_dir;  ///< ExecuteOptions::upload_dir
  Timeout timeout;                        ///< the call's timeout
  std::map<std::string, std::string> env;
  bool cancellable = false;               ///< the call carried a stop_token that can be stopped
  bool command = false;                   ///< execute_command rather than execute_code
};

/// A scripted sandbox: each execute_code (and execute_command) call takes the next queued entry — a result, or a
/// handler that computes one — and records what it was given. Files live in an in-memory map of path -> bytes:
/// attachments are "uploaded" there, queued results may "write" files, and downloads read from it.
///
/// Follows the sandbox contract where it matters to callers: execute never throws once arguments are checked (an
/// exhausted queue answers kError with FailureDetail{"fake.exhausted", retry_safe}); `result.code` is the code
/// run; on_stdout / on_stderr get the scripted output line by line (a line over 64 KiB in pieces; one that throws
/// makes the call kUnknown {callback.exception}, as on the real backends); the result keeps at most
/// `max_output_bytes` of each stream, cut at a character boundary with `truncated` set, while the callbacks still get
/// all of it (docs/errors.md "Output"); after `terminate` every call but terminate and the accessors throws
/// SandboxNotInitializedError; reads honour `max_bytes` (default kDefaultMaxDownloadBytes) as the real backends do:
/// read_file throws kQuotaExceeded, download_file answers nullopt, download_file_to false. Thread-safe; handlers run
/// without the lock held, so they may block (e.g. until the call's stop_token fires) or call put_file.
class FakeSandbox : public CodeInterpreterSandbox {
 public:
  /// The cap of read_file / download_file / download_file_to when none is given, as the real backends' default.
  static constexpr std::uint64_t kDefaultMaxDownloadBytes = std::uint64_t{512} << 20;
  /// The per-stream cap of stdout_text / stderr_text when none is given, as the real backends' max_output_bytes.
  static constexpr std::size_t kDefaultMaxOutputBytes = std::size_t{10} << 20;

  /// Computes the result of one call. `options.cancel` is the call's stop_token.
  using Handler = std::function<ExecutionResult(std::string_view code, const ExecuteOptions& options)>;

  /// What PyodideSandbox reports (stateful, file download, filesystem, packages, interrupt, expression results;
  /// Python; network policy none only; "/files"), except streaming_output: the fake delivers a scripted result's lines once its handler returns.
  static Capabilities pyodide_like_capabilities() {
    Capabilities c;
    c.stateful = true;
    c.file_download = true;
    c.filesystem = true;
    c.packages = true;
    c.interrupt = true;
    c.expression_results = true;
    c.languages = {Language::kPython};
    c.network_policies = {NetworkAccess::kNone};  // as Pyodide: no network, and only that policy accepted
    c.upload_dir = "/files";
    c.file_info = c.file_move = c.file_copy = true;
    c.restart = c.variables = true;
    return c;
  }

  /// `max_output_bytes` is the per-stream cap of the kept text, as PyodideOptions / E2BOptions / BedrockOptions
  /// have it; 0 throws SandboxStartError (stage configure, kInvalidArgument), as their create does.
  explicit FakeSandbox(Capabilities capabilities = pyodide_like_capabilities(), Language language = Language::kPython,
                       std::vector<std::string> additional_packages = {},
                       std::size_t max_output_bytes = kDefaultMaxOutputBytes)
      : CodeInterpreterSandbox(language, std::move(additional_packages)),
        capabilities_(std::move(capabilities)),
        max_output_bytes_(max_output_bytes) {
    if (max_output_bytes_ == 0) {
      throw SandboxStartError("max_output_bytes must be positive", Stage::kConfigure, ErrorKind::kInvalidArgument);
    }
  }

  /// Queues the answer of the next call; `writes` (path -> bytes) are stored when that call happens, as if the code
  /// had written them.
  FakeSandbox& push_result(ExecutionResult result, std::map<std::string, std::string> writes = {}) {
    std::lock_guard lock(mutex_);
    script_.push_back(Scripted{std::move(result), std::move(writes)});
    return *this;
  }

  /// Queues a handler for the next call.
  FakeSandbox& push_handler(Handler handler) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(handler));
    return *this;
  }

  /// Stores a file, as if it existed in the sandbox.
  void put_file(std::string path, std::string data) {
    std::lock_guard lock(mutex_);
    files_[std::move(path)] = std::move(data);
  }

  /// The bytes stored at `path`, if any.
  [[nodiscard]] std::optional<std::string> file(std::string_view path) const {
    std::lock_guard lock(mutex_);
    const auto it = files_.find(std::string(path));
    return it == files_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  /// Every execute_code / execute_command call, in order.
  [[nodiscard]] std::vector<ExecuteCall> execute_calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  /// Every path passed to download_file / download_file_to / read_file, in order.
  [[nodiscard]] std::vector<std::string> downloads() const {
    std::lock_guard lock(mutex_);
    return downloads_;
  }
  /// Every path passed to make_dir, in order.
  [[nodiscard]] std::vector<std::string> made_dirs() const {
    std::lock_guard lock(mutex_);
    return made_dirs_;
  }
  /// Queued entries not used yet.
  [[nodiscard]] std::size_t pending() const {
    std::lock_guard lock(mutex_);
    return script_.size();
  }
  [[nodiscard]] bool terminated() const {
    std::lock_guard lock(mutex_);
    return terminated_;
  }

  [[nodiscard]] std::optional<std::string> sandbox_id() const override { return std::string("fake-sandbox"); }
  [[nodiscard]] Capabilities capabilities() const override { return capabilities_; }

 protected:
  ExecutionResult do_execute_code(std::string_view code, const ExecuteOptions& options) override {
    return run(code, options, false);
  }

  ExecutionResult do_execute_command(std::string_view command, const CommandOptions& options) override {
    if (!capabilities_.shell_commands) {
      check_alive();
      ExecutionResult refused;
      refused.status = ExecutionStatus::kError;
      refused.code = std::string(command);
      refused.error = "execute_command is not supported by this sandbox";
      return refused;
    }
    ExecuteOptions as_execute;
    as_execute.timeout = options.timeout;
    as_execute.env = options.env;
    as_execute.on_stdout = options.on_stdout;
    as_execute.on_stderr = options.on_stderr;
    as_execute.cancel = options.cancel;
    return run(command, as_execute, true);
  }

  void do_set_timeout(std::chrono::seconds) override { check_alive(); }

  void do_write_file(std::string_view path, std::string_view data) override {
    check_alive();
    put_file(std::string(path), std::string(data));
  }

  std::string do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) override {
    auto bytes = fetch(path);
    if (!bytes) {
      throw SandboxExecutionError("no such file: " + std::string(path), Stage::kDownload, ErrorKind::kNotFound);
    }
    const auto cap = max_bytes.value_or(kDefaultMaxDownloadBytes);
    if (bytes->size() > cap) {
      throw SandboxExecutionError("read_file '" + std::string(path) + "': the file is over the cap of " +
                                      std::to_string(cap) + " bytes (max_bytes)",
                                  Stage::kDownload, ErrorKind::kQuotaExceeded);
    }
    return std::move(*bytes);
  }

  std::vector<FileInfo> do_list_files(std::string_view dir) override {
    check_alive();
    std::string prefix(dir);
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    if (prefix != "/") prefix += '/';
    std::lock_guard lock(mutex_);
    std::vector<FileInfo> out;
    std::set<std::string> subdirs;
    for (const auto& [path, data] : files_) {
      if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string rest = path.substr(prefix.size());
      const auto slash = rest.find('/');
      if (slash == std::string::npos) {
        out.push_back(entry(rest, path, false, data.size()));
      } else if (subdirs.insert(rest.substr(0, slash)).second) {
        out.push_back(entry(rest.substr(0, slash), prefix + rest.substr(0, slash), true, 0));
      }
    }
    if (out.empty()) {
      throw SandboxExecutionError("no such directory: " + std::string(dir), Stage::kDownload, ErrorKind::kNotFound);
    }
    return out;
  }

  void do_remove_file(std::string_view path) override {
    check_alive();
    std::lock_guard lock(mutex_);
    const std::string exact(path);
    const std::string below = exact + "/";
    std::size_t removed = 0;
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->first == exact || it->first.compare(0, below.size(), below) == 0) {
        it = files_.erase(it);
        ++removed;
      } else {
        ++it;
      }
    }
    if (removed == 0) {
      throw SandboxExecutionError("no such file: " + exact, Stage::kUpload, ErrorKind::kNotFound);
    }
  }

  void do_make_dir(std::string_view path) override {
    check_alive();
    std::lock_guard lock(mutex_);
    made_dirs_.emplace_back(path);
  }

  bool do_download_file_to(std::string_view path, const std::filesystem::path& destination, Timeout,
                           std::optional<std::uint64_t> max_bytes) override {
    auto bytes = fetch(path);
    if (!bytes || bytes->size() > max_bytes.value_or(kDefaultMaxDownloadBytes)) return false;
    std::ofstream out(destination, std::ios::binary | std::ios::trunc);
    out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    return static_cast<bool>(out);
  }

  std::optional<std::string> do_download_file(std::string_view path, Timeout,
                                              std::optional<std::uint64_t> max_bytes) override {
    auto bytes = fetch(path);
    if (bytes && bytes->size() > max_bytes.value_or(kDefaultMaxDownloadBytes)) return std::nullopt;
    return bytes;
  }

  void do_terminate(Timeout) override {
    std::lock_guard lock(mutex_);
    terminated_ = true;
  }

  // filesystem, restart, variables: files are the stored ones, a directory is a path some stored file (or a
  // make_dir) is below; variables live in a map that restart clears. No interrupt (the default refusal).

  bool do_exists(std::string_view path) override {
    check_alive();
    std::lock_guard lock(mutex_);
    return kind_of(std::string(path)) != Kind::kAbsent;
  }

  FileInfo do_get_info(std::string_view path) override {
    check_alive();
    std::lock_guard lock(mutex_);
    const std::string p(path);
    const auto kind = kind_of(p);
    if (kind == Kind::kAbsent)
      throw SandboxExecutionError("no such file: " + p, Stage::kDownload, ErrorKind::kNotFound);
    FileInfo info;
    const auto slash = p.find_last_of('/');
    info.name = slash == std::string::npos ? p : p.substr(slash + 1);
    info.path = p;
    info.is_directory = kind == Kind::kDirectory;
    info.type = info.is_directory ? FileType::kDirectory : FileType::kFile;
    info.size = info.is_directory ? 0 : files_.at(p).size();
    return info;
  }

  void do_copy(std::string_view from, std::string_view to) override { transfer(from, to, false); }
  void do_move(std::string_view from, std::string_view to) override { transfer(from, to, true); }

  void do_restart() override {
    check_alive();
    std::lock_guard lock(mutex_);
    variables_.clear();
  }

  void do_set_variable(std::string_view name, const std::string& value_json) override {
    check_alive();
    std::lock_guard lock(mutex_);
    variables_[std::string(name)] = nlohmann::json::parse(value_json);
  }

  nlohmann::json do_get_variable(std::string_view name) override {
    check_alive();
    std::lock_guard lock(mutex_);
    const auto it = variables_.find(std::string(name));
    if (it == variables_.end())
      throw SandboxExecutionError("get_variable '" + std::string(name) + "': no such variable", Stage::kExecute,
                                  ErrorKind::kNotFound);
    return it->second;
  }

 private:
  struct Scripted {
    ExecutionResult result;
    std::map<std::string, std::string> writes;
  };

  void check_alive() const {
    std::lock_guard lock(mutex_);
    if (terminated_) throw SandboxNotInitializedError();
  }

  /// A listing's entry: the fake tells no type, time or permissions there.
  static FileInfo entry(std::string name, std::string path, bool is_directory, std::uint64_t size) {
    FileInfo info;
    info.name = std::move(name);
    info.path = std::move(path);
    info.is_directory = is_directory;
    info.size = size;
    return info;
  }

  enum class Kind { kAbsent, kFile, kDirectory };

  /// What `path` is among the stored files and made directories. Called with the lock held.
  Kind kind_of(const std::string& path) const {
    if (files_.count(path) != 0) return Kind::kFile;
    const std::string below = path + "/";
    for (const auto& [stored, data] : files_)
      if (stored.compare(0, below.size(), below) == 0) return Kind::kDirectory;
    for (const auto& dir : made_dirs_)
      if (dir == path || dir.compare(0, below.size(), below) == 0) return Kind::kDirectory;
    return Kind::kAbsent;
  }

  /// copy (`remove` false) or move of a file or a tree of stored files.
  void transfer(std::string_view from_view, std::string_view to_view, bool remove) {
    check_alive();
    std::lock_guard lock(mutex_);
    const std::string from(from_view), to(to_view), below = from + "/";
    if (kind_of(from) == Kind::kAbsent)
      throw SandboxExecutionError("no such file: " + from, Stage::kUpload, ErrorKind::kNotFound);
    std::map<std::string, std::string> moved;
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->first == from || it->first.compare(0, below.size(), below) == 0) {
        moved[to + it->first.substr(from.size())] = it->second;
        it = remove ? files_.erase(it) : std::next(it);
      } else {
        ++it;
      }
    }
    for (auto& [path, data] : moved) files_[path] = std::move(data);
  }

  std::optional<std::string> fetch(std::string_view path) {
    check_alive();
    std::lock_guard lock(mutex_);
    downloads_.emplace_back(path);
    const auto it = files_.find(std::string(path));
    return it == files_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  /// The longest piece a callback gets (docs/errors.md "Output": a longer line comes in pieces).
  static constexpr std::size_t kMaxPiece = 65536;

  /// Hands `text` to `callback` as the real backends do: line by line, a line over kMaxPiece bytes in pieces cut at
  /// character boundaries. Returns false when the callback threw, with "an output callback threw: " + what() (or
  /// "a non-standard exception") in `thrown`.
  static bool stream_lines(const std::function<void(std::string_view)>& callback, std::string_view text,
                           std::string& thrown) {
    if (!callback) return true;
    try {
      while (!text.empty()) {
        const auto newline = text.find('\n');
        std::size_t length = newline == std::string_view::npos ? text.size() : newline + 1;
        if (length > kMaxPiece) {
          length = kMaxPiece;
          // Back off over UTF-8 continuation bytes, unless the piece would be empty (not UTF-8 then anyway).
          while (length > 0 && (static_cast<unsigned char>(text[length]) & 0xC0) == 0x80) --length;
          if (length == 0) length = kMaxPiece;
        }
        callback(text.substr(0, length));
        text.remove_prefix(length);
      }
      return true;
    } catch (const std::exception& e) {
      thrown = std::string("an output callback threw: ") + e.what();
    } catch (...) {
      thrown = "an output callback threw: a non-standard exception";
    }
    return false;
  }

  /// Keeps at most the cap of `text`, cut at a character boundary (the scripted text is taken as valid UTF-8, as
  /// the real backends' repaired text is); returns whether anything was cut.
  bool keep_within_cap(std::string& text) const {
    if (text.size() <= max_output_bytes_) return false;
    std::size_t cut = max_output_bytes_;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
    return true;
  }

  ExecutionResult run(std::string_view code, const ExecuteOptions& options, bool command) {
    std::variant<std::monostate, Scripted, Handler> next;
    {
      std::lock_guard lock(mutex_);
      if (terminated_) throw SandboxNotInitializedError();
      calls_.push_back(ExecuteCall{std::string(code), options.files, options.upload_dir, options.timeout, options.env,
                                   options.cancel.stop_possible(), command});
      std::string dir = options.upload_dir.value_or(capabilities_.upload_dir);
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      for (const auto& file : options.files) {
        std::string data = file.data;
        if (file.source) {
          std::ifstream in(*file.source, std::ios::binary);
          std::stringstream buffer;
          buffer << in.rdbuf();
          data = buffer.str();
        }
        files_[dir + "/" + file.filename] = std::move(data);
      }
      if (!script_.empty()) {
        auto& front = script_.front();
        if (auto* scripted = std::get_if<Scripted>(&front)) {
          next = std::move(*scripted);
        } else {
          next = std::move(std::get<Handler>(front));
        }
        script_.pop_front();
      }
    }
    ExecutionResult result;
    if (auto* scripted = std::get_if<Scripted>(&next)) {
      result = std::move(scripted->result);
      std::lock_guard lock(mutex_);
      for (auto& [path, data] : scripted->writes) files_[path] = std::move(data);
    } else if (auto* handler = std::get_if<Handler>(&next)) {
      result = (*handler)(code, options);
    } else {
      result.status = ExecutionStatus::kError;
      result.error = "FakeSandbox: no scripted result left for this call";
      result.failure = FailureDetail{"fake.exhausted", true};
    }
    result.code = std::string(code);
    // The callbacks get the whole output; only the kept text is capped (docs/errors.md "Output"). A callback that
    // throws stops both: the call is kUnknown, its text kept.
    std::string thrown;
    const bool delivered = stream_lines(options.on_stdout, result.stdout_text, thrown) &&
                           stream_lines(options.on_stderr, result.stderr_text, thrown);
    const bool cut_stdout = keep_within_cap(result.stdout_text);
    const bool cut_stderr = keep_within_cap(result.stderr_text);
    if (cut_stdout || cut_stderr) result.truncated = true;
    if (!delivered) {
      result.status = ExecutionStatus::kUnknown;
      result.exit_code = -1;
      result.timeout_kind.reset();
      result.failure = FailureDetail{"callback.exception", false};
      result.error = std::move(thrown);
      result.results.clear();
      result.code_error.reset();
    }
    return result;
  }

  Capabilities capabilities_;
  std::size_t max_output_bytes_;
  mutable std::mutex mutex_;
  std::deque<std::variant<Scripted, Handler>> script_;
  std::map<std::string, std::string> files_;
  std::map<std::string, nlohmann::json> variables_;
  std::vector<ExecuteCall> calls_;
  std::vector<std::string> downloads_;
  std::vector<std::string> made_dirs_;
  bool terminated_ = false;
};

/// A scripted language model: each `invoke` takes the next queued entry — a response, an exception, or a handler —
/// and records the messages and tools it was given. An exhausted queue throws LMInvocationError (stage execute,
/// kInternal). Thread-safe; handlers run without the lock held.
class FakeLMInvoker : public LMInvoker {
 public:
  using Handler = std::function<LMResponse(std::span<const ChatMessage> messages,
                                           std::span<const ToolDefinition> tools, std::stop_token cancel)>;

  /// One recorded call.
  struct Call {
    std::vector<ChatMessage> messages;
    std::vector<ToolDefinition> tools;
  };

  FakeLMInvoker& push_response(LMResponse response) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(response));
    return *this;
  }

  /// A final answer (no tool call).
  FakeLMInvoker& push_answer(std::string text, LMUsage usage = {}) {
    LMResponse response;
    response.text = std::move(text);
    response.stop_reason = "stop";
    response.usage = usage;
    return push_response(std::move(response));
  }

  /// One execute_code call running `code`, with id "call_<n>" (n counts the calls pushed this way, from 1), and
  /// `text` beside it.
  FakeLMInvoker& push_code(std::string_view code, std::string text = {}, LMUsage usage = {}) {
    LMResponse response;
    response.text = std::move(text);
    response.stop_reason = "tool_calls";
    response.usage = usage;
    std::string id;
    {
      std::lock_guard lock(mutex_);
      id = "call_" + std::to_string(++ids_);
    }
    response.tool_calls.push_back(ToolCall{std::move(id), "execute_code", "{\"code\":" + json_string(code) + "}"});
    return push_response(std::move(response));
  }

  /// The next call throws `error`.
  FakeLMInvoker& push_error(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(error));
    return *this;
  }

  FakeLMInvoker& push_handler(Handler handler) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(handler));
    return *this;
  }

  [[nodiscard]] std::vector<Call> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  [[nodiscard]] std::size_t pending() const {
    std::lock_guard lock(mutex_);
    return script_.size();
  }

  [[nodiscard]] LMResponse invoke(std::span<const ChatMessage> messages, std::span<const ToolDefinition> tools,
                                  std::stop_token cancel = {}) override {
    std::variant<std::monostate, LMResponse, std::exception_ptr, Handler> next;
    {
      std::lock_guard lock(mutex_);
      calls_.push_back(Call{{messages.begin(), messages.end()}, {tools.begin(), tools.end()}});
      if (!script_.empty()) {
        std::visit([&](auto& entry) { next = std::move(entry); }, script_.front());
        script_.pop_front();
      }
    }
    if (auto* response = std::get_if<LMResponse>(&next)) return std::move(*response);
    if (auto* error = std::get_if<std::exception_ptr>(&next)) std::rethrow_exception(*error);
    if (auto* handler = std::get_if<Handler>(&next)) return (*handler)(messages, tools, std::move(cancel));
    throw LMInvocationError("FakeLMInvoker: no scripted response left for this call", Stage::kExecute,
                            ErrorKind::kInternal);
  }

  /// `text` as a JSON string literal (quotes included).
  static std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += escaped;
          } else {
            out += c;
          }
      }
    }
    return out + "\"";
  }

 private:
  mutable std::mutex mutex_;
  std::deque<std::variant<LMResponse, std::exception_ptr, Handler>> script_;
  std::vector<Call> calls_;
  int ids_ = 0;
};

}  // namespace code_interpreter::testing
