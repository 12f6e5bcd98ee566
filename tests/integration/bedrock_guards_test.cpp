// The file guards on the Bedrock AgentCore backend (docs/errors.md, "File guards"), against the local server: a
// readFiles answer is capped on the file content received (text as is, a blob as the bytes it decodes to), the
// transfer stops once the cap is passed, and listFiles answers are checked.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bedrock_test_support.hpp"
#include "../support/temp_files.hpp"

using code_interpreter::test_support::temp_path;
using code_interpreter::test_support::leftovers;
using namespace code_interpreter;
using code_interpreter::test::BedrockServer;
using nlohmann::json;

namespace {

std::string binary(std::size_t size) {  // not UTF-8: sent as a blob
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i % 251);
  return s;
}

}  // namespace

TEST_CASE("bedrock: read_file one byte over max_bytes throws kQuotaExceeded naming the cap, text and blob alike",
          "[bedrock][guards]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  sandbox->write_file("data/note.txt", std::string(5000, 'a'));
  sandbox->write_file("data/raw.bin", binary(5000));

  for (const std::string path : {"data/note.txt", "data/raw.bin"}) {
    INFO(path);
    try {
      (void)sandbox->read_file(path, 4999);
      FAIL("read_file returned");
    } catch (const SandboxExecutionError& e) {
      CHECK(std::string(e.what()) == "read_file '" + path + "': the file is over the cap of 4999 bytes (max_bytes)");
      CHECK(e.stage() == Stage::kDownload);
      CHECK(e.kind() == ErrorKind::kQuotaExceeded);
      CHECK_FALSE(e.transient());
    }
  }
  CHECK(sandbox->read_file("data/note.txt", 5000) == std::string(5000, 'a'));
  CHECK(sandbox->read_file("data/raw.bin", 5000) == binary(5000));
  // An over-cap read is not retried.
  CHECK(server.requests("invoke", "readFiles").size() == 4);
  sandbox->terminate();
}

TEST_CASE("bedrock: download_file over max_bytes is nullopt, download_file_to false with no file left",
          "[bedrock][guards]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  sandbox->write_file("data/raw.bin", binary(3000));
  const auto destination = temp_path("raw.bin");

  CHECK_FALSE(sandbox->download_file("data/raw.bin", std::nullopt, 2999).has_value());
  CHECK(sandbox->download_file("data/raw.bin", std::nullopt, 3000) == binary(3000));
  CHECK_FALSE(sandbox->download_file_to("data/raw.bin", destination, std::nullopt, 2999));
  CHECK(leftovers(destination).empty());
  CHECK(sandbox->download_file_to("data/raw.bin", destination, std::nullopt, 3000));
  std::ifstream in(destination, std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == binary(3000));
  std::filesystem::remove(destination);
  sandbox->terminate();
}

TEST_CASE("bedrock: file content spread over many result events is counted across them and stopped at the cap",
          "[bedrock][guards]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  const json block = {{"type", "resource"},
                      {"resource", {{"type", "text"}, {"uri", "file:///data/x"}, {"text", std::string(1000, 'x')}}}};
  // 10,000 events of 1000 bytes each: 10 MB if all were read.
  server.fault({{"operation", "invoke"}, {"tool", "readFiles"}, {"action", "result"}, {"repeat", 10000},
                {"result", {{"content", json::array({block})}, {"isError", false}}}});
  CHECK_THROWS_MATCHES(sandbox->read_file("data/x", 4500), SandboxExecutionError,
                       Catch::Matchers::Message("read_file 'data/x': the file is over the cap of 4500 bytes (max_bytes)"));
  sandbox->terminate();
}

TEST_CASE("bedrock: max_download_bytes is the cap when none is given, 0 is refused at configure",
          "[bedrock][guards]") {
  BedrockServer server;
  auto options = server.options();
  options.max_download_bytes = 100;
  auto sandbox = BedrockAgentCoreSandbox::create(options);
  sandbox->write_file("data/out.txt", std::string(101, 'z'));
  CHECK_THROWS_MATCHES(sandbox->read_file("data/out.txt"), SandboxExecutionError,
                       Catch::Matchers::Message("read_file 'data/out.txt': the file is over the cap of 100 bytes (max_bytes)"));
  CHECK_FALSE(sandbox->download_file("data/out.txt").has_value());
  CHECK(sandbox->read_file("data/out.txt", 101) == std::string(101, 'z'));
  sandbox->terminate();

  auto zero = server.options();
  zero.max_download_bytes = 0;
  try {
    (void)BedrockAgentCoreSandbox::create(zero);
    FAIL("create accepted max_download_bytes 0");
  } catch (const SandboxStartError& e) {
    CHECK(std::string(e.what()).find("max_download_bytes must be positive") != std::string::npos);
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
  }
}

TEST_CASE("bedrock: list_files drops hostile names and paths that are not dir/name, keeping the rest",
          "[bedrock][guards]") {
  BedrockServer server;
  auto sandbox = BedrockAgentCoreSandbox::create(server.options());
  auto link = [](const std::string& name, const std::string& uri) {
    return json{{"type", "resource_link"}, {"name", name}, {"uri", uri}, {"description", "File"}, {"size", 5}};
  };
  const json content = json::array({link("../../../root/.bashrc", "file:///data/../../../root/.bashrc"),
                                    link("ok.txt", "file:///data/ok.txt"), link("..", "file:///data/.."),
                                    link(".", "file:///data/."), link("", "file:///data/"),
                                    link("a\\b", "file:///data/a\\b"), link(std::string("n\0ul", 4), "file:///data/n"),
                                    link("x", "file:///etc/x"), link("y.txt", "file:///data/y.txt")});
  server.fault({{"operation", "invoke"}, {"tool", "listFiles"}, {"action", "result"},
                {"result", {{"content", content}, {"isError", false}}}});

  CHECK(sandbox->list_files("data") == std::vector<FileInfo>{{"ok.txt", "data/ok.txt", false, 5},
                                                             {"y.txt", "data/y.txt", false, 5}});
  sandbox->terminate();
}
