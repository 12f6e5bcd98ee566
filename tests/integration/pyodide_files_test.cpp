// Files in and out of the Pyodide sandbox's in-memory filesystem.
#include <catch2/catch.hpp>

#include <random>

#include "pyodide_test_support.hpp"
#include "../support/temp_files.hpp"

using code_interpreter::test_support::temp_path;
using test_support::make_sandbox;

namespace {
std::string all_bytes() {
  std::string s;
  for (int i = 0; i < 256; ++i) s += static_cast<char>(i);
  return s;
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen() & 0xFF);
  return s;
}

}  // namespace

TEST_CASE("attachments are uploaded to /files before the code runs", "[files]") {
  auto sb = make_sandbox();
  ci::ExecuteOptions o;
  o.files = {ci::Attachment::from_bytes("a,b\n1,2\n", "data.csv"), ci::Attachment::from_bytes(all_bytes(), "raw.bin")};
  auto r = sb->execute_code(
      "import csv\nrows = list(csv.reader(open('/files/data.csv')))\nraw = open('/files/raw.bin', 'rb').read()\n"
      "rows, len(raw), raw == bytes(range(256))",
      o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "([['a', 'b'], ['1', '2']], 256, True)");
}

TEST_CASE("upload_dir overrides where attachments go", "[files]") {
  auto sb = make_sandbox();
  ci::ExecuteOptions o;
  o.upload_dir = "/home/pyodide/in";
  o.files = {ci::Attachment::from_bytes("payload", "in.txt")};
  auto r = sb->execute_code("open('/home/pyodide/in/in.txt').read()", o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == "'payload'");
}

TEST_CASE("an attachment streamed from disk arrives byte-exact, larger than one frame", "[files]") {
  const auto path = temp_path("big.bin");
  const std::string data = random_bytes(20u << 20, 7);
  test_support::write_text(path, data);
  auto sb = make_sandbox();
  ci::ExecuteOptions o;
  o.files = {ci::Attachment::from_file(path)};
  auto r = sb->execute_code("import os\nos.path.getsize('/files/" + path.filename().string() + "')", o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.results.at(0).data.at("text/plain") == std::to_string(20u << 20));
  const auto back = sb->download_file("/files/" + path.filename().string());
  REQUIRE(back.has_value());
  CHECK(back->size() == data.size());
  CHECK(*back == data);
  std::filesystem::remove(path);
}

TEST_CASE("bad attachment names and duplicates are refused before anything is sent", "[files]") {
  auto sb = make_sandbox();
  for (const char* bad : {"../escape", "a/b", "a\\b", "..", ""}) {
    ci::ExecuteOptions o;
    ci::Attachment a;
    a.filename = bad;
    a.data = "x";
    o.files = {a};
    INFO(bad);
    CHECK_THROWS_AS(sb->execute_code("1", o), std::invalid_argument);
  }
  ci::ExecuteOptions dup;
  dup.files = {ci::Attachment::from_bytes("1", "same.txt"), ci::Attachment::from_bytes("2", "same.txt")};
  CHECK_THROWS_AS(sb->execute_code("1", dup), std::invalid_argument);
  CHECK(sb->list_files("/").size() >= 1);
  CHECK(sb->list_files("/files").empty());  // /files exists from the start, and nothing was uploaded
}

TEST_CASE("write_file and read_file are byte-exact, with empty files and unusual names", "[files]") {
  auto sb = make_sandbox();
  const std::string name = "/files/dir with space/\xC3\xBCn\xC3\xAF \xE2\x9C\x93.bin";
  sb->write_file(name, all_bytes());
  CHECK(sb->read_file(name) == all_bytes());
  sb->write_file("/files/empty.txt", "");
  CHECK(sb->read_file("/files/empty.txt").empty());
  auto r = sb->execute_code("open('" + name + "', 'rb').read() == bytes(range(256))");
  CHECK(r.results.at(0).data.at("text/plain") == "True");
  sb->write_file(name, "shorter");  // overwrite truncates
  CHECK(sb->read_file(name) == "shorter");
}

TEST_CASE("a file the code writes can be downloaded", "[files]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("with open('out.bin', 'wb') as f:\n    f.write(bytes(range(256)) * 3)").status ==
          ci::ExecutionStatus::kSuccess);
  const auto data = sb->download_file("/home/pyodide/out.bin");
  REQUIRE(data.has_value());
  CHECK(*data == all_bytes() + all_bytes() + all_bytes());
  CHECK(sb->download_file("out.bin") == data);  // relative to the working directory
}

TEST_CASE("read_file of a missing file throws kNotFound at stage download", "[files]") {
  auto sb = make_sandbox();
  try {
    (void)sb->read_file("/files/missing.txt");
    FAIL("no exception");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.kind() == ci::ErrorKind::kNotFound);
    CHECK(e.stage() == ci::Stage::kDownload);
    CHECK(std::string(e.what()) == "read '/files/missing.txt': no such file or directory (ENOENT)");
  }
}

TEST_CASE("download_file returns nullopt for a missing file or a directory", "[files]") {
  auto sb = make_sandbox();
  CHECK(sb->download_file("/files/missing.txt") == std::nullopt);
  sb->make_dir("/files/adir");
  CHECK(sb->download_file("/files/adir") == std::nullopt);
  CHECK_THROWS_AS(sb->download_file(""), std::invalid_argument);
}

TEST_CASE("download_file_to writes the file, and leaves nothing behind on failure", "[files]") {
  auto sb = make_sandbox();
  const std::string data = random_bytes(9u << 20, 3);  // more than one read chunk
  sb->write_file("/files/result.bin", data);
  const auto dest = temp_path("result.bin");
  REQUIRE(sb->download_file_to("/files/result.bin", dest));
  CHECK(test_support::read_text(dest) == data);
  std::filesystem::remove(dest);

  const auto missing = temp_path("missing.bin");
  CHECK_FALSE(sb->download_file_to("/files/missing.bin", missing));
  CHECK_FALSE(std::filesystem::exists(missing));
  auto part = missing;
  part += ".part";
  CHECK_FALSE(std::filesystem::exists(part));
  // Nor a partial file under any other name beside it (the temporary file's name ends in random digits).
  for (const auto& e : std::filesystem::directory_iterator(missing.parent_path())) {
    CHECK(e.path().filename().string().rfind(missing.filename().string(), 0) == std::string::npos);
  }
}

TEST_CASE("list_files lists a directory, sorted, with sizes", "[files]") {
  auto sb = make_sandbox();
  sb->write_file("/files/b.txt", "12345");
  sb->write_file("/files/a.txt", "");
  sb->make_dir("/files/sub/deeper");
  const auto files = sb->list_files("/files");
  const std::vector<ci::FileInfo> expected = {
      {"a.txt", "/files/a.txt", false, 0},
      {"b.txt", "/files/b.txt", false, 5},
      {"sub", "/files/sub", true, 0},
  };
  CHECK(files == expected);
  try {
    (void)sb->list_files("/files/none");
    FAIL("no exception");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.kind() == ci::ErrorKind::kNotFound);
  }
}

TEST_CASE("remove_file removes files and directory trees, a missing path is kNotFound", "[files]") {
  auto sb = make_sandbox();
  sb->write_file("/files/tree/a/b.txt", "x");
  sb->write_file("/files/single.txt", "y");
  sb->remove_file("/files/single.txt");
  sb->remove_file("/files/tree");
  CHECK(sb->list_files("/files").empty());
  try {
    sb->remove_file("/files/single.txt");
    FAIL("no exception");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.kind() == ci::ErrorKind::kNotFound);
    CHECK(e.stage() == ci::Stage::kUpload);
  }
}

TEST_CASE("make_dir creates parents and the code sees the directory", "[files]") {
  auto sb = make_sandbox();
  sb->make_dir("/files/x/y/z");
  sb->make_dir("/files/x/y/z");  // exists already: fine
  auto r = sb->execute_code("import os\nos.path.isdir('/files/x/y/z')");
  CHECK(r.results.at(0).data.at("text/plain") == "True");
}

TEST_CASE("file paths that are empty, hold a NUL byte or are not UTF-8, and code that is not UTF-8, are invalid "
          "arguments",
          "[files]") {
  auto sb = make_sandbox();
  CHECK_THROWS_AS(sb->write_file("/files/\xff", "x"), std::invalid_argument);
  CHECK_THROWS_AS(sb->execute_code("print('\xff')"), std::invalid_argument);
  CHECK_THROWS_AS(sb->write_file("", "x"), std::invalid_argument);
  CHECK_THROWS_AS(sb->read_file(std::string("/files/a\0b", 10)), std::invalid_argument);
  CHECK_THROWS_AS(sb->list_files(""), std::invalid_argument);
  CHECK_THROWS_AS(sb->make_dir(""), std::invalid_argument);
  CHECK_THROWS_AS(sb->remove_file(""), std::invalid_argument);
}

TEST_CASE("a directory of 30000 entries lists completely", "[files]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("import os\nos.makedirs('/files/many')\nfor i in range(30000):\n"
                           "    open(f'/files/many/entry-{i:05d}.txt', 'w').close()")
              .status == ci::ExecutionStatus::kSuccess);
  const auto files = sb->list_files("/files/many");
  REQUIRE(files.size() == 30000);
  CHECK(files.front() == ci::FileInfo{"entry-00000.txt", "/files/many/entry-00000.txt", false, 0});
  CHECK(files.back().name == "entry-29999.txt");
}

TEST_CASE("a path over 4096 bytes is an invalid argument and the runtime is untouched", "[files]") {
  auto sb = make_sandbox();
  REQUIRE(sb->execute_code("kept = 1").status == ci::ExecutionStatus::kSuccess);
  const std::string long_path = "/files/" + std::string(5000, 'p');
  CHECK_THROWS_AS(sb->write_file(long_path, "x"), std::invalid_argument);
  CHECK_THROWS_AS(sb->download_file(long_path), std::invalid_argument);
  CHECK(sb->execute_code("kept").results.at(0).data.at("text/plain") == "1");
}
