// The help texts. docs/cli.md shows each one in full, marked <!-- help:NAME -->; tests/cli/help_test.cmake checks
// that the two agree character for character, so change both together.
#include <array>
#include <utility>

#include "cli.hpp"

namespace cli {
namespace {

constexpr std::string_view kToolHelp = R"(usage: code-interpreter [--help | --version] SUBCOMMAND [ARGS]

Runs Python in a sandbox: the local Pyodide runtime (the default), E2B or AWS Bedrock AgentCore.

subcommands:
  run       runs one program and exits with its status
  repl      an interactive session on one sandbox
  backends  which backends this machine can use
  list      the live sandboxes of a backend
  kill      kills sandboxes by id
  sweep     kills every live sandbox carrying a tag
  packages  the local sandbox's packages: fetch them, list what is present
  mcp       serves the sandbox as a tool to MCP clients on stdin and stdout
  help      the help of a subcommand

'code-interpreter help SUBCOMMAND' describes one.
exit status: 64 bad usage (an unknown subcommand or option, a missing value); each subcommand documents the rest
)";

constexpr std::string_view kRunHelp = R"(usage: code-interpreter run [--config FILE.json] [--backend pyodide|e2b|bedrock] [--template NAME]
                            [--interpreter ID] [--timeout SECONDS] (-c CODE | FILE | -)

Runs one Python program in a fresh sandbox and streams its stdout and stderr as they are produced, then prints
the text of each displayed object and the value of a final expression, as Python's REPL does. The tool's own
messages (an error, a traceback, a timeout) go to stderr only; sys.exit(n) prints nothing, sys.exit("why")
prints its message. The sandbox is terminated before the tool exits, whatever the outcome.

  --config FILE.json  a sandbox configuration (docs/backends.md); --template and --interpreter override
                      what it says; --backend must name the same backend
  --backend NAME      pyodide (the default, local), e2b or bedrock
  --template NAME     the E2B sandbox template (default code-interpreter-v1); e2b only
  --interpreter ID    the AgentCore code interpreter (default aws.codeinterpreter.v1); bedrock only
  --timeout SECONDS   the execution budget: 0 (no limit) or 0.001 to 1000000 (default: the backend's, 300)
  -c CODE             the program's text; FILE reads a file; - reads standard input

  e2b reads E2B_API_KEY (required), E2B_DOMAIN, E2B_API_URL and E2B_SANDBOX_URL.
  bedrock reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION,
  AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_BEDROCK_AGENTCORE and AWS_ENDPOINT_URL.

exit status: 0 SUCCESS, 1 ERROR, 2 TIMEOUT, 3 UNKNOWN, 4 the sandbox could not start, 64 bad usage (a
configuration the factory refuses included), 70 internal error
)";

constexpr std::string_view kReplHelp = R"(usage: code-interpreter repl [--config FILE.json] [--backend pyodide|e2b|bedrock] [--template NAME]
                             [--interpreter ID] [--timeout SECONDS] [--examples FILE.json]

An interactive Python session on one sandbox: variables, imports and files persist from one input to the
next. Output streams as it is produced; the value of a final expression is printed as Python's REPL does.

  --config, --backend, --template, --interpreter  as for run
  --timeout SECONDS   the budget of each input, as for run
  --examples FILE.json  example programs for :examples and :example: {"examples": {"NAME": "CODE", ...}}

Input: a line that ends in ':' (or starts with '@') opens a block, continued at "... " prompts until an
empty line; an open bracket, an open triple-quoted string or a final backslash continues the input until
it is closed. Comments and strings are skipped when looking.

  :help          this text
  :files [DIR]   lists DIR in the sandbox (default: its upload directory, /files on Pyodide and E2B)
  :examples      lists the example programs
  :example NAME  runs one
  :reset         terminates the sandbox and starts a fresh one: every variable and file is gone
  :quit          ends the session, as Ctrl-D at the prompt does

Ctrl-C while an input runs interrupts it (on Pyodide, KeyboardInterrupt: the state is kept) and returns to
the prompt; at the prompt it discards the line. History is kept in $XDG_STATE_HOME/code_interpreter/history
(default ~/.local/state/code_interpreter/history); one that cannot be read or written is skipped.

exit status: 0 the session ended, 4 the sandbox could not start, 64 bad usage, 70 internal error
)";

constexpr std::string_view kBackendsHelp = R"(usage: code-interpreter backends

Prints, for each backend (pyodide, e2b, bedrock), whether this machine can use it and, when not, what is
missing and how to get it. It makes no network call, so "available" means configured, not answering.
Environment variables are named, never their values.

exit status: 0, 64 bad usage
)";

constexpr std::string_view kListHelp = R"(usage: code-interpreter list [--config FILE.json] [--backend e2b|bedrock] [--tag TAG]

Lists the live sandboxes of a backend, those other processes created included: one line each, with
tab-separated fields: id, state, tag (- when none), started (UTC, - when unknown).

  --config, --backend  as for run (the configuration's credentials and endpoints are used)
  --tag TAG            only the sandboxes carrying exactly TAG

exit status: 0, 4 the backend's manager could not start (credentials missing), 5 the service refused or
failed, or the backend cannot list, 64 bad usage, 70 internal error
)";

constexpr std::string_view kKillHelp = R"(usage: code-interpreter kill [--config FILE.json] [--backend e2b|bedrock] ID...

Kills (E2B) or stops (AgentCore) each sandbox named, and prints "killed ID" or "not found ID" for each.

exit status: 0 every one was killed, 1 one or more were not found, 4 the backend's manager could not start,
5 the service refused or failed, 64 bad usage, 70 internal error
)";

constexpr std::string_view kSweepHelp = R"(usage: code-interpreter sweep [--config FILE.json] [--backend e2b|bedrock] TAG

Kills every live sandbox carrying exactly TAG (1 to 32 of A-Z a-z 0-9 _); sandboxes of any other tag, or of
none, are never touched. Prints "killed ID" or "failed ID" for each. The library logs the tag of a
process's sandboxes the first time it creates one, so an operator can sweep after a crash.

exit status: 0, 1 one or more could not be killed, 4 the backend's manager could not start, 5 the listing
failed, 64 bad usage (an invalid tag included), 70 internal error
)";

constexpr std::string_view kMcpHelp = R"(usage: code-interpreter mcp [--config FILE.json] [--backend pyodide|e2b|bedrock] [--template NAME]
                            [--interpreter ID] [--timeout SECONDS] [--max-timeout SECONDS]
                            [--max-sandboxes N] [--max-message-bytes N]

A Model Context Protocol server on standard input and output (JSON-RPC 2.0, one message per line) that offers
the sandbox to an MCP client as the tool execute_code, and reset_sandbox for a fresh one. The sandbox starts at
the first call and keeps its state until the session ends (end of input), when it is terminated. Only protocol
messages go to stdout; the log goes to stderr.

  --config, --backend, --template, --interpreter  as for run
  --timeout SECONDS        a call's budget when the model gives none: 0 (no limit) or 0.001 to 1000000
                           (default 30)
  --max-timeout SECONDS    the most the model may ask for with `timeout`: 1 to 86400 (default 300), not
                           less than --timeout
  --max-sandboxes N        sandboxes one session may create, the first included: 1 to 1000 (default 3;
                           1 offers no reset_sandbox)
  --max-message-bytes N    the longest message read from the client: 1024 to 1073741824 (default 4194304)

exit status: 0 after end of input, 64 bad usage (a configuration the factory refuses included), 70 internal error
)";

constexpr std::string_view kPackagesHelp = R"(usage: code-interpreter packages fetch [--dir DIR] [--lock FILE] [--runtime DIR] [--base-url URL] NAME...
       code-interpreter packages list [--dir DIR] [--lock FILE] [--runtime DIR] [NAME...]

The packages of the local (Pyodide) sandbox: NAME and its dependencies, as the runtime's pyodide-lock.json
gives them (every package of the lock when list is given no NAME). fetch downloads each file the package
directory lacks from Pyodide's release location, resumes a file cut short, checks it against the lock's
SHA-256 and only then puts it in place; a file that does not match is deleted. list prints one line per
package, tab-separated: name, version, present, missing or mismatch, file. fetch prints the same lines once
done. Progress is shown on stderr when it is a terminal.

  --dir DIR       the package directory (default: packages-<Pyodide version> in
                  $XDG_CACHE_HOME/code_interpreter/pyodide, else ~/.cache/code_interpreter/pyodide)
  --lock FILE     a lock in pyodide-lock.json's format instead of the runtime's own
  --runtime DIR   the runtime whose lock is read (default: the one installed with the library)
  --base-url URL  where the files are, ending in '/' (default: https://cdn.jsdelivr.net/pyodide/v<version>/full/)

exit status: 0 every package present, 1 a fetch failed or list found a package missing or mismatched,
64 bad usage (an unknown or invalid name included), 70 internal error
)";

constexpr std::string_view kHelpHelp = R"(usage: code-interpreter help [SUBCOMMAND]

Prints the help of SUBCOMMAND (run, repl, backends, list, kill, sweep, packages, mcp, help), or of the tool.

exit status: 0, 64 an unknown subcommand
)";

constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kHelps{{
    {"", kToolHelp},
    {"run", kRunHelp},
    {"repl", kReplHelp},
    {"backends", kBackendsHelp},
    {"list", kListHelp},
    {"kill", kKillHelp},
    {"sweep", kSweepHelp},
    {"packages", kPackagesHelp},
    {"mcp", kMcpHelp},
    {"help", kHelpHelp},
}};

}  // namespace

std::optional<std::string_view> help_text(std::string_view subcommand) {
  for (const auto& [name, text] : kHelps)
    if (name == subcommand) return text;
  return std::nullopt;
}

std::string synopsis(std::string_view subcommand) {
  const auto text = help_text(subcommand).value_or(kToolHelp);
  const auto end = text.find("\n\n");
  return std::string(text.substr(0, end == std::string_view::npos ? text.size() : end + 1));
}

}  // namespace cli
