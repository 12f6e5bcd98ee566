// docs/errors.md "Throw or return": argument checks (std::invalid_argument, nothing sent), and every call after
// terminate.
#include "checks.hpp"
#include "harness.hpp"
#include "programs.hpp"

using namespace contract;
namespace ci = code_interpreter;

namespace {

// One terminated sandbox's accessors and calls, as the "Throw or return" table has them.
template <class H>
void terminate_now(H& h) {
  h.sb().terminate();
}

}  // namespace

CONTRACT_SCENARIO("after terminate execute_code throws SandboxNotInitializedError", "[lifecycle]") {
  TestType h;
  terminate_now(h);
  check_not_initialized([&] { (void)h.exec(prog::kHi); });
}

CONTRACT_SCENARIO("after terminate execute_command throws SandboxNotInitializedError", "[lifecycle]") {
  TestType h;
  terminate_now(h);
  check_not_initialized([&] { (void)h.command("echo hi"); });
}

CONTRACT_SCENARIO("after terminate every file operation throws SandboxNotInitializedError", "[lifecycle]") {
  TestType h;
  terminate_now(h);
  auto& sb = h.sb();
  check_not_initialized([&] { sb.write_file("ct/a.txt", "x"); });
  check_not_initialized([&] { (void)sb.read_file("ct/a.txt"); });
  check_not_initialized([&] { (void)sb.list_files("ct"); });
  check_not_initialized([&] { sb.remove_file("ct/a.txt"); });
  check_not_initialized([&] { sb.make_dir("ct/d"); });
}

CONTRACT_SCENARIO("after terminate downloads and set_timeout throw SandboxNotInitializedError", "[lifecycle]") {
  TestType h;
  terminate_now(h);
  HostDir dir;
  auto& sb = h.sb();
  check_not_initialized([&] { (void)sb.download_file("ct/a.txt"); });
  check_not_initialized([&] { (void)sb.download_file_to("ct/a.txt", dir.path() / "a.txt"); });
  check_not_initialized([&] { sb.set_timeout(std::chrono::seconds(60)); });
  CHECK(dir.names().empty());
}

CONTRACT_SCENARIO("terminate twice is fine and the accessors stay valid after it", "[lifecycle]") {
  TestType h;
  auto& sb = h.sb();
  const auto id = sb.sandbox_id();
  const auto caps = sb.capabilities();
  const auto packages = sb.additional_packages();
  REQUIRE(id.has_value());
  sb.terminate();
  sb.terminate();
  CHECK(sb.sandbox_id() == id);
  CHECK(sb.capabilities() == caps);
  CHECK(sb.language() == ci::Language::kPython);
  CHECK(ci::to_string(sb.language()) == "python");
  CHECK(sb.additional_packages() == packages);
  CHECK(packages.empty());
}

CONTRACT_SCENARIO("terminate with a timeout of zero or less throws std::invalid_argument also once terminated",
                  "[lifecycle]") {
  TestType h;
  auto& sb = h.sb();
  (void)check_invalid_argument([&] { sb.terminate(std::chrono::milliseconds(0)); });
  (void)check_invalid_argument([&] { sb.terminate(std::chrono::milliseconds(-5)); });
  check_success(h.exec(prog::kHi), prog::kHi, "hi\n");  // the refused terminate did nothing
  sb.terminate(std::chrono::seconds(30));
  (void)check_invalid_argument([&] { sb.terminate(std::chrono::milliseconds(0)); });
}

CONTRACT_SCENARIO("an invalid env throws std::invalid_argument even after terminate", "[lifecycle][env]") {
  TestType h;
  terminate_now(h);
  ci::ExecuteOptions options;
  options.env = {{"A=B", "x"}};
  CHECK(check_invalid_argument([&] { (void)h.exec(prog::kHi, options); }) ==
        "env: variable name 'A=B' contains '=' or a NUL byte");
  ci::CommandOptions command;
  command.env = {{"", "x"}};
  (void)check_invalid_argument([&] { (void)h.command("echo", command); });
}

CONTRACT_SCENARIO("env names that are empty or hold = or NUL or are not UTF-8 are std::invalid_argument",
                  "[env]") {
  TestType h;
  for (const std::string name : {std::string(), std::string("A=B"), std::string("A\0B", 3), std::string("\xff")}) {
    ci::ExecuteOptions options;
    options.env = {{name, "v"}};
    (void)check_invalid_argument([&] { (void)h.exec(prog::kWriteMarker, options); });
    ci::CommandOptions command;
    command.env = {{name, "v"}};
    (void)check_invalid_argument([&] { (void)h.command("echo", command); });
  }
  CHECK(h.exec(prog::kReadMarker).stdout_text == "False\n");  // nothing was sent
}

CONTRACT_SCENARIO("env values with a NUL byte or not UTF-8 are std::invalid_argument", "[env]") {
  TestType h;
  for (const std::string value : {std::string("a\0b", 3), std::string("\xc3(")}) {
    ci::ExecuteOptions options;
    options.env = {{"CT_GREETING", value}};
    (void)check_invalid_argument([&] { (void)h.exec(prog::kWriteMarker, options); });
    ci::CommandOptions command;
    command.env = {{"CT_GREETING", value}};
    (void)check_invalid_argument([&] { (void)h.command("echo", command); });
  }
  CHECK(h.exec(prog::kReadMarker).stdout_text == "False\n");
}

CONTRACT_SCENARIO("code that is not UTF-8 is std::invalid_argument and nothing is sent", "[arguments]") {
  TestType h;
  (void)check_invalid_argument([&] { (void)h.exec("print('\xff')\nopen('ct_marker.txt', 'w').write('ran')"); });
  CHECK(h.exec(prog::kReadMarker).stdout_text == "False\n");
}

CONTRACT_SCENARIO("a command or cwd that is not UTF-8 is std::invalid_argument", "[arguments]") {
  TestType h;
  (void)check_invalid_argument([&] { (void)h.command("echo \xff"); });
  ci::CommandOptions options;
  options.cwd = std::string("\xc3(");
  (void)check_invalid_argument([&] { (void)h.command("echo hi", options); });
}

CONTRACT_SCENARIO("a bad or duplicate attachment name is std::invalid_argument and nothing is sent",
                  "[arguments][attachments]") {
  TestType h;
  for (const std::string name : {std::string("a/b"), std::string(".."), std::string(), std::string("a\\b")}) {
    ci::ExecuteOptions options;
    ci::Attachment bad;
    bad.filename = name;
    bad.data = "x";
    options.files = {bad};
    (void)check_invalid_argument([&] { (void)h.exec(prog::kWriteMarker, options); });
  }
  ci::ExecuteOptions twice;
  twice.files = {ci::Attachment::from_bytes("1", "same.txt"), ci::Attachment::from_bytes("2", "same.txt")};
  (void)check_invalid_argument([&] { (void)h.exec(prog::kWriteMarker, twice); });
  CHECK(h.exec(prog::kReadMarker).stdout_text == "False\n");
}

CONTRACT_SCENARIO("an empty upload_dir or one with a NUL byte or not UTF-8 is std::invalid_argument",
                  "[arguments][attachments]") {
  TestType h;
  for (const std::string dir : {std::string(), std::string("ct\0up", 5), std::string("ct\xff")}) {
    ci::ExecuteOptions options;
    options.upload_dir = dir;
    options.files = {ci::Attachment::from_bytes("x", "in.txt")};
    (void)check_invalid_argument([&] { (void)h.exec(prog::kWriteMarker, options); });
  }
  CHECK(h.exec(prog::kReadMarker).stdout_text == "False\n");
}

CONTRACT_SCENARIO("file paths that are empty or hold NUL or are not UTF-8 or are over 4096 bytes are refused",
                  "[arguments][files]") {
  TestType h;
  auto& sb = h.sb();
  const std::vector<std::string> bad = {std::string(), std::string("ct/a\0b", 6), std::string("ct/\xff"),
                                        "ct/" + std::string(4100, 'a')};
  for (const auto& path : bad) {
    (void)check_invalid_argument([&] { sb.write_file(path, "x"); });
    (void)check_invalid_argument([&] { (void)sb.read_file(path); });
    (void)check_invalid_argument([&] { (void)sb.list_files(path); });
    (void)check_invalid_argument([&] { sb.remove_file(path); });
    (void)check_invalid_argument([&] { sb.make_dir(path); });
    (void)check_invalid_argument([&] { (void)sb.download_file(path); });
  }
}

CONTRACT_SCENARIO("a max_bytes of 0 and an empty destination are std::invalid_argument", "[arguments][files]") {
  TestType h;
  auto& sb = h.sb();
  sb.write_file("ct/a.txt", "abc");
  HostDir dir;
  CHECK(check_invalid_argument([&] { (void)sb.read_file("ct/a.txt", 0); }) == "max_bytes must be positive");
  CHECK(check_invalid_argument([&] { (void)sb.download_file("ct/a.txt", std::nullopt, 0); }) ==
        "max_bytes must be positive");
  CHECK(check_invalid_argument([&] { (void)sb.download_file_to("ct/a.txt", dir.path() / "a", std::nullopt, 0); }) ==
        "max_bytes must be positive");
  (void)check_invalid_argument([&] { (void)sb.download_file_to("ct/a.txt", ""); });
  CHECK(dir.names().empty());
}

CONTRACT_SCENARIO("set_timeout keeps the sandbox usable", "[lifecycle]") {
  TestType h;
  h.sb().set_timeout(std::chrono::seconds(120));
  check_success(h.exec(prog::kHi), prog::kHi, "hi\n");
}
