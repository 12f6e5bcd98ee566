// Layer 1 of the battery: routes from Python into the host script's realm (docs/security.md, "The realm").
// Each program tries one route and prints exactly what it found; a contained run prints only "blocked:" lines.
#include <filesystem>

#include "security_support.hpp"

using security::blocked;
using security::fresh;
using security::kPrelude;
using security::run;

namespace {
std::string host_cwd() { return std::filesystem::current_path().string(); }
}  // namespace

TEST_CASE("Python cannot reach the Deno namespace through an Object.prototype getter", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
g = await find_global('nodeType')
await attempt('globalThis', lambda: need(g) and 'Deno.cwd() = ' + need(g).Deno.cwd())
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"globalThis"}));
  CHECK(r.stdout_text.find(host_cwd()) == std::string::npos);
  security::require_alive(*sb);
}

TEST_CASE("Python cannot reach the global object through a legacy __defineGetter__ on Object.prototype", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
def define(name, getter):
    _pjs.constructor.prototype.__defineGetter__(name, getter)
g = await find_global('nodeType', define)
await attempt('globalThis', lambda: need(g) and sorted(k for k in ('Deno', 'Worker', 'caches', 'localStorage') if k in dir(need(g))))
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"globalThis"}));
  security::require_alive(*sb);
}

TEST_CASE("Python cannot learn the frame token through a setter on Object.prototype", "[realm]") {
  // send() assigns header.k on a fresh object literal: an inherited setter named "k" would see the token.
  auto sb = fresh();
  REQUIRE(run(*sb, kPrelude + R"PY(
seen = []
O = _pjs.constructor
def setter(this, value):
    seen.append(value)
    # Keep the frame intact (an own property, as the plain assignment would have made), so nothing looks amiss.
    O.defineProperty(this, 'k', _js_obj({'value': value, 'enumerable': True, 'writable': True, 'configurable': True}))
try:
    O.defineProperty(O.prototype, 'k', _js_obj({'set': _proxy(setter, capture_this=True), 'configurable': True}))
except BaseException:
    pass
None
)PY").status == ci::ExecutionStatus::kSuccess);
  const auto r = run(*sb, R"PY(
try:
    delattr(_pjs.constructor.prototype, 'k')
except BaseException:
    pass
report('frame token', seen[-1] if [s for s in seen if isinstance(s, str) and s] else None)
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"frame token"}));
  security::require_alive(*sb);
}

TEST_CASE("Python cannot see frame headers through an Object.prototype.toJSON hook", "[realm]") {
  auto sb = fresh();
  REQUIRE(run(*sb, kPrelude + R"PY(
seen = []
def tojson(this, key):
    try:
        if isinstance(this.k, str) or isinstance(this.t, str):
            seen.append((this.t, this.k))
    except BaseException:
        pass
    return this
O = _pjs.constructor
try:
    O.defineProperty(O.prototype, 'toJSON', _js_obj({'value': _proxy(tojson, capture_this=True), 'configurable': True, 'writable': True}))
except BaseException:
    pass
None
)PY").status == ci::ExecutionStatus::kSuccess);
  const auto r = run(*sb, R"PY(
try:
    delattr(_pjs.constructor.prototype, 'toJSON')
except BaseException:
    pass
report('frame header', seen[-1] if seen else None)
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"frame header"}));
  security::require_alive(*sb);
}

TEST_CASE("Python sees no host object through an Object.prototype Symbol.toPrimitive hook", "[realm]") {
  auto sb = fresh();
  // Symbol.toPrimitive comes from Symbol, the constructor of any boxed symbol (Array.prototype has two).
  REQUIRE(run(*sb, kPrelude + R"PY(
seen = []
O = _pjs.constructor
def prim(this, hint):
    try:
        if O.prototype.hasOwnProperty.call(this, 'Deno') or isinstance(this.k, str) or isinstance(this.t, str):
            seen.append(this)
    except BaseException:
        pass
    return 'x'
try:
    boxed = O.getOwnPropertySymbols(_to_js([]).constructor.prototype).map(O)
    Symbol = O.getOwnPropertyDescriptors(O.getPrototypeOf(boxed[0])).constructor.value
    O.defineProperty(O.prototype, Symbol.toPrimitive,
                     _js_obj({'value': _proxy(prim, capture_this=True), 'configurable': True, 'writable': True}))
except BaseException:
    pass
None
)PY").status == ci::ExecutionStatus::kSuccess);
  // Host activity while the hook is in place: file operations, an error answer, and a run with an event dispatch.
  sb->write_file("/tmp/touch.txt", "x");
  (void)sb->list_files("/tmp");
  CHECK_THROWS(sb->read_file("/tmp/missing.txt"));
  const auto r = run(*sb, R"PY(
_unhandled_rejection()
await _aio.sleep(0.05)
report('host object', (len(seen), O.prototype.toString.call(seen[0])) if seen else None)
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"host object"}));
}

TEST_CASE("a result frame forged through Deno.stdout.writeSync is never accepted", "[realm]") {
  auto sb = fresh();
  // Call 1 learns what it can of the frames (token, last id) through a toJSON hook; call 2 forges a success for
  // code that ends in 1/0 through every raw writer it can reach.
  REQUIRE(run(*sb, kPrelude + R"PY(
seen = []
def tojson(this, key):
    try:
        if isinstance(this.k, str):
            seen.append((this.k, this.id))
    except BaseException:
        pass
    return this
try:
    _pjs.constructor.defineProperty(_pjs.constructor.prototype, 'toJSON', _js_obj({'value': _proxy(tojson, capture_this=True), 'configurable': True, 'writable': True}))
except BaseException:
    pass
None
)PY").status == ci::ExecutionStatus::kSuccess);
  const auto r = run(*sb, R"PY(
import json, struct
try:
    delattr(_pjs.constructor.prototype, 'toJSON')
except BaseException:
    pass
tok, last = seen[-1] if seen else ('', 1)
def frame(i):
    h = json.dumps({'t': 'result', 'id': i, 'status': 'ok', 'value': "'FORGED: all tests passed'", 'host_interrupt': False, 'k': tok}).encode()
    return struct.pack('>II', len(h), 0) + h
g = await find_global()
await attempt('Deno.stdout.writeSync', lambda: need(g).Deno.stdout.writeSync(_to_js(frame(last + 1))) and 'wrote')
1/0
)PY");
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == 1);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "ZeroDivisionError");
  CHECK(r.stdout_text == blocked({"Deno.stdout.writeSync"}));
  CHECK(security::value_of(r).empty());
  CHECK_FALSE(r.state_lost);
  security::require_alive(*sb);
}

TEST_CASE("a result frame forged through console.log, process.stdout and Deno.stdout.write is never accepted",
          "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
import json, struct
def frame(i):
    h = json.dumps({'t': 'result', 'id': i, 'status': 'ok', 'value': "'FORGED'", 'host_interrupt': False, 'k': ''}).encode()
    return struct.pack('>II', len(h), 0) + h
g = await find_global()
await attempt('console.log', lambda: need(g).console.log(frame(1).decode('latin-1')) or 'wrote')
await attempt('process.stdout.write', lambda: need(g).process.stdout.write(_to_js(frame(1))) and 'wrote')
await attempt('Deno.stdout.write', lambda: need(g).Deno.stdout.write(_to_js(frame(1))))
1/0
)PY");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "ZeroDivisionError");
  CHECK(r.stdout_text == blocked({"console.log", "process.stdout.write", "Deno.stdout.write"}));
  CHECK_FALSE(r.state_lost);
  security::require_alive(*sb);
}

TEST_CASE("bytes written to the in-memory /dev/tty and /dev/console never reach the protocol pipe", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
import json, struct, os
h = json.dumps({'t': 'result', 'id': 1, 'status': 'ok', 'value': "'FORGED'", 'k': ''}).encode()
data = struct.pack('>II', len(h), 0) + h
for dev in ('/dev/tty', '/dev/tty1', '/dev/console'):
    try:
        fd = os.open(dev, os.O_WRONLY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        pass
print('done')
1/0
)PY");
  // Whatever the devices did with the bytes, the call's own outcome stands: no forged result, no broken frame.
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "ZeroDivisionError");
  CHECK_FALSE(r.failure.has_value());
  CHECK_FALSE(r.state_lost);
  CHECK(r.stdout_text.substr(r.stdout_text.size() >= 5 ? r.stdout_text.size() - 5 : 0) == "done\n");
  security::require_alive(*sb);
}

TEST_CASE("a Worker started from a data: URL cannot write a forged frame", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
g = await find_global()
src = "const e=new TextEncoder().encode('{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"k\":\"\"}');const b=new Uint8Array(8+e.length);new DataView(b.buffer).setUint32(0,e.length);b.set(e,8);Deno.stdout.writeSync(b);"
await attempt('Worker(data:)', lambda: need(g).Worker.new('data:text/javascript,' + src, _js_obj({'type': 'module'})) and 'started')
await _aio.sleep(0.3)
1/0
)PY");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "ZeroDivisionError");
  CHECK(r.stdout_text == blocked({"Worker(data:)"}));
  security::require_alive(*sb);
}

TEST_CASE("constructor chains to Function, AsyncFunction and GeneratorFunction compile nothing", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
O = _pjs.constructor
await attempt('Function', lambda: O.constructor('return typeof Deno')())
await attempt('Function via pyodide_js.runPython', lambda: _pjs.runPython.constructor('return globalThis')())
await attempt('AsyncFunction', lambda: O.getPrototypeOf(_pjs.loadPackage).constructor('return 1'))
await attempt('GeneratorFunction', lambda: [f for f in [O.getPrototypeOf(O.getPrototypeOf(_to_js([]).values())).constructor] if f.name != 'Object'][0].constructor('yield 1'))
await attempt('run_js', lambda: __import__('pyodide.code').code.run_js('globalThis'))
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"Function", "Function via pyodide_js.runPython", "AsyncFunction",
                                  "GeneratorFunction", "run_js"}));
  security::require_alive(*sb);
}

TEST_CASE("import js exposes no JavaScript global", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
import js
for name in ('Deno', 'Worker', 'SharedWorker', 'caches', 'localStorage', 'sessionStorage', 'indexedDB',
             'BroadcastChannel', 'WebAssembly', 'setTimeout', 'queueMicrotask', 'FinalizationRegistry', 'fetch',
             'globalThis', 'process', 'require'):
    await attempt('js.' + name, lambda: getattr(js, name) is not None and 'present')
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"js.Deno", "js.Worker", "js.SharedWorker", "js.caches", "js.localStorage",
                                  "js.sessionStorage", "js.indexedDB", "js.BroadcastChannel", "js.WebAssembly",
                                  "js.setTimeout", "js.queueMicrotask", "js.FinalizationRegistry", "js.fetch",
                                  "js.globalThis", "js.process", "js.require"}));
}

TEST_CASE("Web storage, caches, indexedDB and BroadcastChannel are out of reach", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
g = await find_global()
await attempt('localStorage', lambda: need(g).localStorage.setItem('k', 'v') or 'stored')
await attempt('sessionStorage', lambda: need(g).sessionStorage.setItem('k', 'v') or 'stored')
await attempt('caches', lambda: need(g).caches.open('c'))
await attempt('indexedDB', lambda: need(g).indexedDB.open('d') and 'opened')
await attempt('BroadcastChannel', lambda: need(g).BroadcastChannel.new('b') and 'opened')
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"localStorage", "sessionStorage", "caches", "indexedDB", "BroadcastChannel"}));
  security::require_alive(*sb);
}

TEST_CASE("Workers, SharedWorkers and blob: URLs cannot start code", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
g = await find_global()
def blob_worker():
    b = need(g).Blob.new(_to_js(['postMessage(1)']), _js_obj({'type': 'text/javascript'}))
    return need(g).Worker.new(need(g).URL.createObjectURL(b), _js_obj({'type': 'module'})) and 'started'
await attempt('Worker(data:)', lambda: need(g).Worker.new('data:text/javascript,1', _js_obj({'type': 'module'})) and 'started')
await attempt('Worker(blob:)', blob_worker)
await attempt('SharedWorker', lambda: need(g).SharedWorker.new('data:text/javascript,1') and 'started')
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"Worker(data:)", "Worker(blob:)", "SharedWorker"}));
  security::require_alive(*sb);
}

TEST_CASE("WebAssembly compiles no bytes the program supplies", "[realm]") {
  auto sb = fresh();
  // The smallest module: magic and version. Compiling it proves code generation from program bytes.
  const auto r = run(*sb, kPrelude + R"PY(
wasm = b'\x00asm\x01\x00\x00\x00'
g = await find_global()
await attempt('WebAssembly.Module', lambda: need(g).WebAssembly.Module.new(_to_js(wasm)) and 'compiled')
await attempt('WebAssembly.compile', lambda: need(g).WebAssembly.compile(_to_js(wasm)))
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"WebAssembly.Module", "WebAssembly.compile"}));
  security::require_alive(*sb);
}

TEST_CASE("queueMicrotask, setTimeout and FinalizationRegistry of the host realm are out of reach", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
g = await find_global()
noop = _proxy(lambda *a: None)
await attempt('queueMicrotask', lambda: need(g).queueMicrotask(noop) or 'queued')
await attempt('setTimeout', lambda: need(g).setTimeout(noop, 0) and 'scheduled')
await attempt('setInterval', lambda: need(g).setInterval(noop, 1000) and 'scheduled')
await attempt('FinalizationRegistry', lambda: need(g).FinalizationRegistry.new(noop) and 'created')
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"queueMicrotask", "setTimeout", "setInterval", "FinalizationRegistry"}));
  security::require_alive(*sb);
}

TEST_CASE("a timer set by one call does not run before the next call starts", "[realm]") {
  auto sb = fresh();
  REQUIRE(run(*sb, kPrelude + R"PY(
fired = []
g = await find_global()
cb = _proxy(lambda *a: fired.append(1))
try:
    need(g).setTimeout(cb, 100)
except BaseException:
    pass
try:
    _pjs._module.safeSetTimeout(cb, 100)
except BaseException:
    pass
None
)PY").status == ci::ExecutionStatus::kSuccess);
  std::this_thread::sleep_for(1s);
  // Read without yielding to the event loop: only what ran between the calls is counted.
  const auto r = run(*sb, "len(fired)");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(security::value_of(r) == "0");
}

TEST_CASE("a FinalizationRegistry callback never runs after its call returned", "[realm]") {
  auto sb = fresh();
  REQUIRE(run(*sb, kPrelude + R"PY(
import gc
ran = []
g = await find_global()
try:
    reg = need(g).FinalizationRegistry.new(_proxy(lambda *a: ran.append(1)))
    for i in range(2000):
        reg.register(_js_obj({'i': i}), i)
except BaseException:
    pass
gc.collect()
None
)PY").status == ci::ExecutionStatus::kSuccess);
  std::this_thread::sleep_for(1500ms);
  const auto r = run(*sb, "len(ran)");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(security::value_of(r) == "0");
}

TEST_CASE("the request ring's and the interrupt's SharedArrayBuffers are out of reach", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, kPrelude + R"PY(
O = _pjs.constructor
def shared_buffers(root, limit=4000):
    # Breadth-first over the value properties of the Pyodide API and its module: any SharedArrayBuffer found.
    from pyodide.ffi import JsProxy
    seen, queue, found = set(), [root], []
    while queue and len(seen) < limit:
        obj = queue.pop(0)
        try:
            tag = O.prototype.toString.call(obj)
        except BaseException:
            continue
        if tag == '[object SharedArrayBuffer]':
            found.append(obj.byteLength)
            continue
        if tag in ('[object Uint8Array]', '[object Int32Array]'):
            try:
                if O.prototype.toString.call(obj.buffer) == '[object SharedArrayBuffer]':
                    found.append(obj.buffer.byteLength)
            except BaseException:
                pass
            continue
        try:
            names = list(O.getOwnPropertyNames(obj))
        except BaseException:
            continue
        for n in names[:400]:
            try:
                d = O.getOwnPropertyDescriptor(obj, n)
                v = d.value
            except BaseException:
                continue
            if isinstance(v, JsProxy) and v.js_id not in seen:
                seen.add(v.js_id)
                queue.append(v)
    return sorted(set(found)) or None
await attempt('SharedArrayBuffer', lambda: shared_buffers(_pjs))
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"SharedArrayBuffer"}));
  security::require_alive(*sb);
}

// The interrupt route (docs/protocols/pyodide.md "Interrupts"): time.sleep's wait function and the runner's
// cancel_run are reachable from Python. Called with any argument, the wait returns or ends at the interrupt; a
// cancel_run the program replaced is called only while its own run waits at an await, never after a call returned,
// and costs the program only its own soft interrupt (it is killed after the grace period; the next runtime is whole).
TEST_CASE("the interrupt route: the sleep's wait function and a replaced cancel_run reach nothing past the program's own run",
          "[realm]") {
  ci::PyodideOptions options;
  // A grace a loaded machine (or a sanitizer build) still meets: the soft interrupts below must land within it.
  options.interrupt_grace = 1000ms;
  auto sb = fresh(options);
  const std::string hook = R"PY(
import time
g = time.sleep.__globals__
cells = {n: c.cell_contents for n, c in zip(time.sleep.__code__.co_freevars, time.sleep.__closure__)}
wait = cells['wait']
calls = []
def hook():
    calls.append(1)
    return False
g['cancel_run'] = hook
t = time.monotonic()
for a in (-1, float('nan'), 'x', None, -1e308):
    wait(a)
(sorted(cells), time.monotonic() - t < 0.5)
)PY";
  auto r = run(*sb, hook);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(security::value_of(r) == "(['math', 'operator', 'wait'], True)");
  // An interrupt that lands in synchronous code, then idle time: the replaced cancel_run is never called.
  ci::ExecuteOptions quick;
  quick.timeout = 500ms;
  r = run(*sb, "while True:\n    pass", quick);
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  CHECK_FALSE(r.state_lost);
  std::this_thread::sleep_for(500ms);
  r = run(*sb, "len(calls)");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(security::value_of(r) == "0");
  // The wait itself, called directly for 30 s, ends at the interrupt with the state kept.
  quick.timeout = 1000ms;
  r = run(*sb, "wait(30)", quick);
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  CHECK_FALSE(r.state_lost);
  // At an await, the program's hook can keep its own run from being cancelled: then it is killed after the grace
  // period (a restored runtime); or the event loop's own bytecode sees the interrupt and cancels it anyway (seen
  // with a cold one). Either way the outcome is a timeout of this call.
  r = run(*sb, "import asyncio\nawait asyncio.sleep(30)", quick);
  CHECK(r.status == ci::ExecutionStatus::kTimeout);
  REQUIRE(r.timeout_kind.has_value());
  CHECK(*r.timeout_kind == ci::TimeoutKind::kExecution);
  const bool killed = r.state_lost;
  r = run(*sb, "import time\n(time.sleep.__globals__['cancel_run'].__name__, 'calls' in globals())");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  if (killed) {
    // The respawned runtime has the runner's own cancel_run, and its await is interrupted softly again.
    CHECK(security::value_of(r) == "('cancel_run', False)");
    r = run(*sb, "import asyncio\nawait asyncio.sleep(30)", quick);
    CHECK(r.status == ci::ExecutionStatus::kTimeout);
    CHECK_FALSE(r.state_lost);
  } else {
    CHECK(security::value_of(r) == "('hook', True)");  // the program's own state, kept
  }
  security::require_alive(*sb);
}

// The program owns its sandbox's filesystem, and the answers to list_files and read_file are the program's to choose
// (docs/security.md, threat model): replacing pyodide_js.FS's methods can make them fail, never reach the host.
TEST_CASE("methods replaced on pyodide_js.FS make the host's file operations fail inside the sandbox, never reach the host",
          "[realm]") {
  auto sb = fresh();
  sb->write_file("/files/real.txt", "real bytes");
  const auto hook = run(*sb, kPrelude + R"PY(
FS = _pjs.FS
def fake_read(*a):
    raise OSError('hooked')
try:
    FS.readFile = _proxy(fake_read)
    FS.read = _proxy(fake_read)
    FS.stat = _proxy(lambda *a: _js_obj({'size': 10, 'mode': 0o100644}))
    FS.readdir = _proxy(lambda *a: _to_js(['.', '..', 'real.txt', 'ghost.txt']))
except BaseException:
    pass
try:
    _pjs.FS = _proxy(object())
except BaseException:
    pass
None
)PY");
  REQUIRE(hook.status == ci::ExecutionStatus::kSuccess);
  try {
    (void)sb->read_file("/files/real.txt");
    FAIL("read_file answered through a hooked FS");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(std::string(e.what()) == "read '/files/real.txt': EIO (EIO)");
    CHECK(e.stage() == ci::Stage::kDownload);
  }
  try {
    (void)sb->list_files("/files");
    FAIL("list_files answered through a hooked FS");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(std::string(e.what()) == "list '/files': EIO (EIO)");
  }
  security::require_alive(*sb);
  // Another sandbox is untouched.
  auto other = fresh();
  other->write_file("/files/real.txt", "real bytes");
  CHECK(other->read_file("/files/real.txt") == "real bytes");
  const auto listing = other->list_files("/files");
  REQUIRE(listing.size() == 1);
  CHECK(listing[0].name == "real.txt");
  CHECK(listing[0].size == 10u);
}

TEST_CASE("/files exists in a new sandbox, so a program can write there without an upload", "[realm]") {
  auto sb = fresh();
  const auto r = run(*sb, "open('/files/out.csv', 'w').write('a,b\\n1,2\\n')");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(security::value_of(r) == "8");
  CHECK(sb->read_file("/files/out.csv") == "a,b\n1,2\n");
}
