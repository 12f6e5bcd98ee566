// Host of the local Pyodide sandbox: one Deno process per sandbox, driven by the C++ library over stdin/stdout.
//
// Started as `deno run --no-prompt --no-remote --no-config --no-npm --no-lock --allow-read=<host files>,<pyodide
// dir>[,<wheel dir>] --v8-flags=--disallow-code-generation-from-strings,--no-wasm-dynamic-tiering host.mjs` with a minimal environment and a
// private DENO_DIR (docs/protocols/pyodide.md "Permissions", "The posture used"); see PyodideSandbox::create.
//
// Two realms (docs/architecture.md, "The two realms"). This main thread and the stdin worker are the protocol realm:
// they alone hold stdin, stdout and the frame token. Python runs in the sandbox realm, python_worker.mjs, a Web
// Worker that shares no object with this one: it takes requests from one SharedArrayBuffer ring and answers into
// another. Its answers are hostile input here: each is decoded with size limits, checked field by field against
// the request in flight, rebuilt from the fields the protocol defines, and only then signed with the token and
// written to stdout. Frames are described in frames.mjs and docs/architecture.md.
import { encodeFrame, FrameReader, PROTOCOL_VERSION } from "./frames.mjs";
import { Ring } from "./ring.mjs";

const SPIN_MS = 0;  // no spin for answers: a spinning thread here would compete with Python for a core
// The sandbox's answers are held to the limits the C++ side applies to frames from the host.
const MAX_ANSWER_HEADER = 8 << 20;
const MAX_ANSWER_BODY = 16 << 20;

function writeAll(bytes) {
  let off = 0;
  while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
}

// A rejection nobody handles would end the process (Deno's default); none is expected here.
globalThis.addEventListener("unhandledrejection", (event) => event.preventDefault());

const hostDir = new URL(".", import.meta.url);
const interruptShared = new SharedArrayBuffer(1);
// stdin worker <-> sandbox: [0] id running, [1] id asked to stop, [2] interrupts sent (a counter to wait on)
const slotsShared = new SharedArrayBuffer(12);
const controlShared = new SharedArrayBuffer(8);   // stdin worker <-> here only: [0] newest request id, [1] id asked
const control = new Int32Array(controlShared);
const requestsShared = Ring.allocate();           // stdin worker -> sandbox
const answersShared = Ring.allocate();            // sandbox -> here
const answers = new Ring(answersShared);

// The sandbox worker starts first, so that its start (a V8 isolate, then its modules) overlaps the stdin worker's:
// 10-20 ms of every runtime start here. It holds nothing of this realm until the message below, which is sent
// only after the token has been read and wiped from the ring.
const sandbox = new Worker(new URL("./python_worker.mjs", hostDir).href, { type: "module" });
const stdinWorker = new Worker(new URL("./stdin_worker.mjs", hostDir).href, { type: "module" });
stdinWorker.postMessage({
  interrupt: interruptShared,
  slots: slotsShared,
  control: controlShared,
  requests: requestsShared,
  responses: answersShared,
});
const reader = new FrameReader({ maxHeader: MAX_ANSWER_HEADER, maxBody: MAX_ANSWER_BODY });
const init = nextAnswer().header;
if (init.t !== "init") Deno.exit(3);
const frameToken = String(init.token ?? "");
// The token passed through the answer ring, which the sandbox worker shares: no trace of it may stay there.
new Uint8Array(answersShared.data).fill(0);

sandbox.postMessage({
  init: {
    realm: init.realm !== false,
    wheels: Array.isArray(init.wheels) ? init.wheels.filter((w) => typeof w === "string") : [],
    wheel_sha256: Array.isArray(init.wheel_sha256) ? init.wheel_sha256.filter((w) => typeof w === "string") : [],
    packages: Array.isArray(init.packages) ? init.packages.filter((p) => typeof p === "string") : [],
    snapshot: typeof init.snapshot === "string" ? init.snapshot : undefined,
    make_snapshot: init.make_snapshot === true,
  },
  requests: requestsShared,
  responses: answersShared,
  interrupt: interruptShared,
  slots: slotsShared,
});

function send(header, body) {
  header.k = frameToken;
  writeAll(encodeFrame(header, body));
}

const str = (v) => (typeof v === "string" ? v : "");
const int = (v) => (Number.isSafeInteger(v) ? v : 0);

// A rich result's formats: {mime type: text}, at most 32 of them, names of 1..100 characters; anything else is not one.
function bundle(b) {
  if (b === null || typeof b !== "object" || Array.isArray(b)) return null;
  const out = {};
  const entries = Object.entries(b);
  if (entries.length === 0 || entries.length > 32) return null;
  for (const [k, v] of entries) {
    if (k.length === 0 || k.length > 100 || typeof v !== "string") return null;
    out[k] = v;
  }
  return out;
}

function codeError(e) {
  const o = e !== null && typeof e === "object" ? e : {};
  return { name: str(o.name), value: str(o.value), traceback: str(o.traceback) };
}

// The answer the sandbox gave, as the protocol defines it, or null when it is not one.
function rebuild(h) {
  switch (h.t) {
    case "out":
      return h.s === 1 || h.s === 2 ? { t: "out", id: int(h.id), s: h.s } : null;
    case "result": {
      const status = h.status === "ok" || h.status === "error" || h.status === "interrupted" ? h.status : null;
      if (status === null) return null;
      const r = { t: "result", id: int(h.id), status };
      if (status === "ok" && typeof h.value === "string") r.value = h.value;
      if (status === "ok" && typeof h.value === "string" && bundle(h.value_data)) r.value_data = bundle(h.value_data);
      if (Array.isArray(h.displays)) {
        r.displays = h.displays.slice(0, 1000).map(bundle).filter((b) => b !== null);
        // The runner keeps to these limits; anything past them is dropped here, and the answer says so.
        if (r.displays.length !== h.displays.length) r.displays_dropped = true;
      }
      if (h.displays_dropped === true) r.displays_dropped = true;
      if (Number.isSafeInteger(h.exit_code)) r.exit_code = h.exit_code;
      else if (status === "error") r.exit_code = 1;
      if (status !== "ok") r.error = codeError(h.error);
      r.ms = typeof h.ms === "number" && Number.isFinite(h.ms) ? h.ms : 0;
      r.host_interrupt = Atomics.load(control, 1) === r.id;
      return r;
    }
    case "fs": {
      const r = { t: "fs", id: int(h.id), ok: h.ok === true };
      if (!r.ok) {
        r.code = str(h.code) || "EIO";
        r.message = str(h.message);
      }
      if (Number.isSafeInteger(h.size) && h.size >= 0) r.size = h.size;
      if (h.info !== null && typeof h.info === "object") {
        const i = h.info;
        r.info = {
          type: ["file", "directory", "symlink", "other"].includes(i.type) ? i.type : "other",
          size: Math.max(0, int(i.size)),
          mtime_ms: Number.isSafeInteger(i.mtime_ms) ? i.mtime_ms : 0,
          mode: int(i.mode) & 0o7777,
        };
      }
      if (Array.isArray(h.entries)) {
        r.entries = h.entries.map((e) => {
          const o = e !== null && typeof e === "object" ? e : {};
          return { name: str(o.name), path: str(o.path), dir: o.dir === true, size: Math.max(0, int(o.size)) };
        });
      }
      return r;
    }
    default:
      return null;
  }
}

// ---- main loop: the sandbox's answers, one at a time ----

// A fatal error in the sandbox realm ends the process (the C++ side respawns it). Its reason goes to stderr, which
// the C++ side reads for the death's description and to tell a fatal allocation failure (the memory cap) from other
// deaths. The reason is the sandbox's word: printable ASCII only, at most 200 characters, one line.
function fatal(reason) {
  const text = str(reason).replace(/[^\x20-\x7e]/g, "?").slice(0, 200);
  try {
    Deno.stderr.writeSync(new TextEncoder().encode(`code_interpreter runtime: fatal error: ${text}\n`));
  } catch (_) {
    // stderr closed: the exit status alone tells the C++ side
  }
  Deno.exit(70);
}

let answered = 0;   // the request whose final answer (result or fs) has been written
let ready = false;

function nextAnswer() {
  for (;;) {
    let frame;
    try {
      frame = reader.next();
    } catch (_) {
      Deno.exit(70);  // the sandbox wrote what no answer looks like: it is not trusted further
    }
    if (frame !== null) return frame;
    const got = answers.read(SPIN_MS);
    if (got === Ring.EOF) Deno.exit(0);  // the C++ side went away
    if (got === Ring.BAD) Deno.exit(3);  // it spoke nonsense
    reader.push(got);
  }
}

for (;;) {
  const { header, body } = nextAnswer();
  if (!ready) {
    if (header.t === "ready") {
      ready = true;
      send({ t: "ready", protocol: PROTOCOL_VERSION, pyodide: str(header.pyodide), python: str(header.python) });
      continue;
    }
    // A runtime started to make a snapshot sends the image before it would be ready (python_worker.mjs).
    if (init.make_snapshot === true && header.t === "snapshot") {
      send({ t: "snapshot" }, body);
      continue;
    }
    if (init.make_snapshot === true && header.t === "snapshot_end") {
      send({ t: "snapshot_end", size: int(header.size) });
      continue;
    }
    if (header.t === "init_error") {
      send({ t: "init_error", stage: str(header.stage) || "start_runtime", message: str(header.message) });
      Deno.exit(4);
    }
    Deno.exit(70);
  }
  if (header.t === "fatal") fatal(header.reason);
  const answer = rebuild(header);
  if (answer === null) Deno.exit(70);
  // Only answers to the request in flight pass, and nothing after its final answer: a frame the sandbox forges for
  // another request, or a second result, never reaches the C++ side.
  const current = Atomics.load(control, 0);
  if (answer.id !== current || answered === current) continue;
  if (answer.t !== "out") answered = current;
  send(answer, answer.t === "out" || (answer.t === "fs" && answer.ok) ? body : undefined);
}
