// Sandbox links in a model's final answer: `[name](sandbox:<upload_dir>/<path>)` (also `(<sandbox:...>)`).
// The model's text is untrusted: a target is accepted only when it names a file under the upload directory with no
// "..", "." or empty component, no backslash and no control character (after percent-decoding).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace code_interpreter::interpreter {

struct SandboxLink {
  std::string target;                ///< as written after "sandbox:"
  std::optional<std::string> path;   ///< the sandbox path to download; nullopt when the link is refused
};

/// The sandbox links of `text` in order of first appearance, each target once: inline destinations after "](" and
/// reference definitions after "]:", with optional whitespace (at most one line ending) before the destination.
/// @param upload_dir the backend's upload directory ("/files", or relative like "files"); trailing '/' ignored.
std::vector<SandboxLink> find_sandbox_links(std::string_view text, std::string_view upload_dir);

/// `target` percent-decoded (%XX with two hex digits; anything else kept as is).
std::string percent_decode(std::string_view target);

/// The path `target` names if it is a file under `upload_dir`, else nullopt.
std::optional<std::string> resolve_link_target(std::string_view target, std::string_view upload_dir);

/// The last component of an accepted path.
std::string base_name(std::string_view path);

}  // namespace code_interpreter::interpreter
