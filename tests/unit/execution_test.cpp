#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>

#include "code_interpreter/execution.hpp"

using code_interpreter::Attachment;
using code_interpreter::CodeError;
using code_interpreter::ExecutionResult;
using code_interpreter::ExecutionStatus;
using code_interpreter::RichResult;
using code_interpreter::validate_attachment_name;

namespace {

// A fresh directory under the system temp directory, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("ci_unit_" + std::to_string(rd()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

TEST_CASE("plain file names are valid attachment names", "[execution][attachment]") {
  CHECK_NOTHROW(validate_attachment_name("data.csv"));
  CHECK_NOTHROW(validate_attachment_name("a b.txt"));
  CHECK_NOTHROW(validate_attachment_name("\xC3\xBCn\xC3\xAF.bin"));
  CHECK_NOTHROW(validate_attachment_name(".env"));
  CHECK_NOTHROW(validate_attachment_name("archive.tar.gz"));
}

TEST_CASE("an empty attachment name is rejected", "[execution][attachment]") {
  CHECK_THROWS_AS(validate_attachment_name(""), std::invalid_argument);
}

TEST_CASE("an attachment name containing '/' is rejected", "[execution][attachment]") {
  CHECK_THROWS_AS(validate_attachment_name("a/b"), std::invalid_argument);
  CHECK_THROWS_AS(validate_attachment_name("/etc"), std::invalid_argument);
  CHECK_THROWS_AS(validate_attachment_name("dir/"), std::invalid_argument);
}

TEST_CASE("an attachment name containing a backslash is rejected", "[execution][attachment]") {
  CHECK_THROWS_AS(validate_attachment_name("a\\b"), std::invalid_argument);
}

TEST_CASE("the attachment name \"..\" is rejected", "[execution][attachment]") {
  CHECK_THROWS_AS(validate_attachment_name(".."), std::invalid_argument);
}

TEST_CASE("an attachment name containing \"..\" is rejected", "[execution][attachment]") {
  CHECK_THROWS_AS(validate_attachment_name("x..y"), std::invalid_argument);
  CHECK_THROWS_AS(validate_attachment_name("..hidden"), std::invalid_argument);
}

TEST_CASE("the attachment name \".\" is rejected", "[execution][attachment]") {
  CHECK_THROWS_AS(validate_attachment_name("."), std::invalid_argument);
}

TEST_CASE("an attachment name containing a NUL byte is rejected", "[execution][attachment]") {
  using namespace std::string_view_literals;
  CHECK_THROWS_AS(validate_attachment_name("a\0b.txt"sv), std::invalid_argument);
  CHECK_THROWS_AS(validate_attachment_name("\0"sv), std::invalid_argument);
}

TEST_CASE("Attachment::from_bytes keeps the name and arbitrary bytes in memory", "[execution][attachment]") {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  const Attachment a = Attachment::from_bytes(bytes, "blob.bin");
  CHECK(a.filename == "blob.bin");
  CHECK(a.data == bytes);
  CHECK(a.data.size() == 256);
  CHECK(a.mime_type.empty());
  CHECK_FALSE(a.source.has_value());
}

TEST_CASE("Attachment::from_bytes rejects a name that is not a plain file name", "[execution][attachment]") {
  CHECK_THROWS_AS(Attachment::from_bytes("x", "../escape.txt"), std::invalid_argument);
  CHECK_THROWS_AS(Attachment::from_bytes("x", ""), std::invalid_argument);
}

TEST_CASE("Attachment::from_file names the attachment after the file and streams from it",
          "[execution][attachment]") {
  const TempDir dir;
  const auto file = dir.path() / "report.csv";
  {
    std::ofstream out(file, std::ios::binary);
    out << "a,b\n1,2\n";
  }
  const Attachment a = Attachment::from_file(file);
  CHECK(a.filename == "report.csv");
  REQUIRE(a.source.has_value());
  CHECK(*a.source == file);
  CHECK(a.data.empty());
}

TEST_CASE("Attachment::from_file on a missing file throws std::invalid_argument saying it does not exist",
          "[execution][attachment]") {
  const TempDir dir;
  const auto missing = dir.path() / "missing.csv";
  CHECK_THROWS_MATCHES(Attachment::from_file(missing), std::invalid_argument,
                       Catch::Message("attachment source '" + missing.string() + "' does not exist"));
}

TEST_CASE("Attachment::from_file on a directory throws std::invalid_argument", "[execution][attachment]") {
  const TempDir dir;
  CHECK_THROWS_MATCHES(Attachment::from_file(dir.path()), std::invalid_argument,
                       Catch::Message("attachment source '" + dir.path().string() + "' is not a regular file"));
}

TEST_CASE("ExecutionResult::text() of an empty result is empty", "[execution][text]") {
  CHECK(ExecutionResult{}.text() == "");
}

TEST_CASE("ExecutionResult::text() of stdout alone is stdout without its trailing newline", "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "hello\nworld\n";
  CHECK(r.text() == "hello\nworld");
}

TEST_CASE("ExecutionResult::text() puts stderr after stdout, joined by one newline", "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "out\n";
  r.stderr_text = "err\n";
  CHECK(r.text() == "out\nerr");
}

TEST_CASE("ExecutionResult::text() uses stderr alone when stdout is empty", "[execution][text]") {
  ExecutionResult r;
  r.stderr_text = "warning: x\n";
  CHECK(r.text() == "warning: x");
}

TEST_CASE("ExecutionResult::text() appends the error after the output", "[execution][text]") {
  ExecutionResult r;
  r.status = ExecutionStatus::kTimeout;
  r.stdout_text = "partial\n";
  r.error = "Execution timed out after 5000 ms";
  CHECK(r.text() == "partial\nExecution timed out after 5000 ms");
}

TEST_CASE("ExecutionResult::text() prefers the code error's traceback over error", "[execution][text]") {
  ExecutionResult r;
  r.status = ExecutionStatus::kError;
  r.stdout_text = "before\n";
  r.error = "ValueError: bad";
  r.code_error = CodeError{"ValueError", "bad",
                           "Traceback (most recent call last):\n  File \"<exec>\", line 2, in <module>\n"
                           "ValueError: bad\n"};
  CHECK(r.text() ==
        "before\nTraceback (most recent call last):\n  File \"<exec>\", line 2, in <module>\nValueError: bad");
}

TEST_CASE("ExecutionResult::text() falls back to error when the code error has no traceback", "[execution][text]") {
  ExecutionResult r;
  r.error = "SystemExit: 3";
  r.code_error = CodeError{"SystemExit", "3", ""};
  CHECK(r.text() == "SystemExit: 3");
}

TEST_CASE("ExecutionResult::text() appends the main result's text/plain", "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "computing\n";
  r.results.push_back(RichResult{{{"text/plain", "42"}, {"text/html", "<b>42</b>"}}, true});
  CHECK(r.text() == "computing\n42");
}

TEST_CASE("ExecutionResult::text() ignores results that are not the main result", "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "x\n";
  r.results.push_back(RichResult{{{"text/plain", "<Figure size 640x480>"}, {"image/png", "iVBORw0KGgo="}}, false});
  CHECK(r.text() == "x");
}

TEST_CASE("ExecutionResult::text() ignores a main result without text/plain", "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "x\n";
  r.results.push_back(RichResult{{{"image/png", "iVBORw0KGgo="}}, true});
  CHECK(r.text() == "x");
}

TEST_CASE("ExecutionResult::text() ends with \"[output truncated]\" when truncated", "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "abc";
  r.truncated = true;
  CHECK(r.text() == "abc\n[output truncated]");
}

TEST_CASE("ExecutionResult::text() of a truncated result with no output is the marker alone", "[execution][text]") {
  ExecutionResult r;
  r.truncated = true;
  CHECK(r.text() == "[output truncated]");
}

TEST_CASE("ExecutionResult::text() removes every trailing newline of each part but keeps inner ones",
          "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "a\n\nb\n\n\n";
  r.stderr_text = "c\n\n";
  r.error = "d\n";
  CHECK(r.text() == "a\n\nb\nc\nd");
}

TEST_CASE("ExecutionResult::text() skips a part made only of newlines", "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "\n\n";
  r.stderr_text = "e";
  CHECK(r.text() == "e");
}

TEST_CASE("ExecutionResult::text() orders stdout, stderr, error, main result and the truncation marker",
          "[execution][text]") {
  ExecutionResult r;
  r.stdout_text = "out";
  r.stderr_text = "err";
  r.error = "failure";
  r.results.push_back(RichResult{{{"text/plain", "other"}}, false});
  r.results.push_back(RichResult{{{"text/plain", "'main'\n"}}, true});
  r.truncated = true;
  CHECK(r.text() == "out\nerr\nfailure\n'main'\n[output truncated]");
}

TEST_CASE("a default ExecutionResult is kUnknown with exit code -1 and nothing set", "[execution]") {
  const ExecutionResult r;
  CHECK(r.status == ExecutionStatus::kUnknown);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.duration.has_value());
  CHECK_FALSE(r.failure.has_value());
  CHECK_FALSE(r.code_error.has_value());
  CHECK_FALSE(r.timeout_kind.has_value());
  CHECK(r.results.empty());
  CHECK_FALSE(r.state_lost);
  CHECK_FALSE(r.truncated);
}

TEST_CASE("Attachment::from_file on a file whose name is not UTF-8 says which file and how to name it",
          "[execution][attachment]") {
  const TempDir dir;
  const auto file = dir.path() / "caf\xe9.csv";
  { std::ofstream(file, std::ios::binary) << "x"; }
  try {
    (void)Attachment::from_file(file);
    FAIL("from_file must throw");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "attachment source '" + (dir.path() / "caf\xef\xbf\xbd.csv").string() +
                                       "': its file name is not valid UTF-8; set Attachment::filename to a UTF-8 name");
  }
}
