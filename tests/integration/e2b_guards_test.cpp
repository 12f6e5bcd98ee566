// The file guards on the E2B backend (docs/errors.md, "File guards"), against the local E2B server: reads stop at
// a byte cap counted on the bytes received (whatever Content-Length says), and list_files answers are checked.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../support/peak_memory.hpp"
#include "e2b_test_support.hpp"
#include "../support/temp_files.hpp"

using code_interpreter::test_support::temp_path;
using code_interpreter::test_support::leftovers;
using code_interpreter::test_support::read_text;
using namespace code_interpreter;
using code_interpreter::test::E2BServer;
using nlohmann::json;

namespace {

std::string pattern(std::size_t size) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i % 251);
  return s;
}

}  // namespace

TEST_CASE("e2b: read_file one byte over max_bytes throws kQuotaExceeded naming the cap, at the cap it reads",
          "[e2b][guards]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  sandbox->write_file("/home/user/out.bin", pattern(5000));

  try {
    (void)sandbox->read_file("/home/user/out.bin", 4999);
    FAIL("read_file returned");
  } catch (const SandboxExecutionError& e) {
    CHECK(std::string(e.what()) ==
          "read_file '/home/user/out.bin': the file is over the cap of 4999 bytes (max_bytes)");
    CHECK(e.stage() == Stage::kDownload);
    CHECK(e.kind() == ErrorKind::kQuotaExceeded);
    CHECK_FALSE(e.transient());
  }
  CHECK(sandbox->read_file("/home/user/out.bin", 5000) == pattern(5000));
  // Over the cap is not retried: one GET for the refused read, one for the good one.
  CHECK(server.requests("GET", "/files").size() == 2);
  sandbox->terminate();
}

TEST_CASE("e2b: download_file over max_bytes is nullopt, download_file_to false with no file left", "[e2b][guards]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  sandbox->write_file("/home/user/out.bin", pattern(3000));
  const auto destination = temp_path("out.bin");

  CHECK_FALSE(sandbox->download_file("/home/user/out.bin", std::nullopt, 2999).has_value());
  CHECK(sandbox->download_file("/home/user/out.bin", std::nullopt, 3000) == pattern(3000));
  CHECK_FALSE(sandbox->download_file_to("/home/user/out.bin", destination, std::nullopt, 2999));
  CHECK(leftovers(destination).empty());
  CHECK(sandbox->download_file_to("/home/user/out.bin", destination, std::nullopt, 3000));
  CHECK(read_text(destination) == pattern(3000));
  std::filesystem::remove(destination);
  sandbox->terminate();
}

TEST_CASE("e2b: a body without Content-Length is counted as it arrives", "[e2b][guards]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  sandbox->write_file("/home/user/out.bin", pattern(5000));
  const auto destination = temp_path("nolength.bin");

  server.fault({{"surface", "envd"}, {"method", "GET"}, {"path", "/files"}, {"action", "content_length"}, {"count", 3}});
  CHECK_THROWS_MATCHES(sandbox->read_file("/home/user/out.bin", 1000), SandboxExecutionError,
                       Catch::Matchers::Message(
                           "read_file '/home/user/out.bin': the file is over the cap of 1000 bytes (max_bytes)"));
  CHECK_FALSE(sandbox->download_file("/home/user/out.bin", std::nullopt, 1000).has_value());
  CHECK_FALSE(sandbox->download_file_to("/home/user/out.bin", destination, std::nullopt, 1000));
  CHECK(leftovers(destination).empty());

  // The same close-delimited body under the cap is the whole file.
  server.fault({{"surface", "envd"}, {"method", "GET"}, {"path", "/files"}, {"action", "content_length"}});
  CHECK(sandbox->download_file("/home/user/out.bin", std::nullopt, 5000) == pattern(5000));
  sandbox->terminate();
}

TEST_CASE("e2b: a Content-Length under the cap never lets more bytes in than it frames", "[e2b][guards]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  sandbox->write_file("/home/user/out.bin", pattern(5000));

  server.fault({{"surface", "envd"}, {"method", "GET"}, {"path", "/files"}, {"action", "content_length"},
                {"value", 10}});
  CHECK(sandbox->download_file("/home/user/out.bin", std::nullopt, 1000) == pattern(10));
  // A Content-Length far over the body: the cap is passed on the bytes received, before the framing matters.
  server.fault({{"surface", "envd"}, {"method", "GET"}, {"path", "/files"}, {"action", "content_length"},
                {"value", 100000}});
  try {
    (void)sandbox->read_file("/home/user/out.bin", 1000);
    FAIL("read_file returned");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.kind() == ErrorKind::kQuotaExceeded);
  }
  // Under the cap, the same body ends short of its framing: a failure, never the short body (retries included).
  server.fault({{"surface", "envd"}, {"method", "GET"}, {"path", "/files"}, {"action", "content_length"},
                {"value", 100000}, {"count", 5}});
  CHECK_FALSE(sandbox->download_file("/home/user/out.bin", std::nullopt, 6000).has_value());
  server.clear_faults();
  sandbox->terminate();
}

TEST_CASE("e2b: max_download_bytes is the cap when none is given, 0 is refused at configure", "[e2b][guards]") {
  E2BServer server;
  auto options = server.options();
  options.max_download_bytes = 100;
  auto sandbox = E2BSandbox::create(options);
  sandbox->write_file("/home/user/out.bin", pattern(101));
  CHECK_THROWS_MATCHES(sandbox->read_file("/home/user/out.bin"), SandboxExecutionError,
                       Catch::Matchers::Message(
                           "read_file '/home/user/out.bin': the file is over the cap of 100 bytes (max_bytes)"));
  CHECK_FALSE(sandbox->download_file("/home/user/out.bin").has_value());
  CHECK(sandbox->read_file("/home/user/out.bin", 101) == pattern(101));
  sandbox->terminate();

  auto zero = server.options();
  zero.max_download_bytes = 0;
  try {
    (void)E2BSandbox::create(zero);
    FAIL("create accepted max_download_bytes 0");
  } catch (const SandboxStartError& e) {
    CHECK(std::string(e.what()) == "max_download_bytes must be positive");
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
  }
  CHECK(server.alive().empty());
}

TEST_CASE("e2b: a 16 MiB cap on a 256 MiB file holds at most about the cap in the host", "[e2b][guards]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const auto r = sandbox->execute_code("f = open('/home/user/huge.bin', 'wb')\nf.truncate(256 << 20)\nf.close()");
  REQUIRE(r.status == ExecutionStatus::kSuccess);
  constexpr std::uint64_t kCap = 16u << 20;
  const auto destination = temp_path("huge.bin");

  REQUIRE(test::reset_peak_rss());
  const auto before = test::rss_bytes();
  CHECK_THROWS_AS(sandbox->read_file("/home/user/huge.bin", kCap), SandboxExecutionError);
  CHECK_FALSE(sandbox->download_file("/home/user/huge.bin", std::nullopt, kCap).has_value());
  CHECK_FALSE(sandbox->download_file_to("/home/user/huge.bin", destination, std::nullopt, kCap));
  CHECK(leftovers(destination).empty());
  const auto grown = test::peak_rss_bytes() - before;
  INFO("peak growth " << grown << " bytes");
  // The cap, a string doubling past it while the old buffer is still held, and libcurl's buffers: 4x the cap
  // bounds them all and is a sixteenth of the file.
  CHECK(grown < 4 * kCap);
  sandbox->terminate();
}

TEST_CASE("e2b: list_files drops hostile names and paths that are not dir/name, keeping the rest", "[e2b][guards]") {
  E2BServer server;
  auto sandbox = E2BSandbox::create(server.options());
  const json entry = {{"type", "FILE_TYPE_FILE"}, {"size", "5"}};
  auto named = [&](const std::string& name, const std::string& path) {
    json e = entry;
    e["name"] = name;
    e["path"] = path;
    return e;
  };
  const json entries = json::array({named("../../../root/.bashrc", "/home/user/../../../root/.bashrc"),
                                    named("ok.txt", "/home/user/ok.txt"), named("..", "/home/user/.."),
                                    named(".", "/home/user/."), named("", "/home/user/"),
                                    named("a\\b", "/home/user/a\\b"), named(std::string("n\0ul", 4), "/home/user/n"),
                                    named("x", "/etc/x"), named("sub", "/home/user/sub")});
  server.fault({{"surface", "envd"}, {"path", "/filesystem.Filesystem/ListDir"}, {"action", "status"},
                {"status", 200}, {"body", {{"entries", entries}}}});

  const auto listing = sandbox->list_files("/home/user");
  CHECK(listing == std::vector<FileInfo>{{"ok.txt", "/home/user/ok.txt", false, 5},
                                         {"sub", "/home/user/sub", false, 5}});
  sandbox->terminate();
}

TEST_CASE("e2b: a request_timeout of 0 or over 24 hours is refused at configure, nothing created", "[e2b][guards]") {
  E2BServer server;
  for (const auto timeout : {std::chrono::milliseconds(0), std::chrono::milliseconds(-1),
                             std::chrono::milliseconds::max()}) {
    auto options = server.options();
    options.request_timeout = timeout;
    try {
      (void)E2BSandbox::create(options);
      FAIL("create accepted request_timeout " << timeout.count());
    } catch (const SandboxStartError& e) {
      CHECK(std::string(e.what()) == "request_timeout must be above 0 and at most 24 hours");
      CHECK(e.stage() == Stage::kConfigure);
      CHECK(e.kind() == ErrorKind::kInvalidArgument);
    }
  }
  CHECK(server.requests().empty());
}
