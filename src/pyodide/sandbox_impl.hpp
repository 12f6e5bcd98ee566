// PyodideSandbox::Impl: the orchestration of one Pyodide sandbox over its PyodideHost (docs/architecture.md
// "Backends"): calls serialized one at a time, the run and its timeout/interrupt state machine (execution.cpp),
// file operations and attachments (files.cpp), create and terminate (lifecycle.cpp). Results and errors come from
// src/pyodide/outcome.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "code_interpreter/pyodide_sandbox.hpp"
#include "core/deadline.hpp"
#include "core/defaults.hpp"
#include "pyodide/host.hpp"

namespace code_interpreter {

namespace detail {
inline constexpr auto kDefaultFileTimeout = std::chrono::seconds(60);
inline constexpr std::size_t kFileChunk = 8u << 20;  // bytes per read/write frame (the host caps reads at 8 MiB too)

// The one deadline arithmetic (detail::Deadline): a budget the clock cannot reach is no bound, never an overflow.
inline std::optional<HostClock::time_point> deadline_from(Timeout timeout, std::chrono::milliseconds fallback) {
  return Deadline::after(timeout, fallback).at;
}
}  // namespace detail

struct PyodideSandbox::Impl {
  explicit Impl(std::string id) : host(std::move(id)) {}

  PyodideOptions options;
  detail::PyodideHost host;
  std::mutex call_mu;  // serializes calls
  std::atomic<bool> terminated{false};
  // interrupt(): a run in progress (running) is asked to stop (interrupt_asked), by a wake of its wait.
  std::atomic<bool> running{false};
  std::atomic<bool> interrupt_asked{false};

  void check_alive() const {
    if (terminated || host.shutting_down()) throw SandboxNotInitializedError();
  }

  // Starts a call: refuses after terminate, then waits its turn (waiting does not count against a budget) and
  // refuses again if the sandbox was terminated meanwhile (docs/architecture.md "Threading").
  std::unique_lock<std::mutex> begin_call() {
    check_alive();
    std::unique_lock lock(call_mu);
    check_alive();
    return lock;
  }

  // ---- execution.cpp ----
  ExecutionResult execute(std::string_view code, const ExecuteOptions& options);

  // ---- files.cpp ----
  // Writes `data` to `path` in chunks (the first creates or truncates, the rest append).
  std::optional<detail::FileError> write_bytes(std::string_view path, std::string_view data,
                                               std::optional<detail::HostClock::time_point> deadline,
                                               const std::stop_token& cancel = {});
  // The same from a local file, read chunk by chunk.
  std::optional<detail::FileError> write_from_file(std::string_view path, const std::filesystem::path& source,
                                                   std::optional<detail::HostClock::time_point> deadline,
                                                   const std::stop_token& cancel = {});
};

}  // namespace code_interpreter
