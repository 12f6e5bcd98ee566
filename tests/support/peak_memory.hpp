// The test process's peak resident set size (VmHWM), and a way to start measuring it afresh, so a test can check
// that a capped read held at most about its cap, whatever the file's size.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace code_interpreter::test {

/// Resets the peak resident set size to the current one (Linux: "5" to /proc/self/clear_refs). @return success.
inline bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

/// The peak resident set size since the last reset, in bytes (0 if unknown).
inline std::uint64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      std::uint64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

/// The current resident set size, in bytes (0 if unknown).
inline std::uint64_t rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      std::uint64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

}  // namespace code_interpreter::test
