// The host's stdin reader, part of the protocol realm. It runs in a Web Worker so that it keeps reading while Python
// runs: an "interrupt" frame from the C++ side is acted on at once by writing SIGINT (2) into Pyodide's interrupt
// buffer (docs/protocols/pyodide.md "Interrupts"), which Python checks between bytecodes. The first frame, "init",
// goes to host.mjs through the answer ring, before the sandbox worker is given the ring (it holds the frame token,
// which the sandbox worker must never see; host.mjs wipes the ring after reading it). A postMessage from this worker
// would never be delivered: its event loop does not turn once the read loop runs. Every later "exec" and "fs" frame
// is copied, as raw bytes and in order, into the request ring of the sandbox worker (python_worker.mjs), which
// waits on it with Atomics.wait. Blocking reads and shared memory keep a request to a single thread hand-off;
// Deno's async stdin and postMessage would cost two more wake-ups per call.
import { FrameReader } from "./frames.mjs";
import { Ring } from "./ring.mjs";

let interruptBuffer = null;  // Uint8Array over a SharedArrayBuffer: Pyodide's interrupt buffer
let slots = null;            // Int32Array, shared with the sandbox worker: [0] id running now, [1] id asked to stop,
                             // [2] interrupts sent
let control = null;          // Int32Array, shared with host.mjs only: [0] newest request id, [1] id asked to stop

function requestInterrupt(id) {
  // Both sides use sequentially consistent atomics: whichever of "run id starts" and "interrupt id asked" comes
  // second sees the other, so an interrupt that races the start of its run is never lost.
  Atomics.store(control, 1, id);
  Atomics.store(slots, 1, id);
  if (Atomics.load(slots, 0) === id) Atomics.store(interruptBuffer, 0, 2);
  // Wakes the sandbox worker where it waits for one: inside time.sleep, or in its event loop at an await. It waits
  // on the counter, read before it checks the interrupt buffer, so no interrupt falls between the check and the wait.
  Atomics.add(slots, 2, 1);
  Atomics.notify(slots, 2);
}

function readLoop(requests, responses) {
  const reader = new FrameReader();
  const chunk = new Uint8Array(1 << 16);
  let initialised = false;
  const close = (state) => {
    requests.close(state);
    responses.close(state);
  };
  for (;;) {
    let n;
    try {
      n = Deno.stdin.readSync(chunk);
    } catch (_) {
      n = null;
    }
    if (n === null) {
      close(Ring.EOF);
      return;
    }
    reader.push(chunk.subarray(0, n));
    for (;;) {
      let frame;
      try {
        frame = reader.nextRaw();
      } catch (_) {
        close(Ring.BAD);
        return;
      }
      if (frame === null) break;
      const t = frame.header.t;
      if (!initialised) {
        if (t !== "init") {
          close(Ring.BAD);
          return;
        }
        // Until host.mjs has read it, nothing else writes to the answer ring: the sandbox worker is given it after.
        initialised = true;
        responses.write(frame.raw);
      } else if (t === "interrupt") {
        requestInterrupt(frame.header.id | 0);
      } else if (t === "exec" || t === "fs") {
        Atomics.store(control, 0, frame.header.id | 0);
        requests.write(frame.raw);
      } else {
        close(Ring.BAD);
        return;
      }
    }
  }
}

self.onmessage = (event) => {
  interruptBuffer = new Uint8Array(event.data.interrupt);
  slots = new Int32Array(event.data.slots);
  control = new Int32Array(event.data.control);
  const requests = new Ring(event.data.requests);
  const responses = new Ring(event.data.responses);
  self.onmessage = null;
  readLoop(requests, responses);
};
