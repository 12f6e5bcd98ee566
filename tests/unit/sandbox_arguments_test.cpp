// The argument rules every backend shares (src/core/sandbox.cpp, docs/architecture.md "The sandbox interface (non-virtual interface)"): the public calls check
// their arguments before any backend sees them, so each rule holds alike on Pyodide, E2B and Bedrock. Shown here
// through testing::FakeSandbox, a backend that records every call it gets.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "code_interpreter/testing/fake_sandbox.hpp"

using namespace code_interpreter;

TEST_CASE("code, a command, a cwd, a path or an attachment name that is not UTF-8 (or a cwd that is empty or holds "
          "NUL) is std::invalid_argument on every backend, and reaches none",
          "[sandbox][arguments]") {
  testing::FakeSandbox sandbox;
  const std::string bad = "print('\xff')";
  CHECK_THROWS_MATCHES(sandbox.execute_code(bad), std::invalid_argument, Catch::Message("code is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox.execute_command("echo \xfe"), std::invalid_argument,
                       Catch::Message("command is not valid UTF-8"));
  CommandOptions in_bad_dir;
  in_bad_dir.cwd = "/tmp/\xc3";
  CHECK_THROWS_MATCHES(sandbox.execute_command("ls", in_bad_dir), std::invalid_argument,
                       Catch::Message("cwd is not valid UTF-8"));
  in_bad_dir.cwd = "";
  CHECK_THROWS_MATCHES(sandbox.execute_command("ls", in_bad_dir), std::invalid_argument, Catch::Message("cwd is empty"));
  in_bad_dir.cwd = std::string("/tmp\0x", 6);
  CHECK_THROWS_MATCHES(sandbox.execute_command("ls", in_bad_dir), std::invalid_argument,
                       Catch::Message("cwd contains a NUL byte"));
  ExecuteOptions bad_dir;
  bad_dir.upload_dir = "/files\xff";
  CHECK_THROWS_MATCHES(sandbox.execute_code("1", bad_dir), std::invalid_argument,
                       Catch::Message("upload_dir is not valid UTF-8"));
  ExecuteOptions bad_name;
  bad_name.files.push_back(Attachment{"data\xff.csv", "x", "", std::nullopt});
  CHECK_THROWS_MATCHES(sandbox.execute_code("1", bad_name), std::invalid_argument,
                       Catch::Message("attachment name is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox.write_file("/files/\xff", "x"), std::invalid_argument,
                       Catch::Message("path is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox.read_file("/files/\xff"), std::invalid_argument, Catch::Message("path is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox.list_files("/files/\xff"), std::invalid_argument, Catch::Message("dir is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox.remove_file("/files/\xff"), std::invalid_argument,
                       Catch::Message("path is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox.make_dir("/files/\xff"), std::invalid_argument, Catch::Message("path is not valid UTF-8"));
  CHECK_THROWS_MATCHES(sandbox.download_file("/files/\xff"), std::invalid_argument,
                       Catch::Message("path is not valid UTF-8"));
  CHECK_THROWS_AS(Attachment::from_bytes("x", "a\xe2\x82.txt"), std::invalid_argument);
  CHECK(sandbox.execute_calls().empty());
}

TEST_CASE("valid UTF-8 beyond ASCII passes the checks unchanged", "[sandbox][arguments]") {
  testing::FakeSandbox sandbox;
  sandbox.push_result({});
  const std::string code = "print('\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80')";  // é € 😀
  (void)sandbox.execute_code(code);
  REQUIRE(sandbox.execute_calls().size() == 1);
  CHECK(sandbox.execute_calls()[0].code == code);
  sandbox.write_file("/files/caf\xc3\xa9.txt", "x");
  CHECK(sandbox.read_file("/files/caf\xc3\xa9.txt") == "x");
}

TEST_CASE("FakeSandbox refuses a max_output_bytes of 0 as configuration, as the real backends' create does",
          "[sandbox][arguments]") {
  try {
    testing::FakeSandbox sandbox(testing::FakeSandbox::pyodide_like_capabilities(), Language::kPython, {}, 0);
    FAIL("the constructor must throw");
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "max_output_bytes must be positive");
  }
}

namespace {

// A backend that has no get_info: the base class's refusal, as a subclass that does not implement it gets.
class NoFileInfo : public testing::FakeSandbox {
 public:
  using FakeSandbox::FakeSandbox;

 protected:
  FileInfo do_get_info(std::string_view path) override { return CodeInterpreterSandbox::do_get_info(path); }
};

}  // namespace

TEST_CASE("write_file without make_dirs where the parent cannot be asked fails at the upload stage, writing nothing",
          "[sandbox][arguments]") {
  NoFileInfo sandbox(testing::FakeSandbox::pyodide_like_capabilities(), Language::kPython, {}, 1000);
  try {
    sandbox.write_file("dir/f.txt", "x", false);
    FAIL("write_file must throw");
  } catch (const SandboxExecutionError& e) {
    CHECK(e.stage() == Stage::kUpload);
    CHECK(e.kind() == ErrorKind::kUnsupported);
    CHECK(std::string(e.what()) ==
          "write_file 'dir/f.txt': checking the parent directory 'dir' failed: get_info is not supported by this "
          "sandbox");
  }
  CHECK_FALSE(sandbox.exists("dir/f.txt"));
  sandbox.write_file("dir/f.txt", "x", true);  // with make_dirs nothing is asked first
  CHECK(sandbox.read_file("dir/f.txt") == "x");
}
