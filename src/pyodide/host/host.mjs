// Host of the local Pyodide sandbox: one Deno process per sandbox, driven by the C++ library over stdin/stdout.
//
// Started as `deno run --no-prompt --no-remote --no-config --no-npm --no-lock --allow-read=<host files>,<pyodide
// dir>[,<wheel dir>] --v8-flags=--disallow-code-generation-from-strings host.mjs` with a minimal environment and a
// private DENO_DIR (pyodide.md §2.5–2.6); see PyodideSandbox::create. Everything Python prints goes to the C++ side as "out"
// frames; nothing else is written to stdout. Frames are described in frames.mjs and docs/architecture.md.
import childProcess from "node:child_process";
import { loadPyodide } from "./node_modules/pyodide/pyodide.mjs";
import { encodeFrame, FrameReader, PROTOCOL_VERSION } from "./frames.mjs";
import { Ring } from "./ring.mjs";

const OUT_CHUNK = 1 << 20;     // Python output is forwarded in pieces of at most 1 MiB
const READ_CHUNK = 8 << 20;    // at most this much of a file per "read" answer

function writeAll(bytes) {
  let off = 0;
  while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
}

// Every frame carries the token the C++ side chose for this process. The token lives only in this module's scope,
// which Python cannot reach, so bytes that user code manages to put on stdout some other way are recognised as
// forged (the call answers UNKNOWN) instead of being taken as a result.
let frameToken = "";

function send(header, body) {
  header.k = frameToken;
  writeAll(encodeFrame(header, body));
}

// Untrusted code must not run host commands: Emscripten's system() reaches child_process.spawnSync through the
// global require (pyodide.md §2.1, §2.4). Deno's permissions already refuse it, but the refusal is a fatal error
// inside wasm; answering "command not found" keeps the interpreter alive.
function neutraliseSubprocesses() {
  const refuse = () => ({ pid: 0, status: 127, signal: null, output: [null, null, null], stdout: null, stderr: null });
  childProcess.spawnSync = refuse;
  childProcess.execSync = refuse;
  childProcess.execFileSync = refuse;
}

// A rejection nobody handles would end the process (Deno's default). An interrupt that escapes Python's task is one;
// the run it belonged to then never answers, and the C++ side's grace period ends it, with the right status.
// After a Pyodide fatal error the interpreter is unusable: then the process ends, and the C++ side respawns it.
globalThis.addEventListener("unhandledrejection", (event) => {
  if (event.reason && event.reason.pyodide_fatal_error) Deno.exit(70);
  event.preventDefault();
});

const hostDir = new URL(".", import.meta.url);
const interruptShared = new SharedArrayBuffer(1);
const slotsShared = new SharedArrayBuffer(8);
const interruptBuffer = new Uint8Array(interruptShared);
const slots = new Int32Array(slotsShared);   // [0] id running now, [1] id the C++ side asked to interrupt

let pyodide;
let runner;            // the Python module runner.py, as a PyProxy
let currentId = 0;     // the request whose output is being produced; 0 between requests

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

async function init(header) {
  frameToken = String(header.token ?? "");
  neutraliseSubprocesses();
  pyodide = await loadPyodide({
    indexURL: new URL("./node_modules/pyodide/", hostDir).pathname,
    jsglobals: Object.create(null),
    stdout: () => {},
    stderr: () => {},
  });
  neutraliseSubprocesses();
  pyodide.setInterruptBuffer(interruptBuffer);
  setStreams();
  // The code reaches this API object as `pyodide_js`: keep it from replacing our streams or interrupt buffer.
  for (const name of ["setStdout", "setStderr", "setStdin", "setInterruptBuffer"]) {
    pyodide[name] = () => {
      throw new Error(`${name} is not available in the sandbox`);
    };
  }
  const source = await Deno.readTextFile(new URL("./runner.py", hostDir));
  const mod = pyodide.runPython(
    "import types as _t\n_m = _t.ModuleType('_code_interpreter_runner')\n_m",
  );
  pyodide.runPython(source, { globals: mod.__dict__ });
  runner = mod;

  const wheels = Array.isArray(header.wheels) ? header.wheels : [];
  const names = Array.isArray(header.packages) ? header.packages : [];
  if (wheels.length > 0) {
    const messages = [];
    try {
      await pyodide.loadPackage(wheels, {
        messageCallback: () => {},
        errorCallback: (m) => messages.push(String(m)),
      });
    } catch (e) {
      messages.push(String(e && e.message ? e.message : e));
    }
    // loadPackage resolves even when nothing was installed (pyodide.md §1.8): import each one to be sure.
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
  send({
    t: "ready",
    protocol: PROTOCOL_VERSION,
    pyodide: pyodide.version,
    python: pyodide.runPython("import sys; sys.version.split()[0]"),
  });
  return true;
}

function firstLine(e) {
  const text = String(e && e.message ? e.message : e).trim();
  const lines = text.split("\n");
  return lines[lines.length - 1];
}

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
    // After a fatal error the interpreter is unusable: end the process so the C++ side sees the loss and respawns.
    if (e && e.pyodide_fatal_error) Deno.exit(70);
    // Otherwise only an interrupt that lands in the runner's own bookkeeping gets here.
    outcome = { status: "interrupted", error: { name: String(e?.type ?? "Error"), value: firstLine(e), traceback: "" } };
  }
  Atomics.store(slots, 0, 0);
  const interrupted = Atomics.load(slots, 1) === id;
  Atomics.store(interruptBuffer, 0, 0);
  currentId = 0;
  outcome.t = "result";
  outcome.id = id;
  outcome.ms = performance.now() - started;
  outcome.host_interrupt = interrupted;
  send(outcome);
}

// ---- the in-memory filesystem (pyodide.md §1.7) ----

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

// ---- main loop: frames come from the stdin worker through a shared ring, one at a time ----

const SPIN_MS = 2;  // how long the main thread spins for the next request before it sleeps in Atomics.wait
const ringShared = Ring.allocate();
const ring = new Ring(ringShared);
const worker = new Worker(new URL("./stdin_worker.mjs", hostDir).href, { type: "module" });
worker.postMessage({ interrupt: interruptShared, slots: slotsShared, ring: ringShared });
const requests = new FrameReader();

// The next request. Blocks the event loop while waiting: between requests there is nothing else for it to do.
function nextFrame() {
  for (;;) {
    const frame = requests.next();
    if (frame !== null) return frame;
    const got = ring.read(SPIN_MS);
    if (got === Ring.EOF) Deno.exit(0);  // the C++ side went away
    if (got === Ring.BAD) Deno.exit(3);  // it spoke nonsense
    requests.push(got);
  }
}

let initialised = false;
for (;;) {
  const { header, body } = nextFrame();
  if (!initialised) {
    if (header.t !== "init") Deno.exit(3);
    initialised = true;
    if (!(await init(header))) Deno.exit(4);
    continue;
  }
  switch (header.t) {
    case "exec":
      await execute(header, body);
      break;
    case "fs":
      fileRequest(header, body);
      break;
    default:
      Deno.exit(3);
  }
}
