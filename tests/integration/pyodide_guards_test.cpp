// The file guards on the Pyodide backend (docs/errors.md, "File guards"): reads stop at a byte cap counted on the
// bytes received, and list_files answers are checked. Real Python writes the files; nothing is tampered with.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "../support/peak_memory.hpp"
#include "pyodide_test_support.hpp"
#include "../support/temp_files.hpp"

using code_interpreter::test_support::temp_path;
using test_support::make_sandbox;

namespace {

// Python writes `size` bytes (i % 251) to `path`.
void write_in_python(ci::PyodideSandbox& sb, const std::string& path, std::size_t size) {
  const auto r = sb.execute_code("import os\nos.makedirs(os.path.dirname('" + path + "'), exist_ok=True)\n"
                                 "open('" + path + "', 'wb').write(bytes(i % 251 for i in range(" +
                                 std::to_string(size) + ")))");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
}

std::string expected_bytes(std::size_t size) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i % 251);
  return s;
}

// Files beside `destination` whose name starts with its name (a partial file left behind would be one).
std::vector<std::string> leftovers(const std::filesystem::path& destination) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(destination.parent_path())) {
    const auto name = e.path().filename().string();
    if (name.rfind(destination.filename().string(), 0) == 0) out.push_back(name);
  }
  return out;
}

}  // namespace

TEST_CASE("read_file of a file one byte over max_bytes throws kQuotaExceeded naming the cap, at the cap it reads",
          "[files][guards]") {
  auto sb = make_sandbox();
  write_in_python(*sb, "/files/out.bin", 5000);

  try {
    (void)sb->read_file("/files/out.bin", 4999);
    FAIL("read_file returned");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(std::string(e.what()) == "read_file '/files/out.bin': the file is over the cap of 4999 bytes (max_bytes)");
    CHECK(e.stage() == ci::Stage::kDownload);
    CHECK(e.kind() == ci::ErrorKind::kQuotaExceeded);
    CHECK_FALSE(e.transient());
  }
  CHECK(sb->read_file("/files/out.bin", 5000) == expected_bytes(5000));
  // The runtime was not replaced: the state is kept.
  CHECK(sb->execute_code("1 + 1").results.at(0).data.at("text/plain") == "2");
}

TEST_CASE("download_file over max_bytes is nullopt and download_file_to false with no file left", "[files][guards]") {
  auto sb = make_sandbox();
  write_in_python(*sb, "/files/out.bin", 3000);
  const auto destination = temp_path("out.bin");

  CHECK_FALSE(sb->download_file("/files/out.bin", std::nullopt, 2999).has_value());
  CHECK(sb->download_file("/files/out.bin", std::nullopt, 3000) == expected_bytes(3000));
  CHECK_FALSE(sb->download_file_to("/files/out.bin", destination, std::nullopt, 2999));
  CHECK(leftovers(destination).empty());
  CHECK(sb->download_file_to("/files/out.bin", destination, std::nullopt, 3000));
  CHECK(test_support::read_text(destination) == expected_bytes(3000));
  std::filesystem::remove(destination);
}

TEST_CASE("a cap across several chunks counts every byte: 20 MiB + 5 is over 20 MiB + 4 and reads at 20 MiB + 5",
          "[files][guards]") {
  auto sb = make_sandbox();
  constexpr std::size_t kSize = (20u << 20) + 5;
  write_in_python(*sb, "/files/big.bin", kSize);

  CHECK_THROWS_MATCHES(sb->read_file("/files/big.bin", kSize - 1), ci::SandboxExecutionError,
                       Catch::Matchers::Message("read_file '/files/big.bin': the file is over the cap of " +
                                                std::to_string(kSize - 1) + " bytes (max_bytes)"));
  CHECK(sb->read_file("/files/big.bin", kSize) == expected_bytes(kSize));
  CHECK(sb->download_file("/files/big.bin") == expected_bytes(kSize));  // the default cap is 512 MiB
}

TEST_CASE("max_download_bytes is the cap when none is given, 0 is refused at configure", "[files][guards]") {
  ci::PyodideOptions options;
  options.max_download_bytes = 1000;
  auto sb = make_sandbox(options);
  write_in_python(*sb, "/files/out.bin", 1001);
  CHECK_THROWS_MATCHES(sb->read_file("/files/out.bin"), ci::SandboxExecutionError,
                       Catch::Matchers::Message(
                           "read_file '/files/out.bin': the file is over the cap of 1000 bytes (max_bytes)"));
  CHECK_FALSE(sb->download_file("/files/out.bin").has_value());
  CHECK(sb->read_file("/files/out.bin", 1001).size() == 1001);  // an explicit max_bytes overrides the option
  CHECK_THROWS_AS(sb->read_file("/files/out.bin", 0), std::invalid_argument);

  ci::PyodideOptions zero;
  zero.max_download_bytes = 0;
  try {
    (void)make_sandbox(zero);
    FAIL("create accepted max_download_bytes 0");
  } catch (const ci::SandboxStartError& e) {
    CHECK(std::string(e.what()) == "max_download_bytes must be positive");
    CHECK(e.stage() == ci::Stage::kConfigure);
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
  }
}

TEST_CASE("a 16 MiB cap on a 256 MiB file holds at most about the cap in the host", "[files][guards]") {
  auto sb = make_sandbox();
  const auto r = sb->execute_code("f = open('/tmp/huge.bin', 'wb')\nf.truncate(256 << 20)\nf.close()");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  constexpr std::uint64_t kCap = 16u << 20;

  REQUIRE(ci::test::reset_peak_rss());
  const auto before = ci::test::rss_bytes();
  CHECK_THROWS_AS(sb->read_file("/tmp/huge.bin", kCap), ci::SandboxExecutionError);
  CHECK_FALSE(sb->download_file("/tmp/huge.bin", std::nullopt, kCap).has_value());
  const auto destination = temp_path("huge.bin");
  CHECK_FALSE(sb->download_file_to("/tmp/huge.bin", destination, std::nullopt, kCap));
  CHECK(leftovers(destination).empty());
  const auto grown = ci::test::peak_rss_bytes() - before;
  INFO("peak growth " << grown << " bytes");
  // The cap, one 8 MiB chunk in flight and the string's growth; reading the whole file would be over 256 MiB.
  CHECK(grown < (56u << 20));
}

TEST_CASE("list_files drops a name with a backslash and warns, the other entries are kept", "[files][guards]") {
  auto sb = make_sandbox();
  const auto r = sb->execute_code(
      "import os\nos.makedirs('/tmp/guard', exist_ok=True)\n"
      "for n in ['ok.txt', 'a\\\\b', '..\\\\..\\\\x']:\n    open('/tmp/guard/' + n, 'w').write('12345')\n"
      "sorted(os.listdir('/tmp/guard'))");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  REQUIRE(r.results.at(0).data.at("text/plain") == R"(['..\\..\\x', 'a\\b', 'ok.txt'])");

  const auto entries = sb->list_files("/tmp/guard");
  CHECK(entries == std::vector<ci::FileInfo>{{"ok.txt", "/tmp/guard/ok.txt", false, 5}});
  CHECK(sb->list_files("/tmp/guard/") == std::vector<ci::FileInfo>{{"ok.txt", "/tmp/guard/ok.txt", false, 5}});
}
