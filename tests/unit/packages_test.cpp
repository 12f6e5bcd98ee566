// The package lock (src/pyodide/packages.*): reading pyodide-lock.json, resolving a request's dependency closure,
// and checking files against the lock's SHA-256.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "pyodide/packages.hpp"

namespace pkg = code_interpreter::detail;

namespace {

std::string entry(const std::string& name, const std::string& depends, const std::string& sha = std::string(64, 'a')) {
  return "\"" + name + "\": {\"name\": \"" + name + "\", \"version\": \"1.0\", \"file_name\": \"" + name +
         "-1.0-py3-none-any.whl\", \"sha256\": \"" + sha + "\", \"depends\": [" + depends + "]}";
}

std::string lock_of(const std::vector<std::string>& entries) {
  std::string out = "{\"info\": {}, \"packages\": {";
  for (std::size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + entries[i];
  return out + "}}";
}

std::vector<std::string> names(const std::vector<const pkg::LockedPackage*>& packages) {
  std::vector<std::string> out;
  for (const auto* p : packages) out.push_back(p->name);
  return out;
}

std::string refusal(const std::string& text) {
  try {
    (void)pkg::PackageLock::parse(text);
  } catch (const pkg::PackageLockError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("names are compared as PEP 503 normalizes them", "[packages]") {
  CHECK(pkg::normalize_distribution("Python-Dateutil") == "python_dateutil");
  CHECK(pkg::normalize_distribution("zope.interface") == "zope_interface");
  CHECK(pkg::normalize_distribution("a-_.b") == "a_b");
  CHECK(pkg::valid_distribution_name("numpy"));
  CHECK_FALSE(pkg::valid_distribution_name(""));
  CHECK_FALSE(pkg::valid_distribution_name("../x"));
  CHECK_FALSE(pkg::valid_distribution_name(std::string(201, 'a')));
}

TEST_CASE("the closure puts every package after its dependencies, each once", "[packages]") {
  const auto lock = pkg::PackageLock::parse(lock_of({entry("matplotlib", "\"numpy\", \"pyparsing\""),
                                                    entry("numpy", ""), entry("pyparsing", ""),
                                                    entry("pandas", "\"numpy\", \"python-dateutil\""),
                                                    entry("python-dateutil", "\"six\""), entry("six", "")}));
  CHECK(names(lock.closure({"pandas", "Matplotlib"})) ==
        std::vector<std::string>{"numpy", "six", "python-dateutil", "pandas", "pyparsing", "matplotlib"});
  CHECK(names(lock.closure({"six", "six"})) == std::vector<std::string>{"six"});
  CHECK(lock.find("PYTHON_DATEUTIL")->name == "python-dateutil");
  CHECK(lock.find("scipy") == nullptr);
}

TEST_CASE("a dependency cycle is cut where it closes, and every member is still loaded once", "[packages]") {
  const auto lock = pkg::PackageLock::parse(lock_of({entry("a", "\"b\""), entry("b", "\"c\""), entry("c", "\"a\"")}));
  CHECK(names(lock.closure({"a"})) == std::vector<std::string>{"c", "b", "a"});
  CHECK(names(lock.closure({"b", "a"})) == std::vector<std::string>{"a", "c", "b"});
}

TEST_CASE("an unknown name in a request is refused by name", "[packages]") {
  const auto lock = pkg::PackageLock::parse(lock_of({entry("numpy", "")}));
  try {
    (void)lock.closure({"numpy", "no-such"});
    FAIL("resolved");
  } catch (const pkg::PackageLockError& e) {
    CHECK(std::string(e.what()) == "unknown package 'no-such'");
  }
}

TEST_CASE("a lock that is not one is refused naming the package and the field", "[packages]") {
  CHECK(refusal("not json") == "pyodide-lock.json: not a JSON document");
  CHECK(refusal("{\"info\": {}}") == "pyodide-lock.json: no 'packages' object");
  CHECK(refusal(lock_of({entry("a", "\"ghost\"")})) ==
        "pyodide-lock.json: package 'a' depends on 'ghost', which the lock does not hold");
  CHECK(refusal(lock_of({entry("a", "", "ABC")})) ==
        "pyodide-lock.json: package 'a' has a sha256 that is not 64 lowercase hex digits");
  CHECK(refusal(R"({"packages": {"a": {"name": "a", "version": "1", "file_name": "../../etc/passwd", "sha256": ")" +
                std::string(64, 'a') + "\"}}}") ==
        "pyodide-lock.json: package 'a' has a file_name that is not a plain file name");
  CHECK(refusal(R"({"packages": {"a": {"name": "a", "file_name": "a.whl", "sha256": ")" + std::string(64, 'a') +
                "\"}}}") == "pyodide-lock.json: package 'a' has no string 'version'");
  CHECK(refusal(R"({"packages": {"a": {"name": "a b", "version": "1", "file_name": "a.whl", "sha256": ")" +
                std::string(64, 'a') + "\"}}}") == "pyodide-lock.json: package 'a' has an invalid name");
  CHECK(refusal(lock_of({entry("a", ""), "\"A\": {\"name\": \"A\", \"version\": \"1\", \"file_name\": \"x.whl\", "
                                        "\"sha256\": \"" + std::string(64, 'b') + "\"}"})) ==
        "pyodide-lock.json: package 'a' is named twice");
  CHECK(refusal(R"({"packages": {"a\tb": {"name": "a", "version": "1\tpresent", "file_name": "a.whl", "sha256": ")" +
                std::string(64, 'a') + "\"}}}") ==
        "pyodide-lock.json: package 'a?b' has a version with a control character");
  CHECK(refusal(R"({"packages": {"a": {"name": "a", "version": "1", "file_name": "a.whl\u001b]0;x", "sha256": ")" +
                std::string(64, 'a') + "\"}}}") ==
        "pyodide-lock.json: package 'a' has a file_name that is not a plain file name");
  CHECK(refusal(lock_of({"\"a\": {\"name\": \"a\", \"version\": \"1\", \"file_name\": \"a.whl\", \"sha256\": \"" +
                         std::string(64, 'a') + "\", \"depends\": \"b\"}"})) ==
        "pyodide-lock.json: package 'a' has a 'depends' that is not a list");
}

TEST_CASE("a package file is checked whole against the lock's SHA-256", "[packages]") {
  char pattern[] = "/tmp/ci-packages-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  const std::string bytes = "PK\x03\x04 not really a wheel, but bytes to hash";
  std::ofstream(dir / "good-1.0-py3-none-any.whl", std::ios::binary) << bytes;
  std::ofstream(dir / "bad-1.0-py3-none-any.whl", std::ios::binary) << bytes << "!";
  const auto sha = pkg::sha256_hex(bytes);
  const auto lock = pkg::PackageLock::parse(lock_of({entry("good", "", sha), entry("bad", "", sha),
                                                    entry("gone", "", sha)}));
  CHECK(pkg::check_package_file(dir, *lock.find("good")) == pkg::PackageFileState::kOk);
  CHECK(pkg::check_package_file(dir, *lock.find("bad")) == pkg::PackageFileState::kMismatch);
  CHECK(pkg::check_package_file(dir, *lock.find("gone")) == pkg::PackageFileState::kMissing);
  CHECK(pkg::sha256_file_hex(dir / "good-1.0-py3-none-any.whl") == sha);
  CHECK(pkg::sha256_file_hex(dir / "absent") == std::nullopt);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the runtime's own lock reads, and its numpy entry is what the lock file says", "[packages]") {
  const auto lock = pkg::PackageLock::read(pkg::runtime_lock_file(CI_TEST_RUNTIME_DIR));
  CHECK(lock.packages().size() == 357);
  const auto* numpy = lock.find("numpy");
  REQUIRE(numpy != nullptr);
  CHECK(numpy->file_name == "numpy-2.4.6-cp314-cp314-pyemscripten_2026_0_wasm32.whl");
  CHECK(numpy->sha256 == "a292c1f5d7d8a2208cd5e94fc467604c131cabcd2fc14fed6eefde121e7fabdf");
  CHECK(names(lock.closure({"matplotlib"})).size() == 12);
}
