// Writing to a pipe or socket whose reader may be gone (docs/architecture.md "Writing without SIGPIPE"): the runtime's
// stdin, the MCP server's stdout.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace code_interpreter::detail {

/// Writes all of `data` to `fd` with SIGPIPE blocked for the calling thread; a SIGPIPE the write raised is consumed,
/// so it never reaches the host program. On a non-blocking `fd` a full pipe is waited on in steps of at most 100 ms.
/// @param deadline nullopt: wait for room as long as it takes; else give up at it.
/// @return false when the reader is gone (EPIPE), on another write error, or at `deadline` with bytes left.
bool write_all(int fd, std::string_view data,
               std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

}  // namespace code_interpreter::detail
