// The REPL's multi-line rule (cli/repl_input.hpp, docs/cli.md "Multi-line input"): when an input is run and when
// it asks for another line.
#include <catch2/catch.hpp>

#include "repl_input.hpp"

using cli::needs_more_input;

TEST_CASE("a simple statement or expression runs at once", "[cli]") {
  CHECK_FALSE(needs_more_input({"x = 41"}));
  CHECK_FALSE(needs_more_input({"x + 1"}));
  CHECK_FALSE(needs_more_input({"while True: pass"}));  // a block on one line: nothing ends in ':'
  CHECK_FALSE(needs_more_input({"d = {1: 2}"}));        // a ':' inside brackets opens no block
  CHECK_FALSE(needs_more_input({"s[1:]"}));
}

TEST_CASE("a line ending in ':' opens a block that an empty line ends", "[cli]") {
  CHECK(needs_more_input({"def f():"}));
  CHECK(needs_more_input({"def f():", "    return 1"}));
  CHECK_FALSE(needs_more_input({"def f():", "    return 1", ""}));
  CHECK_FALSE(needs_more_input({"def f():", "    return 1", "   "}));
  CHECK(needs_more_input({"if x:  # a comment after the colon"}));
  CHECK(needs_more_input({"for i in range(3):", "    if i:", "        print(i)"}));
}

TEST_CASE("a decorator opens a block", "[cli]") {
  CHECK(needs_more_input({"@functools.cache"}));
  CHECK(needs_more_input({"@functools.cache", "def f(): return 1"}));
  CHECK_FALSE(needs_more_input({"@functools.cache", "def f(): return 1", ""}));
}

TEST_CASE("an open bracket continues the input until it closes", "[cli]") {
  CHECK(needs_more_input({"[1,"}));
  CHECK(needs_more_input({"f(a,", "  [b,"}));
  CHECK_FALSE(needs_more_input({"[1,", "2]"}));
  CHECK_FALSE(needs_more_input({"f(a,", "  [b,", "  c])"}));
  CHECK(needs_more_input({"def f(a,", "      b):"}));  // closed brackets, then the block
}

TEST_CASE("brackets, colons and '#' inside strings and comments do not count", "[cli]") {
  CHECK_FALSE(needs_more_input({"print('(')"}));
  CHECK_FALSE(needs_more_input({"print(\"[:\")"}));
  CHECK_FALSE(needs_more_input({"x = 1  # (an open bracket in a comment"}));
  CHECK_FALSE(needs_more_input({"print('#')"}));
  CHECK_FALSE(needs_more_input({"s = 'ends with a colon:'"}));
  CHECK_FALSE(needs_more_input({"s = 'it\\'s ('"}));
}

TEST_CASE("a triple-quoted string continues the input until it closes", "[cli]") {
  CHECK(needs_more_input({"s = \"\"\"first"}));
  CHECK(needs_more_input({"s = \"\"\"first", "second ( :"}));
  CHECK_FALSE(needs_more_input({"s = \"\"\"first", "second ( :", "\"\"\""}));
  CHECK(needs_more_input({"s = '''a"}));
  CHECK_FALSE(needs_more_input({"s = '''a'''"}));
}

TEST_CASE("a final backslash continues the line", "[cli]") {
  CHECK(needs_more_input({"x = 1 + \\"}));
  CHECK_FALSE(needs_more_input({"x = 1 + \\", "2"}));
  CHECK(needs_more_input({"s = 'a\\"}));  // a backslash-newline inside a one-quote string
}

TEST_CASE("an unterminated one-quote string ends with its line: Python reports the SyntaxError", "[cli]") {
  CHECK_FALSE(needs_more_input({"s = 'abc"}));
}
