#include "pyodide/memory_watchdog.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace code_interpreter::detail {

namespace {

// Reads /proc/<pid>/status into `buf` (NUL-terminated). False if the process is gone.
bool read_status(pid_t pid, char (&buf)[4096]) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::size_t used = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf + used, sizeof buf - 1 - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<std::size_t>(n);
    if (used == sizeof buf - 1) break;
  }
  ::close(fd);
  buf[used] = '\0';
  return used > 0;
}

// A "Key:   123 kB" field in bytes; 0 when absent.
std::uint64_t field_bytes(const char* status, const char* key) noexcept {
  const char* at = std::strstr(status, key);
  if (at == nullptr) return 0;
  return std::strtoull(at + std::strlen(key), nullptr, 10) << 10;
}

}  // namespace

std::optional<std::uint64_t> resident_memory(pid_t pid) noexcept {
  char buf[4096];
  if (!read_status(pid, buf)) return std::nullopt;
  return field_bytes(buf, "RssAnon:") + field_bytes(buf, "RssShmem:");
}

bool tighten_data_limit(pid_t pid, std::uint64_t cap) noexcept {
  char buf[4096];
  if (!read_status(pid, buf)) {
    errno = ESRCH;
    return false;
  }
  const std::uint64_t data = field_bytes(buf, "VmData:");
  const std::uint64_t anon = field_bytes(buf, "RssAnon:");
  const std::uint64_t limit = data + (cap > anon ? cap - anon : 0);
  const rlimit value{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
  return ::prlimit(pid, RLIMIT_DATA, &value, nullptr) == 0;
}

MemoryWatchdog::MemoryWatchdog(pid_t pid, std::uint64_t limit, std::chrono::milliseconds interval,
                               std::function<void()> on_exceeded)
    : on_exceeded_(std::move(on_exceeded)), pid_(pid), limit_(limit) {
  thread_ = std::thread([this, pid, limit, interval] { run(pid, limit, interval); });
}

bool MemoryWatchdog::over_limit_now() noexcept {
  // Far below at the last check: a call cannot have gained a quarter of the cap without the heap's own checks.
  if (last_used_.load(std::memory_order_relaxed) < limit_ / 4 * 3) return false;
  const auto used = resident_memory(pid_);
  if (!used || *used <= limit_) return false;
  std::lock_guard lock(mu_);
  exceeded_ = true;
  return true;
}

MemoryWatchdog::~MemoryWatchdog() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool MemoryWatchdog::exceeded() const noexcept {
  std::lock_guard lock(mu_);
  return exceeded_;
}

void MemoryWatchdog::run(pid_t pid, std::uint64_t limit, std::chrono::milliseconds interval) {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, interval, [&] { return stopping_; })) {
    const auto used = resident_memory(pid);
    if (!used) return;
    last_used_.store(*used, std::memory_order_relaxed);
    if (*used > limit) {
      exceeded_ = true;
      lock.unlock();
      on_exceeded_();
      return;
    }
  }
}

}  // namespace code_interpreter::detail
