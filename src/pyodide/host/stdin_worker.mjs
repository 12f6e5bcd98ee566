// The host's stdin reader. It runs in a Web Worker so that it keeps reading while the main thread is busy running
// Python: an "interrupt" frame from the C++ side is acted on at once by writing SIGINT (2) into Pyodide's interrupt
// buffer (pyodide.md §1.6, layout 2), which Python checks between bytecodes. Every other frame is passed to the main
// thread, which handles them in order once Python yields.
import { FrameReader } from "./frames.mjs";

let interruptBuffer = null;  // Uint8Array over a SharedArrayBuffer: Pyodide's interrupt buffer
let slots = null;            // Int32Array over a SharedArrayBuffer: [0] id running now, [1] id asked to interrupt

function requestInterrupt(id) {
  // Both sides use sequentially consistent atomics: whichever of "main starts run id" and "interrupt id asked"
  // comes second sees the other, so an interrupt that races the start of its run is never lost.
  Atomics.store(slots, 1, id);
  if (Atomics.load(slots, 0) === id) Atomics.store(interruptBuffer, 0, 2);
}

async function readLoop() {
  const reader = new FrameReader();
  const chunk = new Uint8Array(1 << 16);
  for (;;) {
    let n;
    try {
      n = await Deno.stdin.read(chunk);
    } catch (_) {
      n = null;
    }
    if (n === null) {
      self.postMessage({ eof: true });
      return;
    }
    reader.push(chunk.subarray(0, n));
    for (;;) {
      let frame;
      try {
        frame = reader.next();
      } catch (e) {
        self.postMessage({ bad: String(e) });
        return;
      }
      if (frame === null) break;
      if (frame.header.t === "interrupt") {
        requestInterrupt(frame.header.id | 0);
      } else {
        self.postMessage(frame, [frame.body.buffer]);
      }
    }
  }
}

self.onmessage = (event) => {
  interruptBuffer = new Uint8Array(event.data.interrupt);
  slots = new Int32Array(event.data.slots);
  self.onmessage = null;
  readLoop();
};
