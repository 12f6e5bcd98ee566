// The one idempotency table of the HTTP backends (docs/architecture.md "HTTP"): for each operation E2B and AgentCore
// send, whether a request may be sent again. The stubs build every request with for_operation(), which stamps the
// operation on it; the HTTP client reads the table for the no-rewind rule (docs/protocols/libcurl.md "No silent
// re-send") and the one retry loop (retry.hpp) for which failed exchanges it tries again. No call site sets its own
// flag.
#pragma once

#include <string_view>

namespace code_interpreter::http {

struct Exchange;
struct Request;

/// How a request may be repeated.
enum class Resend {
  /// Runs code or changes state in a way a second delivery would repeat: the body is never rewound and the request
  /// is sent once.
  kNever,
  /// Harmless to repeat but sent once by design: a probe or a best-effort kill whose caller moves on, a streamed
  /// download. libcurl may rewind its (empty) body.
  kOnce,
  /// Not idempotent: the body is never rewound, and a retry happens only when no byte of the request was written
  /// (then nothing can have reached the service), for the transient failures of is_transient().
  kIfUnwritten,
  /// Not idempotent, but what a lost attempt may have made is found and removed before the retry (the retry loop's
  /// before_retry hook, E2B's create): the body is never rewound, transient failures are retried.
  kAfterCleanup,
  /// The same request again does no harm (a read, a delete, a call the service deduplicates by its clientToken):
  /// transient failures are retried, timeouts and broken receives included.
  kIdempotent,
};

/// Every operation the cloud backends send (docs/protocols/e2b.md, docs/protocols/bedrock.md).
enum class Operation {
  // E2B control plane
  kE2BCreate,         ///< POST /v2/sandboxes (or /sandboxes)
  kE2BConnect,        ///< POST /v2/sandboxes/{id}/connect
  kE2BListSandboxes,  ///< GET /v2/sandboxes?metadata=… (finding a lost create's sandbox; SandboxManager::list)
  kE2BKill,           ///< DELETE /sandboxes/{id}
  kE2BSetTimeout,     ///< POST /sandboxes/{id}/timeout
  kE2BGetSandbox,     ///< GET /sandboxes/{id} (SandboxManager::get)
  kE2BPause,          ///< POST /sandboxes/{id}/pause (a repeat answers 409, read as "already paused")
  // E2B envd
  kE2BHealth,         ///< GET /health
  kE2BUpload,         ///< POST /files (multipart; uploads overwrite)
  kE2BReadFile,       ///< GET /files
  kE2BDownloadTo,     ///< GET /files, streamed into a file
  kE2BFilesystem,     ///< filesystem.Filesystem/* (ListDir, Remove, MakeDir)
  kE2BCommand,        ///< process.Process/Start
  // E2B code interpreter
  kE2BExecute,        ///< POST /execute
  kE2BCreateContext,  ///< POST /contexts (a second kernel if delivered twice)
  kE2BListContexts,   ///< GET /contexts
  kE2BRestartContext, ///< POST /contexts/{id}/restart
  kE2BRemoveContext,  ///< DELETE /contexts/{id}
  // E2B processes
  kE2BProcessConnect,  ///< process.Process/Connect (a new reader; the process is untouched)
  kE2BProcessList,     ///< process.Process/List
  kE2BProcessInput,    ///< process.Process/SendInput (input delivered twice would be read twice)
  kE2BProcessControl,  ///< process.Process/CloseStdin, SendSignal (a repeat does no more)
  // AgentCore session operations
  kAgentCoreStart,       ///< StartCodeInterpreterSession (deduplicated by its clientToken)
  kAgentCoreStop,        ///< StopCodeInterpreterSession
  kAgentCoreGetSession,  ///< GetCodeInterpreterSession, the status probe of a sandbox
  kAgentCoreListSessions,   ///< ListCodeInterpreterSessions (SandboxManager::list)
  kAgentCoreManageGetSession,  ///< GetCodeInterpreterSession for SandboxManager::get
  // AgentCore tools (InvokeCodeInterpreter)
  kAgentCoreExecuteCode,   ///< executeCode
  kAgentCoreStartCommand,  ///< startCommandExecution
  kAgentCoreGetTask,       ///< getTask
  kAgentCoreStopTask,      ///< stopTask
  kAgentCoreReadFiles,     ///< readFiles
  kAgentCoreListFiles,     ///< listFiles
  kAgentCoreWriteFiles,    ///< writeFiles
  kAgentCoreRemoveFiles,   ///< removeFiles
  kAgentCoreMakeDir,       ///< executeCommand "mkdir -p -- <dir>"
};

/// One row of the table.
struct OperationRule {
  Operation operation;
  std::string_view name;  ///< as the protocol notes name it
  Resend resend;
};

/// The row of `operation`.
[[nodiscard]] const OperationRule& rule(Operation operation) noexcept;

/// Whether libcurl may rewind and re-send the body of a request of this operation (Request::idempotent).
[[nodiscard]] bool rewindable(Operation operation) noexcept;

/// Whether the table lets the retry loop try a failed exchange of this operation again.
[[nodiscard]] bool may_resend(Operation operation, const Exchange& exchange) noexcept;

/// A request for `operation`: the operation stamped on it and Request::idempotent set from the table.
[[nodiscard]] Request for_operation(Operation operation);

}  // namespace code_interpreter::http
