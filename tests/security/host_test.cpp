// The host's files, environment, network, processes and signals, tried from inside the sandbox through every
// route the program can reach: Python itself, Pyodide's JavaScript API (pyodide_js), and the Deno namespace when the
// realm lets it through. Tagged [host]: these are the cases the kernel layer alone must hold (the kernel-only run).
// Each program prints "blocked: <route>" or "reached: <route>: <what>"; the host checks the world outside too.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>

#include "security_support.hpp"

using security::blocked;
using security::fresh;
using security::kPrelude;
using security::run;
namespace fs = std::filesystem;

namespace {

// Tries to read `path` through every reader a program may reach; prints one line per route. `expect` is a piece of
// the real content, so a route that reads some other file of that name (the in-memory filesystem) is not "reached".
const std::string kReadAll = R"PY(
import os
g = await find_global()
def py_open():
    return expect in open(path, errors='replace').read() and 'read'
def deno_read():
    return expect in need(g).Deno.readTextFileSync(path) and 'read'
def node_fs_mount():
    d = os.path.dirname(path) or '/'
    os.makedirs('/mnt_host', exist_ok=True)
    _pjs.mountNodeFS('/mnt_host', d)
    return expect in open('/mnt_host/' + os.path.basename(path), errors='replace').read() and 'read'
async def binary_file():
    b = await _pjs._api.loadBinaryFile(path)
    return expect in bytes(b.to_py()).decode('latin-1') and 'read'
def node_fs():
    return expect in str(need(g).process.getBuiltinModule('node:fs').readFileSync(path, 'latin1')) and 'read'
await attempt('open', py_open)
await attempt('Deno.readTextFileSync', deno_read)
await attempt('mountNodeFS', node_fs_mount)
await attempt('loadBinaryFile', binary_file)
await attempt('node:fs', node_fs)
)PY";

ci::ExecuteOptions with_env(std::map<std::string, std::string> env) {
  ci::ExecuteOptions o;
  o.env = std::move(env);
  return o;
}

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

const std::initializer_list<const char*> kReaders = {"open", "Deno.readTextFileSync", "mountNodeFS",
                                                     "loadBinaryFile", "node:fs"};

}  // namespace

TEST_CASE("no route reads the host's /etc/passwd", "[host]") {
  const std::string expect = first_line("/etc/passwd");
  REQUIRE_FALSE(expect.empty());
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\npath = '/etc/passwd'\nexpect = os.environ['EXPECT']\n" + kReadAll,
                     with_env({{"EXPECT", expect}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked(kReaders));
  security::require_alive(*sb);
}

TEST_CASE("no route reads a file in the host program's working directory", "[host]") {
  security::Scratch scratch;
  const std::string secret = "cwd-secret-4f1d2a";
  test_support::write_text(scratch.dir() / "secret.txt", secret + "\n");
  const auto old = fs::current_path();
  fs::current_path(scratch.dir());  // the runtime is started from here
  auto sb = fresh();
  fs::current_path(old);
  const auto r = run(*sb,
                     kPrelude + "import os\npath = os.environ['P']\nexpect = '" + secret + "'\n" + kReadAll + R"PY(
host_cwd = os.path.dirname(path)
# Reached only when the answer gives the host's directory away (a runtime started in its own directory may say so).
await attempt('Deno.cwd', lambda: need(g).Deno.cwd() == host_cwd and host_cwd)
await attempt('Deno.readDirSync(.)', lambda: 'secret.txt' in [e.name for e in need(g).Deno.readDirSync('.')] and 'listed')
await attempt('os.getcwd', lambda: os.getcwd() == host_cwd and host_cwd)
)PY",
                     with_env({{"P", (scratch.dir() / "secret.txt").string()}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"open", "Deno.readTextFileSync", "mountNodeFS", "loadBinaryFile", "node:fs",
                                  "Deno.cwd", "Deno.readDirSync(.)", "os.getcwd"}));
  CHECK(r.stdout_text.find(scratch.dir().string()) == std::string::npos);
}

TEST_CASE("no route reads the test binary that hosts the sandbox", "[host]") {
  const auto self = fs::read_symlink("/proc/self/exe");
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\npath = os.environ['P']\nexpect = 'ELF'\n" + kReadAll,
                     with_env({{"P", self.string()}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked(kReaders));
}

TEST_CASE("no route reads a private key under the user's ~/.ssh", "[host]") {
  // A stand-in home, so the test never touches the real ~/.ssh; the program is told where it is.
  security::Scratch home;
  fs::create_directories(home.dir() / ".ssh");
  const std::string key = "-----BEGIN OPENSSH PRIVATE KEY----- battery-7c2e";
  test_support::write_text(home.dir() / ".ssh" / "id_ed25519", key + "\n");
  ::setenv("HOME", home.dir().c_str(), 1);
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\npath = os.environ['P']\nexpect = 'battery-7c2e'\n" + kReadAll,
                     with_env({{"P", (home.dir() / ".ssh" / "id_ed25519").string()}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked(kReaders));
  CHECK(r.stdout_text.find("BEGIN OPENSSH") == std::string::npos);
}

TEST_CASE("no route lists the host's root directory", "[host]") {
  // An entry of the host's / that the in-memory filesystem never has.
  std::string marker;
  for (const char* name : {"usr", "var", "boot", "opt", "srv", "sbin"}) {
    if (fs::exists(fs::path("/") / name)) {
      marker = name;
      break;
    }
  }
  REQUIRE_FALSE(marker.empty());
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\nmarker = os.environ['M']\n" + R"PY(
g = await find_global()
def deno_list():
    return marker in [e.name for e in need(g).Deno.readDirSync('/')] and 'listed'
def mount_list():
    os.makedirs('/mnt_root', exist_ok=True)
    _pjs.mountNodeFS('/mnt_root', '/')
    return marker in os.listdir('/mnt_root') and 'listed'
await attempt('os.listdir', lambda: marker in os.listdir('/') and 'listed')
await attempt('Deno.readDirSync', deno_list)
await attempt('mountNodeFS', mount_list)
await attempt('node:fs', lambda: marker in list(need(g).process.getBuiltinModule('node:fs').readdirSync('/')) and 'listed')
)PY",
                     with_env({{"M", marker}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"os.listdir", "Deno.readDirSync", "mountNodeFS", "node:fs"}));
}

TEST_CASE("no route writes a file on the host", "[host]") {
  security::Scratch scratch;
  const auto target = scratch.dir() / "written.txt";
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\npath = os.environ['P']\n" + R"PY(
g = await find_global()
def mount_write():
    os.makedirs('/mnt_w', exist_ok=True)
    _pjs.mountNodeFS('/mnt_w', os.path.dirname(path))
    open('/mnt_w/' + os.path.basename(path), 'w').write('x')
    return 'written'
await attempt('Deno.writeTextFileSync', lambda: need(g).Deno.writeTextFileSync(path, 'x') or 'written')
await attempt('mountNodeFS', mount_write)
await attempt('node:fs', lambda: need(g).process.getBuiltinModule('node:fs').writeFileSync(path, 'x') or 'written')
await attempt('Deno.mkdirSync', lambda: need(g).Deno.mkdirSync(path + '.d') or 'made')
await attempt('Deno.symlinkSync', lambda: need(g).Deno.symlinkSync('/etc/passwd', path + '.l') or 'linked')
)PY",
                     with_env({{"P", target.string()}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text ==
        blocked({"Deno.writeTextFileSync", "mountNodeFS", "node:fs", "Deno.mkdirSync", "Deno.symlinkSync"}));
  CHECK(fs::is_empty(scratch.dir()));
}

namespace {

// Every write route against `image`, the snapshot file a sandbox created with `options` restores, and a file
// planted beside it: all blocked, the directory and the image unchanged, and the next sandbox restores it.
void check_image_holds(const ci::PyodideOptions& options, const fs::path& image) {
  const auto listing = [&] {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(image.parent_path())) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
  };
  auto sb = ci::PyodideSandbox::create(options);
  const auto files = listing();
  REQUIRE(std::count(files.begin(), files.end(), image) == 1);
  const std::string before = test_support::read_text(image);
  REQUIRE(before.size() > (std::size_t{16} << 20));
  const auto r = run(*sb, kPrelude + "import os\npath = os.environ['P']\nbeside = path + '.planted'\n" + R"PY(
g = await find_global()
await attempt('Deno.writeFileSync', lambda: need(g).Deno.writeFileSync(path, _to_js(b'x')) or 'written')
await attempt('Deno.truncateSync', lambda: need(g).Deno.truncateSync(path, 10) or 'truncated')
await attempt('Deno.removeSync', lambda: need(g).Deno.removeSync(path) or 'removed')
await attempt('Deno.renameSync', lambda: need(g).Deno.renameSync(path, beside) or 'renamed')
await attempt('Deno.writeTextFileSync(beside)', lambda: need(g).Deno.writeTextFileSync(beside, 'x') or 'planted')
await attempt('node:fs', lambda: need(g).process.getBuiltinModule('node:fs').writeFileSync(path, 'x') or 'written')
)PY",
                     with_env({{"P", image.string()}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"Deno.writeFileSync", "Deno.truncateSync", "Deno.removeSync", "Deno.renameSync",
                                  "Deno.writeTextFileSync(beside)", "node:fs"}));
  CHECK(listing() == files);
  CHECK(test_support::read_text(image) == before);
  // The next sandbox restores the untouched image.
  auto next = ci::PyodideSandbox::create(options);
  CHECK(security::value_of(run(*next, "6 * 7")) == "42");
}

}  // namespace

TEST_CASE("no route changes, removes or plants a file beside the snapshot image every later runtime restores",
          "[host]") {
  // The image is the one file of the host a runtime reads that later runtimes trust; Deno and Landlock grant read
  // access to it and nothing more. Snapshots on, whatever the registration (the cold one included).
  security::Scratch cache;
  ci::PyodideOptions options;
  options.snapshot_dir = cache.dir();
  { auto maker = ci::PyodideSandbox::create(options); }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(cache.dir())) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  check_image_holds(options, files[0]);
}

#if CI_TEST_BASE_SNAPSHOT
TEST_CASE("no route changes, removes or plants a file beside the base image installed in the runtime directory",
          "[host]") {
  // The image made at build time lives among the runtime's own files, which every sandbox on the machine loads.
  // Attacked in a copy of the runtime directory (hard links, except the image: a copy of its bytes), so that a
  // route that got through would change the copy's image, not the build's.
  const fs::path original_image = test_support::installed_snapshot(CI_TEST_RUNTIME_DIR);
  REQUIRE(!original_image.empty());
  test_support::RuntimeCopy copy;
  copy.rewrite(original_image.filename(), test_support::read_text(original_image));
  const fs::path image = copy.dir() / original_image.filename();
  security::Scratch home;
  test_support::ScopedEnv home_env("HOME", home.dir().string());
  test_support::ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  ci::PyodideOptions options;
  options.runtime_dir = copy.dir();
  check_image_holds(options, image);
  CHECK(fs::is_empty(home.dir()));  // restored from the installed image: nothing was made in the cache
}
#endif

TEST_CASE("a file beside the wheels in wheel_dir is not readable: only the wheels the sandbox loads are", "[host]") {
  // Deno's --allow-read names the whole wheel directory; the kernel layer grants only the wheel files themselves.
  security::Scratch wheels;
  fs::copy_file(fs::path(CI_TEST_WHEEL_DIR) / "ci_hello-0.1.0-py3-none-any.whl",
                wheels.dir() / "ci_hello-0.1.0-py3-none-any.whl");
  test_support::write_text(wheels.dir() / "credentials.txt", "wheel-dir-secret-93ab\n");
  ci::PyodideOptions options;
  options.wheel_dir = wheels.dir();
  options.additional_packages = {"ci_hello"};
  auto sb = fresh(options);
  const auto r = run(*sb, kPrelude + "import os\npath = os.environ['P']\nexpect = 'wheel-dir-secret-93ab'\n" + kReadAll,
                     with_env({{"P", (wheels.dir() / "credentials.txt").string()}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked(kReaders));
  CHECK(run(*sb, "import ci_hello\nci_hello.__name__").status == ci::ExecutionStatus::kSuccess);
}

TEST_CASE("the host's environment never reaches the sandbox, through any route", "[host]") {
  const std::string secret = "sk-battery-env-5e19c0ffee";
  ::setenv("CI_BATTERY_API_KEY", secret.c_str(), 1);
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "secret = 'sk-battery-env-'\n" + R"PY(
import os
g = await find_global()
def proc_environ(pid):
    return secret in need(g).Deno.readTextFileSync('/proc/%s/environ' % pid) and 'read'
await attempt('os.environ', lambda: secret in repr(dict(os.environ)) and 'found')
await attempt('Deno.env', lambda: secret in str(need(g).JSON.stringify(need(g).Deno.env.toObject())) and 'found')
await attempt('process.env', lambda: secret in str(need(g).JSON.stringify(need(g).process.env)) and 'found')
await attempt('/proc/self/environ', lambda: proc_environ('self'))
await attempt('/proc/ppid/environ', lambda: proc_environ(need(g).Deno.ppid))
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"os.environ", "Deno.env", "process.env", "/proc/self/environ",
                                  "/proc/ppid/environ"}));
  CHECK(r.stdout_text.find(secret) == std::string::npos);
  CHECK(r.stderr_text.find(secret) == std::string::npos);
  CHECK(security::runtime_env(security::runtime_pid(), "CI_BATTERY_API_KEY").empty());
}

TEST_CASE("no route connects to a loopback TCP port the host opened", "[host]") {
  security::TcpListener listener;
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\nport = int(os.environ['PORT'])\n" + R"PY(
import socket
g = await find_global()
def py_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(('127.0.0.1', port))
    s.send(b'hello')
    return 'connected'
async def deno_connect():
    c = await need(g).Deno.connect(_js_obj({'hostname': '127.0.0.1', 'port': port}))
    return 'connected'
async def fetch():
    await need(g).fetch('http://127.0.0.1:%d/' % port)
    return 'fetched'
async def node_net():
    net = need(g).process.getBuiltinModule('node:net')
    connected = []
    sock = net.connect(port, '127.0.0.1', _proxy(lambda *a: connected.append(1)))
    sock.on('error', _proxy(lambda *a: None))
    await _aio.sleep(0.3)
    return 'connected' if connected else None
await attempt('socket', py_socket)
await attempt('Deno.connect', deno_connect)
await attempt('fetch', fetch)
await attempt('node:net', node_net)
await attempt('WebSocket', lambda: need(g).WebSocket.new('ws://127.0.0.1:%d/' % port) and None)
await _aio.sleep(0.3)
)PY",
                     with_env({{"PORT", std::to_string(listener.port())}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"socket", "Deno.connect", "fetch", "node:net", "WebSocket"}));
  CHECK(listener.accepted() == 0);
}

TEST_CASE("no route sends a UDP datagram, resolves a name or listens on a port", "[host]") {
  security::UdpSink sink;
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\nport = int(os.environ['PORT'])\n" + R"PY(
import socket
g = await find_global()
def py_udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b'x', ('127.0.0.1', port))
    return None
async def deno_udp():
    l = need(g).Deno.listenDatagram(_js_obj({'port': 0, 'transport': 'udp', 'hostname': '127.0.0.1'}))
    await l.send(_to_js(b'x'), _js_obj({'transport': 'udp', 'hostname': '127.0.0.1', 'port': port}))
    return 'sent'
await attempt('socket(udp)', py_udp)
await attempt('Deno.listenDatagram', deno_udp)
# Emscripten answers names from a table of its own (addresses in 172.29.0.0/16); only another answer is a lookup.
await attempt('getaddrinfo', lambda: [a for a in socket.getaddrinfo('example.com', 80) if not a[4][0].startswith('172.29.')])
await attempt('Deno.resolveDns', lambda: need(g).Deno.resolveDns('example.com', 'A'))
await attempt('Deno.listen', lambda: need(g).Deno.listen(_js_obj({'port': 0, 'hostname': '127.0.0.1'})) and 'listening')
)PY",
                     with_env({{"PORT", std::to_string(sink.port())}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text ==
        blocked({"socket(udp)", "Deno.listenDatagram", "getaddrinfo", "Deno.resolveDns", "Deno.listen"}));
  CHECK(sink.received() == 0);
}

TEST_CASE("no route connects to a Unix socket of the host, by path or abstract name", "[host]") {
  security::Scratch scratch;
  const std::string path = (scratch.dir() / "host.sock").string();
  security::UnixListener by_path(path);
  const std::string abstract = "@ci-battery-" + std::to_string(::getpid());
  security::UnixListener by_name(abstract);
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\npath = os.environ['P']\nname = os.environ['A']\n" + R"PY(
g = await find_global()
async def unix(p):
    await need(g).Deno.connect(_js_obj({'transport': 'unix', 'path': p}))
    return 'connected'
async def node_unix(p):
    connected = []
    sock = need(g).process.getBuiltinModule('node:net').connect(_js_obj({'path': p}), _proxy(lambda *a: connected.append(1)))
    sock.on('error', _proxy(lambda *a: None))
    await _aio.sleep(0.3)
    return 'connected' if connected else None
await attempt('Deno.connect(unix)', lambda: unix(path))
await attempt('Deno.connect(abstract)', lambda: unix('\0' + name[1:]))
await attempt('node:net(unix)', lambda: node_unix(path))
)PY",
                     with_env({{"P", path}, {"A", abstract}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"Deno.connect(unix)", "Deno.connect(abstract)", "node:net(unix)"}));
  CHECK(by_path.accepted() == 0);
  CHECK(by_name.accepted() == 0);
}

TEST_CASE("no route starts a program: Deno.Command, child_process", "[host]") {
  security::Scratch scratch;
  const auto marker = scratch.dir() / "ran";
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\nmarker = os.environ['M']\n" + R"PY(
g = await find_global()
cmd = 'echo ran > ' + marker
def deno_command():
    need(g).Deno.Command.new('/bin/sh', _js_obj({'args': _to_js(['-c', cmd])})).outputSync()
    return 'ran'
def deno_spawn():
    need(g).Deno.Command.new('/bin/sh', _js_obj({'args': _to_js(['-c', cmd])})).spawn()
    return 'spawned'
def child_process():
    done = need(g).process.getBuiltinModule('node:child_process').spawnSync('/bin/sh', _to_js(['-c', cmd]))
    return done.status == 0 and 'ran'
await attempt('Deno.Command', deno_command)
await attempt('Deno.Command.spawn', deno_spawn)
await attempt('child_process', child_process)
await _aio.sleep(0.2)
)PY",
                     with_env({{"M", marker.string()}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"Deno.Command", "Deno.Command.spawn", "child_process"}));
  CHECK_FALSE(fs::exists(marker));
  security::require_alive(*sb);
}

TEST_CASE("Python's own process calls run nothing and the runtime survives: os.system, subprocess, os.posix_spawn, "
          "os.popen",
          "[refusals]") {
  // The kernel would stop these too, but keeping the runtime alive through Deno's refusal is the realm's work, so
  // this case is not part of the kernel-only run.
  security::Scratch scratch;
  const auto marker = scratch.dir() / "ran";
  auto sb = fresh();
  REQUIRE(run(*sb, "kept = 'state'").status == ci::ExecutionStatus::kSuccess);
  const auto r = run(*sb, kPrelude + "import os\nmarker = os.environ['M']\n" + R"PY(
import subprocess
cmd = 'echo ran > ' + marker
def py_system():
    return os.system(cmd) == 0 and 'ran'
def py_subprocess():
    subprocess.run(['/bin/sh', '-c', cmd])
    return 'ran'
def py_spawn():
    os.posix_spawn('/bin/sh', ['/bin/sh', '-c', cmd], {})
    return 'ran'
def py_popen():
    return os.popen(cmd).close() is None and 'ran'
await attempt('os.system', py_system)
await attempt('subprocess', py_subprocess)
await attempt('os.posix_spawn', py_spawn)
await attempt('os.popen', py_popen)
)PY",
                     with_env({{"M", marker.string()}}));
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"os.system", "subprocess", "os.posix_spawn", "os.popen"}));
  CHECK_FALSE(fs::exists(marker));
  CHECK(security::value_of(run(*sb, "kept")) == "'state'");
}

namespace {
std::atomic<int> g_usr1{0};
void on_usr1(int) { g_usr1.fetch_add(1); }
}  // namespace

TEST_CASE("no route signals the host process", "[host]") {
  struct sigaction sa {};
  sa.sa_handler = on_usr1;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGUSR1, &sa, nullptr);
  g_usr1 = 0;
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + "import os\nhost = int(os.environ['HOST'])\n" + R"PY(
import signal
g = await find_global()
await attempt('os.kill', lambda: os.kill(host, signal.SIGUSR1) or 'sent')
await attempt('Deno.kill', lambda: need(g).Deno.kill(host, 'SIGUSR1') or 'sent')
await attempt('process.kill', lambda: need(g).process.kill(host, 'SIGUSR1') and 'sent')
)PY",
                     with_env({{"HOST", std::to_string(::getpid())}}));
  std::this_thread::sleep_for(200ms);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"os.kill", "Deno.kill", "process.kill"}));
  CHECK(g_usr1.load() == 0);
  security::require_alive(*sb);
}

TEST_CASE("no route loads native code: Deno.dlopen, process.dlopen, ctypes of a host library", "[host]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
g = await find_global()
def ctypes_libc():
    import ctypes
    return ctypes.CDLL('/lib/x86_64-linux-gnu/libc.so.6') and 'loaded'
await attempt('Deno.dlopen', lambda: need(g).Deno.dlopen('/lib/x86_64-linux-gnu/libc.so.6', _js_obj({})) and 'loaded')
await attempt('process.dlopen', lambda: need(g).process.dlopen(_js_obj({}), '/lib/x86_64-linux-gnu/libc.so.6') or 'loaded')
await attempt('ctypes', ctypes_libc)
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"Deno.dlopen", "process.dlopen", "ctypes"}));
}
