// Layer 1, the realm (docs/architecture.md, "The two realms"): Python runs in a Web Worker whose global object holds
// only language intrinsics and a few in-memory web APIs, all frozen; the frame token, stdout and stdin live in
// another realm. Each test runs one route out of the sandbox and asserts its exact contained outcome.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "pyodide_test_support.hpp"

using test_support::make_sandbox;

namespace {

std::string value_of(const ci::ExecutionResult& r) {
  if (r.results.empty()) return "<no result>";
  return r.results.at(0).data.at("text/plain");
}

}  // namespace

TEST_CASE("realm: the Object.prototype getter and toJSON tricks fail on frozen prototypes", "[realm]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code(R"py(import pyodide_js
O = pyodide_js.constructor
for name, f in [
    ("getter", lambda: O.defineProperty(O.prototype, "leak", O.fromEntries([["get", lambda *a: 1]]))),
    ("toJSON", lambda: setattr(O.prototype, "toJSON", lambda *a: 1)),
    ("toPrimitive", lambda: setattr(pyodide_js.constructor.prototype, "valueOf", None)),
    ("array", lambda: setattr(pyodide_js._module.HEAP8.constructor.prototype, "subarray", None)),
]:
    try:
        f()
        print(name, "allowed")
    except Exception as e:
        print(name, str(e).splitlines()[0])
)py");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text ==
        "getter TypeError: Cannot define property leak, object is not extensible\n"
        "toJSON TypeError: Cannot add property toJSON, object is not extensible\n"
        "toPrimitive TypeError: Cannot assign to read only property 'valueOf'\n"
        "array TypeError: Cannot define property subarray, object is not extensible\n");
}

TEST_CASE("realm: no host object is reachable from the Pyodide API by properties and prototypes", "[realm]") {
  auto sb = make_sandbox();
  // A walk over 5000 objects from pyodide_js (the API object Python holds): no object with Deno, caches or
  // localStorage, and no global object among them.
  auto r = sb->execute_code(R"py(import pyodide_js
from pyodide.ffi import JsProxy
O = pyodide_js.constructor
seen = set(); queue = [pyodide_js]; hits = set(); n = 0
while queue and n < 5000:
    o = queue.pop()
    try:
        key = o.js_id
    except Exception:
        continue
    if key in seen:
        continue
    seen.add(key); n += 1
    try:
        names = list(O.getOwnPropertyNames(o))
    except Exception:
        continue
    for nm in names:
        if nm in ("Deno", "caches", "localStorage", "indexedDB", "Worker", "BroadcastChannel", "WebAssembly"):
            hits.add(nm)
        try:
            d = O.getOwnPropertyDescriptor(o, nm)
            for v in (getattr(d, "value", None), getattr(d, "get", None)):
                if isinstance(v, JsProxy):
                    queue.append(v)
        except Exception:
            pass
    try:
        p = O.getPrototypeOf(o)
        if isinstance(p, JsProxy):
            queue.append(p)
    except Exception:
        pass
print(n, sorted(hits))
)py");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "5000 []\n");
}

TEST_CASE("realm: js globals, Function and run_js reach nothing of the host", "[realm]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code(R"py(import js, pyodide_js
from pyodide.code import run_js
for name, f in [
    ("js.Deno", lambda: js.Deno),
    ("js.globalThis", lambda: js.globalThis),
    ("js.caches", lambda: js.caches),
    ("js.localStorage", lambda: js.localStorage),
    ("Function", lambda: pyodide_js.constructor.constructor("return Deno")()),
    ("run_js", lambda: run_js("Deno")),
]:
    try:
        print(name, "reached", f())
    except Exception as e:
        print(name, type(e).__name__, str(e).splitlines()[0])
)py");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text ==
        "js.Deno AttributeError Deno\n"
        "js.globalThis AttributeError globalThis\n"
        "js.caches AttributeError caches\n"
        "js.localStorage AttributeError localStorage\n"
        "Function JsException EvalError: Code generation from strings disallowed for this context\n"
        "run_js ImportError cannot import name 'eval' from 'js' (unknown location)\n");
}

TEST_CASE("realm: a forged result frame is not accepted and the call's real result is reported", "[realm]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code(R"py(import json, struct, js
def forge():
    header = json.dumps({"t": "result", "id": 1, "status": "ok", "value": "'FORGED: all tests passed'"}).encode()
    js.Deno.stdout.writeSync(struct.pack(">II", len(header), 0) + header)
try:
    forge()
    print("forged")
except AttributeError as e:
    print("no writer:", e)
1/0
)py");
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  CHECK(r.stdout_text == "no writer: Deno\n");
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "ZeroDivisionError");
  CHECK(r.code_error->value == "division by zero");
  CHECK_FALSE(r.state_lost);
  CHECK(sb->execute_code("6 * 7").results.at(0).data.at("text/plain") == "42");
}

TEST_CASE("realm: dynamic import of data: URLs and WebAssembly the program supplies are refused", "[realm]") {
  auto sb = make_sandbox();
  auto r = sb->execute_code(R"py(import pyodide_js, ctypes
try:
    await pyodide_js.loadPackage("data:text/javascript,globalThis.ran=1")
    print("loadPackage returned")
except Exception as e:
    print("loadPackage", type(e).__name__, str(e).split("'")[1])
# The smallest side module Emscripten's dlopen takes (an empty dylink.0 section), written where Python can load it.
with open("/tmp/m.so", "wb") as f:
    f.write(b"\0asm\1\0\0\0" + b"\x00\x0f\x08dylink.0\x01\x04\x00\x00\x00\x00")
try:
    ctypes.CDLL("/tmp/m.so")
    print("compiled")
except OSError as e:
    print("CDLL", str(e).splitlines())
)py");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text ==
        "loadPackage JsException data:text/javascript,globalThis.ran=1\n"
        "CDLL ['could not load dynamic lib: /tmp/m.so', "
        "'CompileError: WebAssembly compilation is not available in the sandbox']\n");
  CHECK(value_of(sb->execute_code("import pyodide_js\n'ran' in pyodide_js.constructor.keys(pyodide_js)")) ==
        "False");
}

TEST_CASE("realm: standard-library calls that would reach a Deno permission check return harmless values",
          "[realm]") {
  auto sb = make_sandbox();
  // Each expression in its own try/except: the runtime must survive all of them with exactly these outcomes.
  auto r = sb->execute_code(R"py(import os, sys, time, socket, platform, getpass, locale, tempfile, shutil, sysconfig
import subprocess, uuid, multiprocessing
exprs = """os.getuid()
os.getgid()
os.getlogin()
os.getpid()
os.getppid()
os.cpu_count()
os.process_cpu_count()
tuple(os.uname())
os.getcwd()
os.umask(0o22)
os.getloadavg()
os.system('id')
os.kill(1, 0)
os.fork()
sorted(os.listdir('/'))
os.statvfs('/').f_bsize
socket.gethostname()
socket.getfqdn()
socket.create_connection(('127.0.0.1', 80), timeout=1)
platform.platform()
platform.node()
platform.system()
platform.machine()
platform.release()
platform.processor()
platform.libc_ver()
platform.uname().node
time.tzname
time.timezone
time.localtime(0).tm_year
getpass.getuser()
locale.getlocale()
locale.setlocale(locale.LC_ALL, '')
locale.getpreferredencoding()
tempfile.gettempdir()
os.path.isdir(tempfile.mkdtemp())
shutil.disk_usage('/').total > 0
shutil.which('sh')
subprocess.run(['id'])
multiprocessing.cpu_count()
isinstance(uuid.getnode(), int)
os.path.expanduser('~')
sysconfig.get_platform()
open('/etc/passwd').read()
len(os.urandom(8))
__import__('pwd').getpwuid(0)
__import__('grp').getgrgid(0)
__import__('resource').getrlimit(0)
__import__('ctypes.util').util.find_library('c')""".splitlines()
for e in exprs:
    try:
        print("%s = %r" % (e, eval(e)))
    except BaseException as x:
        print("%s ! %s" % (e, type(x).__name__))
)py");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == R"py(os.getuid() = 0
os.getgid() = 0
os.getlogin() = 'web_user'
os.getpid() = 42
os.getppid() = 1
os.cpu_count() = 1
os.process_cpu_count() = 1
tuple(os.uname()) = ('Emscripten', 'emscripten', '5.0.3', '#1', 'wasm32')
os.getcwd() = '/home/pyodide'
os.umask(0o22) = 0
os.getloadavg() = (0.1, 0.1, 0.1)
os.system('id') = -1
os.kill(1, 0) ! PermissionError
os.fork() ! OSError
sorted(os.listdir('/')) = ['dev', 'files', 'home', 'lib', 'proc', 'tmp']
os.statvfs('/').f_bsize = 4096
socket.gethostname() = 'emscripten'
socket.getfqdn() = 'emscripten'
socket.create_connection(('127.0.0.1', 80), timeout=1) ! OSError
platform.platform() = 'Emscripten-5.0.3-wasm32-32bit'
platform.node() = 'emscripten'
platform.system() = 'Emscripten'
platform.machine() = 'wasm32'
platform.release() = '5.0.3'
platform.processor() = ''
platform.libc_ver() = ('emscripten', '5.0.3')
platform.uname().node = 'emscripten'
time.tzname = ('UTC-0000', 'UTC-0000')
time.timezone = 0
time.localtime(0).tm_year = 1970
getpass.getuser() = 'web_user'
locale.getlocale() = ('en_US-u-va-posix', 'UTF-8')
locale.setlocale(locale.LC_ALL, '') = 'en_US-u-va-posix.UTF-8'
locale.getpreferredencoding() = 'UTF-8'
tempfile.gettempdir() = '/tmp'
os.path.isdir(tempfile.mkdtemp()) = True
shutil.disk_usage('/').total > 0 = True
shutil.which('sh') = None
subprocess.run(['id']) ! OSError
multiprocessing.cpu_count() = 1
isinstance(uuid.getnode(), int) = True
os.path.expanduser('~') = '/home/pyodide'
sysconfig.get_platform() = 'emscripten-5.0.3-wasm32'
open('/etc/passwd').read() ! FileNotFoundError
len(os.urandom(8)) = 8
__import__('pwd').getpwuid(0) ! ModuleNotFoundError
__import__('grp').getgrgid(0) ! ModuleNotFoundError
__import__('resource').getrlimit(0) ! ModuleNotFoundError
__import__('ctypes.util').util.find_library('c') = None
)py");
  CHECK(value_of(sb->execute_code("1 + 1")) == "2");
}

TEST_CASE("realm: /files exists in a new sandbox and after a respawn", "[realm][timing]") {
  ci::PyodideOptions options;
  options.interrupt_grace = 500ms;
  auto sb = make_sandbox(options);
  auto r = sb->execute_code("with open('/files/out.csv', 'w') as f:\n    f.write('a,b\\n')\nsorted(__import__('os').listdir('/files'))");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(value_of(r) == "['out.csv']");
  CHECK(sb->read_file("/files/out.csv") == "a,b\n");
  ci::ExecuteOptions o;
  o.timeout = 1000ms;
  auto killed = sb->execute_code(test_support::kUnstoppable, o);
  REQUIRE(killed.state_lost);
  auto again = sb->execute_code("open('/files/out.csv', 'w').write('x')\nsorted(__import__('os').listdir('/files'))");
  REQUIRE(again.status == ci::ExecutionStatus::kSuccess);
  CHECK(value_of(again) == "['out.csv']");
}

TEST_CASE("realm: nothing runs after a call returns and an idle sandbox uses under 1% of a core", "[realm][timing]") {
  auto sb = make_sandbox();
  REQUIRE(test_support::await_runtime_settled(test_support::deno_children().at(0)));
  // Work left behind every way the program can reach: an asyncio task that never ends, timers, and a Worker.
  auto r = sb->execute_code(R"py(import asyncio, pyodide_js
async def forever():
    while True:
        await asyncio.sleep(0)
task = asyncio.ensure_future(forever())
loop = asyncio.get_event_loop()
def mark():
    open('/files/fired', 'w').write('1')
loop.call_later(1.0, mark)
try:
    import js
    js.Worker.new("data:text/javascript,for(;;){}", type="module")
    print("worker started")
except AttributeError as e:
    print("no Worker:", e)
await asyncio.sleep(0.01)
)py");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == "no Worker: Worker\n");
  const auto children = test_support::deno_children();
  REQUIRE(children.size() == 1);
  const pid_t pid = children.front();
  const long before = test_support::cpu_ticks(pid);
  std::this_thread::sleep_for(3s);
  const long after = test_support::cpu_ticks(pid);
  const long hz = ::sysconf(_SC_CLK_TCK);
  INFO("CPU ticks over 3 s idle: " << (after - before) << " at " << hz << " per second");
  // Measured 0-5 ticks (0-1.7% of one core) after this program on the 2-core machine, against 0 for a sandbox whose
  // last call left nothing behind (the "idle sandbox ... under 1%" tests keep that bound). No timer fires and no
  // task runs (the checks below); with V8's dynamic tiering it was 3-8 ticks cold and 45 restored (optimized code
  // compiled in the background for what the call made hot), which --no-wasm-dynamic-tiering removed. What is left
  // is not attributed yet: the bound here is 5%.
  CHECK((after - before) * 100 < hz * 3 * 5);
  // The timer set in the first call was cleared when that call returned: it never fires, not even during a later
  // call.
  auto later = sb->execute_code("import asyncio, os\nawait asyncio.sleep(1.5)\nos.path.exists('/files/fired')");
  REQUIRE(later.status == ci::ExecutionStatus::kSuccess);
  CHECK(value_of(later) == "False");
}

TEST_CASE("realm: host.mjs passes only the first answer to the request in flight", "[realm]") {
  // A sandbox worker altered to forge: before its real result, a result and output for the next request id; after
  // it, a second result for the same id. The protocol realm drops all three.
  test_support::RuntimeCopy copy;
  auto worker = test_support::read_text(copy.dir() / "python_worker.mjs");
  const std::string anchor = "  outcome.ms = performance.now() - started;\n  send(outcome);\n";
  const auto at = worker.find(anchor);
  REQUIRE(at != std::string::npos);
  worker.replace(at, anchor.size(),
                 "  outcome.ms = performance.now() - started;\n"
                 "  const forge = code.includes('FORGE_EXTRA');\n"
                 "  if (forge) send({ t: 'result', id: id + 1, status: 'ok', value: \"'FORGED next'\" });\n"
                 "  if (forge) send({ t: 'out', id: id + 1, s: 1 }, new TextEncoder().encode('forged out\\n'));\n"
                 "  send(outcome);\n"
                 "  if (forge) send({ ...outcome, value: \"'FORGED second'\" });\n");
  copy.rewrite("python_worker.mjs", worker);
  ci::PyodideOptions options;
  options.runtime_dir = copy.dir();
  auto sb = make_sandbox(options);
  auto first = sb->execute_code("'FORGE_EXTRA'");
  REQUIRE(first.status == ci::ExecutionStatus::kSuccess);
  CHECK(value_of(first) == "'FORGE_EXTRA'");
  auto next = sb->execute_code("print('real')\n7");
  REQUIRE(next.status == ci::ExecutionStatus::kSuccess);
  CHECK(next.stdout_text == "real\n");
  CHECK(value_of(next) == "7");
  CHECK_FALSE(next.state_lost);
}
