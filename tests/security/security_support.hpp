// Helpers of the security battery (docs/security.md): the hostile programs' shared Python prelude, and host-side
// observers (the runtime's pid, its CPU time, its private directory, loopback listeners) that check a program's
// claims against what really happened outside it.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pyodide_test_support.hpp"

namespace security {

namespace fs = std::filesystem;

/// Which confinement the run was started in: CODE_INTERPRETER_TEST_CONFINEMENT ("" and "full" mean both layers).
inline std::string confinement_mode() {
  const char* v = std::getenv("CODE_INTERPRETER_TEST_CONFINEMENT");
  const std::string mode = v ? v : "";
  return mode.empty() ? "full" : mode;
}

/// A fresh sandbox for one hostile program: restored from the snapshot, or loaded cold when the run has
/// CI_TEST_COLD_START=1 (the security.cold.* registration), so the battery holds for both kinds of runtime.
inline std::unique_ptr<ci::PyodideSandbox> fresh(ci::PyodideOptions options = {}) {
  if (const char* v = std::getenv("CI_TEST_COLD_START"); v != nullptr && std::string(v) == "1") {
    options.use_snapshot = false;
  }
  return ci::PyodideSandbox::create(std::move(options));
}

/// Runs a program with a bounded budget, so a hostile program that hangs fails its test instead of the suite.
inline ci::ExecutionResult run(ci::PyodideSandbox& sb, const std::string& code, ci::ExecuteOptions options = {}) {
  if (!options.timeout) options.timeout = std::chrono::seconds(30);
  auto r = sb.execute_code(code, options);
  // Shown with the next failing assertion: what the program printed is the first thing to read.
  UNSCOPED_INFO("status " << ci::to_string(r.status) << ", stdout:\n" << r.stdout_text << "stderr:\n" << r.stderr_text
                          << "error:\n" << r.error);
  return r;
}

/// The value of the last expression, or "" when there is none.
inline std::string value_of(const ci::ExecutionResult& r) {
  for (const auto& rich : r.results) {
    if (rich.is_main_result) {
      auto it = rich.data.find("text/plain");
      if (it != rich.data.end()) return it->second;
    }
  }
  return "";
}

/// The interpreter still answers, with its state: the host survived and the runtime was not replaced.
inline void require_alive(ci::PyodideSandbox& sb) {
  const auto r = run(sb, "6 * 7");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(value_of(r) == "42");
}

/// The Python prelude of the hostile programs. It gives them the building blocks an attacker has today:
/// - find_global(): the host realm's global object, reached through a getter on Object.prototype that Deno's event
///   dispatch calls with the global object as `this` (an unhandled promise rejection dispatches an event on it);
/// - attempt(route, fn): runs one try (an awaitable one for at most 5 s) and prints exactly "blocked: <route>" when it
///   raised or found nothing (None, False, empty, JavaScript null or undefined), or
///   "reached: <route>: <what it found>" when it got through. The tests compare these lines exactly;
/// - to_js / create_proxy and a JS object builder.
/// Every step that a defence may refuse (a frozen prototype, a missing Promise, no global) only makes the attack
/// fail, never the program.
inline const std::string kPrelude = R"PY(
import asyncio as _aio, sys as _sys
import pyodide_js as _pjs
from pyodide.ffi import create_proxy as _proxy, to_js as _to_js

def _js_obj(d):
    return _to_js(d, dict_converter=_pjs.constructor.fromEntries)

def _promise_ctor():
    O = _pjs.constructor
    desc = O.getOwnPropertyDescriptor(_pjs._api, 'lockFilePromise')
    protos = O.values(desc).map(O.getPrototypeOf)
    ctor = protos.map(O.getOwnPropertyDescriptors)[0].constructor
    # The realm layer turns prototype data properties into accessors: then read it through its getter.
    return ctor.value if O.prototype.hasOwnProperty.call(ctor, 'value') else ctor.get.call(protos[0])

def _unhandled_rejection():
    P = _promise_ctor()
    _to_js([1]).map(P.reject, P)

async def find_global(name='nodeType', define=None):
    found = []
    try:
        O = _pjs.constructor
        def get(this):
            try:
                if this is not None and O.prototype.hasOwnProperty.call(this, 'Deno'):
                    found.append(this)
            except BaseException:
                pass
            return None
        getter = _proxy(get, capture_this=True)
        if define is None:
            O.defineProperty(O.prototype, name, _js_obj({'get': getter, 'configurable': True}))
        else:
            define(name, getter)
        _unhandled_rejection()
        await _aio.sleep(0.05)
    except BaseException:
        pass
    finally:
        try:
            delattr(O.prototype, name)
        except BaseException:
            pass
    return found[0] if found else None

def report(route, detail=None):
    if detail is None:
        print('blocked: %s' % route)
    else:
        print('reached: %s: %s' % (route, str(detail)[:80]))

def _nothing(r):
    # None, False, an empty list or string, and JavaScript's null and undefined: the try found nothing.
    if isinstance(r, (list, tuple, set, dict, str, bytes)) and len(r) == 0:
        return True
    return r is None or r is False or type(r).__name__ in ('JsNull', 'JsUndefined') or str(r) in ('jsnull', 'undefined')

async def attempt(route, fn, limit=5):
    try:
        r = fn()
        if hasattr(r, '__await__'):
            r = await _aio.wait_for(r, limit)
        if _nothing(r):
            report(route)
        else:
            report(route, r)
    except BaseException:
        report(route)

def need(g):
    if g is None:
        raise LookupError('no global object')
    return g
)PY";

/// "blocked: <route>\n" for each route, in order: the only output a contained program can give.
inline std::string blocked(std::initializer_list<const char*> routes) {
  std::string out;
  for (const char* r : routes) out += std::string("blocked: ") + r + "\n";
  return out;
}

/// The pid of the sandbox's one Deno process (this test process runs one sandbox at a time).
inline pid_t runtime_pid() {
  const auto pids = test_support::deno_children();
  REQUIRE(pids.size() == 1);
  return pids.front();
}

/// Share of one core the process used over `window`, in percent.
inline double cpu_percent_over(pid_t pid, std::chrono::milliseconds window) {
  const long hz = ::sysconf(_SC_CLK_TCK);
  const long before = test_support::cpu_ticks(pid);
  std::this_thread::sleep_for(window);
  const long after = test_support::cpu_ticks(pid);
  return 100.0 * static_cast<double>(after - before) / (static_cast<double>(hz) * window.count() / 1000.0);
}

/// A line of /proc/<pid>/status ("NoNewPrivs", "Seccomp"...), without its name; "" if absent.
inline std::string proc_status(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      auto v = line.substr(key.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

/// One variable of the runtime's environment (from /proc/<pid>/environ; same user, so readable).
inline std::string runtime_env(pid_t pid, const std::string& name) {
  const std::string text = test_support::read_text("/proc/" + std::to_string(pid) + "/environ");
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\0', start);
    const std::string entry = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

/// Bytes of regular files under a directory (0 if it does not exist).
inline std::uintmax_t tree_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return 0;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    std::error_code e2;
    if (it->is_regular_file(e2)) total += it->file_size(e2);
  }
  return total;
}

/// A loopback TCP listener that counts the connections that reached it.
class TcpListener {
 public:
  TcpListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~TcpListener() { ::close(fd_); }
  [[nodiscard]] int port() const { return port_; }
  /// Connections accepted now (none pending means none arrived).
  int accepted() {
    int n = 0;
    for (;;) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;
      ::close(c);
      ++n;
    }
    return n;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// A loopback UDP socket that counts the datagrams that reached it.
class UdpSink {
 public:
  UdpSink() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~UdpSink() { ::close(fd_); }
  [[nodiscard]] int port() const { return port_; }
  int received() {
    int n = 0;
    char buf[2048];
    while (::recv(fd_, buf, sizeof buf, 0) >= 0) ++n;
    return n;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// A Unix stream socket listening at a path (or, with a leading '@', in the abstract namespace).
class UnixListener {
 public:
  explicit UnixListener(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socklen_t len = 0;
    if (!name.empty() && name[0] == '@') {
      addr.sun_path[0] = '\0';
      name.copy(addr.sun_path + 1, name.size() - 1, 1);
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    } else {
      ::unlink(name.c_str());
      name.copy(addr.sun_path, name.size());
      len = sizeof addr;
      path_ = name;
    }
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
  }
  ~UnixListener() {
    ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  int accepted() {
    int n = 0;
    for (;;) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;
      ::close(c);
      ++n;
    }
    return n;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

/// A private scratch directory of the test process, removed at the end of the test.
class Scratch {
 public:
  Scratch() {
    char pattern[] = "/tmp/ci-security-XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  [[nodiscard]] const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

}  // namespace security
