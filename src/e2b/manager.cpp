// E2B's SandboxManager: the control plane's list (GET /v2/sandboxes), get (GET /sandboxes/{id}), kill (DELETE),
// pause (POST /sandboxes/{id}/pause) and resume (POST /v2/sandboxes/{id}/connect), as npm e2b@2.51.0 sends them
// (docs/protocols/e2b.md "Managing sandboxes"). Requests are the stub's; answers are hostile and checked here.
#include "e2b/manager.hpp"

#include <nlohmann/json.hpp>

#include "code_interpreter/logging.hpp"
#include "core/manager.hpp"
#include "core/nested.hpp"
#include "core/untrusted.hpp"
#include "e2b/stub.hpp"
#include "http/outcome.hpp"
#include "http/retry.hpp"

namespace code_interpreter::e2b {
namespace {

using nlohmann::json;
using detail::info_text;
using detail::kMaxListingBody;
using detail::management_error;

constexpr std::size_t kMaxNextToken = 2048;


// One ListedSandbox or SandboxDetail (docs/protocols/e2b.md "Managing sandboxes"); nullopt when malformed: an id
// E2B could not have issued, a field of the wrong type, text too long or not UTF-8, a time that is not RFC 3339.
std::optional<SandboxInfo> decode_sandbox(const json& s) {
  if (!s.is_object()) return std::nullopt;
  SandboxInfo info;
  info.backend = "e2b";
  const auto id = info_text(s, "sandboxID");
  if (!id || !valid_sandbox_id(*id)) return std::nullopt;
  info.sandbox_id = *id;
  const auto state = info_text(s, "state");
  if (!state) return std::nullopt;
  info.raw_state = *state;
  info.state = *state == "running" ? SandboxState::kRunning : *state == "paused" ? SandboxState::kPaused : SandboxState::kUnknown;
  for (const char* key : {"startedAt", "endAt"}) {
    const auto it = s.find(key);
    if (it == s.end() || it->is_null()) continue;
    const auto when = it->is_string() ? detail::parse_rfc3339(it->get_ref<const std::string&>()) : std::nullopt;
    if (!when) return std::nullopt;
    (std::string_view(key) == "startedAt" ? info.created_at : info.end_at) = *when;
  }
  if (const auto m = s.find("metadata"); m != s.end() && !m->is_null()) {
    if (!m->is_object() || m->size() > detail::kMaxInfoMetadata) return std::nullopt;
    for (const auto& [k, v] : m->items()) {
      if (!v.is_string() || !detail::acceptable_text(k) || !detail::acceptable_text(v.get_ref<const std::string&>()))
        return std::nullopt;
      info.metadata[k] = v.get<std::string>();
    }
  }
  if (const auto t = info.metadata.find(std::string(kTagMetadataKey)); t != info.metadata.end() && is_valid_sandbox_tag(t->second))
    info.tag = t->second;
  if (const auto alias = info_text(s, "alias")) info.template_id = *alias;
  else if (const auto tid = info_text(s, "templateID")) info.template_id = *tid;
  return info;
}

class E2BManager final : public SandboxManager {
 public:
  explicit E2BManager(E2BOptions options) : stub_(std::move(options)) {}

  std::string_view backend() const noexcept override { return "e2b"; }
  ManagerCapabilities capabilities() const noexcept override {
    return {.list = true, .get = true, .kill = true, .pause = true, .metadata_filter = true};
  }

 protected:
  SandboxPage do_list_page(const SandboxFilter& filter, std::size_t page_size,
                           const std::optional<std::string>& page_token) override {
    std::string states;
    for (const auto& [state, word] : {std::pair{SandboxState::kRunning, "running"}, std::pair{SandboxState::kPaused, "paused"}})
      if (filter.states.empty() || std::find(filter.states.begin(), filter.states.end(), state) != filter.states.end())
        states += (states.empty() ? "" : ",") + std::string(word);
    if (states.empty()) return {};  // E2B lists only running and paused sandboxes: a killed one is forgotten
    // The JS SDK encodes each key and value, joins them k=v&k=v, and sends that as one parameter (docs/protocols/
    // e2b.md "Listing sandboxes by metadata").
    auto metadata = filter.metadata;
    if (filter.tag) metadata[std::string(kTagMetadataKey)] = *filter.tag;
    std::string query = "?state=" + http::url_encode(states) + "&limit=" + std::to_string(page_size);
    if (!metadata.empty()) {
      std::string joined;
      for (const auto& [k, v] : metadata) joined += (joined.empty() ? "" : "&") + http::url_encode(k) + "=" + http::url_encode(v);
      query += "&metadata=" + http::url_encode(joined);
    }
    if (page_token) query += "&nextToken=" + http::url_encode(*page_token);
    auto request = stub_.api_request(http::Operation::kE2BListSandboxes, "GET", "/v2/sandboxes" + query);
    request.max_body = kMaxListingBody;
    const auto ex = http::perform_with_retries(client_, request);
    if (!ex.success()) fail(ex, "list");

    const json listed = detail::parse_untrusted_json(ex.response.body);
    if (!listed.is_array()) management_error(ErrorKind::kInternal, "e2b: the listing is not a JSON array");
    if (listed.size() > page_size)
      management_error(ErrorKind::kInternal, "e2b: the listing answered " + std::to_string(listed.size()) +
                                                 " sandboxes for a page of at most " + std::to_string(page_size));
    SandboxPage page;
    std::size_t dropped = 0;
    for (const auto& s : listed) {
      if (auto info = decode_sandbox(s)) page.sandboxes.push_back(std::move(*info));
      else ++dropped;
    }
    if (dropped > 0) logger()->warn("e2b: {} malformed sandboxes of a listing were dropped", dropped);
    if (const auto next = ex.response.header("X-Next-Token"); next && !next->empty()) {
      if (next->size() > kMaxNextToken || !detail::acceptable_text(*next))
        management_error(ErrorKind::kInternal, "e2b: the listing's X-Next-Token is not a usable token");
      page.next_token = std::string(*next);
    }
    return page;
  }

  std::optional<SandboxInfo> do_get(std::string_view id) override {
    check_id(id);
    auto request = stub_.api_request(http::Operation::kE2BGetSandbox, "GET", "/sandboxes/" + std::string(id));
    request.max_body = kMaxListingBody;
    const auto ex = http::perform_with_retries(client_, request);
    if (ex.ok() && ex.response.status == 404) return std::nullopt;
    if (!ex.success()) fail(ex, "get");
    auto info = decode_sandbox(detail::parse_untrusted_json(ex.response.body));
    if (!info || info->sandbox_id != id) management_error(ErrorKind::kInternal, "e2b: get answered a malformed sandbox");
    return info;
  }

  bool do_kill(std::string_view id) override {
    check_id(id);
    const auto ex = http::perform_with_retries(client_, stub_.kill_request(id));
    if (ex.ok() && ex.response.status == 404) return false;  // already gone (docs/protocols/e2b.md "Control plane")
    if (!ex.success()) fail(ex, "kill");
    return true;
  }

  bool do_pause(std::string_view id) override {
    check_id(id);
    const auto ex = http::perform_with_retries(
        client_, stub_.api_request(http::Operation::kE2BPause, "POST", "/sandboxes/" + std::string(id) + "/pause", "{}"));
    if (ex.ok() && ex.response.status == 409) return false;  // already paused, or pausing
    if (!ex.success()) fail(ex, "pause");  // 404: kNotFound
    return true;
  }

  void do_resume(std::string_view id, std::chrono::seconds lifetime) override {
    check_id(id);
    // connect resumes a paused sandbox (201) or extends a running one's lease (200).
    const auto ex = http::perform_with_retries(
        client_, stub_.api_request(http::Operation::kE2BConnect, "POST", "/v2/sandboxes/" + std::string(id) + "/connect",
                                   json{{"timeout", lifetime.count()}}.dump()));
    if (!ex.success()) fail(ex, "resume");
  }

 private:
  static void check_id(std::string_view id) {
    if (!valid_sandbox_id(id))
      management_error(ErrorKind::kInvalidArgument, "not an E2B sandbox id (a-z, 0-9 and -)");
  }

  [[noreturn]] void fail(const http::Exchange& ex, std::string_view what) const {
    const std::string said = ex.ok() ? stub_.service_text(ex.response.body) : std::string();
    const auto cause = http::to_transport_error(ex, what, said);
    const auto kind = ex.failure == http::Failure::kCancelled ? ErrorKind::kUnknown : http::error_kind(ex);
    detail::throw_nested(SandboxManagementError("e2b: " + std::string(what) + " failed: " + cause.what(), Stage::kManage, kind),
                         cause);
  }

  e2b::E2BStub stub_;
  http::HttpClient& client_ = http::HttpClient::shared();
};

}  // namespace

std::unique_ptr<SandboxManager> make_manager(E2BOptions options) { return std::make_unique<E2BManager>(std::move(options)); }

}  // namespace code_interpreter::e2b
