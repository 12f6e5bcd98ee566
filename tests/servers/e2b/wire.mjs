// Small wire-format helpers shared by the local E2B server: Python-style JSON for the /execute stream,
// Connect envelopes, protojson timestamps, multipart parsing. Each cites the docs/protocols/e2b.md section it follows.

// docs/protocols/e2b.md "Fields of the /execute events": the code interpreter writes each line with Python's json.dumps defaults: ", " and ": "
// separators and ensure_ascii=True (every non-ASCII UTF-16 unit escaped as \uXXXX, lowercase hex).
export function pyDumps(value) {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : value < 0 ? '-Infinity' : 'NaN';
      return Number.isInteger(value) ? String(value) : pyFloat(value);
    case 'string':
      return pyStr(value);
    case 'object':
      if (Array.isArray(value)) return '[' + value.map(pyDumps).join(', ') + ']';
      return '{' + Object.entries(value).filter(([, v]) => v !== undefined)
        .map(([k, v]) => pyStr(k) + ': ' + pyDumps(v)).join(', ') + '}';
    default:
      return 'null';
  }
}

function pyFloat(x) {
  // Python repr of a float: shortest round-trip digits, like JS, but exponent form differs ("1e+16").
  let s = String(x);
  if (s.includes('e')) {
    const [m, e] = s.split('e');
    const exp = Number(e);
    s = `${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  } else if (!s.includes('.')) {
    s += '.0';
  }
  return s;
}

function pyStr(s) {
  // JSON.stringify escapes exactly the characters Python escapes below U+0080 (\" \\ \b \f \n \r \t and
  // the other control characters as \u00xx), and escapes lone surrogates; ensure_ascii does the rest.
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => {
    const code = c.charCodeAt(0);
    if (code === 0x7f) return c; // Python leaves DEL as is
    return '\\u' + code.toString(16).padStart(4, '0');
  });
}

// docs/protocols/e2b.md "Fields of the /execute events" timestamp: Python datetime.isoformat() with microseconds and "+00:00".
export function pyTimestamp() {
  const nowMs = performance.timeOrigin + performance.now();
  const whole = Math.floor(nowMs);
  const micros = Math.floor((nowMs - Math.floor(nowMs / 1000) * 1000) * 1000);
  const iso = new Date(whole).toISOString(); // 2026-08-20T10:00:00.123Z
  return `${iso.slice(0, 19)}.${String(micros).padStart(6, '0')}+00:00`;
}

// docs/protocols/e2b.md "Connect envelopes": envelope = 1 flag byte + 4-byte big-endian length + payload. 0x00 message, 0x02 end-stream.
export function envelope(flags, payload) {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'utf8');
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

// Parses exactly one envelope (a server-streaming request body). Returns {flags, json} or throws.
export function parseSingleEnvelope(buf) {
  if (buf.length < 5) throw new Error('request body is shorter than an envelope prefix');
  const flags = buf.readUInt8(0);
  const len = buf.readUInt32BE(1);
  if (buf.length !== 5 + len) throw new Error('request body is not exactly one envelope');
  if (flags & 0x01) throw new Error('compressed envelopes are not supported');
  return { flags, json: JSON.parse(buf.subarray(5).toString('utf8') || '{}') };
}

// protojson Timestamp (docs/protocols/e2b.md "Connect calls and their JSON"): RFC 3339 with "Z" and 0, 3, 6 or 9 fractional digits.
export function protoTimestamp(nsBigint) {
  const sec = nsBigint / 1000000000n;
  const nanos = Number(nsBigint % 1000000000n);
  const base = new Date(Number(sec) * 1000).toISOString().slice(0, 19);
  if (nanos === 0) return `${base}Z`;
  let frac = String(nanos).padStart(9, '0');
  if (frac.endsWith('000000')) frac = frac.slice(0, 3);
  else if (frac.endsWith('000')) frac = frac.slice(0, 6);
  return `${base}.${frac}Z`;
}

// Go's os.FileMode.String() for the permissions field of EntryInfo (docs/protocols/e2b.md "filesystem.Filesystem").
export function modeString(mode, isDir, isLink) {
  const rwx = 'rwxrwxrwx';
  let s = isDir ? 'd' : isLink ? 'L' : '-';
  for (let i = 0; i < 9; i++) s += (mode & (1 << (8 - i))) ? rwx[i] : '-';
  return s;
}

// multipart/form-data parser for envd POST /files (docs/protocols/e2b.md "envd health and files"). Returns [{name, filename, data}].
export function parseMultipart(body, contentType) {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType || '');
  if (!m) throw new Error('multipart boundary missing');
  const boundary = Buffer.from('--' + (m[1] || m[2]).trim());
  const parts = [];
  let pos = body.indexOf(boundary);
  if (pos < 0) throw new Error('multipart boundary not found');
  for (;;) {
    pos += boundary.length;
    if (body.subarray(pos, pos + 2).toString() === '--') break; // closing delimiter
    if (body.subarray(pos, pos + 2).toString() !== '\r\n') throw new Error('malformed multipart delimiter');
    pos += 2;
    const headEnd = body.indexOf('\r\n\r\n', pos);
    if (headEnd < 0) throw new Error('malformed multipart part headers');
    const headers = body.subarray(pos, headEnd).toString('utf8').split('\r\n');
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), boundary]), headEnd + 4);
    if (next < 0) throw new Error('multipart body is truncated');
    const data = body.subarray(headEnd + 4, next);
    let name;
    let filename;
    for (const h of headers) {
      const idx = h.indexOf(':');
      if (idx < 0) continue;
      if (h.slice(0, idx).trim().toLowerCase() !== 'content-disposition') continue;
      const v = h.slice(idx + 1);
      const n = /;\s*name="((?:[^"\\]|\\.)*)"/i.exec(v);
      const f = /;\s*filename="((?:[^"\\]|\\.)*)"/i.exec(v);
      if (n) name = unescapeFormValue(n[1]);
      if (f) filename = unescapeFormValue(f[1]);
    }
    parts.push({ name, filename, data });
    pos = next + 2;
  }
  return parts;
}

// undici's FormData percent-encodes '"', CR and LF in names (WHATWG multipart encoding); Go's
// mime/multipart reverses backslash escapes. Accept both.
function unescapeFormValue(s) {
  return s.replace(/%22/g, '"').replace(/%0D/gi, '\r').replace(/%0A/gi, '\n').replace(/\\(.)/g, '$1');
}
