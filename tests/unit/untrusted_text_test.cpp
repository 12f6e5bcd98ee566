// Text a service sent, read as hostile input: JSON with lone surrogate escapes (core/untrusted.hpp) and the Python
// exception read back from AgentCore's stderr (bedrock/python_error.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "bedrock/python_error.hpp"
#include "core/untrusted.hpp"

namespace ci = code_interpreter;
using ci::detail::escape_lone_surrogates;
using ci::detail::parse_untrusted_json;

TEST_CASE("a lone surrogate's escape in JSON is kept as text, never a refused answer", "[untrusted]") {
  const auto j = parse_untrusted_json(R"({"value":"\udcff","name":"ValueError"})");
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j.at("value").get<std::string>() == "\\udcff");
  CHECK(j.at("name").get<std::string>() == "ValueError");
}

TEST_CASE("a high and a low surrogate in a pair stay one character and a lone high or low one becomes text",
          "[untrusted]") {
  CHECK(parse_untrusted_json(R"(["\ud83d\ude00"])").at(0).get<std::string>() == "\xf0\x9f\x98\x80");
  CHECK(parse_untrusted_json(R"(["a\uD800b"])").at(0).get<std::string>() == "a\\ud800b");
  CHECK(parse_untrusted_json(R"(["\ude00\ud83d"])").at(0).get<std::string>() == "\\ude00\\ud83d");
  CHECK(parse_untrusted_json(R"(["\ud83d\u0041"])").at(0).get<std::string>() == "\\ud83dA");
  CHECK(parse_untrusted_json(R"(["x\ud83d"])").at(0).get<std::string>() == "x\\ud83d");
}

TEST_CASE("escape_lone_surrogates leaves text without one alone and never reads an escaped backslash as an escape",
          "[untrusted]") {
  CHECK_FALSE(escape_lone_surrogates(R"({"a":"\u00e9\n\\"})"));
  CHECK_FALSE(escape_lone_surrogates(R"(["\\udcff"])"));  // a backslash, then the letters: no escape at all
  CHECK_FALSE(escape_lone_surrogates("\\"));
  CHECK_FALSE(escape_lone_surrogates("\\u12"));
  CHECK(*escape_lone_surrogates(R"(["\\\udcff"])") == R"(["\\\\udcff"])");
  CHECK(parse_untrusted_json(R"(["\\\udcff"])").at(0).get<std::string>() == "\\\\udcff");
  // Not JSON before, not JSON after: still discarded.
  CHECK(parse_untrusted_json(R"(["\udcff)").is_discarded());
}

TEST_CASE("AgentCore stderr: the last traceback's exception line gives name and value, its block the traceback",
          "[untrusted][bedrock]") {
  const std::string tb =
      "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n    1/0\n    ~^~\n"
      "ZeroDivisionError: division by zero\n";
  const auto e = ci::bedrock::parse_python_error("before\n" + tb, 1);
  REQUIRE(e);
  CHECK(e->name == "ZeroDivisionError");
  CHECK(e->value == "division by zero");
  CHECK(e->traceback == tb);
}

TEST_CASE("AgentCore stderr: a value over several lines is read whole", "[untrusted][bedrock]") {
  const auto e = ci::bedrock::parse_python_error(
      "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nValueError: first\nsecond\n\n", 1);
  REQUIRE(e);
  CHECK(e->name == "ValueError");
  CHECK(e->value == "first\nsecond\n");
}

TEST_CASE("AgentCore stderr: a chained exception reports the last traceback's exception", "[untrusted][bedrock]") {
  const std::string last =
      "Traceback (most recent call last):\n  File \"<string>\", line 4, in <module>\nKeyError: 'k'\n";
  const auto e = ci::bedrock::parse_python_error(
      "Traceback (most recent call last):\n  File \"<string>\", line 2, in <module>\nZeroDivisionError: division by "
      "zero\n\nThe above exception was the direct cause of the following exception:\n\n" + last, 1);
  REQUIRE(e);
  CHECK(e->name == "KeyError");
  CHECK(e->value == "'k'");
  CHECK(e->traceback == last);
}

TEST_CASE("AgentCore stderr: a SyntaxError printed without a header is read from its frame block",
          "[untrusted][bedrock]") {
  const std::string text = "  File \"<string>\", line 1\n    def (:\n        ^\nSyntaxError: invalid syntax\n";
  const auto e = ci::bedrock::parse_python_error(text, 1);
  REQUIRE(e);
  CHECK(e->name == "SyntaxError");
  CHECK(e->value == "invalid syntax");
  CHECK(e->traceback == text);
}

TEST_CASE("AgentCore stderr: an exception without a message and a dotted name", "[untrusted][bedrock]") {
  const auto bare = ci::bedrock::parse_python_error(
      "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nRuntimeError\n", 1);
  REQUIRE(bare);
  CHECK(bare->name == "RuntimeError");
  CHECK(bare->value.empty());
  const auto dotted = ci::bedrock::parse_python_error(
      "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\njson.decoder.JSONDecodeError: x", 1);
  REQUIRE(dotted);
  CHECK(dotted->name == "json.decoder.JSONDecodeError");
  CHECK(dotted->value == "x");
}

TEST_CASE("AgentCore stderr: no traceback at all is sys.exit, its value the exit status", "[untrusted][bedrock]") {
  const auto empty = ci::bedrock::parse_python_error("", 3);
  REQUIRE(empty);
  CHECK(empty->name == "SystemExit");
  CHECK(empty->value == "3");
  CHECK(empty->traceback.empty());
  const auto message = ci::bedrock::parse_python_error("message\n", 1);
  REQUIRE(message);
  CHECK(message->name == "SystemExit");
  CHECK(message->value == "1");
  CHECK(ci::bedrock::parse_python_error("", -1)->value == "-1");
  // A frame-like line that does not open stderr is no SyntaxError block, and a header mid-line is no traceback.
  CHECK(ci::bedrock::parse_python_error("warning:\n  File \"a.txt\" is empty\n", 1)->name == "SystemExit");
  CHECK(ci::bedrock::parse_python_error("log: Traceback (most recent call last): none\n", 1)->name == "SystemExit");
}

TEST_CASE("AgentCore stderr: an exit code other than 1 is sys.exit even after a printed traceback",
          "[untrusted][bedrock]") {
  // logging.exception() or traceback.print_exc(), then sys.exit(3): CPython exits 1 only for an uncaught exception.
  const auto e = ci::bedrock::parse_python_error(
      "ERROR:root:failed\nTraceback (most recent call last):\n  File \"<string>\", line 2, in <module>\n"
      "ValueError: bad\ncleanup done\n", 3);
  REQUIRE(e);
  CHECK(e->name == "SystemExit");
  CHECK(e->value == "3");
  CHECK(e->traceback.empty());
  const auto usage = ci::bedrock::parse_python_error("  File \"config.yaml\" not found\nusage: tool\n", 2);
  REQUIRE(usage);
  CHECK(usage->name == "SystemExit");
  CHECK(usage->value == "2");
}

TEST_CASE("AgentCore stderr: an exception group is no exception, even with a cause printed before it",
          "[untrusted][bedrock]") {
  CHECK_FALSE(ci::bedrock::parse_python_error(
      "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nValueError: cause\n\n"
      "The above exception was the direct cause of the following exception:\n\n"
      "  + Exception Group Traceback (most recent call last):\n  |   File \"<string>\", line 1, in <module>\n"
      "  | ExceptionGroup: eg (1 sub-exception)\n  +-+---------------- 1 ----------------\n    | ValueError: x\n",
      1));
}

TEST_CASE("AgentCore stderr: a line ending in CR LF leaves no CR in the value", "[untrusted][bedrock]") {
  const auto e = ci::bedrock::parse_python_error(
      "Traceback (most recent call last):\r\n  File \"x\"\r\nValueError: x\r\n", 1);
  REQUIRE(e);
  CHECK(e->name == "ValueError");
  CHECK(e->value == "x");
}

TEST_CASE("AgentCore stderr: a traceback of another shape is no exception, never a guess", "[untrusted][bedrock]") {
  // An exception group: every line indented.
  CHECK_FALSE(ci::bedrock::parse_python_error(
      "  + Exception Group Traceback (most recent call last):\n  |   File \"<string>\", line 1, in <module>\n"
      "  | ExceptionGroup: eg (1 sub-exception)\n  +-+---------------- 1 ----------------\n    | ValueError: x\n",
      1));
  // A header with nothing after it, and an exception line that is not "Name" or "Name: value".
  CHECK_FALSE(ci::bedrock::parse_python_error("Traceback (most recent call last):\n", 1));
  CHECK_FALSE(ci::bedrock::parse_python_error("Traceback (most recent call last):\n  File \"x\"\n!!: y\n", 1));
  CHECK_FALSE(ci::bedrock::parse_python_error("Traceback (most recent call last):\n  File \"x\"\nName value\n", 1));
}

TEST_CASE("AgentCore stderr: a megabyte-long exception line is read whole, and headers mid-line are no traceback",
          "[untrusted][bedrock]") {
  const std::string message(2'000'000, 'x');
  const auto e = ci::bedrock::parse_python_error("Traceback (most recent call last):\nValueError: " + message + "\n", 1);
  REQUIRE(e);
  CHECK(e->value == message);
  std::string noise;
  for (int i = 0; i < 100000; ++i) noise += "x Traceback (most recent call last):";
  const auto exit = ci::bedrock::parse_python_error(noise, 1);
  REQUIRE(exit);
  CHECK(exit->name == "SystemExit");
  // Headers at the start of many lines: the last one's block is read.
  std::string many;
  for (int i = 0; i < 20000; ++i) many += "Traceback (most recent call last):\nKeyError: " + std::to_string(i) + "\n";
  const auto last = ci::bedrock::parse_python_error(many, 1);
  REQUIRE(last);
  CHECK(last->name == "KeyError");
  CHECK(last->value == "19999");
}

TEST_CASE("untrusted JSON of many sibling objects parses whole, and the limits still hold", "[untrusted]") {
  // 200,000 members, each an empty object: nlohmann's callback parser took quadratic time here (minutes).
  std::string text = "{\"x\":{";
  for (int i = 0; i < 200000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":{}";
  text += "}}";
  const auto j = parse_untrusted_json(text);
  REQUIRE(j.is_object());
  CHECK(j.at("x").size() == 200000);
  CHECK(j.at("x").at("k199999") == nlohmann::json::object());
  CHECK(parse_untrusted_json(text, 1000, 100).is_discarded());       // too many values
  CHECK(parse_untrusted_json("[[[1]]]", 2).is_discarded());            // three levels, two allowed
  CHECK(parse_untrusted_json("[[1]]", 2) == nlohmann::json::parse("[[1]]"));
  CHECK(parse_untrusted_json("{\"a\": 1,}").is_discarded());          // not JSON
}
