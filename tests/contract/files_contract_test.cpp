// docs/errors.md "Throw or return" (file operations), "File guards" (byte caps, checked listings), attachments.
#include <algorithm>

#include "checks.hpp"
#include "harness.hpp"
#include "programs.hpp"

using namespace contract;
namespace ci = code_interpreter;

namespace {

// The listing rule of "File guards": path is dir + '/' + name, or (for a relative dir) that made absolute.
bool path_is_dir_slash_name(const ci::FileInfo& info, const std::string& dir) {
  const std::string expected = dir + "/" + info.name;
  if (info.path == expected) return true;
  return !info.path.empty() && info.path.front() == '/' && info.path.size() > expected.size() + 1 &&
         info.path.compare(info.path.size() - expected.size() - 1, std::string::npos, "/" + expected) == 0;
}

std::vector<ci::FileInfo> sorted_listing(ci::CodeInterpreterSandbox& sb, const std::string& dir) {
  auto entries = sb.list_files(dir);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return entries;
}

std::string over_cap_message(std::string_view call, std::string_view path, std::uint64_t cap) {
  return std::string(call) + " '" + std::string(path) + "': the file is over the cap of " + std::to_string(cap) +
         " bytes (max_bytes)";
}

}  // namespace

CONTRACT_SCENARIO("write_file then read_file round trips every byte value", "[files]") {
  TestType h;
  REQUIRE(h.sb().capabilities().file_download);
  h.sb().write_file("ct/all.bin", all_bytes());
  CHECK(h.sb().read_file("ct/all.bin") == all_bytes());
  CHECK(h.sb().download_file("ct/all.bin") == std::optional<std::string>(all_bytes()));
}

CONTRACT_SCENARIO("an empty file round trips as empty", "[files]") {
  TestType h;
  h.sb().write_file("ct/empty.txt", "");
  CHECK(h.sb().read_file("ct/empty.txt").empty());
  CHECK(h.sb().download_file("ct/empty.txt") == std::optional<std::string>(""));
}

CONTRACT_SCENARIO("write_file creates parent directories and overwrites", "[files]") {
  TestType h;
  h.sb().write_file("ct/a/b/c.txt", "first version");
  h.sb().write_file("ct/a/b/c.txt", "second");
  CHECK(h.sb().read_file("ct/a/b/c.txt") == "second");
}

CONTRACT_SCENARIO("read_file of a missing file throws download not_found", "[files]") {
  TestType h;
  check_execution_error([&] { (void)h.sb().read_file("ct/missing.txt"); }, ci::Stage::kDownload,
                        ci::ErrorKind::kNotFound);
}

CONTRACT_SCENARIO("download_file of a missing file is nullopt and download_file_to is false leaving nothing",
                  "[files]") {
  TestType h;
  HostDir dir;
  CHECK(h.sb().download_file("ct/missing.txt") == std::nullopt);
  CHECK_FALSE(h.sb().download_file_to("ct/missing.txt", dir.path() / "out.txt"));
  CHECK(dir.names().empty());
}

CONTRACT_SCENARIO("download_file_to writes the exact bytes to the destination", "[files]") {
  TestType h;
  HostDir dir;
  h.sb().write_file("ct/all.bin", all_bytes());
  CHECK(h.sb().download_file_to("ct/all.bin", dir.path() / "all.bin"));
  CHECK(dir.names() == std::vector<std::string>{"all.bin"});
  CHECK(dir.read("all.bin") == all_bytes());
}

CONTRACT_SCENARIO("read_file over max_bytes throws quota_exceeded naming the cap and keeps the state",
                  "[files][caps]") {
  TestType h;
  REQUIRE(h.exec(prog::kSetZ).status == ci::ExecutionStatus::kSuccess);
  h.sb().write_file("ct/ten.txt", "0123456789");
  try {
    (void)h.sb().read_file("ct/ten.txt", 9);
    FAIL("no error");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.stage() == ci::Stage::kDownload);
    CHECK(e.kind() == ci::ErrorKind::kQuotaExceeded);
    CHECK_FALSE(e.transient());
    CHECK(std::string(e.what()) == over_cap_message("read_file", "ct/ten.txt", 9));
    bool nested = false;
    try {
      std::rethrow_if_nested(e);
    } catch (...) {
      nested = true;
    }
    CHECK_FALSE(nested);
  }
  check_success(h.exec(prog::kPrintZ), prog::kPrintZ, "kept\n");
}

CONTRACT_SCENARIO("a file of exactly max_bytes is read whole by every read", "[files][caps]") {
  TestType h;
  HostDir dir;
  h.sb().write_file("ct/ten.txt", "0123456789");
  CHECK(h.sb().read_file("ct/ten.txt", 10) == "0123456789");
  CHECK(h.sb().download_file("ct/ten.txt", std::nullopt, 10) == std::optional<std::string>("0123456789"));
  CHECK(h.sb().download_file_to("ct/ten.txt", dir.path() / "ten.txt", std::nullopt, 10));
  CHECK(dir.read("ten.txt") == "0123456789");
}

CONTRACT_SCENARIO("download_file over max_bytes is nullopt", "[files][caps]") {
  TestType h;
  h.sb().write_file("ct/ten.txt", "0123456789");
  CHECK(h.sb().download_file("ct/ten.txt", std::nullopt, 9) == std::nullopt);
  CHECK(h.sb().download_file("ct/ten.txt", std::nullopt, 1) == std::nullopt);
}

CONTRACT_SCENARIO("download_file_to over max_bytes is false and leaves nothing at or beside the destination",
                  "[files][caps]") {
  TestType h;
  HostDir dir;
  h.sb().write_file("ct/ten.txt", "0123456789");
  CHECK_FALSE(h.sb().download_file_to("ct/ten.txt", dir.path() / "ten.txt", std::nullopt, 9));
  CHECK(dir.names().empty());
}

CONTRACT_SCENARIO("a cap counts bytes received for a binary file too", "[files][caps]") {
  TestType h;
  h.sb().write_file("ct/all.bin", all_bytes());
  check_execution_error([&] { (void)h.sb().read_file("ct/all.bin", 255); }, ci::Stage::kDownload,
                        ci::ErrorKind::kQuotaExceeded);
  CHECK(h.sb().read_file("ct/all.bin", 256) == all_bytes());
}

CONTRACT_SCENARIO("list_files lists files and directories with their sizes and dir slash name paths",
                  "[files][listing]") {
  TestType h;
  REQUIRE(h.sb().capabilities().filesystem);
  h.sb().write_file("ct_list/a.txt", "abc");
  h.sb().write_file("ct_list/sub/b.txt", "b");
  const auto entries = sorted_listing(h.sb(), "ct_list");
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].name == "a.txt");
  CHECK_FALSE(entries[0].is_directory);
  CHECK(entries[0].size == 3);
  CHECK(entries[1].name == "sub");
  CHECK(entries[1].is_directory);
  for (const auto& e : entries) {
    INFO(e.path);
    CHECK(path_is_dir_slash_name(e, "ct_list"));
  }
}

CONTRACT_SCENARIO("list_files of a dir with a trailing slash gives the same names", "[files][listing]") {
  TestType h;
  h.sb().write_file("ct_list/a.txt", "abc");
  const auto entries = sorted_listing(h.sb(), "ct_list/");
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].name == "a.txt");
  CHECK(path_is_dir_slash_name(entries[0], "ct_list"));
}

CONTRACT_SCENARIO("list_files of a missing directory throws download not_found", "[files][listing]") {
  TestType h;
  check_execution_error([&] { (void)h.sb().list_files("ct_missing_dir"); }, ci::Stage::kDownload,
                        ci::ErrorKind::kNotFound);
}

CONTRACT_SCENARIO("remove_file removes a file", "[files]") {
  TestType h;
  h.sb().write_file("ct/gone.txt", "x");
  h.sb().remove_file("ct/gone.txt");
  check_execution_error([&] { (void)h.sb().read_file("ct/gone.txt"); }, ci::Stage::kDownload,
                        ci::ErrorKind::kNotFound);
  CHECK(h.sb().download_file("ct/gone.txt") == std::nullopt);
}

CONTRACT_SCENARIO("remove_file removes a directory tree", "[files]") {
  TestType h;
  h.sb().write_file("ct_tree/a/b.txt", "b");
  h.sb().write_file("ct_tree/c.txt", "c");
  h.sb().remove_file("ct_tree");
  check_execution_error([&] { (void)h.sb().list_files("ct_tree"); }, ci::Stage::kDownload, ci::ErrorKind::kNotFound);
  CHECK(h.sb().download_file("ct_tree/a/b.txt") == std::nullopt);
}

CONTRACT_SCENARIO("remove_file of a missing path throws upload not_found and removes nothing", "[files]") {
  TestType h;
  h.sb().write_file("ct_keep/a.txt", "a");
  check_execution_error([&] { h.sb().remove_file("ct_keep/missing.txt"); }, ci::Stage::kUpload,
                        ci::ErrorKind::kNotFound);
  CHECK(h.sb().read_file("ct_keep/a.txt") == "a");
}

CONTRACT_SCENARIO("make_dir creates a directory and its parents", "[files]") {
  TestType h;
  h.sb().make_dir("ct_made/x/y");
  h.sb().write_file("ct_made/x/y/f.txt", "f");
  const auto entries = sorted_listing(h.sb(), "ct_made/x");
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].name == "y");
  CHECK(entries[0].is_directory);
}

CONTRACT_SCENARIO("a file the code writes is read back exactly", "[files][code]") {
  TestType h;
  check_success(h.exec(prog::kCodeWrites), prog::kCodeWrites, "");
  CHECK(h.sb().read_file("ct_code.txt") == "from code");
}

CONTRACT_SCENARIO("a file written with write_file is seen by the code", "[files][code]") {
  TestType h;
  h.sb().write_file("ct_host.txt", "from host");
  check_success(h.exec(prog::kCodeReads), prog::kCodeReads, "from host\n");
}

CONTRACT_SCENARIO("attachments are uploaded to upload_dir before the code runs", "[files][attachments]") {
  TestType h;
  ci::ExecuteOptions options;
  options.upload_dir = "ct_up";
  options.files = {ci::Attachment::from_bytes("attached", "in.txt")};
  check_success(h.exec(prog::kReadAttachment, options), prog::kReadAttachment, "attached\n");
}

CONTRACT_SCENARIO("attachments keep every byte value", "[files][attachments]") {
  TestType h;
  ci::ExecuteOptions options;
  options.upload_dir = "ct_up";
  options.files = {ci::Attachment::from_bytes(all_bytes(), "all.bin")};
  check_success(h.exec(prog::kReadBinaryAttachment, options), prog::kReadBinaryAttachment, "256 True\n");
}

CONTRACT_SCENARIO("several attachments all arrive", "[files][attachments]") {
  TestType h;
  ci::ExecuteOptions options;
  options.upload_dir = "ct_up";
  options.files = {ci::Attachment::from_bytes("1", "one.txt"), ci::Attachment::from_bytes("2", "two.txt"),
                   ci::Attachment::from_bytes("3", "three.txt")};
  check_success(h.exec(prog::kAttachmentCount, options), prog::kAttachmentCount,
                "['one.txt', 'three.txt', 'two.txt']\n");
}

CONTRACT_SCENARIO("attachments go to Capabilities upload_dir by default and stay after the call",
                  "[files][attachments]") {
  TestType h;
  ci::ExecuteOptions options;
  options.files = {ci::Attachment::from_bytes("default dir", "ct_default.txt")};
  check_success(h.exec(prog::kPass, options), prog::kPass, "");
  CHECK(h.sb().read_file(h.sb().capabilities().upload_dir + "/ct_default.txt") == "default dir");
}

CONTRACT_SCENARIO("an attachment from a host file is streamed from it", "[files][attachments]") {
  TestType h;
  HostDir dir;
  {
    std::ofstream out(dir.path() / "in.txt", std::ios::binary);
    out << "from a host file";
  }
  ci::ExecuteOptions options;
  options.upload_dir = "ct_up";
  options.files = {ci::Attachment::from_file(dir.path() / "in.txt")};
  check_success(h.exec(prog::kReadAttachment, options), prog::kReadAttachment, "from a host file\n");
}

CONTRACT_SCENARIO("the FileInfo size is what the sandbox reports for a larger file", "[files][listing]") {
  TestType h;
  h.sb().write_file("ct_size/big.bin", std::string(70000, 'z'));
  const auto entries = sorted_listing(h.sb(), "ct_size");
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].size == 70000);
  CHECK(h.sb().read_file("ct_size/big.bin").size() == 70000);
}

CONTRACT_SCENARIO("a UTF-8 file name round trips", "[files]") {
  TestType h;
  h.sb().write_file("ct_utf8/caf\xc3\xa9.txt", "accent");
  CHECK(h.sb().read_file("ct_utf8/caf\xc3\xa9.txt") == "accent");
  const auto entries = sorted_listing(h.sb(), "ct_utf8");
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].name == "caf\xc3\xa9.txt");
}

CONTRACT_SCENARIO("download_file_to replaces an existing destination", "[files]") {
  TestType h;
  HostDir dir;
  {
    std::ofstream out(dir.path() / "dest.txt", std::ios::binary);
    out << "old content that is longer";
  }
  h.sb().write_file("ct/new.txt", "new");
  CHECK(h.sb().download_file_to("ct/new.txt", dir.path() / "dest.txt"));
  CHECK(dir.names() == std::vector<std::string>{"dest.txt"});
  CHECK(dir.read("dest.txt") == "new");
}

CONTRACT_SCENARIO("download_file_to into a host directory that does not exist is false", "[files]") {
  TestType h;
  HostDir dir;
  h.sb().write_file("ct/a.txt", "a");
  CHECK_FALSE(h.sb().download_file_to("ct/a.txt", dir.path() / "no_such_dir" / "a.txt"));
  CHECK(dir.names().empty());
}

CONTRACT_SCENARIO("a file over the default cap is not at issue: 1 MiB reads whole", "[files][caps]") {
  TestType h;
  std::string big;
  for (int i = 0; i < (1 << 20); ++i) big.push_back(static_cast<char>(i * 7));
  h.sb().write_file("ct/mib.bin", big);
  CHECK(h.sb().read_file("ct/mib.bin") == big);
  CHECK(h.sb().download_file("ct/mib.bin", std::nullopt, 1 << 20) == std::optional<std::string>(big));
  CHECK(h.sb().download_file("ct/mib.bin", std::nullopt, (1 << 20) - 1) == std::nullopt);
}
