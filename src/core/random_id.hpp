// The one generator of random identifiers (docs/architecture.md "Backends"): client tokens that let a lost create be
// found again, the suffix of a temporary file, the clientToken of an AgentCore call, a Pyodide sandbox's id.
#pragma once

#include <cstddef>
#include <string>

namespace code_interpreter::detail {

/// `bytes` random bytes from std::random_device, as 2 * `bytes` lower-case hex digits.
std::string random_hex(std::size_t bytes);

/// A version-4 UUID in its 8-4-4-4-12 lower-case form (the clientToken the AWS SDKs generate).
std::string uuid4();

}  // namespace code_interpreter::detail
