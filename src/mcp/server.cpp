// serve_mcp: the Model Context Protocol over stdio (modelcontextprotocol.io, "Base Protocol" and "Transports: stdio"):
// JSON-RPC 2.0 messages, one per line, UTF-8. A reader (the calling thread) parses and answers everything but
// tools/call, which a worker runs one at a time, so a cancellation is read while a call runs.
#include "code_interpreter/mcp_server.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "code_interpreter/logging.hpp"
#include "core/pipe_write.hpp"
#include "core/untrusted.hpp"

namespace code_interpreter {
namespace {

using json = nlohmann::json;

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kServerBusy = -32000;  // JSON-RPC's range for a server's own errors

// Calls queued behind the running one; more are refused, so a client cannot make the server hold unbounded input.
constexpr std::size_t kMaxPendingCalls = 16;
// The waiting calls' arguments total at most this many longest messages (McpServerOptions::max_message_bytes).
constexpr std::size_t kMaxQueuedMessages = 4;

constexpr const char* kResetTool = "reset_sandbox";

// RFC 5424 severities as MCP names them ("Utilities: Logging"), least severe first.
constexpr std::string_view kLevels[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
int level_index(std::string_view level) {
  for (std::size_t i = 0; i < std::size(kLevels); ++i)
    if (kLevels[i] == level) return static_cast<int>(i);
  return -1;
}

// Added to the first answer after a cancelled call that lost the sandbox's state.
constexpr std::string_view kEarlierStateLost =
    "[The sandbox's state was lost when an earlier call was cancelled: variables, imports and files are gone.]";

// What a waiting tools/call keeps: not its parsed params (a DOM costs many times its text), only what runs it.
struct Job {
  json id;
  std::string name;
  std::string arguments;               // the arguments object as JSON text
  std::optional<json> progress_token;  // _meta.progressToken, a string or an integer
  std::stop_source stop;
  bool cancelled = false;
  bool state_lost = false;  // set by the worker: the call's result says the sandbox's state was lost
};

class Session {
 public:
  Session(int out_fd, const McpServerOptions& options) : out_fd_(out_fd), options_(options) {
    if (options_.max_sandboxes < 1) throw std::invalid_argument("McpServerOptions::max_sandboxes must be at least 1");
    SandboxProfile profile;
    if (options_.profile) {
      profile = *options_.profile;
    } else {
      profile = {declared_capabilities(options_.sandbox), options_.sandbox.language, options_.sandbox.packages};
    }
    tool_options_ = options_.tool;
    if (options_.max_sandboxes > 1) {
      if (!tool_options_.description_note.empty()) tool_options_.description_note += " ";
      tool_options_.description_note += fmt::format(
          "One sandbox serves this whole session; call {} to start over in a fresh one (at most {} sandboxes per "
          "session).",
          kResetTool, options_.max_sandboxes);
    }
    definition_ = SandboxTool::describe(profile, tool_options_);  // throws for bad tool options
    worker_ = std::jthread([this](std::stop_token stop) { work(stop); });
  }

  ~Session() { shut_down(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // One line from the client (without its newline).
  void handle_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    const json message = detail::parse_untrusted_json(line, 64);
    if (message.is_discarded()) return send_error(nullptr, kParseError, "Parse error: the message is not JSON");
    if (message.is_array()) return send_error(nullptr, kInvalidRequest, "Invalid Request: batches are not supported");
    if (!message.is_object()) return send_error(nullptr, kInvalidRequest, "Invalid Request: not a JSON-RPC object");
    // A response (a result or an error and no method) is never answered, whatever its id: the server sends no
    // request to match it with, and an error answered with an error would ping-pong.
    if (!message.contains("method") && (message.contains("result") || message.contains("error"))) return;
    const bool has_id = message.contains("id");
    json id = nullptr;
    if (has_id) {
      const auto& raw = message["id"];
      if (raw.is_string() || raw.is_number_integer()) id = raw;
      else return send_error(nullptr, kInvalidRequest, "Invalid Request: id must be a string or an integer");
      // A lone surrogate's escape is kept as text by the parser (parse_untrusted_json), so the id could not be
      // echoed as the client wrote it: such an id is refused.
      if (raw.is_string() && raw.get_ref<const std::string&>().find("\\u") != std::string::npos &&
          detail::escape_lone_surrogates(line))
        return send_error(nullptr, kInvalidRequest, "Invalid Request: id must not hold a lone surrogate");
    }
    // An invalid request is answered even without an id, with id null (JSON-RPC 2.0, "Response object").
    if (!message.contains("jsonrpc") || message["jsonrpc"] != "2.0")
      return send_error(id, kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"");
    if (!message.contains("method")) return send_error(id, kInvalidRequest, "Invalid Request: no method");
    if (!message["method"].is_string())
      return send_error(id, kInvalidRequest, "Invalid Request: method must be a string");
    const std::string& method = message["method"].get_ref<const std::string&>();
    json params = message.contains("params") ? message["params"] : json::object();
    if (!params.is_object()) {
      if (has_id) send_error(id, kInvalidParams, "Invalid params: params must be an object");
      return;
    }
    if (!has_id) return notification(method, params);
    request(id, method, params);
  }

  void message_too_long(std::size_t limit) {
    send_error(nullptr, kInvalidRequest, fmt::format("Invalid Request: a message is longer than {} bytes", limit));
  }

  void shut_down() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
      for (auto& job : queue_) job->stop.request_stop();
      if (running_) running_->stop.request_stop();
    }
    cv_.notify_all();
    if (worker_.joinable()) {
      worker_.request_stop();
      worker_.join();
    }
    if (sandbox_) {
      try {
        sandbox_->terminate();
      } catch (const std::exception& e) {
        logger()->warn("mcp: the sandbox could not be terminated: {}", e.what());
      }
      sandbox_.reset();
    }
  }

 private:
  void notification(const std::string& method, const json& params) {
    if (method == "notifications/cancelled") {
      if (!params.contains("requestId")) return;
      const json& target = params["requestId"];
      std::lock_guard lock(mu_);
      for (auto& job : queue_) {
        if (job->id == target) {
          job->cancelled = true;
          job->stop.request_stop();
        }
      }
      if (running_ && running_->id == target) {
        running_->cancelled = true;
        running_->stop.request_stop();
        log("info", "the client cancelled a tool call");
      }
    }
    // notifications/initialized, progress, roots: nothing to do; unknown ones are ignored, as JSON-RPC says.
  }

  void request(const json& id, const std::string& method, const json& params) {
    if (method == "initialize") {
      if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string())
        return send_error(id, kInvalidParams, "Invalid params: protocolVersion must be a string");
      const auto& asked = params["protocolVersion"].get_ref<const std::string&>();
      std::string_view version = kMcpProtocolVersions[0];
      for (const auto v : kMcpProtocolVersions)
        if (v == asked) version = v;
      return send_result(id, {{"protocolVersion", version},
                              {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
                              {"serverInfo", {{"name", "code-interpreter"}, {"version", options_.server_version}}}});
    }
    if (method == "ping") return send_result(id, json::object());
    if (method == "tools/list") {
      json tools = json::array();
      tools.push_back({{"name", definition_.name},
                       {"description", definition_.description},
                       {"inputSchema", json::parse(definition_.parameters)}});
      if (options_.max_sandboxes > 1) {
        tools.push_back({{"name", kResetTool},
                         {"description", fmt::format("Ends the current sandbox, losing its variables and files; the "
                                                     "next {} call starts a fresh one. At most {} sandboxes per session.",
                                                     definition_.name, options_.max_sandboxes)},
                         {"inputSchema", {{"type", "object"}, {"properties", json::object()},
                                          {"additionalProperties", false}}}});
      }
      return send_result(id, {{"tools", tools}});
    }
    if (method == "logging/setLevel") {
      if (!params.contains("level") || !params["level"].is_string() ||
          level_index(params["level"].get_ref<const std::string&>()) < 0)
        return send_error(id, kInvalidParams, "Invalid params: level must be one of debug, info, notice, warning, "
                                              "error, critical, alert, emergency");
      level_ = level_index(params["level"].get_ref<const std::string&>());
      return send_result(id, json::object());
    }
    if (method == "tools/call") {
      if (!params.contains("name") || !params["name"].is_string())
        return send_error(id, kInvalidParams, "Invalid params: name must be a string");
      const auto& name = params["name"].get_ref<const std::string&>();
      if (name != definition_.name && !(name == kResetTool && options_.max_sandboxes > 1))
        return send_error(id, kInvalidParams, "Invalid params: unknown tool");
      if (params.contains("arguments") && !params["arguments"].is_object())
        return send_error(id, kInvalidParams, "Invalid params: arguments must be an object");
      auto job = std::make_shared<Job>();
      job->id = id;
      job->name = name;
      job->arguments = params.contains("arguments")
                           ? params["arguments"].dump(-1, ' ', false, json::error_handler_t::replace)
                           : std::string("{}");
      if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken")) {
        const auto& t = params["_meta"]["progressToken"];
        if (t.is_string() || t.is_number_integer()) job->progress_token = t;
      }
      // The waiting calls' arguments are bounded in total, as well as in number.
      const std::size_t max_queued = kMaxQueuedMessages * options_.max_message_bytes;
      {
        std::lock_guard lock(mu_);
        if (queue_.size() >= kMaxPendingCalls) {
          return send_error(id, kServerBusy, fmt::format("Server busy: at most {} tool calls may wait", kMaxPendingCalls));
        }
        if (queued_bytes_ + job->arguments.size() > max_queued) {
          return send_error(id, kServerBusy,
                            fmt::format("Server busy: the waiting tool calls' arguments may total at most {} bytes",
                                        max_queued));
        }
        queued_bytes_ += job->arguments.size();
        queue_.push_back(std::move(job));
      }
      cv_.notify_all();
      return;
    }
    send_error(id, kMethodNotFound, "Method not found");
  }

  void work(std::stop_token stop) {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, stop, [&] { return !queue_.empty() || closing_; });
        if (closing_ || stop.stop_requested()) return;
        job = queue_.front();
        queue_.pop_front();
        queued_bytes_ -= job->arguments.size();
        if (job->cancelled) continue;
        running_ = job;
      }
      json result;
      try {
        result = run(*job);
      } catch (const std::exception& e) {
        result = text_result(std::string("[error: ") + e.what() + "]", true);
      }
      bool answer = false;
      {
        std::lock_guard lock(mu_);
        answer = !job->cancelled;
        running_.reset();
      }
      // A cancelled request gets no answer ("Utilities: Cancellation"), so a state lost in it (code that did not
      // yield to the interrupt, its runtime restarted) is told with the next answer, which the model reads.
      if (!answer && job->state_lost) {
        earlier_state_lost_ = true;
        log("warning", "the cancelled call did not stop when interrupted: the sandbox's state was lost");
      }
      if (answer && earlier_state_lost_ && !job->state_lost && result.contains("content")) {
        auto& text = result["content"][0]["text"];
        text = text.get<std::string>() + "\n" + std::string(kEarlierStateLost);
      }
      if (answer) earlier_state_lost_ = false;
      if (answer) send_result(job->id, result);
    }
  }

  static json text_result(std::string text, bool is_error) {
    return {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})}, {"isError", is_error}};
  }

  json run(Job& job) {
    const auto& name = job.name;
    if (name == kResetTool) {
      if (job.arguments != "{}") return text_result("[error: reset_sandbox takes no arguments. Nothing was done.]", true);
      if (!sandbox_) return text_result("[no sandbox is running: the next call starts a fresh one]", false);
      if (created_ >= options_.max_sandboxes)
        return text_result(fmt::format("[error: this session has had {} sandboxes, the most it may have; the current "
                                       "one is kept.]",
                                       created_),
                           true);
      terminate_sandbox();
      earlier_state_lost_ = false;  // the fresh sandbox is the news
      log("info", "the sandbox was reset");
      return text_result("[the sandbox was ended: the next call starts a fresh one]", false);
    }
    // Arguments the tool refuses are refused before a sandbox is created (and, on a cloud backend, paid for).
    if (auto refusal = SandboxTool::check_arguments(job.arguments, tool_options_)) {
      return text_result(refusal->text, true);
    }
    if (!sandbox_) {
      if (created_ >= options_.max_sandboxes)
        return text_result("[error: this session may create no more sandboxes. Nothing was run.]", true);
      if (auto failed = start_sandbox(job)) return *failed;
    }
    const SandboxTool tool(*sandbox_, tool_options_);
    ToolCallOptions call;
    call.cancel = job.stop.get_token();
    const auto called = tool.call(job.arguments, call);
    if (called.execution) {
      job.state_lost = called.execution->state_lost;
      log(called.is_error ? "warning" : "debug",
          fmt::format("{} ended {}", definition_.name, to_string(called.execution->status)));
    }
    json out = text_result(called.text, called.is_error);
    for (const auto& image : called.images)
      out["content"].push_back({{"type", "image"}, {"data", image.data}, {"mimeType", image.media_type}});
    return out;
  }

  // Starts the session's sandbox; the result to answer with when it cannot start.
  std::optional<json> start_sandbox(Job& job) {
    SandboxConfig config = options_.sandbox;
    config.cancel = job.stop.get_token();
    const std::optional<json>& token = job.progress_token;
    log("info", "starting the " + config.backend + " sandbox");
    std::jthread ticker;
    if (token) {
      ticker = std::jthread([this, token = *token, backend = config.backend](std::stop_token stop) {
        std::mutex m;
        std::condition_variable_any cv;
        for (int tick = 0; !stop.stop_requested(); ++tick) {
          send({{"jsonrpc", "2.0"},
                {"method", "notifications/progress"},
                {"params", {{"progressToken", token}, {"progress", tick},
                            {"message", "starting the " + backend + " sandbox"}}}});
          std::unique_lock lock(m);
          cv.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
        }
      });
    }
    try {
      sandbox_ = options_.create ? options_.create(config) : create_sandbox(config);
      ++created_;
    } catch (const CodeInterpreterError& e) {
      ticker = {};
      // A start the client cancelled is news, not a failure.
      if (job.stop.stop_requested()) log("info", "the sandbox start was cancelled");
      else log("error", fmt::format("the sandbox could not start ({}): {}", to_string(e.stage()), e.what()));
      return text_result(fmt::format("[error: the sandbox could not start ({}): {}. Nothing was run.]",
                                     to_string(e.stage()), e.what()),
                         true);
    }
    if (ticker.joinable()) {
      ticker.request_stop();
      ticker.join();
    }
    log("info", "the sandbox started");
    return std::nullopt;
  }

  void terminate_sandbox() {
    try {
      sandbox_->terminate();
    } catch (const std::exception& e) {
      logger()->warn("mcp: the sandbox could not be terminated: {}", e.what());
    }
    sandbox_.reset();
  }

  void log(std::string_view level, const std::string& text) {
    const int index = level_index(level);
    if (index >= 3) logger()->warn("mcp: {}", text);
    else logger()->debug("mcp: {}", text);
    if (index < level_.load()) return;
    send({{"jsonrpc", "2.0"},
          {"method", "notifications/message"},
          {"params", {{"level", level}, {"logger", "code-interpreter"}, {"data", text}}}});
  }

  void send_result(const json& id, json result) { send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}); }

  void send_error(const json& id, int code, std::string message) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", std::move(message)}}}});
  }

  void send(const json& message) {
    std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace);
    line += '\n';
    std::lock_guard lock(out_mu_);
    // A client that has gone fails the write (end of input follows); SIGPIPE never reaches the host program.
    (void)detail::write_all(out_fd_, line);
  }

  int out_fd_;
  const McpServerOptions& options_;
  SandboxToolOptions tool_options_;
  ToolDefinition definition_;
  std::atomic<int> level_{1};  // info
  std::mutex out_mu_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::shared_ptr<Job> running_;
  std::size_t queued_bytes_ = 0;  // the waiting jobs' arguments text
  bool closing_ = false;
  std::unique_ptr<CodeInterpreterSandbox> sandbox_;  // the worker's, and shut_down's once it has joined
  int created_ = 0;
  bool earlier_state_lost_ = false;  // the worker's: a cancelled call lost the state, not yet told
  std::jthread worker_;  // last: joined before the rest is destroyed
};

}  // namespace

int serve_mcp(int in_fd, int out_fd, const McpServerOptions& options) {
  Session session(out_fd, options);
  std::string line;
  bool skipping = false;  // inside a message over the limit: dropped up to its newline
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(in_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view chunk(buffer, static_cast<std::size_t>(n));
    while (!chunk.empty()) {
      const auto newline = chunk.find('\n');
      const auto piece = chunk.substr(0, newline);
      if (!skipping) {
        if (line.size() + piece.size() > options.max_message_bytes) {
          skipping = true;
          line.clear();
          line.shrink_to_fit();
          session.message_too_long(options.max_message_bytes);
        } else {
          line.append(piece);
        }
      }
      if (newline == std::string_view::npos) break;
      if (!skipping) session.handle_line(line);
      skipping = false;
      line.clear();
      chunk.remove_prefix(newline + 1);
    }
  }
  // A last message without its newline is still one message.
  if (!skipping && !line.empty()) session.handle_line(line);
  session.shut_down();
  return 0;
}

}  // namespace code_interpreter
