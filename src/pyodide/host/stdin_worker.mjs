// The host's stdin reader. It runs in a Web Worker so that it keeps reading while the main thread is busy running
// Python: an "interrupt" frame from the C++ side is acted on at once by writing SIGINT (2) into Pyodide's interrupt
// buffer (pyodide.md §1.6, layout 2), which Python checks between bytecodes. Every other frame is copied, as raw
// bytes and in order, into a ring buffer shared with the main thread (ring.mjs), which waits on it with
// Atomics.wait. Blocking reads and shared memory keep a request to a single thread hand-off; Deno's async stdin
// and postMessage would cost two more wake-ups per call.
import { FrameReader } from "./frames.mjs";
import { Ring } from "./ring.mjs";

let interruptBuffer = null;  // Uint8Array over a SharedArrayBuffer: Pyodide's interrupt buffer
let slots = null;            // Int32Array over a SharedArrayBuffer: [0] id running now, [1] id asked to interrupt

function requestInterrupt(id) {
  // Both sides use sequentially consistent atomics: whichever of "main starts run id" and "interrupt id asked"
  // comes second sees the other, so an interrupt that races the start of its run is never lost.
  Atomics.store(slots, 1, id);
  if (Atomics.load(slots, 0) === id) Atomics.store(interruptBuffer, 0, 2);
}

function readLoop(ring) {
  const reader = new FrameReader();
  const chunk = new Uint8Array(1 << 16);
  for (;;) {
    let n;
    try {
      n = Deno.stdin.readSync(chunk);
    } catch (_) {
      n = null;
    }
    if (n === null) {
      ring.close(Ring.EOF);
      return;
    }
    reader.push(chunk.subarray(0, n));
    for (;;) {
      let frame;
      try {
        frame = reader.nextRaw();
      } catch (_) {
        ring.close(Ring.BAD);
        return;
      }
      if (frame === null) break;
      if (frame.header.t === "interrupt") {
        requestInterrupt(frame.header.id | 0);
      } else {
        ring.write(frame.raw);
      }
    }
  }
}

self.onmessage = (event) => {
  interruptBuffer = new Uint8Array(event.data.interrupt);
  slots = new Int32Array(event.data.slots);
  const ring = new Ring(event.data.ring);
  self.onmessage = null;
  readLoop(ring);
};
