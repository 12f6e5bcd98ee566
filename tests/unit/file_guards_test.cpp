// The shared file guards (src/core/file_guards.hpp): the byte counter every capped read uses and the checks on
// list_files entries.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "core/file_guards.hpp"

using namespace code_interpreter;
using namespace code_interpreter::detail;

TEST_CASE("ByteCap passes exactly the cap and is over at one byte more, for good", "[guards]") {
  ByteCap count(10);
  CHECK(count.room_plus_one() == 11);
  CHECK(count.add(4));
  CHECK(count.add(6));
  CHECK(count.received() == 10);
  CHECK_FALSE(count.over());
  CHECK(count.room_plus_one() == 1);
  CHECK_FALSE(count.add(1));
  CHECK(count.over());
  CHECK(count.room_plus_one() == 0);
  CHECK_FALSE(count.add(0));
}

TEST_CASE("ByteCap never wraps around, whatever the counts", "[guards]") {
  ByteCap huge(UINT64_MAX);
  CHECK(huge.room_plus_one() == UINT64_MAX);
  CHECK(huge.add(UINT64_MAX));
  CHECK_FALSE(huge.add(1));
  CHECK(huge.received() == UINT64_MAX);
  ByteCap small(5);
  CHECK_FALSE(small.add(UINT64_MAX));
  CHECK(small.received() == UINT64_MAX);
}

TEST_CASE("an entry name is one path component: not empty, no '/', backslash or NUL, not '.' or '..'", "[guards]") {
  CHECK(valid_entry_name("a.txt"));
  CHECK(valid_entry_name("..."));
  CHECK(valid_entry_name(".hidden"));
  CHECK(valid_entry_name("h\xc3\xa9"));
  CHECK_FALSE(valid_entry_name(""));
  CHECK_FALSE(valid_entry_name("."));
  CHECK_FALSE(valid_entry_name(".."));
  CHECK_FALSE(valid_entry_name("../../../root/.bashrc"));
  CHECK_FALSE(valid_entry_name("a/b"));
  CHECK_FALSE(valid_entry_name("a\\b"));
  CHECK_FALSE(valid_entry_name(std::string("a\0b", 3)));
}

TEST_CASE("an entry path is dir/name, however dir is spelled", "[guards]") {
  CHECK(entry_path_matches("/files", "a", "/files/a"));
  CHECK(entry_path_matches("/files/", "a", "/files/a"));
  CHECK(entry_path_matches("/files//", "a", "/files//a"));
  CHECK(entry_path_matches("/", "etc", "/etc"));
  CHECK(entry_path_matches("data", "a", "data/a"));
  CHECK(entry_path_matches("data", "a", "/home/user/data/a"));  // a relative dir made absolute
  CHECK(entry_path_matches(".", "a", "a"));
  CHECK(entry_path_matches("./data", "a", "data/a"));
  CHECK(entry_path_matches("/files", "a", ""));  // no path sent: nothing to compare
  CHECK_FALSE(entry_path_matches("/files", "a", "/etc/a"));
  CHECK_FALSE(entry_path_matches("/files", "a", "/files/b"));
  CHECK_FALSE(entry_path_matches("/files", "a", "/other/files/a"));  // an absolute dir must match exactly
  CHECK_FALSE(entry_path_matches("data", "a", "etc/a"));
  CHECK_FALSE(entry_path_matches("data", "a", "xdata/a"));
}

TEST_CASE("drop_hostile_entries keeps the good entries in order and counts the dropped ones", "[guards]") {
  std::vector<FileInfo> entries{{"b", "/d/b", false, 1}, {"..", "/d/..", true, 0}, {"a", "/d/a", false, 2},
                                {"x/y", "/d/x/y", false, 3}, {"c", "/e/c", false, 4}};
  CHECK(drop_hostile_entries(entries, "/d") == 3);
  CHECK(entries == std::vector<FileInfo>{{"b", "/d/b", false, 1}, {"a", "/d/a", false, 2}});
}

TEST_CASE("the over-cap error is SandboxExecutionError, stage download, kQuotaExceeded, naming the cap", "[guards]") {
  const auto e = over_cap_error("/files/x", 42);
  CHECK(std::string(e.what()) == "read_file '/files/x': the file is over the cap of 42 bytes (max_bytes)");
  CHECK(e.stage() == Stage::kDownload);
  CHECK(e.kind() == ErrorKind::kQuotaExceeded);
  CHECK_FALSE(e.transient());
}

TEST_CASE("file_info_from_stat builds a FileInfo from a stat answer and refuses one with a field missing or mistyped",
          "[guards]") {
  const auto info = detail::file_info_from_stat(
      "ct/dir/", nlohmann::json{{"type", "directory"}, {"size", 0u}, {"mtime_ms", 1700000000123}, {"mode", 0107755u}});
  REQUIRE(info);
  CHECK(info->name == "dir");
  CHECK(info->path == "ct/dir/");
  CHECK(info->type == std::optional(FileType::kDirectory));
  CHECK(info->is_directory);
  CHECK(info->size == 0);
  CHECK(info->modified == std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123)));
  CHECK(info->permissions == std::optional<std::uint32_t>(07755));
  const auto link = detail::file_info_from_stat("l", nlohmann::json{{"type", "symlink"}, {"size", 3u}, {"mtime_ms", -5},
                                                                     {"mode", 0777u}});
  REQUIRE(link);
  CHECK(link->type == std::optional(FileType::kSymlink));
  CHECK(link->size == 3);
  CHECK_FALSE(link->is_directory);
  CHECK(detail::file_info_from_stat("x", nlohmann::json{{"type", "fifo"}, {"size", 0u}, {"mtime_ms", 0}, {"mode", 0u}})
            ->type == std::optional(FileType::kOther));
  const nlohmann::json good = {{"type", "file"}, {"size", 1u}, {"mtime_ms", 0}, {"mode", 0644u}};
  for (const char* field : {"type", "size", "mtime_ms", "mode"}) {
    auto missing = good;
    missing.erase(field);
    CHECK_FALSE(detail::file_info_from_stat("x", missing));
  }
  auto negative = good;
  negative["size"] = -1;
  CHECK_FALSE(detail::file_info_from_stat("x", negative));
  auto text_type = good;
  text_type["type"] = 1;
  CHECK_FALSE(detail::file_info_from_stat("x", text_type));
  CHECK_FALSE(detail::file_info_from_stat("x", nlohmann::json::array()));
  // As a stat answer is parsed: non-negative numbers are unsigned.
  const auto parsed = detail::file_info_from_stat(
      "p/f", nlohmann::json::parse(R"({"type": "file", "size": 12, "mtime_ms": 5, "mode": 33188})"));
  REQUIRE(parsed);
  CHECK(parsed->size == 12);
  CHECK(parsed->permissions == std::optional<std::uint32_t>(0644));
  // A time system_clock cannot hold (2e13 ms is about the year 2603) is clamped, never wrapped into the past.
  using Duration = std::chrono::system_clock::duration;
  const auto whole_ms = [](Duration d) {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<Duration>(std::chrono::duration_cast<std::chrono::milliseconds>(d)));
  };
  const auto latest = whole_ms(Duration::max());
  const auto earliest = whole_ms(Duration::min());
  for (const char* text : {R"({"type": "file", "size": 1, "mtime_ms": 20000000000000, "mode": 420})",
                           R"({"type": "file", "size": 1, "mtime_ms": 18446744073709551615, "mode": 420})"}) {
    const auto far = detail::file_info_from_stat("f", nlohmann::json::parse(text));
    REQUIRE(far);
    CHECK(far->modified == latest);
  }
  const auto early = detail::file_info_from_stat(
      "f", nlohmann::json::parse(R"({"type": "file", "size": 1, "mtime_ms": -20000000000000, "mode": 420})"));
  REQUIRE(early);
  CHECK(early->modified == earliest);
  CHECK(latest > std::chrono::system_clock::time_point(std::chrono::milliseconds(9000000000000)));
}
