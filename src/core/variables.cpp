// set_variable / get_variable (docs/errors.md "Filesystem, interrupt, restart and variables"): the public checks,
// and the one implementation over execute_code that every Python backend uses (detail::run_python_for_json).
// Nothing the caller gives is put into the generated code as code: the arguments travel as base64 of JSON, and the
// answer comes back as base64 of JSON between markers holding a fresh nonce, parsed as untrusted.
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "code_interpreter/sandbox.hpp"
#include "core/base64.hpp"
#include "core/outcome.hpp"
#include "core/python_call.hpp"
#include "core/random_id.hpp"
#include "core/untrusted.hpp"

namespace code_interpreter {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxNameBytes = 255;

constexpr std::array<std::string_view, 35> kKeywords = {
    "False", "None",   "True",    "and",      "as",       "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",      "elif",     "else",   "except", "finally",  "for",
    "from",  "global", "if",      "import",   "in",       "is",     "lambda", "nonlocal", "not",
    "or",    "pass",   "raise",   "return",   "try",      "while",  "with",   "yield"};

// An ASCII Python identifier that is not a keyword: safe inside a Python string literal, and a name the user can
// read back as a variable.
void check_variable_name(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("variable name is empty");
  if (name.size() > kMaxNameBytes)
    throw std::invalid_argument("variable name is longer than " + std::to_string(kMaxNameBytes) + " bytes");
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  bool ok = letter(name.front());
  for (char c : name) ok = ok && (letter(c) || digit(c));
  if (!ok)
    throw std::invalid_argument("variable name '" + std::string(name) +
                                "' is not an ASCII Python identifier (letters, digits, '_', not starting with a digit)");
  if (std::find(kKeywords.begin(), kKeywords.end(), name) != kKeywords.end())
    throw std::invalid_argument("variable name '" + std::string(name) + "' is a Python keyword");
}

void require_python(const CodeInterpreterSandbox& sb, std::string_view what) {
  if (sb.language() != Language::kPython)
    throw SandboxExecutionError(std::string(what) + " needs a Python interpreter; this sandbox runs " +
                                    std::string(to_string(sb.language())),
                                Stage::kExecute, ErrorKind::kUnsupported);
}

// Whether `value` holds a floating-point NaN or infinity anywhere. Iterative: a caller's value may nest deeply.
bool has_non_finite(const json& value) {
  std::vector<const json*> pending{&value};
  while (!pending.empty()) {
    const json* v = pending.back();
    pending.pop_back();
    if (v->is_number_float() && !std::isfinite(v->get<double>())) return true;
    if (v->is_structured())
      for (const auto& child : *v) pending.push_back(&child);
  }
  return false;
}

}  // namespace

void CodeInterpreterSandbox::set_variable(std::string_view name, const nlohmann::json& value) {
  check_variable_name(name);
  // JSON has no NaN or Infinity: dump() would write null, and the variable would silently become None.
  if (has_non_finite(value))
    throw std::invalid_argument("set_variable: the value is not serialisable as JSON: it holds a NaN or an infinity");
  std::string text;
  try {
    text = value.dump();
  } catch (const json::type_error& e) {  // a string that is not valid UTF-8
    throw std::invalid_argument(std::string("set_variable: the value is not serialisable as JSON: ") + e.what());
  }
  do_set_variable(name, text);
}

nlohmann::json CodeInterpreterSandbox::get_variable(std::string_view name) {
  check_variable_name(name);
  return do_get_variable(name);
}

void CodeInterpreterSandbox::set_variable_by_code(std::string_view name, const std::string& value_json) {
  require_python(*this, "set_variable");
  (void)detail::run_python_for_json(*this, "set_variable '" + std::string(name) + "'",
                                    {{"name", name}, {"value", value_json}},
                                    "    builtins.globals()[args['name']] = json.loads(args['value'])\n"
                                    "    text = '{}'\n",
                                    Stage::kExecute);
}

nlohmann::json CodeInterpreterSandbox::get_variable_by_code(std::string_view name) {
  require_python(*this, "get_variable");
  const std::string what = "get_variable '" + std::string(name) + "'";
  auto answer = detail::run_python_for_json(*this, what, {{"name", name}},
                                            "    g = builtins.globals()\n"
                                            "    if args['name'] not in g:\n"
                                            "        text = '{\"missing\": true}'\n"
                                            "    else:\n"
                                            "        try:\n"
                                            "            value = g[args['name']]\n"
                                            "            dumped = json.dumps(value, allow_nan=False)\n"
                                            // The reader holds integers in 64 bits: one outside is refused here,
                                            // never read back rounded into a double (or, past 1e308, not at all).
                                            // Every integer of the text json.dumps wrote is checked as json.loads
                                            // reads it back, whatever the value's types claim (a dict subclass
                                            // can hide its values from a walk).
                                            "            def in_range(digits):\n"
                                            "                if len(digits) <= 21 and -2**63 <= int(digits) < 2**64:\n"
                                            "                    return 0\n"
                                            "                raise ValueError('integer out of the 64-bit range JSON numbers are read in: ' +\n"
                                            "                                 (digits if len(digits) <= 40 else digits[:40] + '... (' + str(len(digits)) + ' digits)'))\n"
                                            "            json.loads(dumped, parse_int=in_range)\n"
                                            "            text = '{\"value\": ' + dumped + '}'\n"
                                            "        except Exception as e:\n"
                                            "            text = json.dumps({'error': type(e).__name__ + ': ' + str(e)})\n",
                                            Stage::kExecute);
  if (answer.size() == 1) {
    if (const auto it = answer.find("value"); it != answer.end()) return std::move(*it);
    if (const auto it = answer.find("missing"); it != answer.end() && *it == true)
      throw SandboxExecutionError(what + ": no such variable", Stage::kExecute, ErrorKind::kNotFound);
    if (const auto it = answer.find("error"); it != answer.end() && it->is_string())
      throw SandboxExecutionError(what + ": the value is not JSON-serialisable: " + it->get<std::string>(),
                                  Stage::kExecute, ErrorKind::kInvalidArgument);
  }
  throw SandboxExecutionError(what + ": the framed answer is not the JSON object asked for", Stage::kExecute,
                              ErrorKind::kInternal);
}

namespace detail {

nlohmann::json run_python_for_json(CodeInterpreterSandbox& sb, std::string_view what, const nlohmann::json& args,
                                   std::string_view body, Stage stage) {
  const std::string marker = "<code-interpreter-answer " + random_hex(16) + ">";
  // The marker is spelled in two pieces in the code, so no echo of the code can stand for the answer; the
  // arguments travel as base64 of JSON, so nothing the caller gave is read as code.
  const std::string code =
      "def _code_interpreter_call():\n"
      "    import base64, builtins, json\n"
      "    args = json.loads(base64.b64decode('" + base64_encode(args.dump()) + "').decode('utf-8'))\n" +
      std::string(body) +
      "    mark = '" + marker.substr(0, 10) + "' + '" + marker.substr(10) + "'\n"
      "    builtins.print(mark + base64.b64encode(text.encode('utf-8')).decode('ascii') + mark)\n"
      "try:\n"
      "    _code_interpreter_call()\n"
      "finally:\n"
      "    del _code_interpreter_call\n";
  const auto r = sb.execute_code(code);
  if (r.status != ExecutionStatus::kSuccess) {
    std::string message = std::string(what) + ": the code did not succeed (" + std::string(to_string(r.status)) + ")";
    if (!r.error.empty()) message += ": " + r.error;
    throw SandboxExecutionError(std::move(message), stage, error_kind_of(r));
  }
  auto malformed = [&](const std::string& why) {
    return SandboxExecutionError(std::string(what) + ": " + why, stage, ErrorKind::kInternal);
  };
  const auto first = r.stdout_text.find(marker);
  const auto second = first == std::string::npos ? std::string::npos : r.stdout_text.find(marker, first + marker.size());
  if (second == std::string::npos) {
    throw malformed(r.truncated ? "the answer is over the output cap (max_output_bytes)"
                                : "the sandbox's answer holds no framed value");
  }
  const auto decoded = base64_decode(
      std::string_view(r.stdout_text).substr(first + marker.size(), second - first - marker.size()));
  if (!decoded) throw malformed("the framed answer is not base64");
  auto answer = parse_untrusted_json(*decoded);
  if (answer.is_discarded() || !answer.is_object()) throw malformed("the framed answer is not a JSON object");
  return answer;
}

}  // namespace detail

}  // namespace code_interpreter
