#include "code_interpreter/interpreter.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "code_interpreter/logging.hpp"
#include "code_interpreter/tool.hpp"
#include "interpreter/links.hpp"
#include "interpreter/prompt.hpp"
#include "interpreter/tool_result.hpp"

namespace code_interpreter {

using Clock = std::chrono::steady_clock;

std::string_view to_string(ChatRole role) noexcept {
  switch (role) {
    case ChatRole::kSystem: return "system";
    case ChatRole::kUser: return "user";
    case ChatRole::kAssistant: return "assistant";
    case ChatRole::kTool: return "tool";
  }
  return "user";
}

std::string_view to_string(StopReason reason) noexcept {
  switch (reason) {
    case StopReason::kAnswered: return "answered";
    case StopReason::kMaxTurns: return "max_turns";
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kTimeout: return "timeout";
    case StopReason::kLMError: return "lm_error";
    case StopReason::kSandboxError: return "sandbox_error";
  }
  return "answered";
}

LMInvoker::~LMInvoker() = default;

namespace {

constexpr const char* kToolName = "execute_code";
// One stop for the whole loop: the caller's stop_token, and the overall timeout through a watchdog thread.
class LoopStop {
 public:
  LoopStop(std::stop_token user, Timeout timeout) {
    if (user.stop_possible()) forward_.emplace(user, Forward{&source_});
    if (timeout && timeout->count() > 0) {
      deadline_ = Clock::now() + *timeout;
      watchdog_ = std::jthread([this](std::stop_token own) {
        std::mutex mutex;
        std::condition_variable_any cv;
        std::unique_lock lock(mutex);
        cv.wait_until(lock, own, *deadline_, [] { return false; });
        if (!own.stop_requested()) {
          timed_out_ = true;
          source_.request_stop();
        }
      });
    }
  }

  [[nodiscard]] std::stop_token token() const { return source_.get_token(); }
  [[nodiscard]] bool stopped() const { return source_.stop_requested(); }
  [[nodiscard]] StopReason reason() const { return timed_out_ ? StopReason::kTimeout : StopReason::kCancelled; }

  // What is left of the overall budget; nullopt when there is none.
  [[nodiscard]] std::optional<std::chrono::milliseconds> remaining() const {
    if (!deadline_) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - Clock::now());
    return std::max(left, std::chrono::milliseconds(1));
  }

 private:
  struct Forward {
    std::stop_source* source;
    void operator()() const noexcept { source->request_stop(); }
  };
  std::stop_source source_;
  std::atomic<bool> timed_out_{false};
  std::optional<Clock::time_point> deadline_;
  std::optional<std::stop_callback<Forward>> forward_;
  std::jthread watchdog_;  // last: stopped and joined first
};

std::string guess_mime_type(std::string_view name) {
  const auto dot = name.rfind('.');
  if (dot == std::string_view::npos) return "application/octet-stream";
  std::string ext(name.substr(dot + 1));
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::pair<const char*, const char*> kTypes[] = {
      {"csv", "text/csv"},        {"txt", "text/plain"},        {"md", "text/markdown"},
      {"json", "application/json"}, {"html", "text/html"},    {"png", "image/png"},
      {"jpg", "image/jpeg"},      {"jpeg", "image/jpeg"},       {"svg", "image/svg+xml"},
      {"pdf", "application/pdf"}, {"zip", "application/zip"},   {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}};
  for (const auto& [extension, type] : kTypes) {
    if (ext == extension) return type;
  }
  return "application/octet-stream";
}

// Model text for a log line: control bytes as \xNN (no forged lines, no terminal escapes), at most 256 bytes.
std::string loggable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 256)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  if (text.size() > 256) out += "...";
  return out;
}

}  // namespace

SandboxCodeInterpreter::SandboxCodeInterpreter(CodeInterpreterSandbox& sandbox, LMInvoker& lm_invoker,
                                               InterpreterOptions options)
    : sandbox_(sandbox), lm_(lm_invoker), options_(std::move(options)) {
  if (options_.max_turns < 1) throw std::invalid_argument("InterpreterOptions::max_turns must be at least 1");
  if (options_.max_tool_calls_per_turn < 1) {
    throw std::invalid_argument("InterpreterOptions::max_tool_calls_per_turn must be at least 1");
  }
  if (options_.max_tool_result_bytes < 1024) {
    throw std::invalid_argument("InterpreterOptions::max_tool_result_bytes must be at least 1024");
  }
}

namespace {

// The tool as the loop offers it: the options' budget and caps, the input files named in the description.
SandboxToolOptions tool_options(const InterpreterOptions& options, std::vector<std::string> file_names) {
  SandboxToolOptions o;
  o.name = kToolName;
  o.execution_timeout = options.execution_timeout;
  o.input_files = std::move(file_names);
  o.max_result_bytes = options.max_tool_result_bytes;
  o.max_images = options.max_images_per_result;
  o.max_image_bytes = options.max_image_bytes;
  return o;
}

}  // namespace

ToolDefinition SandboxCodeInterpreter::tool_definition(const std::vector<std::string>& file_names) const {
  return SandboxTool(sandbox_, tool_options(options_, file_names)).definition();
}

InterpreterResult SandboxCodeInterpreter::execute(std::string_view request, std::vector<Attachment> files,
                                                  std::stop_token cancel) {
  std::vector<std::string> file_names;
  {
    std::set<std::string> seen;
    for (const auto& file : files) {
      validate_attachment_name(file.filename);
      if (!seen.insert(file.filename).second) {
        throw std::invalid_argument("file name '" + file.filename + "' is given twice");
      }
      file_names.push_back(file.filename);
    }
  }
  const SandboxTool tool(sandbox_, tool_options(options_, file_names));
  const std::vector<ToolDefinition> tools{tool.definition()};
  const interpreter::SandboxFacts facts{sandbox_.capabilities(), sandbox_.language(), file_names};

  InterpreterResult result;
  result.messages.push_back({ChatRole::kSystem, interpreter::system_prompt(facts, options_.instructions), {}, {}, false, {}});
  result.messages.push_back({ChatRole::kUser, std::string(request), {}, {}, false, {}});

  LoopStop stop(std::move(cancel), options_.timeout);
  // The files go with an execution; they are owed again until one ran, and after the sandbox lost its state.
  bool files_owed = !files.empty();
  // The model is told to write its output under upload_dir, which some backends create only with an upload.
  bool dir_owed = facts.capabilities.filesystem;

  const auto stopped = [&](StopReason reason, std::string text, std::exception_ptr error = nullptr) {
    result.stop_reason = reason;
    result.text = std::move(text);
    result.error = std::move(error);
  };
  const auto stopped_by_stop = [&] {
    stopped(stop.reason(), stop.reason() == StopReason::kTimeout
                               ? "[stopped: the interpreter's timeout ran out]"
                               : "[stopped: cancelled]");
  };

  for (int turn = 1;; ++turn) {
    if (stop.stopped()) {
      stopped_by_stop();
      return result;
    }
    LMResponse response;
    try {
      response = lm_.invoke(result.messages, tools, stop.token());
    } catch (const std::exception& e) {
      // LMInvocationError is the contract; anything else a user's invoker throws ends the loop the same way.
      if (stop.stopped()) {
        stopped_by_stop();
      } else {
        stopped(StopReason::kLMError, std::string("[stopped: the language model call failed: ") + e.what() + "]",
                std::current_exception());
      }
      return result;
    }
    result.turns = turn;
    result.usage += response.usage;
    result.messages.push_back({ChatRole::kAssistant, response.text, response.tool_calls, {}, false, {}});

    if (response.tool_calls.empty()) {
      result.stop_reason = StopReason::kAnswered;
      result.text = response.text;
      break;
    }
    if (turn >= options_.max_turns) {
      // The calls of the last turn are not run: their results could never reach the model.
      stopped(StopReason::kMaxTurns,
              fmt::format("[stopped: no final answer after {} model calls (max_turns)]", options_.max_turns));
      return result;
    }

    std::size_t position = 0;
    for (const auto& call : response.tool_calls) {
      ChatMessage answer{ChatRole::kTool, {}, {}, call.id, true, {}};
      if (position++ >= static_cast<std::size_t>(options_.max_tool_calls_per_turn)) {
        answer.content = fmt::format("[not run: at most {} tool calls are run per turn. Nothing was run.]",
                                     options_.max_tool_calls_per_turn);
      } else if (call.name != kToolName) {
        answer.content = fmt::format("[error: there is no tool '{}'; the only tool is {}. Nothing was run.]",
                                     interpreter::quoted_name(call.name), kToolName);
      } else if (stop.stopped()) {
        answer.content = "[not run: the interpreter was stopped]";
      } else {
        ToolCallOptions call_options;
        call_options.cancel = stop.token();
        call_options.max_budget = stop.remaining();
        if (files_owed) {
          call_options.files = files;
        } else if (dir_owed) {
          try {
            sandbox_.make_dir(facts.capabilities.upload_dir);
          } catch (const std::exception& e) {
            logger()->warn("interpreter: cannot create {}: {}", facts.capabilities.upload_dir, e.what());
          }
          dir_owed = false;
        }
        auto called = tool.call(call.arguments, call_options);
        if (called.error) {
          try {
            std::rethrow_exception(called.error);
          } catch (const std::invalid_argument&) {
            throw;
          } catch (const std::exception& e) {
            stopped(StopReason::kSandboxError, std::string("[stopped: the sandbox failed: ") + e.what() + "]",
                    std::current_exception());
            return result;
          }
        }
        answer.content = std::move(called.text);
        answer.is_error = called.is_error;
        answer.images = std::move(called.images);
        if (called.execution) {
          const ExecutionResult& executed = *called.execution;
          if (files_owed) {
            // kError with a FailureDetail: the call never ran, so the upload may not have happened either.
            const bool never_ran = executed.status == ExecutionStatus::kError && executed.failure.has_value();
            files_owed = never_ran;
            dir_owed = dir_owed && never_ran;
          }
          if (executed.state_lost) {
            files_owed = !files.empty();
            dir_owed = facts.capabilities.filesystem;
          }
          result.code_exec_results.push_back({std::move(called.code), std::move(*called.execution), {}});
        }
      }
      result.messages.push_back(std::move(answer));
    }
  }

  // The final answer: fetch the files its sandbox links name.
  const std::string upload_dir = facts.capabilities.upload_dir;
  std::set<std::string> fetched;
  std::size_t returned_bytes = 0;  // bounded by max_total_file_bytes
  for (auto& link : interpreter::find_sandbox_links(result.text, upload_dir)) {
    if (!link.path) {
      logger()->warn("interpreter: refused a sandbox link outside {}: {}", upload_dir, loggable(link.target));
      result.refused_links.push_back(std::move(link.target));
      continue;
    }
    if (!fetched.insert(*link.path).second) continue;
    const auto missing = [&] { result.missing_files.push_back(link.target); };
    if (result.code_exec_results.empty() || !facts.capabilities.file_download || stop.stopped() ||
        fetched.size() > options_.max_linked_files) {
      missing();
      continue;
    }
    const std::string& path = *link.path;
    const std::string name = interpreter::base_name(path);
    // returned_bytes never exceeds max_total_file_bytes: each file fits in what was left. The sandbox's own word
    // on a file's size is only a hint: the download itself is capped at `room`, counted on the bytes received.
    const std::size_t room = std::min(options_.max_file_bytes, options_.max_total_file_bytes - returned_bytes);
    if (room == 0) {
      logger()->warn("interpreter: {} is past max_total_file_bytes", path);
      missing();
      continue;
    }
    try {
      if (facts.capabilities.filesystem) {
        // Look before fetching, so a file the sandbox admits is oversize is not transferred at all.
        const auto entries = sandbox_.list_files(path.substr(0, path.rfind('/')));
        const auto entry = std::find_if(entries.begin(), entries.end(),
                                        [&](const FileInfo& info) { return info.name == name && !info.is_directory; });
        if (entry == entries.end() || entry->size > room) {
          if (entry != entries.end()) logger()->warn("interpreter: {} is over the file size limits", path);
          missing();
          continue;
        }
      }
      auto bytes = sandbox_.download_file(path, stop.remaining(), room);
      if (!bytes || bytes->size() > room) {
        missing();
        continue;
      }
      returned_bytes += bytes->size();
      Attachment attachment = Attachment::from_bytes(std::move(*bytes), name);
      attachment.mime_type = guess_mime_type(name);
      result.code_exec_results.back().output.push_back(std::move(attachment));
    } catch (const std::exception& e) {
      logger()->warn("interpreter: cannot fetch {}: {}", path, e.what());
      missing();
    }
  }
  return result;
}

}  // namespace code_interpreter
