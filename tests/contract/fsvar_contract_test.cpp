// docs/errors.md "Filesystem, interrupt, restart and variables": exists, get_info, copy, move, write_file without
// make_dirs, names that are not ASCII, interrupt, restart, set_variable and get_variable. What a backend cannot do is
// read from capabilities(), and then its refusal is what is checked.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>

#include "checks.hpp"
#include "harness.hpp"
#include "programs.hpp"

using namespace contract;
namespace ci = code_interpreter;
using nlohmann::json;

/// A scenario whose answer comes from the interpreter's own state, which code reads and writes: the three real
/// backends (FakeSandbox's variables are a map apart from its scripted code).
#define CONTRACT_INTERPRETER_SCENARIO(name, tags) \
  TEMPLATE_TEST_CASE(name, "[contract]" tags, PyodideHarness, E2BHarness, BedrockHarness)

namespace {

// `info.path` names `path`: as given, or made absolute by the backend.
bool names_path(const ci::FileInfo& info, const std::string& path) {
  return info.path == path || (info.path.size() > path.size() && info.path.front() == '/' &&
                               info.path.compare(info.path.size() - path.size() - 1, std::string::npos, "/" + path) == 0);
}

// A modification time, where the backend gives one, is the sandbox's clock now: within a generous minute of ours.
void check_recent(const ci::FileInfo& info) {
  if (!info.modified) return;
  const auto now = std::chrono::system_clock::now();
  CHECK(*info.modified > now - std::chrono::minutes(1));
  CHECK(*info.modified < now + std::chrono::minutes(1));
}

}  // namespace

// ---- exists, get_info ----

CONTRACT_SCENARIO("exists is true for a file and a directory and false for a missing path", "[files][fsvar]") {
  TestType h;
  REQUIRE(h.sb().capabilities().file_info);
  h.sb().write_file("ct/ex/a.txt", "abc");
  CHECK(h.sb().exists("ct/ex/a.txt"));
  CHECK(h.sb().exists("ct/ex"));
  CHECK_FALSE(h.sb().exists("ct/ex/missing.txt"));
  CHECK_FALSE(h.sb().exists("ct/no-such-dir/missing.txt"));
}

// The kind exists throws for each fault, alike where it is a protocol call (E2B's Stat) and where it runs as
// Python (AgentCore; docs/errors.md: a call whose code never ran because of the service is kUnavailable).
ci::ErrorKind exists_fault_kind(Fault fault) {
  return fault == Fault::kExistsMalformed ? ci::ErrorKind::kInternal : ci::ErrorKind::kUnavailable;
}

CONTRACT_SERVER_SCENARIO("exists throws on a 5xx a gone sandbox or a malformed answer and never reads it as absent",
                         "[files][fsvar]") {
  for (const auto fault : {Fault::kExistsUnavailable, Fault::kExistsGone, Fault::kExistsMalformed}) {
    TestType h;
    INFO("fault " << static_cast<int>(fault));
    h.sb().write_file("ct/ex/a.txt", "abc");
    h.inject(fault);
    // A path that is there and one that is not: neither answer may be read from a failed exchange.
    for (const char* path : {"ct/ex/missing.txt", "ct/ex/a.txt"}) {
      INFO("path " << path);
      const auto message =
          check_execution_error([&] { (void)h.sb().exists(path); }, ci::Stage::kDownload, exists_fault_kind(fault));
      CHECK(message.rfind("exists", 0) == 0);
      if (fault == Fault::kExistsGone) break;  // the session is gone for good on AgentCore
      h.inject(fault);  // AgentCore's is used up by one call
    }
  }
}

CONTRACT_SCENARIO("get_info of a file gives its type size and name", "[files][fsvar]") {
  TestType h;
  h.sb().write_file("ct/info/ten.txt", "0123456789");
  const auto info = h.sb().get_info("ct/info/ten.txt");
  CHECK(info.name == "ten.txt");
  CHECK(names_path(info, "ct/info/ten.txt"));
  CHECK(info.type == std::optional(ci::FileType::kFile));
  CHECK_FALSE(info.is_directory);
  CHECK(info.size == 10);
  if (info.permissions) CHECK((*info.permissions & 0600) == 0600);  // the owner reads and writes what it wrote
  check_recent(info);
}

CONTRACT_SCENARIO("get_info of a directory says directory with size 0", "[files][fsvar]") {
  TestType h;
  h.sb().write_file("ct/info/sub/x.txt", "x");
  const auto info = h.sb().get_info("ct/info/sub");
  CHECK(info.name == "sub");
  CHECK(names_path(info, "ct/info/sub"));
  CHECK(info.type == std::optional(ci::FileType::kDirectory));
  CHECK(info.is_directory);
  CHECK(info.size == 0);
}

CONTRACT_SCENARIO("get_info of a missing path throws download not_found", "[files][fsvar]") {
  TestType h;
  check_execution_error([&] { (void)h.sb().get_info("ct/missing.txt"); }, ci::Stage::kDownload,
                        ci::ErrorKind::kNotFound);
}

CONTRACT_SCENARIO("exists get_info copy and move check their paths before anything is sent", "[files][fsvar]") {
  TestType h;
  CHECK(check_invalid_argument([&] { (void)h.sb().exists(""); }) == "path is empty");
  CHECK(check_invalid_argument([&] { (void)h.sb().get_info(std::string("a\0b", 3)); }) == "path contains a NUL byte");
  CHECK(check_invalid_argument([&] { h.sb().copy("", "b"); }) == "from is empty");
  CHECK(check_invalid_argument([&] { h.sb().move("a", "\xff"); }) == "to is not valid UTF-8");
}

// ---- copy, move ----

CONTRACT_SCENARIO("copy of a file keeps the source and writes the same bytes at the destination", "[files][fsvar]") {
  TestType h;
  REQUIRE(h.sb().capabilities().file_copy);
  h.sb().write_file("ct/cp/all.bin", all_bytes());
  h.sb().copy("ct/cp/all.bin", "ct/cp/new/dir/copy.bin");
  CHECK(h.sb().read_file("ct/cp/new/dir/copy.bin") == all_bytes());
  CHECK(h.sb().read_file("ct/cp/all.bin") == all_bytes());
}

CONTRACT_SCENARIO("copy of a directory copies its tree", "[files][fsvar]") {
  TestType h;
  h.sb().write_file("ct/tree/a.txt", "A");
  h.sb().write_file("ct/tree/deep/b.txt", "B");
  h.sb().copy("ct/tree", "ct/tree2");
  CHECK(h.sb().read_file("ct/tree2/a.txt") == "A");
  CHECK(h.sb().read_file("ct/tree2/deep/b.txt") == "B");
  CHECK(h.sb().read_file("ct/tree/deep/b.txt") == "B");
}

CONTRACT_SCENARIO("copy and move of a missing source throw upload not_found", "[files][fsvar]") {
  TestType h;
  check_execution_error([&] { h.sb().copy("ct/missing.txt", "ct/x.txt"); }, ci::Stage::kUpload,
                        ci::ErrorKind::kNotFound);
  check_execution_error([&] { h.sb().move("ct/missing.txt", "ct/x.txt"); }, ci::Stage::kUpload,
                        ci::ErrorKind::kNotFound);
  CHECK_FALSE(h.sb().exists("ct/x.txt"));
}

CONTRACT_SCENARIO("move renames a file: the old path is gone and the new one holds the bytes", "[files][fsvar]") {
  TestType h;
  REQUIRE(h.sb().capabilities().file_move);
  h.sb().write_file("ct/mv/old.txt", "moved bytes");
  h.sb().move("ct/mv/old.txt", "ct/mv/other/new.txt");
  CHECK_FALSE(h.sb().exists("ct/mv/old.txt"));
  CHECK(h.sb().read_file("ct/mv/other/new.txt") == "moved bytes");
}

CONTRACT_SCENARIO("move of a directory moves its tree", "[files][fsvar]") {
  TestType h;
  h.sb().write_file("ct/mvd/src/a.txt", "A");
  h.sb().move("ct/mvd/src", "ct/mvd/dst");
  CHECK_FALSE(h.sb().exists("ct/mvd/src"));
  CHECK(h.sb().read_file("ct/mvd/dst/a.txt") == "A");
}

// ---- write_file and make_dirs ----

CONTRACT_SCENARIO("write_file without make_dirs refuses a missing parent and writes nothing", "[files][fsvar]") {
  TestType h;
  const auto message = check_execution_error([&] { h.sb().write_file("ct/nodir/sub/f.txt", "x", false); },
                                             ci::Stage::kUpload, ci::ErrorKind::kNotFound);
  CHECK(message == "write_file 'ct/nodir/sub/f.txt': the parent directory 'ct/nodir/sub' does not exist "
                   "(make_dirs is false)");
  CHECK_FALSE(h.sb().exists("ct/nodir"));
}

CONTRACT_SCENARIO("write_file without make_dirs writes into an existing directory", "[files][fsvar]") {
  TestType h;
  h.sb().write_file("ct/have/first.txt", "1");
  h.sb().write_file("ct/have/second.txt", "2", false);
  CHECK(h.sb().read_file("ct/have/second.txt") == "2");
  h.sb().write_file("ct/have/deeper/third.txt", "3", true);
  CHECK(h.sb().read_file("ct/have/deeper/third.txt") == "3");
}

// ---- names that are not ASCII ----

CONTRACT_SCENARIO("files whose names are not ASCII round trip through every file call", "[files][fsvar]") {
  TestType h;
  HostDir dir;
  const std::string folder = "ct/ünï";
  const std::string name = "名前 €.txt";
  const std::string path = folder + "/" + name;
  h.sb().write_file(path, "utf-8 name");
  CHECK(h.sb().read_file(path) == "utf-8 name");
  CHECK(h.sb().download_file(path) == std::optional<std::string>("utf-8 name"));
  CHECK(h.sb().download_file_to(path, dir.path() / "out.txt"));
  CHECK(dir.read("out.txt") == "utf-8 name");
  const auto listing = h.sb().list_files(folder);
  REQUIRE(listing.size() == 1);
  CHECK(listing[0].name == name);
  CHECK(h.sb().exists(path));
  CHECK(h.sb().get_info(path).name == name);
  h.sb().move(path, folder + "/ü2.txt");
  CHECK(h.sb().read_file(folder + "/ü2.txt") == "utf-8 name");
  h.sb().remove_file(folder + "/ü2.txt");
  CHECK_FALSE(h.sb().exists(folder + "/ü2.txt"));
}

// ---- variables ----

CONTRACT_SCENARIO("set_variable then get_variable round trips JSON", "[variables][fsvar]") {
  TestType h;
  REQUIRE(h.sb().capabilities().variables);
  const json value = {{"a", {1, 2.5, "ü \"quoted\" \\ '", nullptr, true}}, {"b", {{"c", -3}}}, {"big", 9007199254740993}};
  h.sb().set_variable("ct_value", value);
  CHECK(h.sb().get_variable("ct_value") == value);
  h.sb().set_variable("ct_value", "replaced");
  CHECK(h.sb().get_variable("ct_value") == json("replaced"));
}

CONTRACT_SCENARIO("get_variable of a missing variable throws execute not_found", "[variables][fsvar]") {
  TestType h;
  const auto message = check_execution_error([&] { (void)h.sb().get_variable("ct_never_set"); },
                                             ci::Stage::kExecute, ci::ErrorKind::kNotFound);
  CHECK(message == "get_variable 'ct_never_set': no such variable");
}

CONTRACT_SCENARIO("a variable name that is not a Python identifier is refused before anything runs",
                  "[variables][fsvar]") {
  TestType h;
  CHECK(check_invalid_argument([&] { h.sb().set_variable("", 1); }) == "variable name is empty");
  CHECK(check_invalid_argument([&] { (void)h.sb().get_variable("1x"); }) ==
        "variable name '1x' is not an ASCII Python identifier (letters, digits, '_', not starting with a digit)");
  CHECK(check_invalid_argument([&] { h.sb().set_variable("a'] = 1; import os; x['", 1); }).find("not an ASCII") !=
        std::string::npos);
  CHECK(check_invalid_argument([&] { h.sb().set_variable("class", 1); }) ==
        "variable name 'class' is a Python keyword");
  CHECK(check_invalid_argument([&] { h.sb().set_variable(std::string(256, 'a'), 1); }) ==
        "variable name is longer than 255 bytes");
  CHECK(check_invalid_argument([&] { h.sb().set_variable("ok", json(std::string("\xff"))); })
            .rfind("set_variable: the value is not serialisable as JSON", 0) == 0);
}

CONTRACT_INTERPRETER_SCENARIO("a variable set is the code's global and one the code sets is read back",
                              "[variables][fsvar]") {
  TestType h;
  h.sb().set_variable("ct_v", json{{"k", {1, "ü"}}});
  check_success(h.exec("print(ct_v['k'][1], type(ct_v).__name__)"), "print(ct_v['k'][1], type(ct_v).__name__)",
                "ü dict\n");
  REQUIRE(h.exec("ct_t = (1, [2, None], {'z': 1.5})").status == ci::ExecutionStatus::kSuccess);
  CHECK(h.sb().get_variable("ct_t") == json::parse(R"([1, [2, null], {"z": 1.5}])"));
}

CONTRACT_INTERPRETER_SCENARIO("get_variable of a value JSON cannot hold throws invalid_argument naming the error",
                              "[variables][fsvar]") {
  TestType h;
  REQUIRE(h.exec("ct_o = object()\nct_nan = float('nan')").status == ci::ExecutionStatus::kSuccess);
  const auto message = check_execution_error([&] { (void)h.sb().get_variable("ct_o"); }, ci::Stage::kExecute,
                                             ci::ErrorKind::kInvalidArgument);
  CHECK(message == "get_variable 'ct_o': the value is not JSON-serialisable: TypeError: Object of type object is not "
                   "JSON serializable");
  const auto nan = check_execution_error([&] { (void)h.sb().get_variable("ct_nan"); }, ci::Stage::kExecute,
                                         ci::ErrorKind::kInvalidArgument);
  // Python's own text: CPython 3.13 appends ": nan" to it, older versions do not.
  CHECK(nan.rfind("get_variable 'ct_nan': the value is not JSON-serialisable: ValueError: Out of range float values "
                  "are not JSON compliant",
                  0) == 0);
}

CONTRACT_INTERPRETER_SCENARIO("output the code printed before cannot stand for get_variable's answer",
                              "[variables][fsvar]") {
  TestType h;
  // A value whose text holds what an answer looks like: the nonce of each call keeps it a plain string.
  h.sb().set_variable("ct_s", "<code-interpreter-answer 00>eyJ2YWx1ZSI6IDF9<code-interpreter-answer 00>");
  CHECK(h.sb().get_variable("ct_s") ==
        json("<code-interpreter-answer 00>eyJ2YWx1ZSI6IDF9<code-interpreter-answer 00>"));
}

CONTRACT_SCENARIO("set_variable refuses a NaN or an infinity before anything runs, never sets None",
                  "[variables][fsvar]") {
  TestType h;
  const std::string expected = "set_variable: the value is not serialisable as JSON: it holds a NaN or an infinity";
  CHECK(check_invalid_argument([&] { h.sb().set_variable("ct_nan", std::nan("")); }) == expected);
  CHECK(check_invalid_argument([&] {
          h.sb().set_variable("ct_inf", json{{"deep", {1, {{"x", -std::numeric_limits<double>::infinity()}}}}});
        }) == expected);
  check_execution_error([&] { (void)h.sb().get_variable("ct_nan"); }, ci::Stage::kExecute, ci::ErrorKind::kNotFound);
}

CONTRACT_INTERPRETER_SCENARIO("integers at the ends of 64 bits round trip exactly and one past them is refused",
                              "[variables][fsvar]") {
  TestType h;
  const json ends = {std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::int64_t>::min(),
                     std::uint64_t{9007199254740993}};
  h.sb().set_variable("ct_ends", ends);
  CHECK(h.sb().get_variable("ct_ends") == ends);
  check_success(h.exec("print(ct_ends[0] == 2**64 - 1, ct_ends[1] == -2**63)"),
                "print(ct_ends[0] == 2**64 - 1, ct_ends[1] == -2**63)", "True True\n");
  REQUIRE(h.exec("ct_over = {'k': [2**64]}\nct_under = -2**63 - 1\nct_huge = 10**400\nct_inf = float('inf')").status ==
          ci::ExecutionStatus::kSuccess);
  const std::string prefix = "the value is not JSON-serialisable: ValueError: ";
  CHECK(check_execution_error([&] { (void)h.sb().get_variable("ct_over"); }, ci::Stage::kExecute,
                              ci::ErrorKind::kInvalidArgument) ==
        "get_variable 'ct_over': " + prefix + "integer out of the 64-bit range JSON numbers are read in: "
        "18446744073709551616");
  CHECK(check_execution_error([&] { (void)h.sb().get_variable("ct_under"); }, ci::Stage::kExecute,
                              ci::ErrorKind::kInvalidArgument) ==
        "get_variable 'ct_under': " + prefix + "integer out of the 64-bit range JSON numbers are read in: "
        "-9223372036854775809");
  // 10**400 is a number JSON can write but no double can hold: refused as an argument, never kInternal.
  CHECK(check_execution_error([&] { (void)h.sb().get_variable("ct_huge"); }, ci::Stage::kExecute,
                              ci::ErrorKind::kInvalidArgument) ==
        "get_variable 'ct_huge': " + prefix + "integer out of the 64-bit range JSON numbers are read in: "
        "1000000000000000000000000000000000000000... (401 digits)");
  CHECK(check_execution_error([&] { (void)h.sb().get_variable("ct_inf"); }, ci::Stage::kExecute,
                              ci::ErrorKind::kInvalidArgument)
            .rfind("get_variable 'ct_inf': " + prefix + "Out of range float values are not JSON compliant", 0) == 0);
  // A dict subclass that hides its values from a walk still has its integers checked in the text written.
  REQUIRE(h.exec("class CtHidden(dict):\n    def values(self):\n        return []\nct_hidden = CtHidden(a=2**64)")
              .status == ci::ExecutionStatus::kSuccess);
  CHECK(check_execution_error([&] { (void)h.sb().get_variable("ct_hidden"); }, ci::Stage::kExecute,
                              ci::ErrorKind::kInvalidArgument) ==
        "get_variable 'ct_hidden': " + prefix + "integer out of the 64-bit range JSON numbers are read in: "
        "18446744073709551616");
}

// ---- restart ----

CONTRACT_SCENARIO("restart drops the variables", "[restart][fsvar]") {
  TestType h;
  REQUIRE(h.sb().capabilities().restart);
  h.sb().set_variable("ct_r", 5);
  CHECK(h.sb().get_variable("ct_r") == json(5));
  h.sb().restart();
  check_execution_error([&] { (void)h.sb().get_variable("ct_r"); }, ci::Stage::kExecute, ci::ErrorKind::kNotFound);
  h.sb().set_variable("ct_r", 6);  // the fresh interpreter works
  CHECK(h.sb().get_variable("ct_r") == json(6));
}

CONTRACT_INTERPRETER_SCENARIO("after restart the code's globals and imports are gone", "[restart][fsvar]") {
  TestType h;
  REQUIRE(h.exec("import json\nx = 41").status == ci::ExecutionStatus::kSuccess);
  h.sb().restart();
  const auto r = h.exec("print(x + 1)");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error);
  CHECK(r.code_error->name == "NameError");
  const auto again = h.exec("print('json' in globals())");
  check_success(again, "print('json' in globals())", "False\n");
}

// ---- interrupt ----

CONTRACT_SCENARIO("interrupt with no call running is a no-op or the declared refusal", "[interrupt][fsvar]") {
  TestType h;
  if (!h.sb().capabilities().interrupt_call) {
    const auto message =
        check_execution_error([&] { h.sb().interrupt(); }, ci::Stage::kExecute, ci::ErrorKind::kUnsupported);
    CHECK(message == "interrupt is not supported by this sandbox");
    return;
  }
  h.sb().interrupt();
  h.sb().set_variable("ct_after", 1);  // nothing was left pending for a later call
  CHECK(h.sb().get_variable("ct_after") == json(1));
}

CONTRACT_INTERPRETER_SCENARIO("interrupt stops a running execute_code from another thread and keeps the state",
                              "[interrupt][fsvar]") {
  TestType h;
  const auto caps = h.sb().capabilities();
  if (!caps.interrupt_call) {
    check_execution_error([&] { h.sb().interrupt(); }, ci::Stage::kExecute, ci::ErrorKind::kUnsupported);
    return;
  }
  REQUIRE(h.exec(prog::kSetZ).status == ci::ExecutionStatus::kSuccess);
  std::atomic<bool> started{false};
  ci::ExecuteOptions options;
  options.timeout = std::chrono::seconds(60);
  options.on_stdout = [&](std::string_view line) {
    if (line == "started\n") started = true;
  };
  // Bounded everywhere, so a backend whose interrupt does not work fails here instead of hanging: the run's own
  // timeout ends it, and the interrupter gives up waiting for it to start once it has returned or 30 s have passed.
  options.timeout = std::chrono::seconds(40);
  std::atomic<bool> returned{false};
  std::thread interrupter([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!started && !returned && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(10ms);
    if (!started) return;
    std::this_thread::sleep_for(200ms);
    h.sb().interrupt();
  });
  const auto begun = std::chrono::steady_clock::now();
  ci::ExecutionResult r;
  try {
    r = h.exec("import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.01)", options);
  } catch (...) {
    returned = true;
    interrupter.join();
    throw;
  }
  returned = true;
  interrupter.join();
  REQUIRE(started);
  CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(30));
  CHECK(r.stdout_text == "started\n");
  CHECK_FALSE(r.state_lost);
  if (caps.interrupt_keeps_state) {
    CHECK(r.status == ci::ExecutionStatus::kError);
    REQUIRE(r.code_error);
    // KeyboardInterrupt when the interrupt lands in the code's own frames; CancelledError when it lands while the
    // run's task is in the event loop between them (docs/backends/pyodide.md "interrupt() and restart()").
    CHECK((r.code_error->name == "KeyboardInterrupt" || r.code_error->name == "CancelledError"));
    CHECK(r.exit_code == 1);
  } else {
    check_unknown(r, "cancelled");
  }
  check_success(h.exec(prog::kPrintZ), prog::kPrintZ, "kept\n");
}

// ---- process refusals ----

CONTRACT_SCENARIO("a process call the capabilities declare unsupported refuses with command unsupported",
                  "[processes][fsvar]") {
  TestType h;
  const auto c = h.sb().capabilities();
  // A capability of one part of processes never stands without processes themselves.
  if (!c.processes) {
    CHECK_FALSE(c.process_stdin);
    CHECK_FALSE(c.process_connect);
    CHECK_FALSE(c.process_signals);
    CHECK_FALSE(c.process_list);
    CHECK(check_execution_error([&] { (void)h.sb().spawn("echo hi"); }, ci::Stage::kCommand,
                                ci::ErrorKind::kUnsupported)
              .find("spawn is not supported by ") == 0);
  }
  if (!c.process_list) {
    CHECK(check_execution_error([&] { (void)h.sb().list_processes(); }, ci::Stage::kCommand,
                                ci::ErrorKind::kUnsupported)
              .find("list_processes is not supported by ") == 0);
  } else {
    CHECK_NOTHROW((void)h.sb().list_processes());
  }
  if (!c.process_connect) {
    CHECK(check_execution_error([&] { (void)h.sb().connect_process("12"); }, ci::Stage::kCommand,
                                ci::ErrorKind::kUnsupported)
              .find("connect_process is not supported by ") == 0);
  }
}
