// fetch_pyodide_packages and list_pyodide_packages against a local HTTP server standing in for Pyodide's release
// location: the closure fetched, files kept when they match, resume after a cut, and every fault refused by name.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "code_interpreter/pyodide_packages.hpp"
#include "core/digest.hpp"
#include "local_http_server.hpp"

namespace fs = std::filesystem;
using code_interpreter::PackageFetchOptions;
using code_interpreter::PackageStatus;
using code_interpreter::test::LocalHttpServer;
using code_interpreter::test::ServerConnection;

namespace {

// Wheels as the server holds them: name -> bytes (the lock's SHA-256 is computed from these).
const std::map<std::string, std::string> kFiles = {
    {"app", std::string(3000, 'A') + "app wheel"},
    {"base", std::string(5000, 'B') + "base wheel"},
    {"a", "cycle a"},
    {"b", "cycle b"},
};

std::string file_name(const std::string& name) { return name + "-1.0-py3-none-any.whl"; }

struct Fixture {
  fs::path dir;
  fs::path packages;
  fs::path lock;
  Fixture() {
    char pattern[] = "/tmp/ci-fetch-XXXXXX";
    dir = ::mkdtemp(pattern);
    packages = dir / "packages";
    lock = dir / "lock.json";
    auto entry = [](const std::string& name, const std::string& depends, std::string sha = {}) {
      if (sha.empty()) sha = code_interpreter::detail::sha256_hex(kFiles.count(name) ? kFiles.at(name) : "");
      return "\"" + name + "\": {\"name\": \"" + name + "\", \"version\": \"1.0\", \"file_name\": \"" +
             file_name(name) + "\", \"sha256\": \"" + sha + "\", \"depends\": [" + depends + "]}";
    };
    std::ofstream(lock) << "{\"packages\": {" << entry("app", "\"base\"") << ", " << entry("base", "") << ", "
                        << entry("a", "\"b\"") << ", " << entry("b", "\"a\"") << ", " << entry("gone", "") << ", "
                        << entry("liar", "", std::string(64, 'c')) << "}}";
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  PackageFetchOptions options(const LocalHttpServer& server) const {
    PackageFetchOptions o;
    o.package_dir = packages;
    o.package_lock = lock;
    o.base_url = server.url("/full/");
    return o;
  }
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Serves kFiles under /full/, honouring "Range: bytes=N-" with a 206; "liar" gets bytes the lock does not hash.
void serve(ServerConnection& c, LocalHttpServer& server) {
  while (auto r = c.read_request()) {
    server.record(*r);
    std::string name = r->target.substr(std::string("/full/").size());
    name = name.substr(0, name.find('-'));
    if (name == "liar") {
      c.respond(200, "not what the lock hashes");
      continue;
    }
    if (!kFiles.count(name)) {
      c.respond(404, "no such file");
      continue;
    }
    const auto& bytes = kFiles.at(name);
    if (auto range = r->headers.find("range"); range != r->headers.end()) {
      const auto from = std::stoul(range->second.substr(std::string("bytes=").size()));
      c.respond(206, bytes.substr(from),
                "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(bytes.size() - 1) + "/" +
                    std::to_string(bytes.size()) + "\r\n");
      continue;
    }
    c.respond(200, bytes);
  }
}

std::vector<std::string> targets(const LocalHttpServer& server) {
  std::vector<std::string> out;
  for (const auto& r : server.requests()) out.push_back(r.target);
  return out;
}

std::string failure(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no failure";
}

}  // namespace

TEST_CASE("fetch downloads a package and its dependencies, dependencies first, each checked", "[packages]") {
  Fixture fx;
  LocalHttpServer* self = nullptr;
  LocalHttpServer server([&](ServerConnection& c, int) { serve(c, *self); });
  self = &server;
  const auto statuses = code_interpreter::fetch_pyodide_packages({"APP"}, fx.options(server));
  REQUIRE(statuses.size() == 2);
  CHECK(statuses[0].name == "base");
  CHECK(statuses[1].name == "app");
  CHECK(statuses[0].state == PackageStatus::State::kPresent);
  CHECK(statuses[1].state == PackageStatus::State::kPresent);
  CHECK(read(fx.packages / file_name("app")) == kFiles.at("app"));
  CHECK(read(fx.packages / file_name("base")) == kFiles.at("base"));
  CHECK(targets(server) == std::vector<std::string>{"/full/" + file_name("base"), "/full/" + file_name("app")});
  CHECK_FALSE(fs::exists(fx.packages / (file_name("app") + ".part")));
}

TEST_CASE("fetch keeps a file that matches the lock and asks the server for nothing", "[packages]") {
  Fixture fx;
  LocalHttpServer* self = nullptr;
  LocalHttpServer server([&](ServerConnection& c, int) { serve(c, *self); });
  self = &server;
  (void)code_interpreter::fetch_pyodide_packages({"base"}, fx.options(server));
  const auto again = code_interpreter::fetch_pyodide_packages({"base"}, fx.options(server));
  CHECK(again.at(0).state == PackageStatus::State::kPresent);
  CHECK(server.requests().size() == 1);
}

TEST_CASE("a dependency cycle is fetched once per member", "[packages]") {
  Fixture fx;
  LocalHttpServer* self = nullptr;
  LocalHttpServer server([&](ServerConnection& c, int) { serve(c, *self); });
  self = &server;
  const auto statuses = code_interpreter::fetch_pyodide_packages({"a"}, fx.options(server));
  REQUIRE(statuses.size() == 2);
  CHECK(statuses[0].name == "b");
  CHECK(statuses[1].name == "a");
  CHECK(targets(server) == std::vector<std::string>{"/full/" + file_name("b"), "/full/" + file_name("a")});
}

TEST_CASE("a file the server does not have is an error naming it and the status, and leaves nothing", "[packages]") {
  Fixture fx;
  LocalHttpServer* self = nullptr;
  LocalHttpServer server([&](ServerConnection& c, int) { serve(c, *self); });
  self = &server;
  const auto options = fx.options(server);
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"gone"}, options); }) ==
        "fetching '" + file_name("gone") + "' from " + server.url("/full/") + ": HTTP 404");
  CHECK_FALSE(fs::exists(fx.packages / file_name("gone")));
  CHECK_FALSE(fs::exists(fx.packages / (file_name("gone") + ".part")));
}

TEST_CASE("a downloaded file that does not match the lock's SHA-256 is deleted, never put in place", "[packages]") {
  Fixture fx;
  LocalHttpServer* self = nullptr;
  LocalHttpServer server([&](ServerConnection& c, int) { serve(c, *self); });
  self = &server;
  const auto options = fx.options(server);
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"liar"}, options); }) ==
        "fetching '" + file_name("liar") + "' from " + server.url("/full/") +
            ": the file does not match the SHA-256 the lock gives; it was deleted");
  CHECK_FALSE(fs::exists(fx.packages / file_name("liar")));
  CHECK_FALSE(fs::exists(fx.packages / (file_name("liar") + ".part")));
}

TEST_CASE("a download cut mid-file keeps what arrived, and the next fetch resumes from there", "[packages]") {
  Fixture fx;
  const auto& bytes = kFiles.at("base");
  LocalHttpServer* self = nullptr;
  LocalHttpServer server([&](ServerConnection& c, int index) {
    if (index == 0) {
      auto r = c.read_request();
      self->record(*r);
      c.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(bytes.size()) + "\r\n\r\n" + bytes.substr(0, 2000));
      return;  // the connection closes 2000 bytes in
    }
    serve(c, *self);
  });
  self = &server;
  const auto options = fx.options(server);
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"base"}, options); }) ==
        "fetching '" + file_name("base") + "' from " + server.url("/full/") +
            " failed after 2000 bytes (receive); run the fetch again to resume");
  CHECK(read(fx.packages / (file_name("base") + ".part")) == bytes.substr(0, 2000));
  CHECK(code_interpreter::list_pyodide_packages({"base"}, options).at(0).state == PackageStatus::State::kMissing);

  std::vector<std::uint64_t> progress;
  auto resumed = options;
  resumed.on_progress = [&](const std::string& file, std::uint64_t received, std::optional<std::uint64_t>) {
    CHECK(file == file_name("base"));
    progress.push_back(received);
  };
  (void)code_interpreter::fetch_pyodide_packages({"base"}, resumed);
  CHECK(read(fx.packages / file_name("base")) == bytes);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].headers.at("range") == "bytes=2000-");
  REQUIRE_FALSE(progress.empty());
  CHECK(progress.front() > 2000);
  CHECK(progress.back() == bytes.size());
}

TEST_CASE("a server that ignores the Range gets the whole file written afresh", "[packages]") {
  Fixture fx;
  const auto& bytes = kFiles.at("base");
  fs::create_directories(fx.packages);
  std::ofstream(fx.packages / (file_name("base") + ".part"), std::ios::binary) << "garbage that is no prefix";
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (auto r = c.read_request()) c.respond(200, bytes);
  });
  (void)code_interpreter::fetch_pyodide_packages({"base"}, fx.options(server));
  CHECK(read(fx.packages / file_name("base")) == bytes);
}

TEST_CASE("a file past max_file_bytes is refused as it arrives and nothing is kept", "[packages]") {
  Fixture fx;
  LocalHttpServer* self = nullptr;
  LocalHttpServer server([&](ServerConnection& c, int) { serve(c, *self); });
  self = &server;
  auto options = fx.options(server);
  options.max_file_bytes = 4096;
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"base"}, options); }) ==
        "fetching '" + file_name("base") + "' from " + server.url("/full/") +
            ": the file is larger than 4096 bytes");
  CHECK_FALSE(fs::exists(fx.packages / (file_name("base") + ".part")));
  CHECK_FALSE(fs::exists(fx.packages / file_name("base")));
}

TEST_CASE("list reports each package of the closure as present, missing or mismatched", "[packages]") {
  Fixture fx;
  fs::create_directories(fx.packages);
  std::ofstream(fx.packages / file_name("base"), std::ios::binary) << kFiles.at("base");
  std::ofstream(fx.packages / file_name("app"), std::ios::binary) << "tampered";
  PackageFetchOptions o;
  o.package_dir = fx.packages;
  o.package_lock = fx.lock;
  const auto statuses = code_interpreter::list_pyodide_packages({"app", "a"}, o);
  REQUIRE(statuses.size() == 4);
  CHECK(statuses[0].name == "base");
  CHECK(statuses[0].state == PackageStatus::State::kPresent);
  CHECK(statuses[1].name == "app");
  CHECK(statuses[1].state == PackageStatus::State::kMismatch);
  CHECK(statuses[2].name == "b");
  CHECK(statuses[2].state == PackageStatus::State::kMissing);
  CHECK(statuses[3].name == "a");
  CHECK(code_interpreter::list_pyodide_packages({}, o).size() == 6);
}

TEST_CASE("an unknown or invalid name and a bad base_url are refused before any request", "[packages]") {
  Fixture fx;
  PackageFetchOptions o;
  o.package_dir = fx.packages;
  o.package_lock = fx.lock;
  o.base_url = "http://127.0.0.1:9/full/";
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"nope"}, o); }) ==
        "unknown package 'nope': the lock does not hold it");
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"../x"}, o); }) ==
        "'../x' is not a valid package name");
  o.base_url = "ftp://mirror/full/";
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"base"}, o); }) ==
        "base_url must be an http:// or https:// URL ending in '/'");
  o.base_url = "https://mirror/full";
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"base"}, o); }) ==
        "base_url must be an http:// or https:// URL ending in '/'");
  CHECK_FALSE(fs::exists(fx.packages));
}

TEST_CASE("a 206 answer to a request for the whole file is refused and leaves nothing", "[packages]") {
  Fixture fx;
  LocalHttpServer server([&](ServerConnection& c, int) {
    while (auto r = c.read_request()) c.respond(206, kFiles.at("base").substr(10), "Content-Range: bytes 10-99/100\r\n");
  });
  const auto options = fx.options(server);
  CHECK(failure([&] { (void)code_interpreter::fetch_pyodide_packages({"base"}, options); }) ==
        "fetching '" + file_name("base") + "' from " + server.url("/full/") +
            ": the server answered 206 (a part) to a request for the whole file");
  CHECK_FALSE(fs::exists(fx.packages / (file_name("base") + ".part")));
  CHECK_FALSE(fs::exists(fx.packages / file_name("base")));
}
