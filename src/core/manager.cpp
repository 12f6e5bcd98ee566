// SandboxManager's non-virtual functions: arguments checked once, verbs refused that the backend has not declared,
// and every listing filtered again here, so a service that ignores a filter cannot get another tag's sandbox killed.
#include "core/manager.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "code_interpreter/logging.hpp"
#include "core/untrusted.hpp"
#include "core/utf8.hpp"

namespace code_interpreter {
namespace {

using detail::management_error;

// E2B ids are [a-z0-9-], AgentCore's [0-9a-zA-Z]: the union, which keeps an id safe in a path, a query or a host.
void check_id(std::string_view id) {
  const bool ok = !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
  if (!ok) management_error(ErrorKind::kInvalidArgument, "a sandbox id must be 1..128 characters of A-Z, a-z, 0-9 and -");
}

void check_tag(std::string_view tag) {
  if (!is_valid_sandbox_tag(tag))
    management_error(ErrorKind::kInvalidArgument, "a tag must be 1..32 characters of A-Z, a-z, 0-9 and _");
}

// Why a backend lacks a verb, for the refusal's message.
std::string why_not(std::string_view backend) {
  if (backend == "pyodide")
    return " (Pyodide sandboxes are child processes of the program that created them and end with it: there is "
           "nothing to list or govern from outside)";
  if (backend == "bedrock") return " (Bedrock AgentCore sessions cannot be paused and carry no metadata)";
  return "";
}

void require(bool declared, std::string_view backend, std::string_view verb) {
  if (!declared)
    management_error(ErrorKind::kUnsupported,
                     "the " + std::string(backend) + " backend cannot " + std::string(verb) + why_not(backend));
}

bool matches(const SandboxInfo& info, const SandboxFilter& filter) {
  if (filter.tag && info.tag != filter.tag) return false;
  for (const auto& [k, v] : filter.metadata) {
    const auto it = info.metadata.find(k);
    if (it == info.metadata.end() || it->second != v) return false;
  }
  if (!filter.states.empty()) return std::find(filter.states.begin(), filter.states.end(), info.state) != filter.states.end();
  return info.state == SandboxState::kRunning || info.state == SandboxState::kPaused;
}

}  // namespace

namespace detail {

void management_error(ErrorKind kind, const std::string& message) {
  throw SandboxManagementError(message, Stage::kManage, kind);
}

bool acceptable_text(std::string_view text) noexcept {
  if (text.size() > kMaxInfoText || !is_valid_utf8(text)) return false;
  return std::none_of(text.begin(), text.end(), [](char c) { return (c >= 0 && c < 0x20) || c == 0x7f; });
}

std::optional<std::string> info_text(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_string() || !acceptable_text(it->get_ref<const std::string&>())) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)
  const auto digits = [&](std::size_t at, std::size_t n, int& out) {
    if (at + n > t.size()) return false;
    out = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      out = out * 10 + (t[i] - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, s;
  if (t.size() < 20 || !digits(0, 4, y) || t[4] != '-' || !digits(5, 2, mo) || t[7] != '-' || !digits(8, 2, d) ||
      (t[10] != 'T' && t[10] != 't') || !digits(11, 2, h) || t[13] != ':' || !digits(14, 2, mi) || t[16] != ':' ||
      !digits(17, 2, s))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::size_t at = 19;
  std::chrono::nanoseconds fraction{0};
  if (at < t.size() && t[at] == '.') {
    ++at;
    const std::size_t start = at;
    std::int64_t ns = 0;
    while (at < t.size() && t[at] >= '0' && t[at] <= '9') {
      if (at - start < 9) ns = ns * 10 + (t[at] - '0');
      ++at;
    }
    if (at == start) return std::nullopt;
    for (std::size_t n = std::min<std::size_t>(at - start, 9); n < 9; ++n) ns *= 10;
    fraction = std::chrono::nanoseconds(ns);
  }
  std::chrono::minutes offset{0};
  if (at < t.size() && (t[at] == 'Z' || t[at] == 'z')) {
    ++at;
  } else if (at < t.size() && (t[at] == '+' || t[at] == '-')) {
    int oh, om;
    if (!digits(at + 1, 2, oh) || at + 3 >= t.size() || t[at + 3] != ':' || !digits(at + 4, 2, om) || oh > 23 || om > 59)
      return std::nullopt;
    offset = std::chrono::hours(oh) + std::chrono::minutes(om);
    if (t[at] == '-') offset = -offset;
    at += 6;
  } else {
    return std::nullopt;
  }
  if (at != t.size()) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(static_cast<unsigned>(mo)),
                                        std::chrono::day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return std::nullopt;
  const auto point = std::chrono::sys_days(ymd) + std::chrono::hours(h) + std::chrono::minutes(mi) +
                     std::chrono::seconds(s) - offset;
  // A time system_clock cannot hold in nanoseconds (after about 2262) is clamped, never wrapped by an overflow.
  using std::chrono::seconds;
  constexpr auto kLast = std::chrono::duration_cast<seconds>(std::chrono::system_clock::duration::max()) - seconds(1);
  constexpr auto kFirst = std::chrono::duration_cast<seconds>(std::chrono::system_clock::duration::min()) + seconds(1);
  if (point.time_since_epoch() >= kLast || point.time_since_epoch() <= kFirst)
    return clamped_system_time(std::chrono::duration_cast<seconds>(point.time_since_epoch()));
  return std::chrono::time_point_cast<std::chrono::system_clock::duration>(point + fraction);
}

}  // namespace detail

std::string_view to_string(SandboxState state) noexcept {
  switch (state) {
    case SandboxState::kRunning: return "running";
    case SandboxState::kPaused: return "paused";
    case SandboxState::kTerminated: return "terminated";
    case SandboxState::kUnknown: return "unknown";
  }
  return "unknown";
}

SandboxManager::~SandboxManager() = default;

SandboxPage SandboxManager::list_page(const SandboxFilter& filter, std::size_t page_size,
                                      const std::optional<std::string>& page_token) {
  const auto caps = capabilities();
  require(caps.list, backend(), "list sandboxes");
  if (page_size < 1 || page_size > 100) management_error(ErrorKind::kInvalidArgument, "page_size must be 1..100");
  if (filter.tag) check_tag(*filter.tag);
  if (!filter.metadata.empty()) require(caps.metadata_filter, backend(), "filter by metadata");
  for (const auto& [k, v] : filter.metadata)
    if (k.empty() || !detail::acceptable_text(k) || !detail::acceptable_text(v))
      management_error(ErrorKind::kInvalidArgument,
                       "a metadata filter's keys must be non-empty, and keys and values UTF-8 text of at most 1024 bytes");
  if (page_token && (page_token->empty() || page_token->size() > 2048 || !detail::acceptable_text(*page_token)))
    management_error(ErrorKind::kInvalidArgument, "page_token must be a next_token of a previous page");
  auto page = do_list_page(filter, page_size, page_token);
  std::erase_if(page.sandboxes, [&](const SandboxInfo& info) { return !matches(info, filter); });
  return page;
}

std::vector<SandboxInfo> SandboxManager::list(const SandboxFilter& filter, std::size_t max_sandboxes) {
  std::vector<SandboxInfo> all;
  std::optional<std::string> token;
  std::set<std::string> seen_tokens;  // a service that hands back a token it gave before would loop forever
  // So would one that hands out new tokens with pages that bring little or nothing: the pages are counted too. A
  // listing of max_sandboxes takes max_sandboxes / 100 full pages; the rest is room for short pages.
  const std::size_t max_pages = max_sandboxes / 100 + 10;
  std::size_t pages = 0;
  do {
    if (++pages > max_pages) {
      management_error(ErrorKind::kInternal, std::string(backend()) + ": the listing did not end after " +
                                                 std::to_string(max_pages) + " pages");
    }
    auto page = list_page(filter, 100, token);
    for (auto& info : page.sandboxes) {
      if (all.size() == max_sandboxes) {
        logger()->warn("{}: the listing stopped at {} sandboxes (max_sandboxes); more exist", backend(), max_sandboxes);
        return all;
      }
      all.push_back(std::move(info));
    }
    token = std::move(page.next_token);
    if (token && !seen_tokens.insert(*token).second)
      management_error(ErrorKind::kInternal, std::string(backend()) + ": the listing handed back a page token it gave before");
  } while (token);
  return all;
}

std::optional<SandboxInfo> SandboxManager::get(std::string_view sandbox_id) {
  require(capabilities().get, backend(), "get a sandbox");
  check_id(sandbox_id);
  return do_get(sandbox_id);
}

bool SandboxManager::kill(std::string_view sandbox_id) {
  require(capabilities().kill, backend(), "kill a sandbox");
  check_id(sandbox_id);
  return do_kill(sandbox_id);
}

bool SandboxManager::pause(std::string_view sandbox_id) {
  require(capabilities().pause, backend(), "pause a sandbox");
  check_id(sandbox_id);
  return do_pause(sandbox_id);
}

void SandboxManager::resume(std::string_view sandbox_id, std::chrono::seconds lifetime) {
  require(capabilities().pause, backend(), "resume a sandbox");
  check_id(sandbox_id);
  if (lifetime.count() < 1 || lifetime.count() > 24 * 3600)
    management_error(ErrorKind::kInvalidArgument, "lifetime must be 1 second to 24 hours");
  do_resume(sandbox_id, lifetime);
}

SweepReport SandboxManager::sweep(std::string_view tag) {
  check_tag(tag);
  require(capabilities().kill, backend(), "kill a sandbox");
  SandboxFilter filter;
  filter.tag = std::string(tag);
  SweepReport report;
  for (const auto& info : list(filter)) {
    if (info.tag != filter.tag) continue;  // list() filtered already; a sweep must never kill on a mistake
    try {
      (void)kill(info.sandbox_id);
      report.killed.push_back(info.sandbox_id);
    } catch (const SandboxManagementError& e) {
      logger()->warn("{}: sweep could not kill {}: {}", backend(), info.sandbox_id, e.what());
      report.failed.push_back(info.sandbox_id);
    }
  }
  return report;
}

}  // namespace code_interpreter
