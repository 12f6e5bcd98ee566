// The sandbox realm: a Web Worker that runs Pyodide, and nothing of the host script's protocol.
//
// host.mjs (the protocol realm, the main thread) holds the frame token and the only writer to stdout; the stdin
// worker holds stdin. This worker shares no object with either: it reads requests from one shared ring and writes
// its answers (unsigned frames) into another, which host.mjs decodes, checks and re-encodes with the token. Whatever
// Python reaches in this realm, it cannot reach the token, stdout or stdin.
//
// Before Pyodide is imported, the worker takes the few host functions it needs into its own closure and deletes
// `Deno` and `process` from its global object. Pyodide then finds no Deno or Node and loads as in a browser's Web
// Worker: Emscripten's system calls answer from memory (getuid is 0, the host name "emscripten", os.system -1)
// instead of calling host APIs, so no standard-library call reaches a Deno permission check. Once Pyodide, runner.py
// and the wheels are loaded, the worker revokes its read permission, cuts its global object down to an allow-list
// of language intrinsics and the few web APIs Pyodide uses while running, freezes every object reachable from
// there, and refuses WebAssembly compilation (docs/architecture.md, "The two realms"). An init frame with
// "realm": false (a test switch of the C++ side) skips all of this, so that a test can prove the kernel layer alone.
import { encodeFrame, FrameReader } from "./frames.mjs";
import { Ring } from "./ring.mjs";

const OUT_CHUNK = 1 << 20;     // Python output is forwarded in pieces of at most 1 MiB
const READ_CHUNK = 8 << 20;    // at most this much of a file per "read" answer
const SPIN_MS = 2;             // how long to spin for the next request before sleeping in Atomics.wait

// Host functions, taken before anything else runs. Only this module's closures hold them.
const denoNs = globalThis.Deno;
const readFile = denoNs.readFile.bind(denoNs);
const readTextFile = denoNs.readTextFile.bind(denoNs);
const revokePermission = denoNs.permissions.revokeSync.bind(denoNs.permissions);
const RealResponse = Response;
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
const hostDir = new URL(".", import.meta.url);
const pyodideDir = new URL("./node_modules/pyodide/", hostDir);

// Stops the worker's own message handling at once: the only message it takes is the first one.
let started = false;

let responses;         // Ring: answers to host.mjs
let requests;          // Ring: requests from the stdin worker
let interruptBuffer;   // Uint8Array over a SharedArrayBuffer: Pyodide's interrupt buffer
let slots;             // Int32Array over a SharedArrayBuffer: [0] id running now, [1] id asked to interrupt
let pyodide;
let runner;            // the Python module runner.py, as a PyProxy
let currentId = 0;     // the request whose output is being produced; 0 between requests

function send(header, body) {
  responses.write(encodeFrame(header, body));
}

function firstLine(e) {
  const text = String(e && e.message ? e.message : e).trim();
  const lines = text.split("\n");
  return lines[lines.length - 1];
}

// ---- timers: none outlives the call that set it ----

const pendingTimers = new Set();

function trackedSetTimeout(fn, ms, ...args) {
  const id = realSetTimeout(() => {
    pendingTimers.delete(id);
    if (typeof fn === "function") fn(...args);
  }, ms);
  pendingTimers.add(id);
  return id;
}

function trackedClearTimeout(id) {
  pendingTimers.delete(id);
  realClearTimeout(id);
}

function clearPendingTimers() {
  for (const id of pendingTimers) realClearTimeout(id);
  pendingTimers.clear();
}

// ---- the lock-down ----

// Loading reads Pyodide's files, and the wheels the C++ side named, through this fetch; nothing else. `allowed` maps
// each wheel's URL to the SHA-256 its lock gives ("" for a wheel of the user's own): the bytes actually loaded are
// checked, on every start of a runtime, so a file changed after create is refused, never loaded.
function loaderFetch(allowed) {
  return async (input) => {
    const url = new URL(String(input && typeof input === "object" && "url" in input ? input.url : input), pyodideDir);
    if (url.protocol !== "file:" || !(url.href.startsWith(pyodideDir.href) || allowed.has(url.href))) {
      throw new TypeError(`${url.href} is outside the runtime`);
    }
    const bytes = await readFile(url);
    const expected = allowed.get(url.href);
    if (expected) {
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
      const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
      if (hex !== expected) throw new TypeError(`${url.pathname} does not match the SHA-256 its lock gives`);
    }
    const type = url.pathname.endsWith(".wasm") ? "application/wasm" : "application/octet-stream";
    return new RealResponse(bytes, { headers: { "content-type": type } });
  };
}

// The global names Pyodide and Python need while code runs. Everything else goes: the Deno and Node namespaces,
// Worker, fetch, WebSocket, caches, storage, BroadcastChannel, MessageChannel, timers other than the tracked ones,
// FinalizationRegistry, eval, console, postMessage, close... whatever Deno adds in a later version too.
const KEEP = new Set([
  // ECMAScript
  "Object", "Function", "Array", "Number", "parseFloat", "parseInt", "Infinity", "NaN", "undefined", "Boolean",
  "String", "Symbol", "Date", "Promise", "RegExp", "Error", "AggregateError", "EvalError", "RangeError",
  "ReferenceError", "SyntaxError", "TypeError", "URIError", "SuppressedError", "globalThis", "JSON", "Math", "Intl",
  "ArrayBuffer", "SharedArrayBuffer", "Atomics", "Uint8Array", "Int8Array", "Uint16Array", "Int16Array",
  "Uint32Array", "Int32Array", "BigUint64Array", "BigInt64Array", "Uint8ClampedArray", "Float16Array",
  "Float32Array", "Float64Array", "DataView", "Map", "BigInt", "Set", "Iterator", "WeakMap", "WeakSet", "WeakRef",
  "Proxy", "Reflect", "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "unescape",
  "isFinite", "isNaN", "WebAssembly",
  // web APIs that compute in memory
  "TextDecoder", "TextEncoder", "DOMException", "performance", "crypto", "setTimeout", "clearTimeout", "console",
]);

// Replaced by inert versions: what Pyodide calls while running, that would reach the host or run code later.
function installInertGlobals() {
  const noop = () => {};
  globalThis.console = Object.freeze({
    log: noop, info: noop, warn: noop, error: noop, debug: noop, trace: noop, dir: noop, table: noop,
    assert: noop, time: noop, timeEnd: noop, timeLog: noop, group: noop, groupEnd: noop, count: noop,
  });
  // Compiling WebAssembly the program supplies (ctypes.CDLL of a file it wrote, say) is refused: every module
  // Pyodide and the wheels need was compiled during init.
  const refuse = () => {
    throw new WebAssembly.CompileError("WebAssembly compilation is not available in the sandbox");
  };
  const refuseAsync = () => Promise.reject(new WebAssembly.CompileError("WebAssembly compilation is not available in the sandbox"));
  const wasm = globalThis.WebAssembly;
  const RealModule = wasm.Module;
  const Module = function Module() {
    refuse();
  };
  Module.prototype = RealModule.prototype;
  Object.defineProperty(wasm, "Module", { value: Module, writable: false, configurable: false });
  for (const name of ["compile", "compileStreaming", "validate"]) {
    Object.defineProperty(wasm, name, { value: name === "validate" ? () => false : refuseAsync });
  }
  // instantiate(module) of an already compiled Module stays possible; of bytes it is refused.
  const realInstantiate = wasm.instantiate;
  Object.defineProperty(wasm, "instantiate", {
    value: (source, imports) => (source instanceof RealModule ? realInstantiate(source, imports) : refuseAsync()),
  });
  Object.defineProperty(wasm, "instantiateStreaming", { value: refuseAsync });
}

// Only the global object's own properties: its prototypes hold nothing but EventTarget's methods, which Deno's
// own event dispatch (of an unhandled rejection, say) needs.
function pruneGlobals() {
  for (const key of Reflect.ownKeys(globalThis)) {
    // Symbol-keyed properties are Deno's internal state of the global object (its EventTarget brand, say).
    if (typeof key !== "string" || KEEP.has(key)) continue;
    const d = Object.getOwnPropertyDescriptor(globalThis, key);
    if (d && d.configurable) delete globalThis[key];
  }
}

// Freezes everything reachable from the global object through properties, accessors and prototypes. Data
// properties of prototypes become accessors whose setter defines an own property on the receiver instead, so code
// that assigns `obj.name = ...` or `proto.toString = ...` on an object inheriting a frozen property keeps working
// (the "override mistake" of frozen intrinsics).
function hardenReachable() {
  const seen = new Set();
  const queue = [globalThis];
  while (queue.length) {
    const o = queue.pop();
    if ((typeof o !== "object" && typeof o !== "function") || o === null || seen.has(o)) continue;
    seen.add(o);
    const proto = Object.getPrototypeOf(o);
    queue.push(proto);
    const isPrototype = Object.hasOwn(o, "constructor") && o !== globalThis;
    for (const key of Reflect.ownKeys(o)) {
      const d = Object.getOwnPropertyDescriptor(o, key);
      if (!d) continue;
      if ("value" in d) {
        queue.push(d.value);
        if (isPrototype && d.configurable && d.writable && typeof d.value !== "object") {
          const value = d.value;
          Object.defineProperty(o, key, {
            get() {
              return value;
            },
            set(v) {
              if (this === o) throw new TypeError(`Cannot assign to read only property '${String(key)}'`);
              Object.defineProperty(this, key, { value: v, writable: true, enumerable: true, configurable: true });
            },
            enumerable: d.enumerable,
            configurable: false,
          });
        }
      } else {
        queue.push(d.get, d.set);
      }
    }
    if (o === Error) {
      // Pyodide assigns Error.stackTraceLimit while it handles an error, and V8 reads it only as a data property: it
      // stays writable (a number is all it can hold); nothing else of Error can change, and nothing can be added.
      for (const key of Reflect.ownKeys(o)) {
        const d = Object.getOwnPropertyDescriptor(o, key);
        if (d && d.configurable) {
          const writable = key === "stackTraceLimit";
          Object.defineProperty(o, key, "value" in d ? { writable, configurable: false } : { configurable: false });
        }
      }
      Object.preventExtensions(o);
    } else if (o === globalThis) {
      // Deno's own event dispatch (of an escaped error, say) adds internal properties to the global object: it stays
      // extensible, but none of its properties can be replaced or removed.
      for (const key of Reflect.ownKeys(o)) {
        const d = Object.getOwnPropertyDescriptor(o, key);
        if (d && d.configurable) {
          Object.defineProperty(o, key, "value" in d ? { writable: false, configurable: false } : { configurable: false });
        }
      }
    } else {
      Object.freeze(o);
    }
  }
}

// ---- interrupts while the code waits (docs/protocols/pyodide.md "Interrupts") ----

let checkInterrupt;    // Pyodide's checkInterrupt, taken before the lock-down

// time.sleep (installed by runner.install_sleep): sleeps in Atomics.wait on the counter the stdin worker bumps and
// notifies with every interrupt, so an interrupt ends the sleep at once; checkInterrupt then runs Python's SIGINT
// handler, which raises KeyboardInterrupt in the code that slept. If the handler does not raise (the program set its
// own), the sleep goes on for the rest of its length, as CPython's does. Called with the GIL held, from Python;
// `seconds` is a finite number >= 0 (runner.py checks).
function interruptibleSleep(seconds) {
  const end = performance.now() + Number(seconds) * 1000;
  for (;;) {
    const sent = Atomics.load(slots, 2);
    if (Atomics.load(interruptBuffer, 0) !== 0) {
      checkInterrupt();
      if (Atomics.load(interruptBuffer, 0) !== 0) return;  // not consumed: never spin on it
      continue;
    }
    const left = end - performance.now();
    if (!(left > 0)) return;
    Atomics.wait(slots, 2, sent, Math.min(left, 60_000));
  }
}

// Code suspended at an await runs no bytecode, so Python never sees the interrupt buffer. One waiter, armed for the
// runtime's life, wakes on every interrupt; if a run is waiting with the interrupt still pending, its task is
// cancelled (CancelledError at the await, state kept), as the signal handler does for an interrupt seen between
// bytecodes of the event loop. The buffer is cleared only when a task was cancelled: otherwise the interrupt is left
// for Python to see.
function watchInterrupts() {
  const armed = Atomics.waitAsync(slots, 2, Atomics.load(slots, 2));
  const woken = armed.async ? armed.value : Promise.resolve();
  woken.then(() => {
    try {
      if (currentId !== 0 && Atomics.load(interruptBuffer, 0) !== 0 && runner.cancel_run() === true) {
        Atomics.store(interruptBuffer, 0, 0);
      }
    } catch {
      // A program that broke the runner's cancel_run only loses this soft interrupt; the repeats and the kill remain.
    } finally {
      watchInterrupts();
    }
  });
}

// ---- init ----

async function init(message) {
  const realm = message.realm !== false;
  const wheels = Array.isArray(message.wheels) ? message.wheels.map(String) : [];
  const names = Array.isArray(message.packages) ? message.packages.map(String) : [];
  const wheelUrls = wheels.map((p) => new URL(p, "file:///").href);
  const sha256 = Array.isArray(message.wheel_sha256) ? message.wheel_sha256.map(String) : [];
  const runnerSource = await readTextFile(new URL("./runner.py", hostDir));
  if (realm) {
    delete globalThis.Deno;
    delete globalThis.process;
    globalThis.fetch = loaderFetch(new Map(wheelUrls.map((u, i) => [u, sha256[i] ?? ""])));
    globalThis.setTimeout = trackedSetTimeout;
    globalThis.clearTimeout = trackedClearTimeout;
  }
  const { loadPyodide } = await import("./node_modules/pyodide/pyodide.mjs");
  const options = {
    indexURL: realm ? pyodideDir.href : pyodideDir.pathname,
    jsglobals: Object.create(null),
    stdout: () => {},
    stderr: () => {},
  };
  if (message.make_snapshot === true) return makeSnapshot(loadPyodide, options);
  if (typeof message.snapshot === "string") options._loadSnapshot = await readSnapshot(message.snapshot);
  pyodide = await loadPyodide(options);
  if (options._loadSnapshot) {
    // Pyodide copied the image into the wasm memory but keeps its options, the file's bytes included: they are
    // released by detaching their buffer (30 MiB less resident memory per runtime).
    options._loadSnapshot.buffer.transfer(0);
    // Every restored runtime starts from the same memory: Python's random module would repeat the snapshot's state.
    pyodide.runPython("import random as _r\n_r.seed()\ndel _r");
  }
  pyodide.setInterruptBuffer(interruptBuffer);
  checkInterrupt = pyodide.checkInterrupt;
  setStreams();
  for (const name of ["setStdout", "setStderr", "setStdin", "setInterruptBuffer"]) {
    pyodide[name] = () => {
      throw new Error(`${name} is not available in the sandbox`);
    };
  }
  const mod = pyodide.runPython("import types as _t\n_m = _t.ModuleType('_code_interpreter_runner')\n_m");
  pyodide.runPython(runnerSource, { globals: mod.__dict__ });
  runner = mod;
  runner.install_sleep(interruptibleSleep);

  if (wheels.length > 0) {
    const messages = [];
    try {
      await pyodide.loadPackage(realm ? wheelUrls : wheels, {
        messageCallback: () => {},
        errorCallback: (m) => messages.push(String(m)),
      });
    } catch (e) {
      messages.push(String(e && e.message ? e.message : e));
    }
    // loadPackage resolves even when nothing was installed (docs/protocols/pyodide.md "Packages offline"): import each one to be sure.
    for (const name of names) {
      try {
        runner.verify_distribution(name);
      } catch (e) {
        const detail = messages.length ? ` (${messages.join("; ")})` : "";
        send({ t: "init_error", stage: "install_packages", message: `${name}: ${firstLine(e)}${detail}` });
        return false;
      }
    }
  }
  pyodide.FS.mkdirTree("/files");
  // One run before the lock-down, so Pyodide sets up its event-loop scheduling (a MessageChannel) while it can.
  JSON.parse(await runner.run("None", "{}", false));
  const python = pyodide.runPython("import sys; sys.version.split()[0]");
  if (realm) {
    revokePermission({ name: "read" });
    pruneGlobals();
    installInertGlobals();
    hardenReachable();
  }
  clearPendingTimers();
  watchInterrupts();
  send({ t: "ready", pyodide: pyodide.version, python });
  return true;
}

// ---- memory snapshots (docs/protocols/pyodide.md "Memory snapshots (private API, pinned by the tests)") ----

// The snapshot file: an 80-byte header (SNAPSHOT_MAGIC, the 64 hex digits of the image's SHA-256, 7 spaces, "\n"),
// then the image, whose views stay aligned at that offset. The C++ side has checked the digest before naming the
// file; the header is only checked for shape here.
const SNAPSHOT_MAGIC = "CISNAP1 ";
const SNAPSHOT_HEADER = 80;
const SNAPSHOT_PART = 8 << 20;   // the image goes to the C++ side in answers of at most 8 MiB

async function readSnapshot(path) {
  const bytes = await readFile(new URL(path, "file:///"));
  const magic = new TextDecoder().decode(bytes.subarray(0, SNAPSHOT_MAGIC.length));
  if (magic !== SNAPSHOT_MAGIC || bytes.length <= SNAPSHOT_HEADER) throw new Error(`${path} is not a snapshot`);
  return bytes.subarray(SNAPSHOT_HEADER);
}

// A throwaway runtime that loads Pyodide, makes the snapshot of that state and sends it; it runs no other code, so
// no program's state is ever in an image. The worker then stops serving: the C++ side ends the process.
async function makeSnapshot(loadPyodide, options) {
  const made = await loadPyodide({ ...options, _makeSnapshot: true });
  const image = made.makeMemorySnapshot();
  for (let off = 0; off < image.length; off += SNAPSHOT_PART) {
    send({ t: "snapshot" }, image.subarray(off, Math.min(image.length, off + SNAPSHOT_PART)));
  }
  send({ t: "snapshot_end", size: image.length });
  return false;
}

function setStreams() {
  const writer = (stream) => ({
    write(buf) {
      if (currentId !== 0) {
        for (let off = 0; off < buf.length; off += OUT_CHUNK) {
          send({ t: "out", id: currentId, s: stream }, buf.subarray(off, Math.min(buf.length, off + OUT_CHUNK)));
        }
      }
      return buf.length;
    },
    isatty: false,
  });
  pyodide.setStdout(writer(1));
  pyodide.setStderr(writer(2));
  pyodide.setStdin({ error: true });
}

// ---- requests ----

async function execute(header, body) {
  const id = header.id | 0;
  const code = new TextDecoder("utf-8").decode(body);
  const env = JSON.stringify(header.env && typeof header.env === "object" ? header.env : {});
  Atomics.store(interruptBuffer, 0, 0);
  currentId = id;
  Atomics.store(slots, 0, id);
  if (Atomics.load(slots, 1) === id) Atomics.store(interruptBuffer, 0, 2);
  const started = performance.now();
  let outcome;
  try {
    outcome = JSON.parse(await runner.run(code, env));
  } catch (e) {
    // After a fatal error the interpreter is unusable: host.mjs ends the process and the C++ side respawns it.
    if (e && e.pyodide_fatal_error) {
      send({ t: "fatal", reason: firstLine(e) });
      return false;
    }
    // Otherwise only an interrupt that lands in the runner's own bookkeeping gets here.
    outcome = { status: "interrupted", error: { name: String(e?.type ?? "Error"), value: firstLine(e), traceback: "" } };
  }
  Atomics.store(slots, 0, 0);
  Atomics.store(interruptBuffer, 0, 0);
  currentId = 0;
  clearPendingTimers();
  outcome.t = "result";
  outcome.id = id;
  outcome.ms = performance.now() - started;
  send(outcome);
  return true;
}

// ---- the in-memory filesystem (docs/protocols/pyodide.md "The filesystem") ----

function errnoName(e) {
  if (e && typeof e.errno === "number") {
    for (const [name, value] of Object.entries(pyodide.ERRNO_CODES)) if (value === e.errno) return name;
  }
  return "EIO";
}

function parentDir(path) {
  const i = path.lastIndexOf("/");
  return i > 0 ? path.slice(0, i) : null;
}

function removeTree(FS, path) {
  const st = FS.lstat(path);
  if (FS.isDir(st.mode)) {
    for (const name of FS.readdir(path)) if (name !== "." && name !== "..") removeTree(FS, `${path}/${name}`);
    FS.rmdir(path);
  } else {
    FS.unlink(path);
  }
}

function fileType(FS, mode) {
  if (FS.isLink(mode)) return "symlink";
  if (FS.isDir(mode)) return "directory";
  if (FS.isFile(mode)) return "file";
  return "other";
}

function fsError(message, errno) {
  return Object.assign(new Error(message), { errno });
}

// The canonical absolute path of an existing `path`: relative to the working directory, ".", ".." and every symlink
// on the way resolved by the filesystem itself (a symlink loop is ELOOP), the last component too when `follow`.
function canonical(FS, path, follow) {
  return FS.lookupPath(path, { follow }).path;
}

// Where a copy or move to `to` lands, canonical: its longest existing ancestor (or `to` itself) resolved by
// canonical(), followed by the names after it, "." and ".." among them applied to the names (nothing after the
// ancestor exists, so no symlink is left to resolve). String comparisons of the paths as given are not enough:
// "/files/a/../a", "./a" or a symlink name the same directory as "/files/a".
function canonicalDestination(FS, to) {
  const parts = to.split("/");
  for (let n = parts.length; n >= 0; n--) {
    const head = parts.slice(0, n).join("/") || (to.startsWith("/") ? "/" : ".");
    let base;
    try {
      base = canonical(FS, head, true);
    } catch (e) {
      const code = errnoName(e);
      if (code === "ENOENT" || code === "ENOTDIR") continue;
      throw e;
    }
    const names = base.split("/").filter((p) => p !== "");
    for (const p of parts.slice(n)) {
      if (p === "" || p === ".") continue;
      if (p === "..") names.pop();
      else names.push(p);
    }
    return "/" + names.join("/");
  }
  throw fsError("no ancestor of the destination exists", pyodide.ERRNO_CODES.ENOENT);
}

// Refuses (EINVAL) a copy or move of the directory `from` to a destination inside it, which would recurse without
// end (copy) or hang a directory under its own child (move). A copy onto the directory itself is refused too; a
// move onto itself is the rename's own no-op.
function refuseIntoItself(FS, op, from, to) {
  if (!FS.isDir(FS.lstat(from).mode)) return;
  const source = canonical(FS, from, false);
  const destination = canonicalDestination(FS, to);
  const inside = source === "/" || destination.startsWith(source + "/");
  if (inside || (op === "copy" && destination === source)) {
    throw fsError(`cannot ${op} a directory into itself`, pyodide.ERRNO_CODES.EINVAL);
  }
}

// Whether an entry named `path` exists (a dangling symlink included).
function entryExists(FS, path) {
  try {
    FS.lstat(path);
    return true;
  } catch {
    return false;
  }
}

// Whether `path` exists and is itself a symlink (not followed).
function isLinkEntry(FS, path) {
  try {
    return FS.isLink(FS.lstat(path).mode);
  } catch {
    return false;
  }
}

// Copies a file, or a directory tree (links copied as links, never followed), to `to`; the caller made the parents
// of `to` and refused a destination inside the source (refuseIntoItself). Below `to`, nothing is written through a
// symlink already in the destination (EEXIST): it could lead back into the source and make the copy endless, or
// anywhere else. A file is written under a temporary name beside the destination and renamed over it, so a failed
// copy leaves the destination as it was; bytes that cannot be allocated under the memory cap are ENOMEM.
// Iterative, so a deep tree cannot overflow the stack.
function copyTree(FS, from, to) {
  const pending = [[from, to]];
  while (pending.length > 0) {
    const [src, dst] = pending.pop();
    const st = FS.lstat(src);
    if (FS.isDir(st.mode)) {
      // One mkdir per directory (its parent was made before it): mkdirTree would walk the whole path again for each,
      // cubic in the depth. The top one may exist already (a copy into an existing directory merges).
      if (dst === to) {
        FS.mkdirTree(dst);
      } else {
        try {
          FS.mkdir(dst);
        } catch (e) {
          // An existing directory merges; a symlink to one is not followed (lstat).
          if (errnoName(e) !== "EEXIST" || !FS.isDir(FS.lstat(dst).mode)) throw e;
        }
      }
      for (const name of FS.readdir(src)) if (name !== "." && name !== "..") pending.push([`${src}/${name}`, `${dst}/${name}`]);
    } else if (FS.isLink(st.mode)) {
      FS.symlink(FS.readlink(src), dst);
    } else {
      if (isLinkEntry(FS, dst)) throw fsError("the destination holds a symlink", pyodide.ERRNO_CODES.EEXIST);
      let part = `${dst}.copying`;
      for (let n = 1; entryExists(FS, part); n++) part = `${dst}.copying${n}`;
      try {
        FS.writeFile(part, FS.readFile(src));
        FS.rename(part, dst);
      } catch (e) {
        try {
          FS.unlink(part);
        } catch {
          // not made, or renamed into place
        }
        if (e?.name === "RangeError") {
          throw fsError("not enough memory under the runtime's memory limit", pyodide.ERRNO_CODES.ENOMEM);
        }
        throw e;
      }
    }
  }
}

function fsOp(header, body) {
  const FS = pyodide.FS;
  const path = String(header.path ?? "");
  const reply = { t: "fs", id: header.id | 0, ok: true };
  let out;
  switch (header.op) {
    case "write": {
      const dir = parentDir(path);
      if (dir) FS.mkdirTree(dir);
      const stream = FS.open(path, header.append ? "a" : "w");
      try {
        if (body.length) FS.write(stream, body, 0, body.length);
      } finally {
        FS.close(stream);
      }
      break;
    }
    case "read": {
      const st = FS.stat(path);
      if (FS.isDir(st.mode)) throw Object.assign(new Error("is a directory"), { errno: pyodide.ERRNO_CODES.EISDIR });
      const offset = Math.max(0, Number(header.offset ?? 0));
      const length = Math.max(0, Math.min(Number(header.length ?? READ_CHUNK), READ_CHUNK, st.size - offset));
      out = new Uint8Array(length);
      const stream = FS.open(path, "r");
      try {
        let got = 0;
        while (got < length) {
          const n = FS.read(stream, out, got, length - got, offset + got);
          if (n <= 0) break;
          got += n;
        }
        out = out.subarray(0, got);
      } finally {
        FS.close(stream);
      }
      reply.size = st.size;
      break;
    }
    case "list": {
      const entries = [];
      for (const name of FS.readdir(path)) {
        if (name === "." || name === "..") continue;
        const full = path.endsWith("/") ? path + name : `${path}/${name}`;
        const st = FS.stat(full);
        const dir = FS.isDir(st.mode);
        entries.push({ name, path: full, dir, size: dir ? 0 : st.size });
      }
      reply.entries = entries;
      break;
    }
    case "remove":
      removeTree(FS, path);
      break;
    case "mkdir":
      FS.mkdirTree(path);
      break;
    case "stat": {
      const st = FS.lstat(path);
      const type = fileType(FS, st.mode);
      reply.info = { type, size: type === "directory" ? 0 : st.size, mtime_ms: st.mtime.getTime(), mode: st.mode & 0o7777 };
      break;
    }
    case "copy":
    case "move": {
      const to = String(header.to ?? "");
      FS.lstat(path);  // ENOENT for a missing source, before anything is made
      refuseIntoItself(FS, header.op, path, to);  // before the parents are made, so a refusal leaves nothing
      const dir = parentDir(to);
      if (dir) FS.mkdirTree(dir);
      if (header.op === "copy") copyTree(FS, path, to);
      else FS.rename(path, to);
      break;
    }
    default:
      throw new Error(`unknown file operation ${String(header.op)}`);
  }
  send(reply, out);
}

function fileRequest(header, body) {
  try {
    fsOp(header, body);
  } catch (e) {
    const code = errnoName(e);
    const message = e instanceof Error && !(typeof e.errno === "number") ? firstLine(e) : code;
    send({ t: "fs", id: header.id | 0, ok: false, code, message });
  }
}

// ---- main loop ----

async function serve() {
  const reader = new FrameReader();
  for (;;) {
    let frame = reader.next();
    while (frame === null) {
      const got = requests.read(SPIN_MS);
      if (typeof got === "number") return;  // the stdin worker closed the ring; host.mjs ends the process
      reader.push(got);
      frame = reader.next();
    }
    const { header, body } = frame;
    if (header.t === "exec") {
      if (!(await execute(header, body))) return;
    } else if (header.t === "fs") {
      fileRequest(header, body);
    } else {
      return;  // the stdin worker passes on only exec and fs frames
    }
  }
}

// An error that escapes a callback (Pyodide's event-loop callbacks run from a MessageChannel) would be passed to
// host.mjs as an event its blocked event loop never dispatches: so it is handled here. A fatal error makes host.mjs
// end the process (the C++ side then respawns it); any other is dropped, as Deno would otherwise end the worker.
function onEscaped(event, error) {
  event.preventDefault();
  if (error && error.pyodide_fatal_error && responses) send({ t: "fatal", reason: firstLine(error) });
}
globalThis.addEventListener("unhandledrejection", (event) => onEscaped(event, event.reason));
globalThis.addEventListener("error", (event) => onEscaped(event, event.error));

globalThis.onmessage = async (event) => {
  if (started) return;
  started = true;
  globalThis.onmessage = null;
  const m = event.data;
  responses = new Ring(m.responses);
  requests = new Ring(m.requests);
  interruptBuffer = new Uint8Array(m.interrupt);
  slots = new Int32Array(m.slots);
  let ok = false;
  try {
    ok = await init(m.init);
  } catch (e) {
    send({ t: "init_error", stage: "start_runtime", message: `loading Pyodide failed: ${firstLine(e)}` });
  }
  if (ok) await serve();
};
