// Frame codec shared by host.mjs (writer) and stdin_worker.mjs (reader).
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

// Incremental decoder: push() bytes as they arrive, take complete frames out of next().
export class FrameReader {
  #buf = new Uint8Array(0);

  push(chunk) {
    const merged = new Uint8Array(this.#buf.length + chunk.length);
    merged.set(this.#buf, 0);
    merged.set(chunk, this.#buf.length);
    this.#buf = merged;
  }

  // Returns {header, body} or null when no complete frame is buffered. Throws on a malformed frame.
  next() {
    if (this.#buf.length < 8) return null;
    const view = new DataView(this.#buf.buffer, this.#buf.byteOffset, this.#buf.length);
    const hlen = view.getUint32(0);
    const blen = view.getUint32(4);
    if (hlen > MAX_HEADER_BYTES || blen > MAX_BODY_BYTES) throw new Error("frame too large");
    if (this.#buf.length < 8 + hlen + blen) return null;
    const header = JSON.parse(decoder.decode(this.#buf.subarray(8, 8 + hlen)));
    const body = this.#buf.slice(8 + hlen, 8 + hlen + blen);
    this.#buf = this.#buf.slice(8 + hlen + blen);
    return { header, body };
  }
}
