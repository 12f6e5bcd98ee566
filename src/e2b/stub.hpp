// The E2B stub (docs/architecture.md "Backends"): builds every request E2B is sent and decodes every answer into
// typed protocol facts, and nothing else — no retry (src/http/retry.hpp), no status mapping (src/http/outcome.hpp,
// src/core/outcome.hpp), no call state (E2BSandbox::Impl, src/e2b/e2b_impl.hpp). Wire format: docs/protocols/e2b.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/e2b_sandbox.hpp"
#include "code_interpreter/process.hpp"
#include "http/http_client.hpp"

namespace code_interpreter::e2b {

constexpr int kEnvdPort = 49983;         // docs/protocols/e2b.md "Surfaces and ports"
constexpr int kInterpreterPort = 49999;  // docs/protocols/e2b.md "Surfaces and ports"
/// The metadata key of the token that lets a lost create be found again (docs/protocols/e2b.md "Listing sandboxes by
/// metadata": list filters by metadata).
constexpr std::string_view kClientTokenKey = "code_interpreter_client_token";
/// The most of an error answer's body a streamed call keeps.
constexpr std::size_t kMaxErrorBody = 64 * 1024;

/// Sandbox ids become part of a host name or header: only what E2B issues (docs/protocols/e2b.md "Control plane":
/// [a-z0-9], the proxy checks ^[a-z0-9]+$; older ids carry a "-<clientID>" suffix).
bool valid_sandbox_id(std::string_view id);

/// The proxy's answer for a sandbox that is gone (docs/protocols/e2b.md "Reaching a sandbox"): 502 with "The sandbox
/// was not found".
bool is_gone_answer(int status, std::string_view body);

/// The ErrorKind of a Connect error code (docs/protocols/e2b.md "Connect calls and their JSON").
ErrorKind connect_error_kind(std::string_view code);

/// The `code` of a Connect error body, if it is one.
std::optional<std::string> connect_error_code(std::string_view body);

/// Request bodies are JSON, whose strings must be UTF-8 (nlohmann's dump() throws a json::type_error otherwise): a
/// caller's text that is not UTF-8 is a bad argument, refused before anything is sent.
void require_utf8(std::string_view text, std::string_view what);

class E2BStub {
 public:
  /// Resolves and checks the options (stage configure: nothing is sent). @throws SandboxStartError.
  explicit E2BStub(E2BOptions options);

  E2BOptions options;  ///< api_key cleared after resolution
  std::string id;      ///< the sandbox's id, once created or connected
  std::string access_token;
  std::string envd_version;

  /// The service's own words from an error body, with our secrets taken out: a hostile or careless service may
  /// echo the API key or the envd token it was sent (docs/backends/e2b.md "Secrets": secrets never reach an error
  /// or a result). Bounded and valid UTF-8.
  [[nodiscard]] std::string service_text(std::string_view body) const;
  /// Text the sandbox produced (a command's stderr quoted in an error), cleaned as service_text cleans a message:
  /// our secrets replaced with "[redacted]", bounded to 300 bytes, valid UTF-8.
  [[nodiscard]] std::string untrusted_text(std::string_view text) const;

  // ---- requests: each stamped with its operation of the idempotency table (src/http/idempotency.hpp) ----

  /// A control-plane request (docs/protocols/e2b.md "Control plane"), bounded by request_timeout.
  [[nodiscard]] http::Request api_request(http::Operation op, std::string method, std::string path,
                                          std::string body = {}) const;
  /// A request to envd or the code interpreter of the sandbox (docs/protocols/e2b.md "Reaching a sandbox").
  [[nodiscard]] http::Request sandbox_request(http::Operation op, int port, std::string method, std::string path,
                                              std::string body = {}) const;

  [[nodiscard]] http::Request create_request(bool v1, const std::string& token) const;
  [[nodiscard]] http::Request connect_request(std::string_view prefix, std::string_view sandbox_id) const;
  /// The listing of the sandboxes that carry `token` in their metadata.
  [[nodiscard]] http::Request list_by_token_request(const std::string& token) const;
  [[nodiscard]] http::Request kill_request(std::string_view sandbox_id) const;
  [[nodiscard]] http::Request health_request() const;
  /// GET or POST /files?path=… (docs/protocols/e2b.md "envd health and files").
  [[nodiscard]] http::Request files_request(http::Operation op, std::string method, std::string_view path) const;
  /// POST /files with one multipart part per attachment, named `file`, its filename the destination path.
  [[nodiscard]] http::Request upload_request(const std::string& dir, const std::vector<Attachment>& files) const;
  /// A unary Connect call; `body` holds one caller's path, named by `what` when it is refused as not UTF-8.
  [[nodiscard]] http::Request rpc_request(std::string_view method, const nlohmann::json& body,
                                          std::string_view what) const;
  /// POST /execute (docs/protocols/e2b.md "Code-interpreter requests").
  [[nodiscard]] http::Request execute_request(std::optional<std::string_view> context_id, std::string_view code,
                                              Language language, const std::map<std::string, std::string>& env,
                                              std::chrono::milliseconds budget) const;
  /// process.Process/Start (docs/protocols/e2b.md "process.Process/Start"): bash -l -c `cmd`.
  [[nodiscard]] http::Request command_request(std::string_view cmd, const CommandOptions& o,
                                              std::chrono::milliseconds budget) const;

  // ---- processes (docs/protocols/e2b.md "process.Process") ----

  /// process.Process/Start for spawn: bash -l -c `cmd`, stdin as the options say, the lifetime as Connect-Timeout-Ms.
  [[nodiscard]] http::Request spawn_request(std::string_view cmd, const SpawnOptions& o) const;
  /// process.Process/Connect to the process `pid`: a new stream of its events from now on.
  [[nodiscard]] http::Request process_connect_request(std::uint32_t pid) const;
  /// A unary process.Process call (List, SendInput, CloseStdin, SendSignal).
  [[nodiscard]] http::Request process_rpc_request(http::Operation op, std::string_view method,
                                                  const nlohmann::json& body) const;

  // ---- answers ----

  /// Takes the sandbox's id, envd token, version and domain from a create or connect answer.
  /// @throws SandboxStartError (stage `stage`, kInternal) for an answer without a usable sandboxID.
  void accept_sandbox_answer(std::string_view body, Stage stage);
  /// The ids in a listing whose metadata carries `token` (a listing that ignored the filter must not get someone
  /// else's sandbox killed). nullopt for a listing that is not a JSON array.
  [[nodiscard]] static std::optional<std::vector<std::string>> sandboxes_with_token(std::string_view body,
                                                                                   const std::string& token);
  /// A ListDir answer's entries. @throws SandboxExecutionError for a malformed one.
  [[nodiscard]] static std::vector<FileInfo> decode_entries(const nlohmann::json& answer);
  /// One EntryInfo (docs/protocols/e2b.md "filesystem.Filesystem"): name, path, type (a symlinkTarget makes it
  /// kSymlink: envd reports a link's target type), size, modifiedTime (RFC 3339), mode's permission bits. A field
  /// that is absent or malformed is left unset (size 0).
  [[nodiscard]] static FileInfo decode_entry(const nlohmann::json& entry);
  /// A context of a /contexts answer; nullopt when it has no id.
  [[nodiscard]] static std::optional<E2BContext> decode_context(const nlohmann::json& c);

 private:
  [[nodiscard]] std::string base_url(int port) const;
  /// A server-streamed process.Process call, watched for keep-alives; `budget` > 0 becomes Connect-Timeout-Ms.
  [[nodiscard]] http::Request stream_request(http::Operation op, std::string_view method, const nlohmann::json& body,
                                             std::chrono::milliseconds budget) const;

  std::string api_key_;
  std::string api_url_;
  std::optional<std::string> sandbox_url_;
  std::string domain_;
};

}  // namespace code_interpreter::e2b
