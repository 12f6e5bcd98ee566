// The host-side half of the runtime's memory cap (docs/backends/pyodide.md "Process limits"): RLIMIT_DATA bounds
// the private writable memory a process maps; this watchdog catches what that does not count (shared memory,
// pages made read-only after they were written) by reading the process's resident memory.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace code_interpreter::detail {

/// Resident anonymous plus shared memory of `pid` in bytes (/proc/<pid>/status RssAnon + RssShmem); nullopt when
/// the process is gone. File-backed pages (the binary, mapped files) are not counted: the kernel can drop them.
std::optional<std::uint64_t> resident_memory(pid_t pid) noexcept;

/// Lowers `pid`'s RLIMIT_DATA to what it has mapped (VmData) plus what `cap` leaves beyond its resident anonymous
/// memory (RssAnon): reservations it made but never touched are not charged against the cap. Returns false (errno
/// set) if the process is gone or prlimit fails.
bool tighten_data_limit(pid_t pid, std::uint64_t cap) noexcept;

/// A thread that checks `pid` every `interval` and calls `on_exceeded` once (from that thread) when its resident
/// memory passes `limit` bytes; it stops then, when the process is gone, or when the watchdog is destroyed.
class MemoryWatchdog {
 public:
  MemoryWatchdog(pid_t pid, std::uint64_t limit, std::chrono::milliseconds interval, std::function<void()> on_exceeded);
  ~MemoryWatchdog();
  MemoryWatchdog(const MemoryWatchdog&) = delete;
  MemoryWatchdog& operator=(const MemoryWatchdog&) = delete;

  /// Whether the limit was passed (and on_exceeded called, or over_limit_now answered true).
  [[nodiscard]] bool exceeded() const noexcept;

  /// Whether the process holds more than the limit now, read at once when the last periodic check saw at least
  /// three quarters of it (a cheap answer otherwise); true also marks the limit as exceeded. Thread-safe.
  [[nodiscard]] bool over_limit_now() noexcept;

 private:
  void run(pid_t pid, std::uint64_t limit, std::chrono::milliseconds interval);

  std::function<void()> on_exceeded_;
  const pid_t pid_;
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> last_used_{0};  // resident memory at the last periodic check
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool exceeded_ = false;
  std::thread thread_;
};

}  // namespace code_interpreter::detail
