// Memory snapshots (PyodideOptions::use_snapshot, snapshot_dir): the image is made once and restored by every
// runtime after; a corrupt, unusable or unwritable one means a cold load with one warning, never a failed create.
#include <catch2/catch.hpp>
#include <openssl/evp.h>
#include <spdlog/sinks/ostream_sink.h>

#include "code_interpreter/logging.hpp"

#include <cstdlib>
#include <sstream>

#include "pyodide_test_support.hpp"

namespace fs = std::filesystem;
using test_support::text_of;

namespace {

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  REQUIRE(EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) == 1);
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

// The snapshot files in `dir`.
std::vector<fs::path> images(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

// What the library logs while `f` runs.
template <class F>
std::string captured_log(F&& f) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto logger = std::make_shared<spdlog::logger>("capture", sink);
  logger->set_level(spdlog::level::warn);
  ci::set_logger(logger);
  try {
    f();
  } catch (...) {
    ci::set_logger(nullptr);
    throw;
  }
  ci::set_logger(nullptr);
  return captured.str();
}

long count_of(const std::string& text, const std::string& what) {
  long n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

ci::PyodideOptions in(const fs::path& dir) {
  ci::PyodideOptions o;
  o.snapshot_dir = dir;
  return o;
}

}  // namespace

TEST_CASE("the first sandbox makes the snapshot, the next restore it, and every one draws its own random numbers",
          "[snapshot]") {
  test_support::TempDir dir;
  std::string first_random;
  const auto log = captured_log([&] {
    auto a = ci::PyodideSandbox::create(in(dir.path()));
    first_random = text_of(a->execute_code("import random\nrandom.random()"));
  });
  CHECK(log.empty());
  const auto files = images(dir.path());
  REQUIRE(files.size() == 1);
  const auto name = files[0].filename().string();
  CHECK(name.size() == std::string("snapshot-.bin").size() + 64);
  CHECK(name.rfind("snapshot-", 0) == 0);
  // The file: magic, the image's SHA-256, padding to 80 bytes, the image (about 30 MiB).
  const auto bytes = test_support::read_text(files[0]);
  REQUIRE(bytes.size() > (std::size_t{16} << 20));
  CHECK(bytes.substr(0, 8) == "CISNAP1 ");
  CHECK(bytes.substr(8, 64) == sha256_hex(bytes.substr(80)));
  CHECK(bytes.substr(72, 8) == "       \n");
  const auto written = fs::last_write_time(files[0]);

  auto b = ci::PyodideSandbox::create(in(dir.path()));
  auto c = ci::PyodideSandbox::create(in(dir.path()));
  const auto rb = text_of(b->execute_code("import random\nrandom.random()"));
  const auto rc = text_of(c->execute_code("import random\nrandom.random()"));
  CHECK(rb != rc);
  CHECK(rb != first_random);
  // Restored, not made again; and a restored runtime is a whole Python with /files and the state of its own.
  CHECK(fs::last_write_time(files[0]) == written);
  CHECK(text_of(b->execute_code("import os, sys\nx = 7\n(sys.version_info[:2], os.path.isdir('/files'))")) ==
        "((3, 14), True)");
  CHECK(text_of(c->execute_code("'x' in globals()")) == "False");
  CHECK(b->confinement().realm == (std::getenv("CODE_INTERPRETER_TEST_CONFINEMENT") == nullptr ||
                                   std::string(std::getenv("CODE_INTERPRETER_TEST_CONFINEMENT")) != "kernel-only"));
}

TEST_CASE("a snapshot whose bytes do not match its digest is made again, with one warning", "[snapshot]") {
  test_support::TempDir dir;
  { auto a = ci::PyodideSandbox::create(in(dir.path())); }
  const auto file = images(dir.path()).at(0);
  auto bytes = test_support::read_text(file);
  bytes[bytes.size() / 2] ^= 0x5a;
  { std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes; }
  std::unique_ptr<ci::PyodideSandbox> b;
  const auto log = captured_log([&] { b = ci::PyodideSandbox::create(in(dir.path())); });
  CHECK(count_of(log, "does not check; making it again") == 1);
  CHECK(count_of(log, "[warning]") == 1);
  CHECK(text_of(b->execute_code("6 * 7")) == "42");
  const auto again = test_support::read_text(file);
  CHECK(again != bytes);
  CHECK(again.substr(8, 64) == sha256_hex(again.substr(80)));
}

TEST_CASE("an image that checks but cannot be restored falls back to a cold load and is removed", "[snapshot]") {
  test_support::TempDir dir;
  { auto a = ci::PyodideSandbox::create(in(dir.path())); }
  const auto file = images(dir.path()).at(0);
  // Well formed, with a correct digest, but not a Pyodide memory image (as after a Pyodide build change under the
  // same key): only restoring it can tell.
  const std::string image(std::size_t{1} << 20, 'z');
  { std::ofstream(file, std::ios::binary | std::ios::trunc) << "CISNAP1 " << sha256_hex(image) << "       \n" << image; }
  std::unique_ptr<ci::PyodideSandbox> b;
  const auto log = captured_log([&] { b = ci::PyodideSandbox::create(in(dir.path())); });
  CHECK(count_of(log, "failed (") == 1);
  CHECK(count_of(log, "loading cold from now on") == 1);
  CHECK(count_of(log, "[warning]") == 1);
  CHECK_FALSE(fs::exists(file));
  CHECK(text_of(b->execute_code("6 * 7")) == "42");
  // The next sandbox makes it again.
  auto c = ci::PyodideSandbox::create(in(dir.path()));
  CHECK(fs::exists(file));
  CHECK(text_of(c->execute_code("6 * 7")) == "42");
}

TEST_CASE("an unwritable snapshot directory means cold loads with one warning", "[snapshot]") {
  test_support::TempDir dir;
  const auto blocker = dir.path() / "a-file";
  { std::ofstream(blocker) << "not a directory"; }
  std::unique_ptr<ci::PyodideSandbox> sb;
  const auto log = captured_log([&] { sb = ci::PyodideSandbox::create(in(blocker / "cache")); });
  CHECK(count_of(log, "cannot make a snapshot in") == 1);
  CHECK(count_of(log, "every runtime loads cold") == 1);
  CHECK(count_of(log, "[warning]") == 1);
  CHECK(text_of(sb->execute_code("6 * 7")) == "42");
  CHECK(images(dir.path()).size() == 1);  // only the blocker
}

#if CI_TEST_BASE_SNAPSHOT
namespace {

// The base image the build made beside the runtime (tools/make_snapshot.cpp).
fs::path base_image() {
  const auto image = test_support::installed_snapshot(CI_TEST_RUNTIME_DIR);
  REQUIRE(!image.empty());
  return image;
}

// A copy of the runtime directory (test_support::RuntimeCopy, at `below` in its directory) whose base image is
// `contents`, or absent when nullopt.
struct ImageCopy {
  test_support::RuntimeCopy runtime;
  fs::path dir;
  fs::path image;
  explicit ImageCopy(const std::optional<std::string>& contents, const fs::path& below = {})
      : runtime(below), dir(runtime.dir()), image(dir / base_image().filename()) {
    if (contents) runtime.rewrite(image.filename(), *contents);
    else fs::remove(image);  // a hard link: the original stays
  }
};

// The files under `dir`, recursively (none when it does not exist).
std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file()) out.push_back(it->path());
  }
  return out;
}

}  // namespace

TEST_CASE("the build installs a base image beside the runtime, which sandboxes restore and never write",
          "[snapshot]") {
  const auto image = base_image();
  const auto bytes = test_support::read_text(image);
  REQUIRE(bytes.size() > (std::size_t{16} << 20));
  CHECK(bytes.substr(0, 8) == "CISNAP1 ");
  CHECK(bytes.substr(8, 64) == sha256_hex(bytes.substr(80)));
  const auto written = fs::last_write_time(image);
  test_support::TempDir home;
  test_support::ScopedEnv home_env("HOME", home.path().string());
  test_support::ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  std::unique_ptr<ci::PyodideSandbox> a, b;
  const auto log = captured_log([&] {
    a = ci::PyodideSandbox::create();
    b = ci::PyodideSandbox::create();
  });
  CHECK(log.empty());
  // Restored from the installed image: nothing was made in the user's cache.
  CHECK(files_under(home.path()).empty());
  CHECK(text_of(a->execute_code("import os\nx = 1\nos.path.isdir('/files')")) == "True");
  CHECK(text_of(b->execute_code("'x' in globals()")) == "False");
  CHECK(text_of(a->execute_code("import random\nrandom.random()")) !=
        text_of(b->execute_code("import random\nrandom.random()")));
  CHECK(fs::last_write_time(image) == written);
  // An explicit snapshot_dir is the caller's choice: the image is made there, not taken from beside the runtime.
  test_support::TempDir dir;
  auto c = ci::PyodideSandbox::create(in(dir.path()));
  REQUIRE(images(dir.path()).size() == 1);
  CHECK(images(dir.path())[0].filename() == image.filename());
}

TEST_CASE("with neither HOME nor XDG_CACHE_HOME set the base image serves, and without one the sandbox loads cold "
          "with one warning",
          "[snapshot]") {
  test_support::ScopedEnv home("HOME", std::nullopt);
  test_support::ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  std::unique_ptr<ci::PyodideSandbox> sb;
  auto log = captured_log([&] { sb = ci::PyodideSandbox::create(); });
  CHECK(log.empty());
  CHECK(text_of(sb->execute_code("6 * 7")) == "42");

  ImageCopy bare(std::nullopt);
  ci::PyodideOptions o;
  o.runtime_dir = bare.dir;
  log = captured_log([&] { sb = ci::PyodideSandbox::create(o); });
  CHECK(count_of(log, "no snapshot cache directory") == 1);
  CHECK(count_of(log, "[warning]") == 1);
  CHECK(text_of(sb->execute_code("6 * 7")) == "42");
}

TEST_CASE("an installed image that does not check is left as it is, and the cache serves, with one warning",
          "[snapshot]") {
  auto corrupt = test_support::read_text(base_image());
  corrupt[corrupt.size() / 2] ^= 0x5a;
  ImageCopy copy(corrupt);
  test_support::TempDir cache;
  test_support::ScopedEnv xdg("XDG_CACHE_HOME", cache.path().string());
  ci::PyodideOptions o;
  o.runtime_dir = copy.dir;
  std::unique_ptr<ci::PyodideSandbox> sb;
  const auto log = captured_log([&] { sb = ci::PyodideSandbox::create(o); });
  CHECK(count_of(log, "does not check or failed to restore; using the cache directory instead") == 1);
  CHECK(count_of(log, "[warning]") == 1);
  CHECK(text_of(sb->execute_code("6 * 7")) == "42");
  CHECK(test_support::read_text(copy.image) == corrupt);
  // The cache holds an image made now, under the same name.
  const auto made = files_under(cache.path());
  REQUIRE(made.size() == 1);
  CHECK(made[0].filename() == copy.image.filename());
}

TEST_CASE("an installed image that checks but cannot be restored is kept, and later sandboxes use the cache",
          "[snapshot]") {
  const std::string garbage(std::size_t{1} << 20, 'z');
  const std::string file = "CISNAP1 " + sha256_hex(garbage) + "       \n" + garbage;
  ImageCopy copy(file);
  test_support::TempDir cache;
  test_support::ScopedEnv xdg("XDG_CACHE_HOME", cache.path().string());
  ci::PyodideOptions o;
  o.runtime_dir = copy.dir;
  std::unique_ptr<ci::PyodideSandbox> a, b;
  auto log = captured_log([&] { a = ci::PyodideSandbox::create(o); });
  CHECK(count_of(log, "failed (") == 1);
  CHECK(count_of(log, "loading cold from now on") == 1);
  CHECK(count_of(log, "[warning]") == 1);
  CHECK(text_of(a->execute_code("6 * 7")) == "42");
  CHECK(test_support::read_text(copy.image) == file);
  CHECK(files_under(cache.path()).empty());
  log = captured_log([&] { b = ci::PyodideSandbox::create(o); });
  CHECK(count_of(log, "does not check or failed to restore; using the cache directory instead") == 1);
  CHECK(count_of(log, "[warning]") == 1);
  CHECK(text_of(b->execute_code("6 * 7")) == "42");
  CHECK(files_under(cache.path()).size() == 1);
  CHECK(test_support::read_text(copy.image) == file);
}
TEST_CASE("an installed image that does not check, with no other cache directory, means cold loads, one warning "
          "and no write",
          "[snapshot]") {
  auto corrupt = test_support::read_text(base_image());
  corrupt[corrupt.size() / 2] ^= 0x5a;
  ci::PyodideOptions o;
  std::unique_ptr<ci::PyodideSandbox> sb;
  SECTION("neither HOME nor XDG_CACHE_HOME") {
    ImageCopy copy(corrupt);
    o.runtime_dir = copy.dir;
    test_support::ScopedEnv home("HOME", std::nullopt);
    test_support::ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    const auto log = captured_log([&] { sb = ci::PyodideSandbox::create(o); });
    CHECK(count_of(log, "there is no other cache directory: every runtime loads cold") == 1);
    CHECK(count_of(log, "[warning]") == 1);
    CHECK(text_of(sb->execute_code("6 * 7")) == "42");
    CHECK(test_support::read_text(copy.image) == corrupt);
  }
  SECTION("the cache directory is the runtime directory itself") {
    // XDG_CACHE_HOME/code_interpreter/pyodide is the copy: making the cache's image would rewrite the installed one.
    ImageCopy copy(corrupt, fs::path("code_interpreter") / "pyodide");
    o.runtime_dir = copy.dir;
    test_support::ScopedEnv xdg("XDG_CACHE_HOME", copy.runtime.top().string());
    const auto log = captured_log([&] { sb = ci::PyodideSandbox::create(o); });
    CHECK(count_of(log, "there is no other cache directory: every runtime loads cold") == 1);
    CHECK(count_of(log, "[warning]") == 1);
    CHECK(text_of(sb->execute_code("6 * 7")) == "42");
    CHECK(test_support::read_text(copy.image) == corrupt);
  }
}

TEST_CASE("make_snapshot restores the image it finds, makes a bad one again and removes stale files", "[snapshot]") {
  const std::string garbage(std::size_t{1} << 20, 'z');
  ImageCopy copy("CISNAP1 " + sha256_hex(garbage) + "       \n" + garbage);
  const auto key_name = copy.image.filename().string();
  const fs::path stale = copy.dir / "snapshot-0000000000000000000000000000000000000000000000000000000000000000.bin";
  const fs::path partial = copy.dir / (key_name + ".part-1a2b3c4d");
  const fs::path other = copy.dir / "notes.txt";
  for (const auto& f : {stale, partial, other}) std::ofstream(f) << "x";
  const std::string command = std::string(CI_TEST_MAKE_SNAPSHOT) + " " + copy.dir.string() + " >/dev/null 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  const auto made = test_support::read_text(copy.image);
  REQUIRE(made.size() > (std::size_t{16} << 20));
  CHECK(made.substr(8, 64) == sha256_hex(made.substr(80)));
  CHECK_FALSE(fs::exists(stale));
  CHECK_FALSE(fs::exists(partial));
  CHECK(fs::exists(other));
  // A current image is restored and kept as it is.
  const auto written = fs::last_write_time(copy.image);
  REQUIRE(std::system(command.c_str()) == 0);
  CHECK(fs::last_write_time(copy.image) == written);
}
#else
TEST_CASE("with neither HOME nor XDG_CACHE_HOME set the sandbox loads cold with one warning", "[snapshot]") {
  test_support::ScopedEnv home("HOME", std::nullopt);
  test_support::ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  std::unique_ptr<ci::PyodideSandbox> sb;
  const auto log = captured_log([&] { sb = ci::PyodideSandbox::create(); });
  CHECK(count_of(log, "no snapshot cache directory") == 1);
  CHECK(count_of(log, "[warning]") == 1);
  CHECK(text_of(sb->execute_code("6 * 7")) == "42");
}
#endif

TEST_CASE("use_snapshot false loads cold and writes no image", "[snapshot]") {
  test_support::TempDir dir;
  auto o = in(dir.path());
  o.use_snapshot = false;
  auto sb = ci::PyodideSandbox::create(o);
  CHECK(text_of(sb->execute_code("6 * 7")) == "42");
  CHECK(images(dir.path()).empty());
}

TEST_CASE("a runtime killed after a timeout comes back restored, with a fresh state and its own random numbers",
          "[snapshot]") {
  test_support::TempDir dir;
  auto o = in(dir.path());
  o.interrupt_grace = std::chrono::milliseconds(0);
  auto sb = ci::PyodideSandbox::create(o);
  const auto before = text_of(sb->execute_code("import random\nkept = 1\nrandom.random()"));
  ci::ExecuteOptions t;
  t.timeout = std::chrono::milliseconds(300);
  const auto r = sb->execute_code("while True: pass", t);
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  CHECK(r.state_lost);
  CHECK(text_of(sb->execute_code("'kept' in globals()")) == "False");
  CHECK(text_of(sb->execute_code("import random\nrandom.random()")) != before);
  CHECK(images(dir.path()).size() == 1);
}

TEST_CASE("a relative snapshot_dir is taken from the working directory, and its image restores", "[snapshot]") {
  test_support::TempDir dir;
  const auto cwd = fs::current_path();
  fs::current_path(dir.path());
  ci::PyodideOptions o;
  o.snapshot_dir = "relative-cache";
  std::unique_ptr<ci::PyodideSandbox> a, b;
  std::string log;
  try {
    log = captured_log([&] {
      a = ci::PyodideSandbox::create(o);
      b = ci::PyodideSandbox::create(o);
    });
  } catch (...) {
    fs::current_path(cwd);
    throw;
  }
  fs::current_path(cwd);
  CHECK(log.empty());  // made once and restored: no restore failed
  CHECK(images(dir.path() / "relative-cache").size() == 1);
  CHECK(text_of(b->execute_code("6 * 7")) == "42");
}
