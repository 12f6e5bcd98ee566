// Governing sandboxes from outside: list, get, kill, pause, resume and sweep what a crashed process left behind,
// one manager per backend with the verbs it has declared (docs/backends.md "Managing sandboxes").
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/errors.hpp"
#include "code_interpreter/export.hpp"
#include "code_interpreter/factory.hpp"

namespace code_interpreter {

/// A management call failed: stage kManage; kind kUnsupported for a verb the backend does not have (see
/// ManagerCapabilities), kInvalidArgument for a bad id or filter, else the service's answer (kNotFound,
/// kUnauthenticated, kRateLimited, kUnavailable, ...) with the TransportError nested.
class CODE_INTERPRETER_EXPORT SandboxManagementError : public CodeInterpreterError {
 public:
  using CodeInterpreterError::CodeInterpreterError;
};

/// A sandbox's state as its backend reports it.
enum class SandboxState {
  kRunning,     ///< E2B "running", AgentCore "READY"
  kPaused,      ///< E2B "paused": memory and files kept, not billed for CPU; resume or connect to use it
  kTerminated,  ///< AgentCore "TERMINATED" (E2B forgets a killed sandbox: it is no longer listed)
  kUnknown,     ///< a state this library does not know, kept in SandboxInfo::raw_state
};

/// "running", "paused", "terminated" or "unknown".
CODE_INTERPRETER_EXPORT std::string_view to_string(SandboxState state) noexcept;

/// One sandbox as a listing or get reports it. Everything in it came from the service: untrusted text, checked
/// (ids and tags of the expected alphabet, strings valid UTF-8) before it is returned.
struct SandboxInfo {
  std::string sandbox_id;  ///< E2B sandboxID, AgentCore sessionId
  std::string backend;     ///< "e2b" or "bedrock"
  SandboxState state = SandboxState::kUnknown;
  std::string raw_state;   ///< the service's own word ("running", "READY", ...)
  std::optional<std::chrono::system_clock::time_point> created_at;  ///< E2B startedAt, AgentCore createdAt
  /// When the lease ends: E2B endAt; AgentCore createdAt + sessionTimeoutSeconds where get reports the timeout.
  std::optional<std::chrono::system_clock::time_point> end_at;
  std::map<std::string, std::string> metadata;  ///< E2B metadata (the tag's key included); empty on AgentCore
  std::optional<std::string> name;              ///< AgentCore session name (the tag's prefix removed)
  std::optional<std::string> tag;               ///< the library's tag, when the sandbox carries one (sandbox_tag)
  std::string template_id;                      ///< E2B template alias or id; AgentCore interpreter identifier
};

/// Which sandboxes list() returns.
struct SandboxFilter {
  /// Only sandboxes whose metadata holds every pair (E2B; a non-empty map is kUnsupported on AgentCore).
  std::map<std::string, std::string> metadata;
  std::optional<std::string> tag;  ///< only sandboxes carrying exactly this tag (sandbox_tag)
  /// Only these states. Empty: the live ones (running and paused on E2B, READY on AgentCore).
  std::vector<SandboxState> states;
};

/// One page of a listing.
struct SandboxPage {
  std::vector<SandboxInfo> sandboxes;
  std::optional<std::string> next_token;  ///< pass to list_page for the next page; nullopt: this was the last
};

/// The verbs a backend's manager has. A verb it lacks throws SandboxManagementError, kUnsupported.
struct ManagerCapabilities {
  bool list = false;             ///< list / list_page / sweep
  bool get = false;
  bool kill = false;
  bool pause = false;            ///< pause and resume
  bool metadata_filter = false;  ///< SandboxFilter::metadata
  friend bool operator==(const ManagerCapabilities&, const ManagerCapabilities&) = default;
};

/// What sweep did.
struct SweepReport {
  std::vector<std::string> killed;  ///< ids of the sandboxes it killed (or found already gone)
  std::vector<std::string> failed;  ///< ids it could not kill (logged with the reason)
};

/// Lists and governs one backend's sandboxes, those this process did not create included. Thread-safe.
///
/// Every sandbox the library creates carries a tag (E2BOptions::tag, BedrockOptions::tag; default
/// process_sandbox_tag()): in its metadata under kTagMetadataKey on E2B, as the prefix of its session name on
/// AgentCore. sweep(tag) kills only the sandboxes that carry exactly that tag.
class CODE_INTERPRETER_EXPORT SandboxManager {
 public:
  SandboxManager(const SandboxManager&) = delete;
  SandboxManager& operator=(const SandboxManager&) = delete;
  virtual ~SandboxManager();

  /// "pyodide", "e2b" or "bedrock".
  [[nodiscard]] virtual std::string_view backend() const noexcept = 0;
  [[nodiscard]] virtual ManagerCapabilities capabilities() const noexcept = 0;

  /// One page of at most `page_size` (1..100) sandboxes, from `page_token` (a previous page's next_token).
  /// Every sandbox returned matches the filter: the service's answer is filtered again here (a service that ignores
  /// a filter cannot hand back another tag's sandbox). A page may so hold fewer than page_size, even none, while
  /// next_token says more follow. Malformed entries of a listing are dropped with one warning.
  /// @throws SandboxManagementError (kInvalidArgument for a page_size out of range, a bad tag or page token;
  ///         kUnsupported without the list verb or for a metadata filter without metadata_filter; kInternal for an
  ///         answer that is not a listing, or holds more than page_size entries; else the service's answer).
  [[nodiscard]] SandboxPage list_page(const SandboxFilter& filter = {}, std::size_t page_size = 100,
                                      const std::optional<std::string>& page_token = std::nullopt);
  /// Every page of list_page, at most `max_sandboxes` (then a warning is logged). Same errors, and kInternal when
  /// the service hands back a page token it gave before (it would never end).
  [[nodiscard]] std::vector<SandboxInfo> list(const SandboxFilter& filter = {}, std::size_t max_sandboxes = 10000);
  /// One sandbox, or nullopt when the service does not know it (an E2B sandbox killed is forgotten; an AgentCore
  /// session stopped is reported kTerminated). @throws SandboxManagementError (kInvalidArgument for an id that is
  /// not 1..128 of [A-Za-z0-9-] or not of the backend's form; kInternal for a malformed answer).
  [[nodiscard]] std::optional<SandboxInfo> get(std::string_view sandbox_id);
  /// Kills (E2B) or stops (AgentCore) a sandbox. @return false when it did not exist or was already gone.
  /// @throws SandboxManagementError.
  bool kill(std::string_view sandbox_id);
  /// Pauses a running sandbox (E2B). @return false when it was already paused. @throws SandboxManagementError
  ///         (kNotFound when it does not exist; kUnsupported where the backend cannot pause).
  bool pause(std::string_view sandbox_id);
  /// Resumes a paused sandbox (or extends a running one's lease) to `lifetime` from now, as
  /// E2BSandbox::connect does. @throws SandboxManagementError (kNotFound; kUnsupported).
  void resume(std::string_view sandbox_id, std::chrono::seconds lifetime = std::chrono::seconds(300));
  /// Kills every live sandbox carrying exactly `tag`; sandboxes of any other tag, or of none, are never touched.
  /// @throws SandboxManagementError when the listing fails or `tag` is not a valid tag (sandbox_tag rules).
  SweepReport sweep(std::string_view tag);

 protected:
  SandboxManager() = default;
  virtual SandboxPage do_list_page(const SandboxFilter& filter, std::size_t page_size,
                                   const std::optional<std::string>& page_token) = 0;
  virtual std::optional<SandboxInfo> do_get(std::string_view sandbox_id) = 0;
  virtual bool do_kill(std::string_view sandbox_id) = 0;
  virtual bool do_pause(std::string_view sandbox_id) = 0;
  virtual void do_resume(std::string_view sandbox_id, std::chrono::seconds lifetime) = 0;
};

/// The metadata key under which an E2B sandbox carries the library's tag.
inline constexpr std::string_view kTagMetadataKey = "code_interpreter.tag";

/// The tag of the sandboxes this process creates when their options name none: a random id made once per process
/// and logged (info) the first time a sandbox is created with it, so an operator can sweep after a crash.
[[nodiscard]] CODE_INTERPRETER_EXPORT const std::string& process_sandbox_tag();

/// Whether `tag` is a valid tag: 1..32 bytes of [A-Za-z0-9_] (so it can prefix an AgentCore session name).
[[nodiscard]] CODE_INTERPRETER_EXPORT bool is_valid_sandbox_tag(std::string_view tag) noexcept;

/// The manager of `config.backend`, with that backend's options for credentials and endpoints (the common settings
/// are not used). Makes no network call.
/// @throws SandboxStartError, stage kConfigure, as create_sandbox does for a bad backend name or missing
///         credentials.
[[nodiscard]] CODE_INTERPRETER_EXPORT std::unique_ptr<SandboxManager> create_manager(const SandboxConfig& config);

}  // namespace code_interpreter
