// A single-producer, single-consumer byte ring over a SharedArrayBuffer: the stdin worker writes the frames it
// read, the main thread reads them. Both sides block with Atomics.wait when the ring is full or empty.

const RING_BYTES = 1 << 20;
// Control words: [0] bytes written in all (wrapping int32), [1] bytes read in all, [2] state.
const WRITTEN = 0;
const READ = 1;
const STATE = 2;

export class Ring {
  static OPEN = 0;
  static EOF = 1;   // stdin ended: the C++ side went away
  static BAD = 2;   // stdin held a malformed frame

  static allocate() {
    return { control: new SharedArrayBuffer(16), data: new SharedArrayBuffer(RING_BYTES) };
  }

  constructor(shared) {
    this.control = new Int32Array(shared.control);
    this.data = new Uint8Array(shared.data);
  }

  // Producer: copies all of `bytes` in, waiting for room as needed.
  write(bytes) {
    let off = 0;
    while (off < bytes.length) {
      const written = Atomics.load(this.control, WRITTEN);
      const read = Atomics.load(this.control, READ);
      const free = RING_BYTES - ((written - read) | 0);
      if (free === 0) {
        Atomics.wait(this.control, READ, read);
        continue;
      }
      const at = written & (RING_BYTES - 1);
      const n = Math.min(free, bytes.length - off, RING_BYTES - at);
      this.data.set(bytes.subarray(off, off + n), at);
      off += n;
      Atomics.store(this.control, WRITTEN, (written + n) | 0);
      Atomics.notify(this.control, WRITTEN);
    }
  }

  close(state) {
    Atomics.store(this.control, STATE, state);
    Atomics.add(this.control, WRITTEN, 0);
    Atomics.notify(this.control, WRITTEN);
  }

  // Consumer: returns the bytes available now (waiting, after a short spin, until there are some), or the
  // ring's state (Ring.EOF or Ring.BAD) when it is closed and empty.
  read(spinMs) {
    const read = Atomics.load(this.control, READ);
    let written = Atomics.load(this.control, WRITTEN);
    if (written === read) {
      // A reply to the C++ side usually draws the next request within a fraction of a millisecond: spinning that
      // long saves a futex wake-up on the hot path.
      const until = performance.now() + spinMs;
      while ((written = Atomics.load(this.control, WRITTEN)) === read && performance.now() < until) {}
      while ((written = Atomics.load(this.control, WRITTEN)) === read) {
        const state = Atomics.load(this.control, STATE);
        if (state !== Ring.OPEN) return state;
        Atomics.wait(this.control, WRITTEN, read);
      }
    }
    const available = (written - read) | 0;
    const at = read & (RING_BYTES - 1);
    const first = Math.min(available, RING_BYTES - at);
    const out = new Uint8Array(available);
    out.set(this.data.subarray(at, at + first), 0);
    if (first < available) out.set(this.data.subarray(0, available - first), first);
    Atomics.store(this.control, READ, (read + available) | 0);
    Atomics.notify(this.control, READ);
    return out;
  }
}
