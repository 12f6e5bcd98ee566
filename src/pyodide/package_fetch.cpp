// list_pyodide_packages and fetch_pyodide_packages (include/code_interpreter/pyodide_packages.hpp): the lock's files
// in the package directory, checked and fetched in the host with the one HTTP client.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "code_interpreter/logging.hpp"
#include "code_interpreter/pyodide_packages.hpp"
#include "code_interpreter/pyodide_sandbox.hpp"
#include "core/digest.hpp"
#include "http/http_client.hpp"
#include "pyodide/packages.hpp"
#include "pyodide/runtime.hpp"

namespace code_interpreter {
namespace fs = std::filesystem;

namespace {

struct Resolved {
  detail::PackageLock lock;
  std::vector<const detail::LockedPackage*> closure;
  fs::path dir;
};

Resolved resolve(const std::vector<std::string>& names, const PackageFetchOptions& options) {
  for (const auto& n : names) {
    if (!detail::valid_distribution_name(n)) throw std::invalid_argument("'" + n + "' is not a valid package name");
  }
  const auto runtime = options.runtime_dir.value_or(PyodideSandbox::default_runtime_dir());
  Resolved r;
  r.lock = detail::PackageLock::read(options.package_lock.value_or(detail::runtime_lock_file(runtime)));
  if (names.empty()) {
    std::vector<std::string> all;
    for (const auto& [key, p] : r.lock.packages()) all.push_back(p.name);
    r.closure = r.lock.closure(all);
  } else {
    for (const auto& n : names) {
      if (r.lock.find(n) == nullptr) throw std::invalid_argument("unknown package '" + n + "': the lock does not hold it");
    }
    r.closure = r.lock.closure(names);
  }
  const auto dir = options.package_dir ? options.package_dir : detail::default_package_dir();
  if (!dir) {
    throw std::invalid_argument("no package directory: pass one, or set XDG_CACHE_HOME or HOME to an absolute path");
  }
  r.dir = *dir;
  return r;
}

PackageStatus status_of(const fs::path& dir, const detail::LockedPackage& p) {
  PackageStatus s{p.name, p.version, p.file_name, PackageStatus::State::kMissing};
  switch (detail::check_package_file(dir, p)) {
    case detail::PackageFileState::kOk: s.state = PackageStatus::State::kPresent; break;
    case detail::PackageFileState::kMissing: s.state = PackageStatus::State::kMissing; break;
    case detail::PackageFileState::kMismatch: s.state = PackageStatus::State::kMismatch; break;
  }
  return s;
}

// Downloads one file to `<file>.part`, resuming a part that is there, then checks it and renames it into place.
void fetch_one(const fs::path& dir, const detail::LockedPackage& p, const std::string& base_url,
               const PackageFetchOptions& options) {
  const fs::path target = dir / p.file_name;
  const fs::path part = dir / (p.file_name + ".part");
  std::error_code ec;
  std::uint64_t have = fs::is_regular_file(part, ec) ? fs::file_size(part, ec) : 0;
  if (ec || have > options.max_file_bytes) have = 0;

  std::optional<detail::Sha256> hash;
  hash.emplace();
  if (have > 0) {
    std::ifstream in(part, std::ios::binary);
    std::vector<char> buffer(std::size_t{1} << 20);
    std::uint64_t left = have;
    while (left > 0 && in) {
      in.read(buffer.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(left, buffer.size())));
      const auto got = static_cast<std::uint64_t>(in.gcount());
      hash->update(std::string_view(buffer.data(), got));
      left -= got;
      if (got == 0) break;
    }
    if (left != 0) throw std::runtime_error("'" + part.string() + "' cannot be read");
  }

  http::Request request;
  request.url = base_url + http::url_encode(p.file_name);
  request.timeout = options.file_timeout;
  request.cancel = options.cancel;
  if (have > 0) request.headers.emplace_back("Range", "bytes=" + std::to_string(have) + "-");
  std::ofstream out;
  int status = 0;
  std::uint64_t received = have;
  bool over_cap = false;
  request.on_headers = [&](int s) {
    status = s;
    if (s == 206 && have > 0) {
      out.open(part, std::ios::binary | std::ios::app);
    } else if (s == 200) {
      // The whole file again: the server ignored the Range, or there was no part.
      hash.emplace();
      received = 0;
      out.open(part, std::ios::binary | std::ios::trunc);
    }
  };
  request.on_body = [&](std::string_view piece) {
    if (!out.is_open()) return true;  // an error status's body: not kept
    if (received + piece.size() > options.max_file_bytes) {
      over_cap = true;
      return false;
    }
    out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
    if (!out) return false;
    hash->update(piece);
    received += piece.size();
    if (options.on_progress) options.on_progress(p.file_name, received, std::nullopt);
    return true;
  };
  const auto exchange = http::HttpClient::shared().perform(request);
  const bool wrote = out.is_open() && static_cast<bool>(out);
  out.close();
  const std::string what = "fetching '" + p.file_name + "' from " + base_url;
  if (over_cap) {
    fs::remove(part, ec);
    throw std::runtime_error(what + ": the file is larger than " + std::to_string(options.max_file_bytes) + " bytes");
  }
  if (!exchange.ok()) {
    // What arrived is kept for the next fetch to resume from.
    throw std::runtime_error(what + " failed after " + std::to_string(received) + " bytes (" +
                             std::string(http::to_string(exchange.failure)) + "); run the fetch again to resume");
  }
  if (status == 416 && have > 0) {
    // The part is no prefix the server can continue: start over next time.
    fs::remove(part, ec);
    throw std::runtime_error(what + ": the server refused to resume (HTTP 416); run the fetch again");
  }
  if (status == 206 && have == 0) {
    // A part of a file asked for whole: nothing to resume from, and no reason to think a retry goes otherwise.
    fs::remove(part, ec);
    throw std::runtime_error(what + ": the server answered 206 (a part) to a request for the whole file");
  }
  if (status != 200 && status != 206) {
    throw std::runtime_error(what + ": HTTP " + std::to_string(status));
  }
  if (!wrote || !exchange.body_complete) {
    throw std::runtime_error(what + ": the download ended early after " + std::to_string(received) +
                             " bytes; run the fetch again to resume");
  }
  if (hash->finish_hex() != p.sha256) {
    fs::remove(part, ec);
    throw std::runtime_error(what + ": the file does not match the SHA-256 the lock gives; it was deleted");
  }
  fs::rename(part, target, ec);
  if (ec) throw std::runtime_error(what + ": cannot move it into place: " + ec.message());
}

}  // namespace

std::vector<PackageStatus> list_pyodide_packages(const std::vector<std::string>& names,
                                                 const PackageFetchOptions& options) {
  Resolved r;
  try {
    r = resolve(names, options);
  } catch (const detail::PackageLockError& e) {
    throw std::runtime_error(e.what());
  }
  std::vector<PackageStatus> out;
  for (const auto* p : r.closure) out.push_back(status_of(r.dir, *p));
  return out;
}

std::vector<PackageStatus> fetch_pyodide_packages(const std::vector<std::string>& names,
                                                  const PackageFetchOptions& options) {
  const std::string base_url =
      options.base_url.value_or(std::string("https://cdn.jsdelivr.net/pyodide/v") + detail::kPyodideVersion + "/full/");
  if ((base_url.rfind("http://", 0) != 0 && base_url.rfind("https://", 0) != 0) || base_url.back() != '/') {
    throw std::invalid_argument("base_url must be an http:// or https:// URL ending in '/'");
  }
  Resolved r;
  try {
    r = resolve(names, options);
  } catch (const detail::PackageLockError& e) {
    throw std::runtime_error(e.what());
  }
  std::error_code ec;
  fs::create_directories(r.dir, ec);
  if (ec) throw std::runtime_error("cannot create the package directory '" + r.dir.string() + "': " + ec.message());
  std::vector<PackageStatus> out;
  for (const auto* p : r.closure) {
    auto s = status_of(r.dir, *p);
    if (s.state != PackageStatus::State::kPresent) {
      if (s.state == PackageStatus::State::kMismatch) {
        logger()->warn("package '{}': '{}' does not match the lock's SHA-256; fetching it again", p->name,
                       p->file_name);
      }
      fetch_one(r.dir, *p, base_url, options);
      s.state = PackageStatus::State::kPresent;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace code_interpreter
