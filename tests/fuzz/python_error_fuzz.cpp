// Fuzzes the reading of the user's exception from the stderr AgentCore returns (src/bedrock/python_error.hpp),
// hostile text of any length.
// Properties: nothing throws; an exit code other than 1 is SystemExit with that code; no exception is read only
// where the text holds a traceback (a header at the start of a line, an exception group's header, or a frame line at
// its very start); a traceback read is a suffix of the text and holds the value; the name is a dotted identifier.
#include <string>

#include "bedrock/python_error.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int exit_code = static_cast<int>(data[0]) - 128;  // byte 0: the exit status
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::optional<code_interpreter::CodeError> e;
  try {
    e = code_interpreter::bedrock::parse_python_error(text, exit_code);
  } catch (...) {
    FUZZ_CHECK(!"an exception escaped parse_python_error");
  }
  if (exit_code != 1) {
    FUZZ_CHECK(e && e->name == "SystemExit" && e->value == std::to_string(exit_code) && e->traceback.empty());
    return 0;
  }
  const std::string_view header = "Traceback (most recent call last):";
  bool header_at_line_start = false;
  for (auto at = text.find(header); at != std::string_view::npos && !header_at_line_start; at = text.find(header, at + 1))
    header_at_line_start = at == 0 || text[at - 1] == '\n';
  const bool traceback = header_at_line_start || text.rfind("  File \"", 0) == 0 ||
                         text.find("Exception Group Traceback (most recent call last):") != std::string_view::npos;
  if (!e) {
    FUZZ_CHECK(traceback);
    return 0;
  }
  FUZZ_CHECK(!e->name.empty());
  for (const char c : e->name)
    FUZZ_CHECK((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.');
  if (e->traceback.empty()) {
    FUZZ_CHECK(!traceback);  // a SystemExit only where the text holds no traceback
    FUZZ_CHECK(e->name == "SystemExit");
    FUZZ_CHECK(e->value == "1");
  } else {
    FUZZ_CHECK(e->traceback.size() <= text.size());
    FUZZ_CHECK(text.substr(text.size() - e->traceback.size()) == e->traceback);
    FUZZ_CHECK(e->traceback.find(e->value) != std::string::npos);
  }
  return 0;
}

std::vector<std::string> fuzz_seeds() {
  return {"\x81Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n    1/0\n"
          "ZeroDivisionError: division by zero\n",
          "\x81  File \"<string>\", line 1\n    def (:\n        ^\nSyntaxError: invalid syntax\n",
          "\x83", "\x81message\n",
          "\x81Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nValueError: a\nb\n",
          "\x81  + Exception Group Traceback (most recent call last):\n  | ExceptionGroup: eg (1 sub-exception)\n"};
}
