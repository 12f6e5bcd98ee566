// Files the tests make in the temporary directory, what is left of them, and their bytes. One definition for every
// test file (the test targets are compiled in unity batches, CMakeLists.txt CODE_INTERPRETER_UNITY_BUILD).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace code_interpreter::test_support {

/// A path in the temporary directory for `name`, private to this process: <tmp>/ci-test-<pid>-<name>.
inline std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("ci-test-" + std::to_string(::getpid()) + "-" + name);
}

/// The names in `destination`'s directory that begin with its file name: the file itself and any partial or
/// temporary file a download left beside it.
inline std::vector<std::string> leftovers(const std::filesystem::path& destination) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(destination.parent_path())) {
    const auto name = e.path().filename().string();
    if (name.rfind(destination.filename().string(), 0) == 0) out.push_back(name);
  }
  return out;
}

/// The bytes of the file at `p` ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// Replaces the file at `p` with `text`.
inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace code_interpreter::test_support
