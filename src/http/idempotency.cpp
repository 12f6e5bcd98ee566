#include "http/idempotency.hpp"

#include <array>

#include "http/http_client.hpp"
#include "http/outcome.hpp"

namespace code_interpreter::http {
namespace {

using enum Operation;

// In the order of the enum (checked below).
constexpr std::array kTable{
    OperationRule{kE2BCreate, "create", Resend::kAfterCleanup},
    OperationRule{kE2BConnect, "connect", Resend::kIdempotent},
    OperationRule{kE2BListSandboxes, "list sandboxes", Resend::kIdempotent},
    OperationRule{kE2BKill, "kill", Resend::kIdempotent},
    OperationRule{kE2BSetTimeout, "set_timeout", Resend::kIdempotent},
    OperationRule{kE2BGetSandbox, "get sandbox", Resend::kIdempotent},
    OperationRule{kE2BPause, "pause", Resend::kIdempotent},
    OperationRule{kE2BHealth, "health", Resend::kOnce},
    OperationRule{kE2BUpload, "upload", Resend::kIdempotent},
    OperationRule{kE2BReadFile, "read file", Resend::kIdempotent},
    OperationRule{kE2BDownloadTo, "download to a file", Resend::kOnce},
    OperationRule{kE2BFilesystem, "filesystem.Filesystem", Resend::kIdempotent},
    OperationRule{kE2BCommand, "process.Process/Start", Resend::kNever},
    OperationRule{kE2BExecute, "execute", Resend::kNever},
    OperationRule{kE2BCreateContext, "create context", Resend::kIfUnwritten},
    OperationRule{kE2BListContexts, "list contexts", Resend::kIdempotent},
    OperationRule{kE2BRestartContext, "restart context", Resend::kIdempotent},
    OperationRule{kE2BRemoveContext, "remove context", Resend::kIdempotent},
    OperationRule{kE2BProcessConnect, "process.Process/Connect", Resend::kIdempotent},
    OperationRule{kE2BProcessList, "process.Process/List", Resend::kIdempotent},
    OperationRule{kE2BProcessInput, "process.Process/SendInput", Resend::kIfUnwritten},
    OperationRule{kE2BProcessControl, "process.Process/CloseStdin, SendSignal", Resend::kIdempotent},
    OperationRule{kAgentCoreStart, "StartCodeInterpreterSession", Resend::kIdempotent},
    OperationRule{kAgentCoreStop, "StopCodeInterpreterSession", Resend::kIdempotent},
    OperationRule{kAgentCoreGetSession, "GetCodeInterpreterSession", Resend::kOnce},
    OperationRule{kAgentCoreListSessions, "ListCodeInterpreterSessions", Resend::kIdempotent},
    // The same read as the probe above, but a caller waits for its answer: retried like any read.
    OperationRule{kAgentCoreManageGetSession, "GetCodeInterpreterSession (manage)", Resend::kIdempotent},
    OperationRule{kAgentCoreExecuteCode, "executeCode", Resend::kNever},
    OperationRule{kAgentCoreStartCommand, "startCommandExecution", Resend::kNever},
    OperationRule{kAgentCoreGetTask, "getTask", Resend::kIdempotent},
    OperationRule{kAgentCoreStopTask, "stopTask", Resend::kOnce},
    OperationRule{kAgentCoreReadFiles, "readFiles", Resend::kIdempotent},
    OperationRule{kAgentCoreListFiles, "listFiles", Resend::kIdempotent},
    OperationRule{kAgentCoreWriteFiles, "writeFiles", Resend::kNever},
    OperationRule{kAgentCoreRemoveFiles, "removeFiles", Resend::kNever},
    OperationRule{kAgentCoreMakeDir, "executeCommand mkdir -p", Resend::kIdempotent},
};

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<std::size_t>(kTable[i].operation) != i) return false;
  return true;
}
static_assert(in_enum_order() && kTable.size() == static_cast<std::size_t>(kAgentCoreMakeDir) + 1,
              "one row per Operation, in the enum's order");

}  // namespace

const OperationRule& rule(Operation operation) noexcept { return kTable[static_cast<std::size_t>(operation)]; }

bool rewindable(Operation operation) noexcept {
  const Resend resend = rule(operation).resend;
  return resend == Resend::kIdempotent || resend == Resend::kOnce;
}

bool may_resend(Operation operation, const Exchange& exchange) noexcept {
  switch (rule(operation).resend) {
    case Resend::kNever:
    case Resend::kOnce: return false;
    case Resend::kIfUnwritten: return !exchange.request_written && is_transient(exchange, false);
    case Resend::kAfterCleanup:
    case Resend::kIdempotent: return is_transient(exchange, true);
  }
  return false;
}

Request for_operation(Operation operation) {
  Request request;
  request.operation = operation;
  request.idempotent = rewindable(operation);
  return request;
}

}  // namespace code_interpreter::http
