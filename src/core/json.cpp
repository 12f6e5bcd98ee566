#include "code_interpreter/json.hpp"

#include <stdexcept>

#include "core/untrusted.hpp"

namespace code_interpreter {

namespace {
template <typename Enum, std::size_t N>
Enum parse_enum(const nlohmann::json& j, const Enum (&values)[N], const char* what) {
  const auto text = j.get<std::string>();
  for (Enum v : values) {
    if (to_string(v) == text) return v;
  }
  throw nlohmann::json::other_error::create(501, std::string("unknown ") + what + " '" + text + "'", &j);
}

constexpr ExecutionStatus kStatuses[] = {ExecutionStatus::kSuccess, ExecutionStatus::kError,
                                         ExecutionStatus::kTimeout, ExecutionStatus::kUnknown};
constexpr TimeoutKind kTimeoutKinds[] = {TimeoutKind::kExecution, TimeoutKind::kRequest,
                                         TimeoutKind::kSandboxLost};
constexpr FileType kFileTypes[] = {FileType::kFile, FileType::kDirectory, FileType::kSymlink, FileType::kOther};

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}
}  // namespace

void to_json(nlohmann::json& j, const FailureDetail& v) {
  j = {{"exception_type", v.exception_type}, {"retry_safe", v.retry_safe}};
}
void from_json(const nlohmann::json& j, FailureDetail& v) {
  j.at("exception_type").get_to(v.exception_type);
  j.at("retry_safe").get_to(v.retry_safe);
}

void to_json(nlohmann::json& j, const CodeError& v) {
  j = {{"name", v.name}, {"value", v.value}, {"traceback", v.traceback}};
}
void from_json(const nlohmann::json& j, CodeError& v) {
  j.at("name").get_to(v.name);
  j.at("value").get_to(v.value);
  j.at("traceback").get_to(v.traceback);
}

void to_json(nlohmann::json& j, const RichResult& v) {
  j = {{"data", v.data}, {"is_main_result", v.is_main_result}};
}
void from_json(const nlohmann::json& j, RichResult& v) {
  j.at("data").get_to(v.data);
  j.at("is_main_result").get_to(v.is_main_result);
}

// FileInfo: {"name", "path", "is_directory", "size"}, and, only when set, "type" ("file", "directory", "symlink",
// "other"), "modified_ms" (milliseconds since the Unix epoch) and "permissions" (the mode bits, a number).
void to_json(nlohmann::json& j, const FileInfo& v) {
  j = {{"name", v.name}, {"path", v.path}, {"is_directory", v.is_directory}, {"size", v.size}};
  if (v.type) j["type"] = std::string(to_string(*v.type));
  if (v.modified)
    j["modified_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(v.modified->time_since_epoch()).count();
  if (v.permissions) j["permissions"] = *v.permissions;
}
void from_json(const nlohmann::json& j, FileInfo& v) {
  j.at("name").get_to(v.name);
  j.at("path").get_to(v.path);
  j.at("is_directory").get_to(v.is_directory);
  j.at("size").get_to(v.size);
  v.type.reset();
  if (const auto it = j.find("type"); it != j.end()) v.type = parse_enum(*it, kFileTypes, "file type");
  v.modified.reset();
  if (const auto it = j.find("modified_ms"); it != j.end())
    v.modified = detail::clamped_system_time(std::chrono::milliseconds(
        it->is_number_unsigned() && it->get<std::uint64_t>() > std::uint64_t(INT64_MAX) ? INT64_MAX
                                                                                       : it->get<std::int64_t>()));
  v.permissions.reset();
  if (const auto it = j.find("permissions"); it != j.end()) v.permissions = it->get<std::uint32_t>();
}

void to_json(nlohmann::json& j, const ExecutionResult& v) {
  j = nlohmann::json::object();
  j["status"] = std::string(to_string(v.status));
  j["code"] = v.code;
  j["stdout"] = v.stdout_text;
  j["stderr"] = v.stderr_text;
  j["error"] = v.error;
  j["exit_code"] = v.exit_code;
  j["duration_ms"] = v.duration ? nlohmann::json(v.duration->count()) : nlohmann::json(nullptr);
  j["failure"] = optional_json(v.failure);
  j["code_error"] = optional_json(v.code_error);
  j["results"] = v.results;
  j["timeout_kind"] =
      v.timeout_kind ? nlohmann::json(std::string(to_string(*v.timeout_kind))) : nlohmann::json(nullptr);
  j["state_lost"] = v.state_lost;
  j["truncated"] = v.truncated;
}

void from_json(const nlohmann::json& j, ExecutionResult& v) {
  ExecutionResult r;
  r.status = parse_enum(j.at("status"), kStatuses, "status");
  j.at("code").get_to(r.code);
  j.at("stdout").get_to(r.stdout_text);
  j.at("stderr").get_to(r.stderr_text);
  j.at("error").get_to(r.error);
  j.at("exit_code").get_to(r.exit_code);
  if (const auto& d = j.at("duration_ms"); !d.is_null()) r.duration = std::chrono::milliseconds(d.get<long long>());
  if (const auto& f = j.at("failure"); !f.is_null()) r.failure = f.get<FailureDetail>();
  if (const auto& c = j.at("code_error"); !c.is_null()) r.code_error = c.get<CodeError>();
  j.at("results").get_to(r.results);
  if (const auto& t = j.at("timeout_kind"); !t.is_null()) r.timeout_kind = parse_enum(t, kTimeoutKinds, "timeout_kind");
  j.at("state_lost").get_to(r.state_lost);
  j.at("truncated").get_to(r.truncated);
  v = std::move(r);
}

}  // namespace code_interpreter
