// The defaults every backend shares, in one place (docs/architecture.md "Backends"): the budgets of a call whose
// caller gave none, and the directory an execution's attachments are uploaded to.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "code_interpreter/execution.hpp"
#include "core/deadline.hpp"

namespace code_interpreter::detail {

/// The longest request timeout (E2BOptions, BedrockOptions) and interrupt grace (PyodideOptions) a create accepts:
/// far past any sensible budget, and far from where adding it to a clock's now() overflows.
inline constexpr std::chrono::milliseconds kMaxRequestBudget{std::chrono::hours(24)};

/// ExecuteOptions::timeout when unset (docs/errors.md "Timeouts").
inline constexpr std::chrono::milliseconds kDefaultExecuteTimeout{std::chrono::seconds(300)};
/// CommandOptions::timeout when unset.
inline constexpr std::chrono::milliseconds kDefaultCommandTimeout{std::chrono::seconds(30)};
/// create_timeout of the cloud backends (E2B, AgentCore) when unset.
inline constexpr std::chrono::milliseconds kDefaultCreateTimeout{std::chrono::minutes(5)};
/// PyodideOptions::create_timeout when unset: a local runtime starts in seconds, with no service to wait for.
inline constexpr std::chrono::milliseconds kDefaultPyodideCreateTimeout{std::chrono::seconds(120)};

/// The budget of a cloud create (start, retries and package installation together): the deadline it runs
/// against, and the caller's create_timeout (or its default) that an install error names.
struct CreateBudget {
  Deadline deadline;
  std::chrono::milliseconds budget;
};
inline CreateBudget create_budget(Timeout create_timeout) {
  return {Deadline::after(create_timeout, kDefaultCreateTimeout), create_timeout.value_or(kDefaultCreateTimeout)};
}

/// Where ExecuteOptions::files go when upload_dir is unset (Capabilities::upload_dir): an absolute directory on
/// backends with a filesystem of their own (E2B, Pyodide)...
inline constexpr std::string_view kUploadDir = "/files";
/// ...and a relative one on AgentCore, whose file tools refuse absolute paths (docs/protocols/bedrock.md "File tools").
inline constexpr std::string_view kRelativeUploadDir = "files";

/// What a cloud sandbox (E2B, AgentCore) can do: it keeps state, runs shell commands, has files, a filesystem and
/// packages; whether its code reaches the network, a timeout interrupts it, the last expression's value and the
/// output arrive while the code runs, its languages and its upload directory are the backend's.
struct CloudTraits {
  bool network = false;
  bool interrupt = false;
  bool expression_results = false;
  bool streaming_output = false;
};
inline Capabilities cloud_capabilities(CloudTraits traits, std::vector<Language> languages,
                                       std::string_view upload_dir) {
  Capabilities c;
  c.stateful = c.shell_commands = c.file_download = c.filesystem = c.packages = true;
  c.network = traits.network;
  c.interrupt = traits.interrupt;
  c.expression_results = traits.expression_results;
  c.streaming_output = traits.streaming_output;
  c.languages = std::move(languages);
  c.upload_dir = std::string(upload_dir);
  return c;
}

}  // namespace code_interpreter::detail
