// AgentCore's SandboxManager: ListCodeInterpreterSessions, GetCodeInterpreterSession and StopCodeInterpreterSession
// of one code interpreter (docs/protocols/bedrock.md "Session operations"). Sessions cannot be paused and have no
// metadata: the tag is the prefix of the session's name (docs/backends/bedrock.md "Tags and session names").
#include "bedrock/manager.hpp"

#include <nlohmann/json.hpp>

#include "bedrock/stub.hpp"
#include "code_interpreter/logging.hpp"
#include "core/manager.hpp"
#include "core/nested.hpp"
#include "core/untrusted.hpp"
#include "http/outcome.hpp"
#include "http/retry.hpp"

namespace code_interpreter::bedrock {
namespace {

using nlohmann::json;
using detail::info_text;
using detail::kMaxListingBody;
using detail::management_error;

constexpr std::size_t kMaxNextToken = 2048;  // the model's bound


// A CodeInterpreterSessionSummary or a Get answer; nullopt when malformed: an id the service could not issue, a
// required field missing or of the wrong type, a createdAt that is not an RFC 3339 string (the model's DateTimestamp;
// the official client refuses a number too).
std::optional<SandboxInfo> decode_session(const json& s) {
  if (!s.is_object()) return std::nullopt;
  SandboxInfo info;
  info.backend = "bedrock";
  const auto id = info_text(s, "sessionId");
  const auto status = info_text(s, "status");
  const auto created = info_text(s, "createdAt");
  const auto interpreter = info_text(s, "codeInterpreterIdentifier");
  if (!id || !valid_session_id(*id) || !status || !created || !interpreter) return std::nullopt;
  info.sandbox_id = *id;
  info.raw_state = *status;
  info.state = *status == "READY" ? SandboxState::kRunning : *status == "TERMINATED" ? SandboxState::kTerminated
                                                                                      : SandboxState::kUnknown;
  info.created_at = detail::parse_rfc3339(*created);
  if (!info.created_at) return std::nullopt;
  info.template_id = *interpreter;
  if (const auto t = s.find("sessionTimeoutSeconds"); t != s.end() && !t->is_null()) {
    if (!t->is_number_unsigned() || t->get<std::uint64_t>() > 28800) return std::nullopt;
    info.end_at = *info.created_at + std::chrono::seconds(t->get<std::uint64_t>());
  }
  if (const auto n = s.find("name"); n != s.end() && !n->is_null()) {
    const auto name = info_text(s, "name");
    if (!name) return std::nullopt;
    auto [tag, user] = split_session_name(*name);
    info.tag = std::move(tag);
    info.name = std::move(user);
  }
  return info;
}

class AgentCoreManager final : public SandboxManager {
 public:
  explicit AgentCoreManager(BedrockOptions options) : stub_(std::move(options)) {}

  std::string_view backend() const noexcept override { return "bedrock"; }
  ManagerCapabilities capabilities() const noexcept override { return {.list = true, .get = true, .kill = true}; }

 protected:
  SandboxPage do_list_page(const SandboxFilter& filter, std::size_t page_size,
                           const std::optional<std::string>& page_token) override {
    const auto wants = [&](SandboxState s) {
      return std::find(filter.states.begin(), filter.states.end(), s) != filter.states.end();
    };
    json body = {{"maxResults", page_size}};
    // The service filters by one status: READY (the live ones, the default), TERMINATED, or both (no filter).
    const bool ready = filter.states.empty() || wants(SandboxState::kRunning);
    const bool terminated = wants(SandboxState::kTerminated);
    if (!ready && !terminated) return {};  // paused or unknown: no session is either
    if (ready != terminated) body["status"] = ready ? "READY" : "TERMINATED";
    if (page_token) body["nextToken"] = *page_token;
    // No name filter exists on the service: the tag is matched on what comes back (SandboxManager::list_page).
    auto request = stub_.request(http::Operation::kAgentCoreListSessions, "POST", "/sessions/list", body.dump());
    request.max_body = kMaxListingBody;
    const auto ex = http::perform_with_retries(client_, request);
    if (!ex.success()) fail(ex, "ListCodeInterpreterSessions");

    const json answer = detail::parse_untrusted_json(ex.response.body);
    const auto items = answer.is_object() ? answer.find("items") : json::const_iterator();
    if (!answer.is_object() || items == answer.end() || !items->is_array())
      management_error(ErrorKind::kInternal, "bedrock: ListCodeInterpreterSessions answered without an items array");
    if (items->size() > page_size)
      management_error(ErrorKind::kInternal, "bedrock: ListCodeInterpreterSessions answered " +
                                                 std::to_string(items->size()) + " sessions for a page of at most " +
                                                 std::to_string(page_size));
    SandboxPage page;
    std::size_t dropped = 0;
    for (const auto& s : *items) {
      if (auto info = decode_session(s)) page.sandboxes.push_back(std::move(*info));
      else ++dropped;
    }
    if (dropped > 0) logger()->warn("bedrock: {} malformed sessions of a listing were dropped", dropped);
    if (const auto next = answer.find("nextToken"); next != answer.end() && !next->is_null()) {
      if (!next->is_string() || next->get_ref<const std::string&>().empty() ||
          next->get_ref<const std::string&>().size() > kMaxNextToken ||
          !detail::acceptable_text(next->get_ref<const std::string&>()))
        management_error(ErrorKind::kInternal, "bedrock: ListCodeInterpreterSessions answered an unusable nextToken");
      page.next_token = next->get<std::string>();
    }
    return page;
  }

  std::optional<SandboxInfo> do_get(std::string_view id) override {
    check_id(id);
    auto request = stub_.request(http::Operation::kAgentCoreManageGetSession, "GET", "/sessions/get?sessionId=" + std::string(id));
    const auto ex = http::perform_with_retries(client_, request);
    if (ex.ok() && ex.response.status == 404) return std::nullopt;  // ResourceNotFound
    if (!ex.success()) fail(ex, "GetCodeInterpreterSession");
    auto info = decode_session(detail::parse_untrusted_json(ex.response.body));
    if (!info || info->sandbox_id != id)
      management_error(ErrorKind::kInternal, "bedrock: GetCodeInterpreterSession answered a malformed session");
    return info;
  }

  bool do_kill(std::string_view id) override {
    check_id(id);
    const auto ex = http::perform_with_retries(client_, stub_.stop_request_for(id));
    if (ex.ok() && ex.response.status == 404) return false;  // ResourceNotFound: stopped already, or expired
    if (!ex.success()) fail(ex, "StopCodeInterpreterSession");
    return true;
  }

  // Not declared in capabilities(): the non-virtual functions refuse first.
  bool do_pause(std::string_view) override { unsupported(); }
  void do_resume(std::string_view, std::chrono::seconds) override { unsupported(); }

 private:
  [[noreturn]] static void unsupported() {
    management_error(ErrorKind::kUnsupported, "Bedrock AgentCore sessions cannot be paused");
  }
  static void check_id(std::string_view id) {
    if (!valid_session_id(id))
      management_error(ErrorKind::kInvalidArgument, "not an AgentCore session id (1..40 of A-Z, a-z and 0-9)");
  }

  [[noreturn]] void fail(const http::Exchange& ex, std::string_view what) const {
    if (ex.ok()) {
      const auto e = stub_.aws_error(ex.response, ex.response.body);
      const std::string said = e.code + (e.message.empty() ? "" : ": " + e.message);
      detail::throw_nested(SandboxManagementError("bedrock: " + std::string(what) + " failed: HTTP " +
                                                      std::to_string(ex.response.status) + " " + said,
                                                  Stage::kManage, aws_error_kind(e.code, ex.response.status)),
                           http::to_transport_error(ex, what, said));
    }
    const auto cause = http::to_transport_error(ex, what);
    const auto kind = ex.failure == http::Failure::kCancelled ? ErrorKind::kUnknown : http::error_kind(ex);
    detail::throw_nested(SandboxManagementError("bedrock: " + std::string(what) + " failed: " + cause.what(),
                                                Stage::kManage, kind),
                         cause);
  }

  AgentCoreStub stub_;
  http::HttpClient& client_ = http::HttpClient::shared();
};

}  // namespace

std::unique_ptr<SandboxManager> make_manager(BedrockOptions options) {
  return std::make_unique<AgentCoreManager>(std::move(options));
}

}  // namespace code_interpreter::bedrock
