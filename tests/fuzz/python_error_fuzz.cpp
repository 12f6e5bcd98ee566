// Fuzzes the reading of the user's exception from the stderr AgentCore returns (src/bedrock/python_error.hpp),
// hostile text of any length.
// Properties: nothing throws; a traceback read is a suffix of the text; the name is a dotted identifier; without a
// traceback header anywhere the result is SystemExit with the exit status.
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
  const bool has_header = text.find("Traceback (most recent call last):") != std::string_view::npos;
  if (!e) {
    FUZZ_CHECK(has_header || text.find("  File \"") != std::string_view::npos);
    return 0;
  }
  FUZZ_CHECK(!e->name.empty());
  for (const char c : e->name)
    FUZZ_CHECK((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.');
  if (e->traceback.empty()) {
    FUZZ_CHECK(e->name == "SystemExit");
    FUZZ_CHECK(e->value == std::to_string(exit_code));
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
