// Frame codec: host.mjs writes frames to stdout; stdin_worker.mjs reads them from stdin (and passes requests on
// through a ring, ring.mjs, to python_worker.mjs, which reads them again); python_worker.mjs writes its answers into
// another ring, and host.mjs reads them from there.
//
// One frame = u32 header length (big-endian) | u32 body length (big-endian) | header (UTF-8 JSON) | body (bytes).
// The same layout is parsed by src/pyodide/frame.cpp; see docs/architecture.md, "The Pyodide frame protocol".

export const PROTOCOL_VERSION = 1;
export const MAX_HEADER_BYTES = 1 << 20;       // 1 MiB of JSON is far more than any request needs
export const MAX_BODY_BYTES = 64 << 20;        // code and file chunks from the host are bounded by the C++ side

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function encodeFrame(header, body) {
  const h = encoder.encode(JSON.stringify(header));
  const b = body ?? new Uint8Array(0);
  const out = new Uint8Array(8 + h.length + b.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, h.length);
  view.setUint32(4, b.length);
  out.set(h, 8);
  out.set(b, 8 + h.length);
  return out;
}

// Incremental decoder: push() bytes as they arrive, take complete frames out of next(). The buffer grows by
// doubling and is compacted only when it must grow, so a large frame arriving in small reads costs linear time.
export class FrameReader {
  #maxHeader;
  #maxBody;
  #buf = new Uint8Array(1 << 16);
  #start = 0;  // first unread byte
  #end = 0;    // one past the last byte

  // The limits default to those on frames from the C++ side; host.mjs reads the sandbox worker's answers with the
  // limits the C++ side applies to frames from the host.
  constructor({ maxHeader = MAX_HEADER_BYTES, maxBody = MAX_BODY_BYTES } = {}) {
    this.#maxHeader = maxHeader;
    this.#maxBody = maxBody;
  }

  push(chunk) {
    if (this.#end + chunk.length > this.#buf.length) {
      const live = this.#end - this.#start;
      let size = this.#buf.length;
      while (size < live + chunk.length) size *= 2;
      if (size === this.#buf.length) {
        this.#buf.copyWithin(0, this.#start, this.#end);  // compacting makes room
      } else {
        const grown = new Uint8Array(size);
        grown.set(this.#buf.subarray(this.#start, this.#end), 0);
        this.#buf = grown;
      }
      this.#start = 0;
      this.#end = live;
    }
    this.#buf.set(chunk, this.#end);
    this.#end += chunk.length;
  }

  // Returns {header, body} or null when no complete frame is buffered. Throws on a malformed frame.
  next() {
    return this.#take(false);
  }

  // Like next(), and also returns the frame's bytes as `raw` (a copy), to pass the frame on unchanged.
  nextRaw() {
    return this.#take(true);
  }

  #take(withRaw) {
    const avail = this.#end - this.#start;
    if (avail < 8) return null;
    const view = new DataView(this.#buf.buffer, this.#buf.byteOffset + this.#start, avail);
    const hlen = view.getUint32(0);
    const blen = view.getUint32(4);
    if (hlen > this.#maxHeader || blen > this.#maxBody) throw new Error("frame too large");
    if (avail < 8 + hlen + blen) return null;
    const at = this.#start + 8;
    const header = JSON.parse(decoder.decode(this.#buf.subarray(at, at + hlen)));
    if (header === null || typeof header !== "object") throw new Error("frame header is not an object");
    const frame = withRaw
      ? { header, raw: this.#buf.slice(this.#start, at + hlen + blen) }
      : { header, body: this.#buf.slice(at + hlen, at + hlen + blen) };
    this.#start = at + hlen + blen;
    if (this.#start === this.#end) this.#start = this.#end = 0;
    return frame;
  }
}
