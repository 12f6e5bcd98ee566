#include "core/sandbox_tag.hpp"

#include <algorithm>
#include <mutex>

#include "code_interpreter/logging.hpp"
#include "code_interpreter/management.hpp"
#include "core/random_id.hpp"

namespace code_interpreter {

const std::string& process_sandbox_tag() {
  // 16 hex digits (64 random bits): unlikely to meet another process's tag, and short enough to leave room in an
  // AgentCore session name.
  static const std::string tag = "p" + detail::random_hex(8);
  return tag;
}

bool is_valid_sandbox_tag(std::string_view tag) noexcept {
  return !tag.empty() && tag.size() <= 32 && std::all_of(tag.begin(), tag.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

namespace detail {

std::string tag_for_create(const std::optional<std::string>& tag) {
  if (tag) {
    if (!is_valid_sandbox_tag(*tag))
      throw SandboxStartError("tag must be 1..32 characters of A-Z, a-z, 0-9 and _", Stage::kConfigure,
                              ErrorKind::kInvalidArgument);
    return *tag;
  }
  static std::once_flag logged;
  std::call_once(logged, [] {
    logger()->info("sandboxes created by this process carry the tag {} (SandboxManager::sweep(\"{}\") removes what "
                   "a crash leaves behind)", process_sandbox_tag(), process_sandbox_tag());
  });
  return process_sandbox_tag();
}

}  // namespace detail
}  // namespace code_interpreter
