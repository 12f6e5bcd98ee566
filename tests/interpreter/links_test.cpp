// Sandbox links in the model's final text: which are found, which are accepted, which are refused.
#include <catch2/catch.hpp>

#include "interpreter/links.hpp"

using code_interpreter::interpreter::find_sandbox_links;
using code_interpreter::interpreter::percent_decode;
using code_interpreter::interpreter::resolve_link_target;

TEST_CASE("links are found in order of appearance, each target once", "[interpreter][links]") {
  const auto links = find_sandbox_links(
      "See [a](sandbox:/files/a.csv), ![plot](sandbox:/files/p.png) and [a again](sandbox:/files/a.csv). "
      "Not a link: sandbox:/files/b.csv or [x](https://example.com).",
      "/files");
  REQUIRE(links.size() == 2);
  CHECK(links[0].target == "/files/a.csv");
  CHECK(links[0].path == "/files/a.csv");
  CHECK(links[1].target == "/files/p.png");
}

TEST_CASE("a target ends at its closing parenthesis, keeping balanced ones inside", "[interpreter][links]") {
  const auto links = find_sandbox_links("[r](sandbox:/files/result(1).csv) [t](sandbox:/files/t.csv \"title\")", "/files");
  REQUIRE(links.size() == 2);
  CHECK(links[0].path == "/files/result(1).csv");
  CHECK(links[1].path == "/files/t.csv");
}

TEST_CASE("the angle-bracket form allows spaces, and percent escapes are decoded", "[interpreter][links]") {
  const auto links = find_sandbox_links("[a](<sandbox:/files/my file.csv>) [b](sandbox:/files/my%20report.txt)", "/files");
  REQUIRE(links.size() == 2);
  CHECK(links[0].path == "/files/my file.csv");
  CHECK(links[1].target == "/files/my%20report.txt");
  CHECK(links[1].path == "/files/my report.txt");
}

TEST_CASE("a target is accepted only as a plain path below the upload directory", "[interpreter][links]") {
  CHECK(resolve_link_target("/files/a.csv", "/files") == "/files/a.csv");
  CHECK(resolve_link_target("/files/sub/dir/a.csv", "/files/") == "/files/sub/dir/a.csv");
  CHECK(resolve_link_target("files/a.csv", "files") == "files/a.csv");  // Bedrock's relative upload_dir
  CHECK_FALSE(resolve_link_target("/files/../etc/passwd", "/files"));
  CHECK_FALSE(resolve_link_target("/files/sub/../../etc/passwd", "/files"));
  CHECK_FALSE(resolve_link_target("/files/%2e%2e/etc/passwd", "/files"));
  CHECK_FALSE(resolve_link_target("/files/..%2Fetc%2Fpasswd", "/files"));
  CHECK_FALSE(resolve_link_target("/etc/passwd", "/files"));
  CHECK_FALSE(resolve_link_target("/filesx/a", "/files"));
  CHECK_FALSE(resolve_link_target("/files", "/files"));
  CHECK_FALSE(resolve_link_target("/files/", "/files"));
  CHECK_FALSE(resolve_link_target("/files/a/", "/files"));
  CHECK_FALSE(resolve_link_target("/files/./a", "/files"));
  CHECK_FALSE(resolve_link_target("/files//a", "/files"));
  CHECK_FALSE(resolve_link_target("/files/a\\..\\..\\b", "/files"));
  CHECK_FALSE(resolve_link_target("/files/a%00.csv", "/files"));
  CHECK_FALSE(resolve_link_target("/files/a.csv", ""));
}

TEST_CASE("percent decoding leaves malformed escapes as written", "[interpreter][links]") {
  CHECK(percent_decode("a%20b%2fc") == "a b/c");
  CHECK(percent_decode("100%") == "100%");
  CHECK(percent_decode("%zz%4") == "%zz%4");
}

TEST_CASE("a link with whitespace inside its parentheses, or a reference definition, is still found",
          "[interpreter][links]") {
  // CommonMark allows spaces (and one line ending) between '(' and the destination, and reference-style links
  // whose destination sits in a "[id]: destination" line. A link read by the user must never be skipped silently.
  const auto links = find_sandbox_links(
      "See [a]( sandbox:/files/a.csv ), [b](\n  <sandbox:/files/b c.csv>), [report][r] and [e][x].\n\n"
      "[r]: sandbox:/files/report.csv \"Report\"\n"
      "[x]:\t<sandbox:/etc/passwd>\n"
      "Two line endings end it: [n](\n\nsandbox:/files/no.csv). Prose: sandbox:/files/prose.csv",
      "/files");
  REQUIRE(links.size() == 4);
  CHECK(links[0].target == "/files/a.csv");
  CHECK(links[0].path == "/files/a.csv");
  CHECK(links[1].target == "/files/b c.csv");
  CHECK(links[1].path == "/files/b c.csv");
  CHECK(links[2].target == "/files/report.csv");
  CHECK(links[2].path == "/files/report.csv");
  CHECK(links[3].target == "/etc/passwd");
  CHECK_FALSE(links[3].path);
}

TEST_CASE("a target holding a control character is refused", "[interpreter][links]") {
  // An escape sequence or line ending in a file name would reach the saved file's name and the user's terminal.
  CHECK_FALSE(resolve_link_target("/files/a\x1b[2Jb.csv", "/files"));
  CHECK_FALSE(resolve_link_target("/files/a\rb.csv", "/files"));
  CHECK_FALSE(resolve_link_target("/files/a%0Ab.csv", "/files"));
  CHECK_FALSE(resolve_link_target("/files/a%1B.csv", "/files"));
  CHECK_FALSE(resolve_link_target("/files/a\x7f.csv", "/files"));
  const auto links = find_sandbox_links("[x](<sandbox:/files/a\rb.csv>) [y](sandbox:/files/\x1b]0;t\x07.csv)", "/files");
  REQUIRE(links.size() == 2);
  CHECK_FALSE(links[0].path);
  CHECK_FALSE(links[1].path);
  CHECK(resolve_link_target("/files/caf\xc3\xa9 (1).csv", "/files") == "/files/caf\xc3\xa9 (1).csv");
}
