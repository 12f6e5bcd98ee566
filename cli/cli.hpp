// code-interpreter: the command-line tool's shared parts (docs/cli.md). Private to the tool: not installed.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "code_interpreter/code_interpreter.hpp"

namespace cli {

namespace ci = code_interpreter;

/// Exit statuses, the same for every subcommand (docs/cli.md "Exit status"). 0 to 4 and 64 are run_code's, kept.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,        ///< run: the code failed (ERROR); kill: a sandbox was not found; sweep: one could not be killed
  kExitTimeout = 2,      ///< run: TIMEOUT
  kExitUnknown = 3,      ///< run: UNKNOWN (the code may have run)
  kExitCannotStart = 4,  ///< the sandbox (or the backend's manager) could not start: credentials, template, runtime
  kExitManageFailed = 5, ///< list, kill, sweep: the service refused or failed, or the backend has no such verb
  kExitUsage = 64,       ///< bad usage: unknown subcommand or flag, missing value, a configuration refused
  kExitInternal = 70,    ///< a bug in the tool: an exception nobody expected
};

/// Bad usage: the message is printed after "code-interpreter: ", then the subcommand's synopsis; exit 64.
class UsageError : public std::runtime_error {
 public:
  UsageError(std::string_view subcommand, const std::string& message)
      : std::runtime_error(message), subcommand_(subcommand) {}
  [[nodiscard]] const std::string& subcommand() const noexcept { return subcommand_; }

 private:
  std::string subcommand_;
};

/// An argument as echoed in a message: control characters shown as '?' and cut after 32 bytes with "...", so a
/// pasted blob (a key given by mistake included) is not reprinted whole.
[[nodiscard]] std::string shown(std::string_view arg);

/// The help of `subcommand` ("" for the tool itself) as printed by --help and `help SUBCOMMAND`; nullopt for an
/// unknown name. docs/cli.md holds the same text (a test compares them).
[[nodiscard]] std::optional<std::string_view> help_text(std::string_view subcommand);

/// The "usage:" lines at the top of a help text.
[[nodiscard]] std::string synopsis(std::string_view subcommand);

/// The sandbox options run and repl share; each parser fills the ones it is given.
struct SandboxFlags {
  std::optional<std::string> config_file;
  std::optional<std::string> backend;
  std::optional<std::string> template_id;
  std::optional<std::string> interpreter_id;
};

/// Takes one of --config, --backend, --template, --interpreter at args[i] (and its value, advancing i).
/// @return false when args[i] is none of them. @throws UsageError for a missing value.
bool parse_sandbox_flag(std::string_view subcommand, std::span<const std::string> args, std::size_t& i,
                        SandboxFlags& flags);

/// The configuration the flags describe: the --config document read by sandbox_config_from_json, then --backend,
/// --template and --interpreter. @throws UsageError for an unreadable or refused document, or flags that do not fit.
[[nodiscard]] ci::SandboxConfig build_config(std::string_view subcommand, const SandboxFlags& flags);

/// Reads --timeout's value: 0 (no limit) or 0.001 to 1e6 seconds. @throws UsageError.
[[nodiscard]] ci::Timeout parse_timeout(std::string_view subcommand, std::string_view text);

/// create_sandbox with a progress indicator on stderr while it starts, shown only when stderr is a terminal.
/// @return the sandbox, or nullptr after printing why it could not start (exit kExitCannotStart).
/// @throws UsageError when the factory refuses the configuration itself (a bad usage, as run_code had it).
[[nodiscard]] std::unique_ptr<ci::CodeInterpreterSandbox> start_sandbox(std::string_view subcommand,
                                                                         const ci::SandboxConfig& config);

/// Writes `text` to `stream` at once (the program's output streams as produced).
void write_stream(std::FILE* stream, std::string_view text);

/// Prints what a run ended with, as Python's REPL shows it, and returns run's exit status for it (0 SUCCESS, 1
/// ERROR, 2 TIMEOUT, 3 UNKNOWN). stdout: each display's text/plain, then the last expression's value. stderr: the
/// error with its traceback (not when it is the program's own stderr, already streamed), except a SystemExit,
/// which prints only its message when it has one (sys.exit("why")), as Python does; the TIMEOUT or UNKNOWN note.
/// With `interrupted`, a cancelled run prints "KeyboardInterrupt" (the REPL's Ctrl-C).
int report_result(const ci::ExecutionResult& result, bool interrupted);

/// Terminates a sandbox before exiting; a failure is reported, never thrown.
void terminate_sandbox(ci::CodeInterpreterSandbox& sandbox);

int run_command(std::span<const std::string> args);
int repl_command(std::span<const std::string> args);
int backends_command(std::span<const std::string> args);
int list_command(std::span<const std::string> args);
int kill_command(std::span<const std::string> args);
int sweep_command(std::span<const std::string> args);
int packages_command(std::span<const std::string> args);
int mcp_command(std::span<const std::string> args);

}  // namespace cli
