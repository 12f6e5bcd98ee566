#!/usr/bin/env node
// A local server that speaks the E2B wire protocol of docs/protocols/e2b.md: the control plane
// ("Control plane") on one port, and the sandbox surface — envd ("envd health and files",
// "Connect calls and their JSON") and the code interpreter ("Code-interpreter requests") — on another,
// dispatched on the E2b-Sandbox-Port header ("Surfaces and ports", "SDK endpoint settings"). Commands and Python
// run for real on this machine, each sandbox inside its own temporary directory. Fault directives let
// tests provoke every transport failure deterministically. See README.md next to this file.
//
//   node tests/servers/e2b/server.mjs [--bench] [--api-key KEY]
//
// Prints one line {"api_url":...,"sandbox_url":...} on stdout when listening; logs go to stderr.
// Exits (killing every child process and removing every temp dir) on stdin EOF, SIGTERM or SIGINT.

import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import { pyDumps, pyTimestamp, envelope, parseSingleEnvelope, protoTimestamp, modeString, parseMultipart }
  from './wire.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const KERNEL_SCRIPT = path.join(HERE, 'python_kernel.py');

// ------------------------------------------------------------------------------------------ configuration

const argv = process.argv.slice(2);
const BENCH = argv.includes('--bench');
const keyIdx = argv.indexOf('--api-key');
const API_KEY = keyIdx >= 0 ? argv[keyIdx + 1] : (process.env.E2B_TEST_API_KEY || 'e2b_' + '0'.repeat(40));

const ENVD_PORT = 49983; // docs/protocols/e2b.md "Surfaces and ports"
const JUPYTER_PORT = 49999; // docs/protocols/e2b.md "Surfaces and ports"
const ENVD_VERSION = '0.6.13'; // docs/protocols/e2b.md "Control plane": a current 0.6.x, so the SDK sends current requests
const CLIENT_ID = '6532622b'; // docs/protocols/e2b.md "Control plane": clientID, deprecated but required
const MAX_TIMEOUT_S = 24 * 3600; // docs/protocols/e2b.md "Control plane": the 24 h plan cap, "Timeout cannot be greater than 24 hours"
const TEMPLATES = {
  // alias -> template ID (IDs are opaque 20-char strings, as on the real API)
  'code-interpreter-v1': 'nlhz8vlwyupq845jsdg9',
  base: 'rki5dems9wqfm4r03t7g',
};
const CAP_JSON = 1 << 20; // control-plane and RPC bodies
const CAP_EXECUTE = 16 << 20; // /execute body (code)
const CAP_UPLOAD = 256 << 20; // POST /files
const LOG_CAP = 10000; // request-log entries kept

function log(...args) {
  process.stderr.write(`[e2b-server] ${args.join(' ')}\n`);
}

// ------------------------------------------------------------------------------------------ state

const sandboxes = new Map(); // id -> Sandbox (alive only)
const goneIds = new Set(); // ids that existed and were killed or expired (they answer 502: docs/protocols/e2b.md "Reaching a sandbox")
let faults = []; // active fault directives, in match order
let requestLog = [];
let requestSeq = 0;

function randomId(len) {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = crypto.randomBytes(len);
  let s = '';
  for (let i = 0; i < len; i++) s += alphabet[bytes[i] % alphabet.length];
  return s;
}

// ------------------------------------------------------------------------------------------ HTTP helpers

function sendRaw(res, status, headers, body) {
  const buf = body === undefined || body === null ? Buffer.alloc(0) : Buffer.isBuffer(body) ? body : Buffer.from(body);
  res.writeHead(status, { ...headers, 'Content-Length': String(buf.length) });
  res.end(buf);
}

// Control-plane and envd REST errors: {"code": <int>, "message": "..."} (docs/protocols/e2b.md "Control plane", "envd health and files").
function apiError(status, message) {
  return { status, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code: status, message }) };
}

function envdError(status, message) {
  return {
    status,
    headers: { 'Content-Type': 'application/json; charset=utf-8' },
    body: JSON.stringify({ code: status, message }),
  };
}

// What the proxy answers for an unknown, expired or killed sandbox (docs/protocols/e2b.md "Reaching a sandbox").
function sandboxNotFound(id) {
  return {
    status: 502,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ sandboxId: id, message: 'The sandbox was not found', code: 502 }),
  };
}

// connect-go status per error code, for unary RPC errors (docs/protocols/e2b.md "Connect calls and their JSON").
const CONNECT_STATUS = {
  canceled: 499, unknown: 500, invalid_argument: 400, deadline_exceeded: 504, not_found: 404,
  already_exists: 409, permission_denied: 403, resource_exhausted: 429, failed_precondition: 400,
  aborted: 409, out_of_range: 400, unimplemented: 501, internal: 500, unavailable: 503, data_loss: 500,
  unauthenticated: 401,
};

class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function rpcErrorReply(err) {
  return {
    status: CONNECT_STATUS[err.code] ?? 500,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ code: err.code, message: err.message }),
  };
}

// Reads the whole request body up to `cap` bytes. Resolves {body, complete, tooLarge}.
function readBody(req, cap, entry) {
  return new Promise((resolve) => {
    const chunks = [];
    let size = 0;
    let done = false;
    const finish = (r) => {
      if (done) return;
      done = true;
      if (entry) entry.body_complete = r.complete;
      resolve(r);
    };
    req.on('data', (c) => {
      size += c.length;
      if (size > cap) {
        finish({ body: null, complete: false, tooLarge: true });
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => finish({ body: Buffer.concat(chunks), complete: true }));
    req.on('error', () => finish({ body: null, complete: false }));
    req.on('close', () => finish({ body: null, complete: false }));
  });
}

function parseJsonBody(buf) {
  if (!buf || buf.length === 0) return {};
  return JSON.parse(buf.toString('utf8'));
}

const SECRET_HEADERS = new Set(['x-api-key', 'x-access-token', 'authorization', 'e2b-traffic-access-token', 'cookie']);

function logRequest(req, surface, sandboxId) {
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (!SECRET_HEADERS.has(k)) headers[k] = v;
  }
  const entry = {
    seq: ++requestSeq,
    time: new Date().toISOString(),
    surface,
    method: req.method,
    path: req.url,
    sandbox_id: sandboxId ?? null,
    headers,
    body_complete: false,
    status: null,
    fault: null,
  };
  requestLog.push(entry);
  if (requestLog.length > LOG_CAP) requestLog = requestLog.slice(-LOG_CAP);
  return entry;
}

// ------------------------------------------------------------------------------------------ faults

const FAULT_ACTIONS = new Set(['refuse', 'reset_after_headers', 'cut_mid_line', 'stall', 'status', 'gone',
  'malformed_line', 'close_after_request', 'no_end_of_execution', 'kill_during', 'content_length', 'envelopes']);

function validateFault(f) {
  if (!f || typeof f !== 'object') throw new Error('a fault must be an object');
  if (!FAULT_ACTIONS.has(f.action)) throw new Error(`unknown fault action: ${f.action}`);
  if (f.surface !== undefined && !['api', 'envd', 'interpreter'].includes(f.surface)) {
    throw new Error('surface must be api, envd or interpreter');
  }
  if (f.action === 'status' && !(Number.isInteger(f.status) && f.status >= 100 && f.status <= 599)) {
    throw new Error('status fault needs an integer "status" 100..599');
  }
  if (f.action === 'content_length' && f.value !== undefined && !(Number.isInteger(f.value) && f.value >= 0)) {
    throw new Error('content_length fault needs a non-negative integer "value" or none');
  }
  if (f.action === 'envelopes') {
    if (!Array.isArray(f.envelopes)) throw new Error('envelopes fault needs an array "envelopes"');
    for (const e of f.envelopes) {
      if (!e || typeof e !== 'object' || e.payload === undefined) throw new Error('each envelope needs a "payload"');
      if (e.flags !== undefined && !(Number.isInteger(e.flags) && e.flags >= 0 && e.flags <= 255)) throw new Error('flags must be 0..255');
    }
    if (f.then !== undefined && !['end', 'stall'].includes(f.then)) throw new Error('then must be end or stall');
  }
  const count = f.count === undefined ? 1 : f.count;
  if (!Number.isInteger(count) || count === 0 || count < -1) throw new Error('count must be a positive integer or -1');
  return { ...f, count, remaining: count };
}

function matchFault(surface, method, pathname, sandboxId) {
  for (const f of faults) {
    if (f.remaining === 0) continue;
    if (f.surface && f.surface !== surface) continue;
    if (f.method && f.method.toUpperCase() !== method) continue;
    if (f.path !== undefined && f.path !== pathname) continue;
    if (f.path_prefix !== undefined && !pathname.startsWith(f.path_prefix)) continue;
    if (f.sandbox !== undefined && f.sandbox !== sandboxId) continue;
    if (f.remaining > 0) f.remaining--;
    return f;
  }
  return null;
}

// Writes a full response through a fault. Every handler answers through an Out, so mid-stream
// directives act on "units": an NDJSON line for /execute, an envelope for Connect streams, the whole
// body for a plain response.
class Out {
  constructor(req, res, fault, entry, sandbox) {
    this.req = req;
    this.res = res;
    this.fault = fault;
    this.entry = entry;
    this.sandbox = sandbox;
    this.units = 0;
    this.dead = false; // nothing more reaches the client
    this.faultKilled = false; // the connection was cut by a directive (do not treat as a client disconnect)
    this.streaming = false;
    this.stalled = false;
    res.on('close', () => {
      if (!res.writableFinished) this.dead = true;
    });
  }

  get action() {
    return this.fault ? this.fault.action : null;
  }

  after(def) {
    const n = this.fault && Number.isInteger(this.fault.after) ? this.fault.after : def;
    return Math.max(0, n);
  }

  destroy() {
    this.dead = true;
    this.faultKilled = true;
    destroyAfterFlush(this.req.socket);
  }

  // A complete, non-streamed response.
  send(reply) {
    if (this.dead) return;
    const { status, headers = {}, body } = reply;
    this.entry.status = status;
    const buf = body === undefined || body === null ? Buffer.alloc(0) : Buffer.isBuffer(body) ? body : Buffer.from(body);
    switch (this.action) {
      case 'close_after_request':
        this.destroy();
        return;
      case 'cut_mid_line': {
        // Declare the full length, deliver half of it, then drop the connection.
        this.dead = true;
        this.faultKilled = true;
        this.res.writeHead(status, { ...headers, 'Content-Length': String(buf.length) });
        this.res.write(buf.subarray(0, Math.floor(buf.length / 2)), () => this.req.socket.destroy());
        return;
      }
      case 'stall':
        this.stalled = true; // headers never sent; the socket stays open until the client gives up
        return;
      case 'malformed_line': {
        const bad = Buffer.from('{not json');
        sendRaw(this.res, status, headers, bad);
        return;
      }
      case 'kill_during':
        if (this.sandbox) killSandbox(this.sandbox, 'kill_during directive');
        this.destroy();
        return;
      case 'content_length': {
        // The body whole on the raw socket, framed by the directive's Content-Length (a lie, or none at all:
        // then the body ends where the connection does), and the connection closed after it.
        this.dead = true;
        this.faultKilled = true;
        const sock = this.req.socket;
        let head = `HTTP/1.1 ${status} ${http.STATUS_CODES[status] || 'Status'}\r\n`;
        for (const [k, v] of Object.entries(headers)) {
          if (!/^(content-length|transfer-encoding|connection)$/i.test(k)) head += `${k}: ${v}\r\n`;
        }
        if (this.fault.value !== undefined) head += `Content-Length: ${this.fault.value}\r\n`;
        head += 'Connection: close\r\n\r\n';
        sock.on('error', () => {}); // the client may leave once it has what it wants
        sock.write(head);
        sock.end(buf);
        return;
      }
      default:
        sendRaw(this.res, status, headers, buf);
    }
  }

  // Starts a streamed (chunked) response.
  begin(status, headers) {
    this.streaming = true;
    this.entry.status = status;
    if (this.dead || this.action === 'close_after_request') return;
    if (this.action === 'stall' && this.after(0) === 0) {
      this.stalled = true;
      return;
    }
    this.res.writeHead(status, headers);
    this.res.flushHeaders();
  }

  // One unit of a streamed body. `terminal` marks end_of_execution / the end-stream envelope.
  unit(buf, { terminal = false, kind = 'line' } = {}) {
    if (this.dead || this.stalled || this.action === 'close_after_request') return;
    const a = this.action;
    if (a === 'no_end_of_execution' && terminal) return;
    if (a === 'malformed_line' && this.units === this.after(1) && !this.malformedSent) {
      this.malformedSent = true;
      // NDJSON: a line that is not JSON; Connect: a well-framed envelope whose payload is not JSON.
      this.res.write(kind === 'envelope' ? envelope(0, '{not json') : 'this is not json\n');
    }
    if (a === 'cut_mid_line' && this.units >= this.after(1)) {
      this.dead = true;
      this.faultKilled = true;
      const part = buf.subarray(0, Math.max(1, Math.floor(buf.length / 2)));
      this.res.write(part, () => this.req.socket.destroy());
      return;
    }
    if (a === 'stall' && this.units >= this.after(0)) {
      this.stalled = true;
      return;
    }
    if (a === 'kill_during' && this.units >= this.after(1)) {
      if (this.sandbox) killSandbox(this.sandbox, 'kill_during directive');
      this.destroy();
      return;
    }
    this.units++;
    this.res.write(buf);
  }

  // Ends a streamed body (the zero-length chunk).
  finish() {
    if (this.action === 'close_after_request') {
      if (!this.dead) this.destroy();
      return;
    }
    if (this.dead || this.stalled) return;
    if (this.action === 'cut_mid_line' || this.action === 'kill_during') {
      // Fewer units than `after`: still never finish the body cleanly.
      if (this.action === 'kill_during' && this.sandbox) killSandbox(this.sandbox, 'kill_during directive');
      this.destroy();
      return;
    }
    this.res.end();
  }
}

// ------------------------------------------------------------------------------------------ sandboxes

class Sandbox {
  constructor({ templateID, alias, metadata, envVars, timeoutS, allowInternetAccess, network }) {
    this.id = randomId(20);
    // docs/protocols/e2b.md "Pause and resume": running or paused; a paused sandbox's surfaces answer as a gone one.
    this.state = 'running';
    // As the create sent them (null when absent), so tests can see what arrived. This server runs code on its own
    // host and cannot enforce either (docs/backends.md "Network policy").
    this.allowInternetAccess = allowInternetAccess ?? null;
    this.network = network ?? null;
    this.templateID = templateID;
    this.alias = alias;
    this.metadata = metadata;
    this.envVars = envVars;
    this.accessToken = crypto.randomBytes(24).toString('hex');
    this.startedAt = new Date();
    this.endAt = new Date(Date.now() + timeoutS * 1000);
    this.processes = new Map(); // pid -> {child, config, tag}
    this.contexts = new Map(); // id -> Context
    this.sockets = new Set(); // open sandbox-surface responses (cut when the sandbox dies)
    this.timer = null;
    this.alive = true;
    if (BENCH) return;
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), `e2b-sbx-${this.id}-`));
    for (const d of ['home/user', 'files', 'tmp', 'root']) fs.mkdirSync(path.join(this.root, d), { recursive: true });
    const def = new Context(this, 'python', '/home/user');
    this.contexts.set(def.id, def);
    this.defaultContext = def;
    this.armTimer();
  }

  armTimer() {
    if (this.timer) clearTimeout(this.timer);
    const ms = Math.max(0, this.endAt.getTime() - Date.now());
    // setTimeout caps at 2^31-1 ms; re-arm for longer leases.
    this.timer = setTimeout(() => {
      if (Date.now() >= this.endAt.getTime()) killSandbox(this, 'lease expired');
      else this.armTimer();
    }, Math.min(ms, 2 ** 31 - 1));
    this.timer.unref();
  }

  // The environment every process in the sandbox starts from (never the server's own environment).
  baseEnv(home) {
    return {
      PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin',
      HOME: path.join(this.root, home),
      USER: 'user',
      LANG: 'C.UTF-8',
      TMPDIR: path.join(this.root, 'tmp'),
      E2B_SANDBOX: 'true',
      E2B_SANDBOX_ID: this.id,
      E2B_SANDBOX_ROOT: this.root,
      ...this.envVars,
    };
  }
}

function killSandbox(sb, why) {
  if (!sb.alive) return;
  sb.alive = false;
  sandboxes.delete(sb.id);
  goneIds.add(sb.id);
  if (sb.timer) clearTimeout(sb.timer);
  log(`sandbox ${sb.id} killed (${why})`);
  for (const p of sb.processes.values()) killGroup(p.child);
  sb.processes.clear();
  for (const ctx of sb.contexts.values()) ctx.shutdown();
  // The proxy drops the connections of a dead sandbox; bytes it already sent still arrive.
  for (const s of sb.sockets) destroyAfterFlush(s);
  sb.sockets.clear();
  if (sb.root) {
    try {
      fs.rmSync(sb.root, { recursive: true, force: true });
    } catch (e) {
      log(`could not remove a sandbox dir: ${e.message}`);
    }
  }
}

// Destroys a socket once the bytes already written to it have left (socket.destroy() alone discards them).
function destroyAfterFlush(s) {
  if (s.destroyed) return;
  const timer = setTimeout(() => s.destroy(), 200);
  try {
    s.write('', () => {
      clearTimeout(timer);
      s.destroy();
    });
  } catch {
    clearTimeout(timer);
    s.destroy();
  }
}

function killGroup(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    try {
      child.kill('SIGKILL');
    } catch { /* already gone */ }
  }
}

// Sandbox path resolution (docs/protocols/e2b.md "envd health and files"): "~" and relative paths are relative to the user's home.
function resolveSandboxPath(p, user = 'user') {
  const home = user === 'root' ? '/root' : '/home/user';
  if (p === undefined || p === null || p === '') p = home;
  if (typeof p !== 'string' || p.includes('\0')) throw new RpcError('invalid_argument', 'invalid path');
  if (p === '~') p = home;
  else if (p.startsWith('~/')) p = home + p.slice(1);
  else if (p.startsWith('~')) throw new RpcError('invalid_argument', `invalid path '${p}'`);
  else if (!p.startsWith('/')) p = `${home}/${p}`;
  return path.posix.normalize(p).replace(/(.)\/+$/, '$1');
}

// Maps a sandbox path into the sandbox's root directory. A symlink must not lead outside the root.
function hostPath(sb, sp) {
  const hp = sp === '/' ? sb.root : path.join(sb.root, sp);
  let probe = hp;
  for (;;) {
    try {
      const real = fs.realpathSync(probe);
      const realRoot = fs.realpathSync(sb.root);
      if (real !== realRoot && !real.startsWith(realRoot + path.sep)) {
        throw new RpcError('permission_denied', `path '${sp}' leads outside the sandbox`);
      }
      break;
    } catch (e) {
      if (e instanceof RpcError) throw e;
      const up = path.dirname(probe);
      if (up === probe) break;
      probe = up;
    }
  }
  return hp;
}

function userFrom(req, query) {
  // REST: ?username= ; RPC: Authorization: Basic base64("<user>:") (docs/protocols/e2b.md "Reaching a sandbox").
  let user = query ? query.get('username') : null;
  const auth = req.headers.authorization;
  if (!user && auth && auth.startsWith('Basic ')) {
    user = Buffer.from(auth.slice(6), 'base64').toString('utf8').split(':')[0];
  }
  if (!user) return 'user';
  if (user !== 'user' && user !== 'root') return null;
  return user;
}

// ------------------------------------------------------------------------------------------ control plane

function sandboxJson(sb) {
  // Sandbox, the create/connect answer (docs/protocols/e2b.md "Control plane")
  return {
    templateID: sb.templateID,
    sandboxID: sb.id,
    alias: sb.alias,
    clientID: CLIENT_ID,
    envdVersion: ENVD_VERSION,
    envdAccessToken: sb.accessToken,
    trafficAccessToken: null,
    domain: null,
  };
}

function listedJson(sb) {
  // ListedSandbox (docs/protocols/e2b.md "Listing sandboxes by metadata")
  return {
    templateID: sb.templateID,
    alias: sb.alias,
    sandboxID: sb.id,
    clientID: CLIENT_ID,
    startedAt: sb.startedAt.toISOString(),
    endAt: sb.endAt.toISOString(),
    cpuCount: 2,
    memoryMB: 512,
    diskSizeMB: 1024,
    metadata: sb.metadata,
    state: sb.state,
    envdVersion: ENVD_VERSION,
  };
}

function detailJson(sb) {
  // SandboxDetail, the GET /sandboxes/{id} answer (docs/protocols/e2b.md "Control plane")
  return {
    ...listedJson(sb),
    envdAccessToken: sb.accessToken,
    allowInternetAccess: sb.allowInternetAccess,
    network: sb.network,
    domain: null,
    lifecycle: { autoResume: false, onTimeout: 'kill' },
  };
}

// docs/protocols/e2b.md "Listing sandboxes by metadata": the JS SDK sends metadata as one query parameter holding
// "k1=v1&k2=v2", each key and value URL-encoded before the whole string is encoded again.
function parseMetadataFilter(raw) {
  const out = {};
  for (const [k, v] of new URLSearchParams(raw)) {
    const dec = (s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    };
    out[dec(k)] = dec(v);
  }
  return out;
}

function isStringMap(v) {
  return v === undefined || v === null || (typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string'));
}

function handleCreate(body, v2) {
  let req;
  try {
    req = parseJsonBody(body);
  } catch (e) {
    return apiError(400, `Error when parsing request: ${e.message}`);
  }
  if (!req || typeof req !== 'object' || typeof req.templateID !== 'string' || !req.templateID) {
    return apiError(400, 'Error when parsing request: templateID is required');
  }
  if (!isStringMap(req.metadata) || !isStringMap(req.envVars)) {
    return apiError(400, 'Error when parsing request: metadata and envVars must map strings to strings');
  }
  // docs/protocols/e2b.md "Network fields of a create": allow_internet_access (snake_case) is a boolean; network is
  // an object whose allowOut / denyOut are arrays of strings and allowPublicTraffic a boolean.
  if (req.allow_internet_access !== undefined && req.allow_internet_access !== null && typeof req.allow_internet_access !== 'boolean') {
    return apiError(400, 'Error when parsing request: allow_internet_access must be a boolean');
  }
  let network = null;
  if (req.network !== undefined && req.network !== null) {
    const n = req.network;
    const strings = (v) => v === undefined || (Array.isArray(v) && v.every((x) => typeof x === 'string'));
    if (typeof n !== 'object' || Array.isArray(n) || !strings(n.allowOut) || !strings(n.denyOut) ||
        (n.allowPublicTraffic !== undefined && typeof n.allowPublicTraffic !== 'boolean')) {
      return apiError(400, 'Error when parsing request: network must be an object with allowOut and denyOut arrays of strings');
    }
    network = {};
    for (const k of ['allowOut', 'denyOut', 'allowPublicTraffic']) if (n[k] !== undefined) network[k] = n[k];
  }
  let alias = req.templateID;
  let templateID = TEMPLATES[req.templateID];
  if (!templateID) {
    const byId = Object.entries(TEMPLATES).find(([, id]) => id === req.templateID);
    if (!byId) return apiError(404, `template '${req.templateID}' not found`);
    [alias, templateID] = byId;
  }
  // docs/protocols/e2b.md "Control plane": v2 defaults to 300 s, v1 to 15 s; a non-positive timeout is refused.
  let timeoutS = req.timeout === undefined || req.timeout === null ? (v2 ? 300 : 15) : req.timeout;
  if (!Number.isInteger(timeoutS)) return apiError(400, 'Error when parsing request: timeout must be an integer');
  if (timeoutS <= 0) return apiError(400, 'Timeout must be greater than 0');
  if (timeoutS > MAX_TIMEOUT_S) return apiError(400, 'Timeout cannot be greater than 24 hours');
  const sb = new Sandbox({
    templateID, alias, metadata: req.metadata || {}, envVars: req.envVars || {}, timeoutS,
    allowInternetAccess: req.allow_internet_access, network,
  });
  sandboxes.set(sb.id, sb);
  if (!BENCH) log(`sandbox ${sb.id} created (template ${alias}, ${timeoutS} s)`);
  return { status: 201, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(sandboxJson(sb)) };
}

function notFoundSandbox(id) {
  return apiError(404, `Sandbox "${id}" doesn't exist or you don't have access to it`);
}

function handleList(url, v2) {
  const q = url.searchParams;
  const filter = q.has('metadata') ? parseMetadataFilter(q.get('metadata')) : {};
  let states = ['running', 'paused'];
  if (v2 && q.has('state')) {
    states = q.get('state').split(',').filter(Boolean);
    if (states.some((s) => s !== 'running' && s !== 'paused')) return apiError(400, 'Invalid state');
  }
  let limit = 100;
  if (v2 && q.has('limit')) {
    limit = Number(q.get('limit'));
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return apiError(400, 'limit must be between 1 and 100');
  }
  let list = [...sandboxes.values()].filter((sb) => states.includes(sb.state))
    .filter((sb) => Object.entries(filter).every(([k, v]) => sb.metadata[k] === v));
  if (v2 && q.get('template')) list = list.filter((sb) => sb.alias === q.get('template') || sb.templateID === q.get('template'));
  list.sort((a, b) => b.startedAt - a.startedAt || (a.id < b.id ? -1 : 1));
  const total = list.length;
  const headers = { 'Content-Type': 'application/json' };
  if (v2) {
    let offset = 0;
    if (q.get('nextToken')) {
      offset = Number(Buffer.from(q.get('nextToken'), 'base64').toString('utf8'));
      if (!Number.isInteger(offset) || offset < 0) return apiError(400, 'Invalid next token');
    }
    const page = list.slice(offset, offset + limit);
    if (offset + limit < list.length) headers['X-Next-Token'] = Buffer.from(String(offset + limit)).toString('base64');
    headers['X-Total-Running'] = String(total);
    list = page;
  }
  return { status: 200, headers, body: JSON.stringify(list.map(listedJson)) };
}

function handleApi(req, url, body) {
  const p = url.pathname;
  const m = req.method;
  if ((p === '/v2/sandboxes' || p === '/sandboxes') && m === 'POST') return handleCreate(body, p.startsWith('/v2'));
  if ((p === '/v2/sandboxes' || p === '/sandboxes') && m === 'GET') return handleList(url, p.startsWith('/v2'));
  let mm = /^\/sandboxes\/([^/]+)$/.exec(p);
  if (mm) {
    const sb = sandboxes.get(mm[1]);
    if (m === 'GET') {
      return sb ? { status: 200, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(detailJson(sb)) } : notFoundSandbox(mm[1]);
    }
    if (m === 'DELETE') {
      if (!sb) return notFoundSandbox(mm[1]);
      killSandbox(sb, 'DELETE');
      return { status: 204, headers: {}, body: '' };
    }
    return apiError(405, 'Method not allowed');
  }
  mm = /^\/sandboxes\/([^/]+)\/pause$/.exec(p);
  if (mm && m === 'POST') {
    // docs/protocols/e2b.md "Pause and resume": 204 paused; 409 already paused; 404 unknown. The body is optional.
    if (body.length > 0) {
      let t;
      try {
        t = parseJsonBody(body);
      } catch (e) {
        return apiError(400, `Error when parsing request: ${e.message}`);
      }
      if (!t || typeof t !== 'object' || (t.memory !== undefined && typeof t.memory !== 'boolean')) {
        return apiError(400, 'Error when parsing request: memory must be a boolean');
      }
    }
    const sb = sandboxes.get(mm[1]);
    if (!sb) return notFoundSandbox(mm[1]);
    if (sb.state === 'paused') return apiError(409, `Sandbox '${sb.id}' cannot be paused while in 'paused' state`);
    sb.state = 'paused';
    if (sb.timer) clearTimeout(sb.timer); // a paused sandbox's lease does not run
    sb.timer = null;
    for (const sock of sb.sockets) sock.destroy(); // what was running is frozen: its connections end
    log(`sandbox ${sb.id} paused`);
    return { status: 204, headers: {}, body: '' };
  }
  mm = /^\/sandboxes\/([^/]+)\/timeout$/.exec(p);
  if (mm && m === 'POST') {
    let t;
    try {
      t = parseJsonBody(body);
    } catch (e) {
      return apiError(400, `Error when parsing request: ${e.message}`);
    }
    if (!t || !Number.isInteger(t.timeout) || t.timeout < 0) return apiError(400, 'Error when parsing request: timeout must be a non-negative integer');
    if (t.timeout > MAX_TIMEOUT_S) return apiError(400, 'Timeout cannot be greater than 24 hours');
    const sb = sandboxes.get(mm[1]);
    if (!sb) return notFoundSandbox(mm[1]);
    // docs/protocols/e2b.md "Control plane": each call overwrites the lease: now + timeout (it may shorten it).
    sb.endAt = new Date(Date.now() + t.timeout * 1000);
    sb.armTimer();
    return { status: 204, headers: {}, body: '' };
  }
  mm = /^(\/v2)?\/sandboxes\/([^/]+)\/connect$/.exec(p);
  if (mm && m === 'POST') {
    let t;
    try {
      t = parseJsonBody(body);
    } catch (e) {
      return apiError(400, `Error when parsing request: ${e.message}`);
    }
    const v2 = Boolean(mm[1]);
    if (!t || typeof t !== 'object') return apiError(400, 'Error when parsing request: body must be an object');
    if (t.timeout === undefined && !v2) return apiError(400, 'Error when parsing request: timeout is required');
    const timeoutS = t.timeout === undefined ? 300 : t.timeout;
    if (!Number.isInteger(timeoutS) || timeoutS < 0) return apiError(400, 'Error when parsing request: timeout must be a non-negative integer');
    const sb = sandboxes.get(mm[2]);
    if (!sb) return notFoundSandbox(mm[2]);
    // docs/protocols/e2b.md "Control plane": connect only extends the lease; it resumes a paused sandbox (201).
    const want = Date.now() + timeoutS * 1000;
    const resumed = sb.state === 'paused';
    if (resumed) {
      sb.state = 'running';
      sb.endAt = new Date(want);
      sb.armTimer();
      log(`sandbox ${sb.id} resumed`);
    } else if (want > sb.endAt.getTime()) {
      sb.endAt = new Date(want);
      sb.armTimer();
    }
    return { status: resumed ? 201 : 200, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(sandboxJson(sb)) };
  }
  return apiError(404, 'Not found');
}

async function handleControl(req, res, url) {
  const p = url.pathname;
  const m = req.method;
  const { body, complete, tooLarge } = await readBody(req, CAP_JSON, null);
  const json = (status, obj) => sendRaw(res, status, { 'Content-Type': 'application/json' }, obj === undefined ? '' : JSON.stringify(obj));
  if (!complete) return tooLarge ? json(413, { code: 413, message: 'body too large' }) : undefined;
  if (p === '/_control/faults' && m === 'POST') {
    let parsed;
    try {
      parsed = parseJsonBody(body);
      if (!Array.isArray(parsed.faults)) throw new Error('"faults" must be an array');
      parsed = parsed.faults.map(validateFault);
    } catch (e) {
      return json(400, { code: 400, message: e.message });
    }
    faults.push(...parsed);
    return json(200, { faults: faults.length });
  }
  if (p === '/_control/faults' && m === 'DELETE') {
    faults = [];
    return json(204);
  }
  if (p === '/_control/faults' && m === 'GET') return json(200, { faults });
  if (p === '/_control/alive' && m === 'GET') return json(200, { sandboxes: [...sandboxes.keys()] });
  if (p === '/_control/requests' && m === 'GET') return json(200, { requests: requestLog });
  if (p === '/_control/reset' && m === 'POST') {
    for (const sb of [...sandboxes.values()]) killSandbox(sb, 'reset');
    faults = [];
    requestLog = [];
    return json(204);
  }
  return json(404, { code: 404, message: 'Not found' });
}

// ------------------------------------------------------------------------------------------ envd: files

const EXT_TYPES = { '.txt': 'text/plain; charset=utf-8', '.json': 'application/json', '.csv': 'text/csv; charset=utf-8',
  '.html': 'text/html; charset=utf-8', '.png': 'image/png', '.jpg': 'image/jpeg', '.py': 'text/x-python; charset=utf-8' };

function checkFilesAuth(sb, req, url, op) {
  // docs/protocols/e2b.md "Reaching a sandbox": /files takes the X-Access-Token header or a URL signature.
  const token = req.headers['x-access-token'];
  if (token !== undefined) {
    return token === sb.accessToken ? null : envdError(401, 'access token present in header but does not match');
  }
  const sig = url.searchParams.get('signature');
  if (!sig) return envdError(401, 'missing signature query parameter');
  const exp = url.searchParams.get('signature_expiration');
  const p = url.searchParams.get('path') ?? '';
  const user = url.searchParams.get('username') ?? '';
  let raw = `${p}:${op}:${user}:${sb.accessToken}`;
  if (exp) raw += `:${exp}`;
  const want = 'v1_' + crypto.createHash('sha256').update(raw).digest('base64').replace(/=+$/, '');
  if (sig !== want) return envdError(401, 'invalid signature');
  if (exp && Number(exp) < Date.now() / 1000) return envdError(401, 'signature is already expired');
  return null;
}

// As envd writes it (Go's mime.FormatMediaType): a token as is, other ASCII quoted, and a name with a byte outside
// printable ASCII in RFC 5987/6266 form, filename*=utf-8''<percent-encoded UTF-8>, since a header value cannot
// carry raw UTF-8 (Node refuses it, which answered 500 here before).
function contentDisposition(name) {
  if (/^[A-Za-z0-9!#$&+.^_`|~-]+$/.test(name)) return `inline; filename=${name}`;
  if (/^[\x20-\x7e]*$/.test(name)) return `inline; filename="${name.replace(/["\\]/g, '\\$&')}"`;
  const encoded = [...Buffer.from(name, 'utf8')]
    .map((b) => (/[A-Za-z0-9!#$&+.^_`|~-]/.test(String.fromCharCode(b)) && b < 0x80 ? String.fromCharCode(b) : '%' + b.toString(16).toUpperCase().padStart(2, '0')))
    .join('');
  return `inline; filename*=utf-8''${encoded}`;
}

function handleFilesGet(sb, req, url) {
  const denied = checkFilesAuth(sb, req, url, 'read');
  if (denied) return denied;
  const user = userFrom(req, url.searchParams);
  if (!user) return envdError(401, `error looking up user '${url.searchParams.get('username')}'`);
  let sp;
  let hp;
  try {
    sp = resolveSandboxPath(url.searchParams.get('path'), user);
    hp = hostPath(sb, sp);
  } catch (e) {
    return envdError(400, e.message);
  }
  let st;
  try {
    st = fs.statSync(hp);
  } catch {
    return envdError(404, `path '${sp}' does not exist`);
  }
  if (st.isDirectory()) return envdError(400, `path '${sp}' is a directory`);
  let data;
  try {
    data = fs.readFileSync(hp);
  } catch (e) {
    return envdError(500, `error opening file '${sp}': ${e.code || e.message}`);
  }
  const headers = {
    'Content-Type': EXT_TYPES[path.extname(sp).toLowerCase()] || 'application/octet-stream',
    'Content-Disposition': contentDisposition(path.posix.basename(sp)),
    Vary: 'Accept-Encoding',
    'Last-Modified': st.mtime.toUTCString(),
  };
  const accept = req.headers['accept-encoding'];
  if (accept && /\bgzip\b/.test(accept)) {
    headers['Content-Encoding'] = 'gzip';
    data = zlib.gzipSync(data);
  } else if (accept && !/\b(identity|\*)\b/.test(accept) && accept.trim() !== '') {
    return envdError(406, 'no acceptable encoding found, supported: [identity, gzip]');
  }
  return { status: 200, headers, body: data };
}

function writeSandboxFile(sb, sp, data) {
  const hp = hostPath(sb, sp);
  try {
    if (fs.statSync(hp).isDirectory()) return envdError(400, `path '${sp}' is a directory`);
  } catch { /* does not exist yet */ }
  try {
    fs.mkdirSync(path.dirname(hp), { recursive: true });
    fs.writeFileSync(hp, data);
  } catch (e) {
    return envdError(500, `error writing file '${sp}': ${e.code || e.message}`);
  }
  return null;
}

function handleFilesPost(sb, req, url, body) {
  const denied = checkFilesAuth(sb, req, url, 'write');
  if (denied) return denied;
  const user = userFrom(req, url.searchParams);
  if (!user) return envdError(401, `error looking up user '${url.searchParams.get('username')}'`);
  const ctype = (req.headers['content-type'] || '').toLowerCase();
  const queryPath = url.searchParams.get('path');
  const written = [];
  try {
    if (ctype.startsWith('multipart/form-data')) {
      const parts = parseMultipart(body, req.headers['content-type']).filter((x) => x.name === 'file');
      for (const part of parts) {
        const target = queryPath ?? part.filename;
        if (!target) return envdError(400, 'missing file path');
        const sp = resolveSandboxPath(target, user);
        if (queryPath !== null && written.length > 0) {
          return envdError(400, `you cannot upload multiple files to the same path '${sp}' in one upload request, only the last specified one will be uploaded`);
        }
        const err = writeSandboxFile(sb, sp, part.data);
        if (err) return err;
        written.push(sp);
      }
    } else if (ctype.startsWith('application/octet-stream')) {
      if (!queryPath) return envdError(400, 'path is required for application/octet-stream uploads');
      const sp = resolveSandboxPath(queryPath, user);
      let data = body;
      if ((req.headers['content-encoding'] || '').toLowerCase() === 'gzip') data = zlib.gunzipSync(body);
      const err = writeSandboxFile(sb, sp, data);
      if (err) return err;
      written.push(sp);
    } else {
      return envdError(400, `unsupported content type: ${req.headers['content-type'] || ''}, expected multipart/form-data or application/octet-stream`);
    }
  } catch (e) {
    return envdError(400, e.message);
  }
  // docs/protocols/e2b.md "envd health and files": 200 with one EntryInfo-like object per written file.
  return {
    status: 200,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(written.map((sp) => ({ path: sp, name: path.posix.basename(sp), type: 'file' }))),
  };
}

// ------------------------------------------------------------------------------------------ envd: RPC

function entryInfo(sb, sp) {
  // EntryInfo (docs/protocols/e2b.md "filesystem.Filesystem") in protojson form ("Connect calls and their
  // JSON"): defaults omitted, int64 as a string, enums by name.
  const hp = hostPath(sb, sp);
  let lst;
  try {
    lst = fs.lstatSync(hp, { bigint: true });
  } catch {
    throw new RpcError('not_found', `file not found: ${sp}`);
  }
  let st = lst;
  let symlinkTarget;
  if (lst.isSymbolicLink()) {
    symlinkTarget = fs.readlinkSync(hp);
    if (symlinkTarget.startsWith(sb.root + '/')) symlinkTarget = symlinkTarget.slice(sb.root.length);
    try {
      st = fs.statSync(hp, { bigint: true });
    } catch { /* dangling link: report the link itself */ }
  }
  const isDir = st.isDirectory();
  const type = isDir ? 'FILE_TYPE_DIRECTORY' : st.isSymbolicLink() ? 'FILE_TYPE_SYMLINK' : 'FILE_TYPE_FILE';
  const mode = Number(st.mode & 0o777n);
  const e = { name: sp === '/' ? '/' : path.posix.basename(sp), type, path: sp };
  if (st.size !== 0n) e.size = String(st.size);
  if (mode !== 0) e.mode = mode;
  e.permissions = modeString(mode, isDir, false);
  e.owner = 'user';
  e.group = 'user';
  e.modifiedTime = protoTimestamp(st.mtimeNs);
  if (symlinkTarget !== undefined) e.symlinkTarget = symlinkTarget;
  return e;
}

function fsRpc(sb, method, msg, user) {
  const p = (v) => resolveSandboxPath(v, user);
  switch (method) {
    case 'Stat':
      return { entry: entryInfo(sb, p(msg.path)) };
    case 'ListDir': {
      const sp = p(msg.path);
      const depth = msg.depth === undefined || msg.depth === 0 ? 1 : msg.depth;
      if (!Number.isInteger(depth) || depth < 0) throw new RpcError('invalid_argument', 'depth must be a positive integer');
      const hp = hostPath(sb, sp);
      let st;
      try {
        st = fs.statSync(hp);
      } catch {
        throw new RpcError('not_found', `directory not found: ${sp}`);
      }
      if (!st.isDirectory()) throw new RpcError('invalid_argument', `path is not a directory: ${sp}`);
      const entries = [];
      const walk = (dirSp, level) => {
        const names = fs.readdirSync(hostPath(sb, dirSp)).sort();
        for (const name of names) {
          const childSp = dirSp === '/' ? `/${name}` : `${dirSp}/${name}`;
          const info = entryInfo(sb, childSp);
          entries.push(info);
          if (info.type === 'FILE_TYPE_DIRECTORY' && !info.symlinkTarget && level < depth) walk(childSp, level + 1);
        }
      };
      walk(sp, 1);
      return { entries };
    }
    case 'MakeDir': {
      const sp = p(msg.path);
      const hp = hostPath(sb, sp);
      if (fs.existsSync(hp)) {
        if (fs.statSync(hp).isDirectory()) throw new RpcError('already_exists', `directory already exists: ${sp}`);
        throw new RpcError('invalid_argument', `path already exists but it is not a directory: ${sp}`);
      }
      fs.mkdirSync(hp, { recursive: true });
      return { entry: entryInfo(sb, sp) };
    }
    case 'Remove': {
      const sp = p(msg.path);
      if (sp === '/') throw new RpcError('invalid_argument', 'cannot remove the root directory');
      fs.rmSync(hostPath(sb, sp), { recursive: true, force: true });
      return {};
    }
    case 'Move': {
      const src = p(msg.source);
      const dst = p(msg.destination);
      const hs = hostPath(sb, src);
      if (!fs.existsSync(hs)) throw new RpcError('not_found', `source file not found: ${src}`);
      const hd = hostPath(sb, dst);
      fs.mkdirSync(path.dirname(hd), { recursive: true });
      fs.renameSync(hs, hd);
      return { entry: entryInfo(sb, dst) };
    }
    default:
      throw new RpcError('unimplemented', `filesystem.Filesystem/${method} is not implemented by this server`);
  }
}

function selectProcess(sb, selector) {
  const sel = selector || {};
  if (sel.pid !== undefined) {
    const proc = sb.processes.get(Number(sel.pid));
    if (!proc) throw new RpcError('not_found', `process with pid ${sel.pid} not found`);
    return proc;
  }
  if (sel.tag !== undefined) {
    for (const proc of sb.processes.values()) if (proc.tag === sel.tag) return proc;
    throw new RpcError('not_found', `process with tag ${sel.tag} not found`);
  }
  throw new RpcError('invalid_argument', 'process selector is required');
}

function processRpc(sb, method, msg) {
  switch (method) {
    case 'List':
      return {
        processes: [...sb.processes.entries()].map(([pid, proc]) => {
          const out = { config: proc.config, pid };
          if (proc.tag) out.tag = proc.tag;
          return out;
        }),
      };
    case 'SendSignal': {
      const proc = selectProcess(sb, msg.process);
      const sig = { SIGNAL_SIGKILL: 'SIGKILL', 9: 'SIGKILL', SIGNAL_SIGTERM: 'SIGTERM', 15: 'SIGTERM' }[msg.signal];
      if (!sig) throw new RpcError('unimplemented', `invalid signal: ${msg.signal}`);
      try {
        process.kill(-proc.child.pid, sig);
      } catch { /* already exited */ }
      return {};
    }
    case 'SendInput': {
      const proc = selectProcess(sb, msg.process);
      const b64 = msg.input && (msg.input.stdin ?? msg.input.pty);
      if (!proc.child.stdin) throw new RpcError('failed_precondition', 'stdin is not enabled for this process');
      if (typeof b64 === 'string') proc.child.stdin.write(Buffer.from(b64, 'base64'));
      return {};
    }
    case 'CloseStdin': {
      const proc = selectProcess(sb, msg.process);
      if (!proc.child.stdin) throw new RpcError('failed_precondition', 'stdin is not enabled for this process');
      proc.child.stdin.end();
      return {};
    }
    default:
      throw new RpcError('unimplemented', `process.Process/${method} is not implemented by this server`);
  }
}

// Go's ProcessState.String() for a signal (docs/protocols/e2b.md "process.Process/Start": "signal: killed").
const SIGNAL_TEXT = { SIGKILL: 'killed', SIGTERM: 'terminated', SIGINT: 'interrupt', SIGHUP: 'hangup',
  SIGSEGV: 'segmentation fault', SIGABRT: 'aborted', SIGPIPE: 'broken pipe', SIGQUIT: 'quit', SIGUSR1: 'user defined signal 1',
  SIGUSR2: 'user defined signal 2', SIGALRM: 'alarm clock', SIGBUS: 'bus error', SIGFPE: 'floating point exception' };

// One reader of a process's events: the Start stream, or a Connect stream attached later (docs/protocols/e2b.md
// "process.Process/Connect"). Every reader gets the events from the moment it attached (no replay, as envd), its own
// keepalives, then the end event and the end-stream envelope.
function processSubscriber(req, out) {
  const ev = (event) => envelope(0, JSON.stringify({ event }));
  const interval = Number(req.headers['keepalive-ping-interval']) > 0 ? Number(req.headers['keepalive-ping-interval']) : 90;
  const sub = {
    finished: false,
    keepTimer: null,
    arm() {
      if (this.keepTimer) clearTimeout(this.keepTimer);
      const tick = () => {
        if (this.finished) return;
        out.unit(ev({ keepalive: {} }), { kind: 'envelope' });
        this.keepTimer = setTimeout(tick, interval * 1000);
      };
      this.keepTimer = setTimeout(tick, interval * 1000);
    },
    close() {
      this.finished = true;
      if (this.keepTimer) clearTimeout(this.keepTimer);
    },
    start(pid) {
      out.unit(ev({ start: { pid } }), { kind: 'envelope' });
      this.arm();
    },
    data(key, chunk) {
      if (this.finished) return;
      out.unit(ev({ data: { [key]: chunk.toString('base64') } }), { kind: 'envelope' });
      this.arm();
    },
    end(endEvent) {
      if (this.finished) return;
      this.close();
      out.unit(ev({ end: endEvent }), { kind: 'envelope' });
      out.unit(envelope(2, '{}'), { terminal: true, kind: 'envelope' });
      out.finish();
    },
    fail(code, message) {
      if (this.finished) return;
      this.close();
      out.unit(envelope(2, JSON.stringify({ error: { code, message } })), { terminal: true, kind: 'envelope' });
      out.finish();
    },
  };
  return sub;
}

// The end event (docs/protocols/e2b.md "process.Process/Start"), protojson: exitCode omitted when 0, exited omitted
// when false.
function endEvent(code, signal) {
  const end = {};
  if (signal) {
    end.exitCode = -1;
    end.status = `signal: ${SIGNAL_TEXT[signal] || signal}`;
    end.error = end.status;
  } else {
    if (code !== 0) end.exitCode = code;
    end.exited = true;
    end.status = `exit status ${code}`;
    if (code !== 0) end.error = end.status;
  }
  return end;
}

// process.Process/Start (docs/protocols/e2b.md "process.Process/Start"): a real process, streamed as Connect envelopes.
// The process outlives its stream: a reader that goes away (a cut connection, a client that disconnects) leaves it
// running, and Process/Connect attaches a new reader by pid.
function processStart(sb, req, msg, out, user) {
  out.begin(200, { 'Content-Type': 'application/connect+json' });
  const first = processSubscriber(req, out);
  const cfg = msg.process || {};
  const fail = (code, message) => first.fail(code, message);
  if (typeof cfg.cmd !== 'string' || !cfg.cmd) return fail('invalid_argument', 'process.cmd is required');
  const args = Array.isArray(cfg.args) ? cfg.args.map(String) : [];
  const home = user === 'root' ? '/root' : '/home/user';
  let cwdSp;
  let cwdHost;
  try {
    cwdSp = resolveSandboxPath(cfg.cwd || home, user);
    cwdHost = hostPath(sb, cwdSp);
  } catch (e) {
    return fail('invalid_argument', e.message);
  }
  if (!fs.existsSync(cwdHost) || !fs.statSync(cwdHost).isDirectory()) {
    return fail('invalid_argument', `error starting process: chdir ${cwdSp}: no such file or directory`);
  }
  const envs = cfg.envs && typeof cfg.envs === 'object' ? cfg.envs : {};
  const env = { ...sb.baseEnv(home), PWD: cwdHost };
  for (const [k, v] of Object.entries(envs)) env[k] = String(v);
  const wantStdin = msg.stdin === true;
  const child = spawn(cfg.cmd, args, {
    cwd: cwdHost, env, detached: true, stdio: [wantStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  // A process that reads a closed stdin must not take the server down with EPIPE; once it exited, its stdin pipe is
  // closed so that 'close' (and envd's forgetting of the process) follows as soon as its output is drained.
  if (child.stdin) {
    child.stdin.on('error', () => {});
    child.on('exit', () => child.stdin.destroy());
  }
  const subscribers = new Set([first]);
  let started = false;
  let deadlineTimer = null;
  child.on('error', (e) => {
    if (started) return;
    sb.processes.delete(child.pid);
    fail('invalid_argument', `error starting process: ${e.message}`);
  });
  child.on('spawn', () => {
    started = true;
    sb.processes.set(child.pid, {
      child, subscribers, config: { cmd: cfg.cmd, args, envs, cwd: cfg.cwd || undefined }, tag: msg.tag,
    });
    first.start(child.pid);
    const timeoutMs = Number(req.headers['connect-timeout-ms']);
    // Node fires a timer longer than 2^31-1 ms at once; a deadline that far away is never reached by a test.
    if (timeoutMs > 0 && timeoutMs <= 0x7fffffff) {
      // docs/protocols/e2b.md "process.Process/Start": the deadline applies to the process: kill it and end the
      // Start stream with deadline_exceeded (readers attached by Connect get the end event).
      deadlineTimer = setTimeout(() => {
        subscribers.delete(first);
        first.fail('deadline_exceeded', 'context deadline exceeded');
        killGroup(child);
      }, timeoutMs);
    }
    const onData = (key) => (chunk) => {
      for (const sub of subscribers) sub.data(key, chunk);
    };
    child.stdout.on('data', onData('stdout'));
    child.stderr.on('data', onData('stderr'));
  });
  child.on('close', (code, signal) => {
    sb.processes.delete(child.pid);
    if (deadlineTimer) clearTimeout(deadlineTimer);
    if (!started) return;
    const end = endEvent(code, signal);
    for (const sub of subscribers) sub.end(end);
    subscribers.clear();
  });
  out.res.on('close', () => {
    // The reader left (or was cut): the process runs on.
    if (!out.res.writableFinished) {
      first.close();
      subscribers.delete(first);
    }
  });
}

// process.Process/Connect (docs/protocols/e2b.md "process.Process/Connect"): a new reader of a running process,
// selected by pid or tag: `start` with its pid, then what it writes from now on, then its end. A process that has
// ended is not found (envd forgets a process when it exits).
function processConnect(sb, req, msg, out) {
  out.begin(200, { 'Content-Type': 'application/connect+json' });
  const sub = processSubscriber(req, out);
  let proc;
  try {
    proc = selectProcess(sb, msg.process);
  } catch (e) {
    return sub.fail(e instanceof RpcError ? e.code : 'internal', e.message);
  }
  sub.start(proc.child.pid);
  proc.subscribers.add(sub);
  out.res.on('close', () => {
    if (!out.res.writableFinished) {
      sub.close();
      proc.subscribers.delete(sub);
    }
  });
}

// ------------------------------------------------------------------------------------------ interpreter

class Context {
  constructor(sb, language, cwd) {
    this.sb = sb;
    this.id = crypto.randomUUID();
    this.language = language;
    this.cwd = cwd;
    this.kernel = null;
    this.count = 0;
    this.queue = Promise.resolve(); // executions within one context are serialized (docs/protocols/e2b.md "Code-interpreter requests")
  }

  json() {
    return { id: this.id, language: this.language, cwd: this.cwd };
  }

  shutdown() {
    if (this.kernel) {
      this.kernel.dead = true;
      killGroup(this.kernel.child);
      this.kernel = null;
    }
  }

  restart() {
    this.shutdown();
    this.count = 0;
  }

  ensureKernel() {
    if (this.kernel && !this.kernel.dead) return this.kernel;
    const sb = this.sb;
    const cwdHost = hostPath(sb, this.cwd);
    fs.mkdirSync(cwdHost, { recursive: true });
    const child = spawn('python3', ['-X', 'utf8', KERNEL_SCRIPT], {
      cwd: cwdHost,
      env: { ...sb.baseEnv('/home/user'), PWD: cwdHost },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    const k = { child, dead: false, exec: null, msgBuf: '' };
    // fd 1/2: user output, possibly with sync tokens; fd 4: structured messages (see python_kernel.py).
    child.stdout.on('data', (c) => k.exec && k.exec.stream('stdout', c));
    child.stderr.on('data', (c) => k.exec && k.exec.stream('stderr', c));
    child.stdio[4].on('data', (c) => {
      k.msgBuf += c.toString('utf8');
      let i;
      while ((i = k.msgBuf.indexOf('\n')) >= 0) {
        const line = k.msgBuf.slice(0, i);
        k.msgBuf = k.msgBuf.slice(i + 1);
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        if (k.exec) k.exec.message(msg);
      }
    });
    child.stdio[3].on('error', () => {});
    child.on('error', (e) => log(`kernel failed to start: ${e.message}`));
    child.on('exit', () => {
      k.dead = true;
      if (this.kernel === k) this.kernel = null;
      if (k.exec) k.exec.kernelDied();
    });
    this.kernel = k;
    return k;
  }
}

// Splits one output stream into text pieces and sync tokens written by the driver.
class StreamScanner {
  constructor() {
    this.buf = Buffer.alloc(0);
    this.decoder = new StringDecoder('utf8');
  }

  // Returns [{text}|{token}] in order.
  push(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const out = [];
    let start = 0;
    for (;;) {
      const z = this.buf.indexOf(0, start);
      if (z < 0) break;
      const close = this.buf.indexOf(0, z + 1);
      const candidate = close < 0 ? this.buf.subarray(z + 1) : this.buf.subarray(z + 1, close);
      const isTokenish = /^[0-9a-f]*(\.[0-9]*)?$/.test(candidate.toString('latin1')) && candidate.length <= 40;
      if (close < 0) {
        if (isTokenish) {
          // Possibly the start of a token: hold it back until more bytes arrive.
          if (z > 0) out.push({ text: this.decoder.write(this.buf.subarray(0, z)) });
          this.buf = this.buf.subarray(z);
          return out.filter((x) => x.token || x.text);
        }
        break;
      }
      if (isTokenish && /^[0-9a-f]{16}\.[0-9]+$/.test(candidate.toString('latin1'))) {
        if (z > 0) out.push({ text: this.decoder.write(this.buf.subarray(0, z)) });
        out.push({ token: candidate.toString('latin1') });
        this.buf = this.buf.subarray(close + 1);
        start = 0;
        continue;
      }
      start = z + 1;
    }
    if (this.buf.length) out.push({ text: this.decoder.write(this.buf) });
    this.buf = Buffer.alloc(0);
    return out.filter((x) => x.token || x.text);
  }

  flush() {
    const rest = (this.buf.length ? this.decoder.write(this.buf) : '') + this.decoder.end();
    this.buf = Buffer.alloc(0);
    return rest;
  }
}

// One /execute run inside a context's kernel (docs/protocols/e2b.md "The /execute stream").
class Execution {
  constructor(ctx, kernel, out, sync) {
    this.ctx = ctx;
    this.kernel = kernel;
    this.out = out;
    this.sync = sync;
    this.scanners = { stdout: new StreamScanner(), stderr: new StreamScanner() };
    this.seen = { stdout: new Set(), stderr: new Set() };
    this.pending = []; // structured messages waiting for their sync tokens
    this.errorSent = false;
    this.done = false;
    this.keepTimer = null;
    this.waitTimer = null;
    this.finished = new Promise((r) => { this.resolveFinished = r; });
  }

  line(obj) {
    this.out.unit(Buffer.from(pyDumps(obj) + '\n'), { kind: 'line', terminal: obj.type === 'end_of_execution' });
    this.armKeepalive();
  }

  armKeepalive() {
    if (this.keepTimer) clearTimeout(this.keepTimer);
    if (this.done) return;
    // docs/protocols/e2b.md "The /execute stream": {"type": "keepalive"} after every 5 s without output.
    this.keepTimer = setTimeout(() => this.line({ type: 'keepalive' }), 5000);
  }

  emitText(name, text) {
    // One wire line per complete line of output (a partial line goes as it is), so a line is never
    // split or merged depending on timing.
    let rest = text;
    while (rest.length) {
      const i = rest.indexOf('\n');
      const piece = i < 0 ? rest : rest.slice(0, i + 1);
      rest = i < 0 ? '' : rest.slice(i + 1);
      this.line({ type: name, text: piece, timestamp: pyTimestamp() });
    }
  }

  stream(name, chunk) {
    if (this.done) return;
    for (const item of this.scanners[name].push(chunk)) {
      if (item.token) this.seen[name].add(item.token);
      else this.emitText(name, item.text);
    }
    this.pump();
  }

  message(msg) {
    if (this.done) return;
    this.pending.push(msg);
    this.pump();
  }

  pump() {
    while (this.pending.length && !this.done) {
      const msg = this.pending[0];
      const ready = !msg.sync || (this.seen.stdout.has(msg.sync) && this.seen.stderr.has(msg.sync));
      if (!ready) {
        // A stream whose fd the code closed never delivers the token; do not wait forever for it.
        if (!this.waitTimer) this.waitTimer = setTimeout(() => { this.waitTimer = null; msg.sync = null; this.pump(); }, 1000);
        return;
      }
      if (this.waitTimer) {
        clearTimeout(this.waitTimer);
        this.waitTimer = null;
      }
      this.pending.shift();
      this.apply(msg);
    }
  }

  apply(msg) {
    if (msg.t === 'result') {
      // The result line (docs/protocols/e2b.md "Fields of the /execute events"): MIME fields, then "extra"
      // (always present) and "is_main_result".
      this.line({ type: 'result', ...msg.data, extra: {}, is_main_result: Boolean(msg.main) });
    } else if (msg.t === 'error') {
      if (this.errorSent) return; // at most one per execution
      this.errorSent = true;
      this.line({ type: 'error', name: msg.name, value: msg.value, traceback: msg.traceback });
    } else if (msg.t === 'done') {
      this.complete();
    }
  }

  kernelDied() {
    if (this.done) return;
    for (const name of ['stdout', 'stderr']) {
      const rest = this.scanners[name].flush();
      if (rest) this.emitText(name, rest);
    }
    if (!this.errorSent) {
      this.errorSent = true;
      this.line({ type: 'error', name: 'DeadKernelError', value: 'The kernel died while executing the code; its state is lost', traceback: '' });
    }
    this.complete();
  }

  complete() {
    if (this.done) return;
    this.line({ type: 'end_of_execution' });
    this.done = true;
    if (this.keepTimer) clearTimeout(this.keepTimer);
    if (this.waitTimer) clearTimeout(this.waitTimer);
    if (this.kernel.exec === this) this.kernel.exec = null;
    this.out.finish();
    this.resolveFinished();
  }
}

function handleExecute(sb, req, body, out) {
  let msg;
  try {
    msg = parseJsonBody(body);
  } catch (e) {
    // FastAPI's validation error shape, a 422 (docs/protocols/e2b.md "Code-interpreter requests")
    return out.send({ status: 422, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ detail: [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: e.message } }] }) });
  }
  if (!msg || typeof msg !== 'object' || typeof msg.code !== 'string') {
    return out.send({ status: 422, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ detail: [{ type: 'missing', loc: ['body', 'code'], msg: 'Field required', input: msg ?? null }] }) });
  }
  if (msg.env_vars !== undefined && msg.env_vars !== null && !isStringMap(msg.env_vars)) {
    return out.send({ status: 422, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ detail: [{ type: 'dict_type', loc: ['body', 'env_vars'], msg: 'Input should be a valid dictionary', input: msg.env_vars }] }) });
  }
  const text = (status, s) => out.send({ status, headers: { 'Content-Type': 'text/plain; charset=utf-8' }, body: s });
  if (msg.context_id && msg.language) return text(400, 'Only one of context_id or language can be provided');
  let ctx;
  if (msg.context_id) {
    ctx = sb.contexts.get(msg.context_id);
    if (!ctx) return text(404, `Context ${msg.context_id} not found`);
  } else {
    const lang = msg.language || 'python';
    if (lang !== 'python') return text(500, `This server supports only python, not '${lang}'`);
    ctx = sb.defaultContext;
  }
  // Starlette sends the headers before the body generator waits for the context's lock.
  out.begin(200, {});
  let execution = null;
  out.res.on('close', () => {
    // docs/protocols/e2b.md "Code-interpreter requests": a client that disconnects mid-execution gets the kernel
    // interrupted (SIGINT → KeyboardInterrupt) so the next execution is not blocked. A connection cut by a
    // directive is not a client disconnect.
    if (!out.faultKilled && execution && !execution.done && execution.kernel.child.pid) {
      try {
        process.kill(execution.kernel.child.pid, 'SIGINT');
      } catch { /* gone */ }
    }
  });
  const run = async () => {
    if (!sb.alive || out.dead) return;
    let kernel;
    try {
      kernel = ctx.ensureKernel();
    } catch (e) {
      out.unit(Buffer.from(pyDumps({ type: 'error', name: 'KernelStartError', value: e.message, traceback: '' }) + '\n'));
      out.unit(Buffer.from(pyDumps({ type: 'end_of_execution' }) + '\n'), { terminal: true });
      return out.finish();
    }
    ctx.count += 1;
    const sync = crypto.randomBytes(8).toString('hex');
    execution = new Execution(ctx, kernel, out, sync);
    kernel.exec = execution;
    execution.line({ type: 'number_of_executions', execution_count: ctx.count });
    kernel.child.stdio[3].write(JSON.stringify({ id: ctx.count, code: msg.code, env_vars: msg.env_vars || {}, sync }) + '\n');
    await execution.finished;
  };
  const p = ctx.queue.then(run, run);
  ctx.queue = p.catch(() => {});
}

function handleInterpreter(sb, req, url, body, out) {
  const p = url.pathname;
  const m = req.method;
  const json = (status, obj) => out.send({ status, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(obj) });
  const text = (status, s) => out.send({ status, headers: { 'Content-Type': 'text/plain; charset=utf-8' }, body: s });
  if (p === '/health' && m === 'GET') return json(200, 'OK');
  if (p === '/execute' && m === 'POST') return handleExecute(sb, req, body, out);
  if (p === '/contexts' && m === 'GET') return json(200, [...sb.contexts.values()].map((c) => c.json()));
  if (p === '/contexts' && m === 'POST') {
    let msg;
    try {
      msg = parseJsonBody(body) || {};
    } catch {
      return json(422, { detail: [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error' }] });
    }
    const lang = msg.language || 'python';
    if (lang !== 'python') return text(500, `This server supports only python, not '${lang}'`);
    let cwd;
    try {
      cwd = resolveSandboxPath(msg.cwd || '/home/user');
      hostPath(sb, cwd);
    } catch (e) {
      return text(500, e.message);
    }
    const ctx = new Context(sb, 'python', cwd);
    sb.contexts.set(ctx.id, ctx);
    return json(200, ctx.json());
  }
  let mm = /^\/contexts\/([^/]+)$/.exec(p);
  if (mm && m === 'DELETE') {
    const ctx = sb.contexts.get(mm[1]);
    if (!ctx) return text(404, `Context ${mm[1]} not found`);
    ctx.shutdown();
    sb.contexts.delete(ctx.id);
    if (ctx === sb.defaultContext) {
      sb.defaultContext = new Context(sb, 'python', '/home/user');
      sb.contexts.set(sb.defaultContext.id, sb.defaultContext);
    }
    return json(200, null);
  }
  mm = /^\/contexts\/([^/]+)\/restart$/.exec(p);
  if (mm && m === 'POST') {
    const ctx = sb.contexts.get(mm[1]);
    if (!ctx) return text(404, `Context ${mm[1]} not found`);
    ctx.restart();
    return json(200, null);
  }
  return json(404, { detail: 'Not Found' });
}

// ------------------------------------------------------------------------------------------ envd dispatch

function handleEnvd(sb, req, url, body, out) {
  const p = url.pathname;
  const m = req.method;
  // docs/protocols/e2b.md "Reaching a sandbox": every path except GET /health and /files (own rules) needs the access token.
  const openPath = (p === '/health' && m === 'GET') || p === '/files';
  if (!openPath && req.headers['x-access-token'] !== sb.accessToken) {
    return out.send(envdError(401, 'unauthorized access, please provide a valid access token or method signing if supported'));
  }
  if (p === '/health' && m === 'GET') return out.send({ status: 204, headers: { 'Cache-Control': 'no-store' }, body: '' });
  if (p === '/envs' && m === 'GET') return out.send({ status: 200, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(sb.envVars) });
  if (p === '/metrics' && m === 'GET') {
    return out.send({ status: 200, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({
      ts: Math.floor(Date.now() / 1000), cpu_count: 2, cpu_used_pct: 0, mem_total: 536870912, mem_used: 0, mem_cache: 0,
      mem_total_mib: 512, mem_used_mib: 0, disk_used: 0, disk_total: 1073741824 }) });
  }
  if (p === '/files' && m === 'GET') return out.send(handleFilesGet(sb, req, url));
  if (p === '/files' && m === 'POST') return out.send(handleFilesPost(sb, req, url, body));
  const rpc = /^\/(process\.Process|filesystem\.Filesystem)\/([A-Za-z]+)$/.exec(p);
  if (rpc && m === 'POST') {
    const user = userFrom(req, null);
    if (!user) return out.send(rpcErrorReply(new RpcError('unauthenticated', 'invalid username')));
    const ctype = (req.headers['content-type'] || '').toLowerCase();
    if (rpc[1] === 'process.Process' && (rpc[2] === 'Start' || rpc[2] === 'Connect')) {
      if (!ctype.startsWith('application/connect+json')) {
        return out.send({ status: 415, headers: {}, body: '' });
      }
      let env;
      try {
        env = parseSingleEnvelope(body);
      } catch (e) {
        out.begin(200, { 'Content-Type': 'application/connect+json' });
        out.unit(envelope(2, JSON.stringify({ error: { code: 'invalid_argument', message: e.message } })), { terminal: true, kind: 'envelope' });
        return out.finish();
      }
      if (out.action === 'envelopes') {
        // The directive's own stream instead of the process's (nothing is run): hostile start events and the like.
        out.begin(200, { 'Content-Type': 'application/connect+json' });
        for (const e of out.fault.envelopes) {
          const payload = typeof e.payload === 'string' ? e.payload : JSON.stringify(e.payload);
          out.unit(envelope(e.flags ?? 0, payload), { kind: 'envelope' });
        }
        if (out.fault.then === 'stall') return;
        return out.finish();
      }
      if (rpc[2] === 'Connect') return processConnect(sb, req, env.json, out);
      return processStart(sb, req, env.json, out, user);
    }
    if (!ctype.startsWith('application/json')) return out.send({ status: 415, headers: {}, body: '' });
    let msg;
    try {
      msg = parseJsonBody(body);
      if (!msg || typeof msg !== 'object') throw new Error('request must be a JSON object');
    } catch (e) {
      return out.send(rpcErrorReply(new RpcError('invalid_argument', e.message)));
    }
    try {
      const result = rpc[1] === 'process.Process' ? processRpc(sb, rpc[2], msg) : fsRpc(sb, rpc[2], msg, user);
      return out.send({ status: 200, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(result) });
    } catch (e) {
      const err = e instanceof RpcError ? e : new RpcError('internal', e.message);
      return out.send(rpcErrorReply(err));
    }
  }
  return out.send(envdError(404, 'not found'));
}

// ------------------------------------------------------------------------------------------ servers

async function apiRequest(req, res) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname.startsWith('/_control/')) return handleControl(req, res, url);
  if (BENCH) return benchApi(req, res, url);
  const idMatch = /^(?:\/v2)?\/sandboxes\/([^/]+)/.exec(url.pathname);
  const entry = logRequest(req, 'api', idMatch ? idMatch[1] : null);
  const fault = matchFault('api', req.method, url.pathname, idMatch ? idMatch[1] : undefined);
  if (fault) entry.fault = fault.action;
  if (fault && fault.action === 'refuse') return req.socket.destroy();
  const { body, complete, tooLarge } = await readBody(req, CAP_JSON, entry);
  if (!complete) {
    if (tooLarge) sendRaw(res, 413, { 'Content-Type': 'application/json', Connection: 'close' }, JSON.stringify({ code: 413, message: 'Request body too large' }));
    return;
  }
  if (await preFault(fault, req, res, entry, null, 'api')) return;
  const out = new Out(req, res, fault, entry, null);
  // docs/protocols/e2b.md "Control plane": X-API-Key must match (the JS SDK spells it X-API-KEY; header names are
  // case-insensitive).
  if (req.headers['x-api-key'] !== API_KEY) {
    return out.send(apiError(401, 'Invalid API key, please visit https://e2b.dev/docs/api-key for more information.'));
  }
  const reply = handleApi(req, url, body);
  // kill_during on the control plane: kill the named sandbox, then drop the connection.
  if (fault && fault.action === 'kill_during' && idMatch && sandboxes.get(idMatch[1])) out.sandbox = sandboxes.get(idMatch[1]);
  out.send(reply);
}

// Directives decided before any handler runs. Returns true when the request was answered.
async function preFault(fault, req, res, entry, sandboxId, surface) {
  if (!fault) return false;
  switch (fault.action) {
    case 'status': {
      const status = fault.status;
      const headers = {};
      let body = fault.body;
      if (body === undefined) {
        body = surface === 'interpreter' ? `${status} fault` : JSON.stringify({ code: status, message: fault.message || http.STATUS_CODES[status] || 'error' });
        headers['Content-Type'] = surface === 'interpreter' ? 'text/plain; charset=utf-8' : 'application/json';
      } else if (typeof body !== 'string') {
        body = JSON.stringify(body);
        headers['Content-Type'] = 'application/json';
      } else {
        headers['Content-Type'] = fault.content_type || (/^\s*[{[]/.test(body) ? 'application/json' : 'text/plain; charset=utf-8');
      }
      if (fault.content_type) headers['Content-Type'] = fault.content_type;
      if (fault.retry_after !== undefined) headers['Retry-After'] = String(fault.retry_after);
      entry.status = status;
      sendRaw(res, status, headers, body);
      return true;
    }
    case 'gone': {
      const r = sandboxNotFound(sandboxId ?? fault.sandbox ?? '');
      entry.status = 502;
      sendRaw(res, r.status, r.headers, r.body);
      return true;
    }
    case 'reset_after_headers': {
      // A status line and headers promising a chunked body, then the connection is destroyed.
      const ctype = surface === 'api' ? 'application/json' : entry.path.startsWith('/process.') || entry.path.startsWith('/filesystem.') ? 'application/connect+json' : 'application/json';
      entry.status = 200;
      req.socket.write(`HTTP/1.1 200 OK\r\nContent-Type: ${ctype}\r\nTransfer-Encoding: chunked\r\n\r\n`, () => req.socket.destroy());
      return true;
    }
    case 'stall':
      if (!Number.isInteger(fault.after)) return true; // read the request, never answer
      return false;
    default:
      return false;
  }
}

async function sandboxRequest(req, res) {
  const url = new URL(req.url, 'http://x');
  if (BENCH) return benchSandbox(req, res, url);
  const id = req.headers['e2b-sandbox-id'];
  const portRaw = req.headers['e2b-sandbox-port'];
  const port = Number(portRaw);
  const surface = port === ENVD_PORT ? 'envd' : port === JUPYTER_PORT ? 'interpreter' : 'sandbox';
  const entry = logRequest(req, surface, id ?? null);
  const fault = surface === 'sandbox' ? null : matchFault(surface, req.method, url.pathname, id);
  if (fault) entry.fault = fault.action;
  if (fault && fault.action === 'refuse') return req.socket.destroy();
  const cap = surface === 'envd' && url.pathname === '/files' ? CAP_UPLOAD : surface === 'interpreter' ? CAP_EXECUTE : CAP_JSON;
  const { body, complete, tooLarge } = await readBody(req, cap, entry);
  if (!complete) {
    if (tooLarge) sendRaw(res, 413, { 'Content-Type': 'application/json', Connection: 'close' }, JSON.stringify({ code: 413, message: 'Request body too large' }));
    return;
  }
  // docs/protocols/e2b.md "Reaching a sandbox": the proxy needs both routing headers.
  if (id === undefined || portRaw === undefined) {
    const missing = id === undefined ? 'E2b-Sandbox-Id' : 'E2b-Sandbox-Port';
    entry.status = 400;
    return sendRaw(res, 400, { 'Content-Type': 'application/json' }, JSON.stringify({ code: 400, message: `Missing header: ${missing}` }));
  }
  if (await preFault(fault, req, res, entry, id, surface)) return;
  const sb = sandboxes.get(id);
  // A paused sandbox is not reachable: the proxy answers as for a gone one (docs/protocols/e2b.md "Pause and resume").
  if (!sb || sb.state === 'paused') {
    const r = sandboxNotFound(id);
    entry.status = 502;
    return sendRaw(res, r.status, r.headers, r.body);
  }
  if (surface === 'sandbox') {
    entry.status = 502;
    return sendRaw(res, 502, { 'Content-Type': 'application/json' },
      JSON.stringify({ sandboxId: id, message: 'The sandbox is running but port is not open', port, code: 502 }));
  }
  sb.sockets.add(req.socket);
  res.on('close', () => sb.sockets.delete(req.socket));
  const out = new Out(req, res, fault, entry, sb);
  try {
    if (surface === 'envd') handleEnvd(sb, req, url, body, out);
    else handleInterpreter(sb, req, url, body, out);
  } catch (e) {
    log(`handler error: ${e.stack || e.message}`);
    if (!res.headersSent) out.send(envdError(500, 'internal error'));
  }
}

// ------------------------------------------------------------------------------------------ bench mode

// A typical small execution (docs/protocols/e2b.md "Fields of the /execute events"), built once: the bench measures the client, not this server.
const BENCH_EXECUTE = Buffer.from([
  pyDumps({ type: 'number_of_executions', execution_count: 1 }),
  pyDumps({ type: 'stdout', text: 'x\n', timestamp: '2026-01-01T00:00:00.000000+00:00' }),
  pyDumps({ type: 'result', text: '1', extra: {}, is_main_result: true }),
  pyDumps({ type: 'end_of_execution' }),
].join('\n') + '\n');

function benchApi(req, res, url) {
  req.resume();
  req.on('end', () => {
    const p = url.pathname;
    if ((p === '/v2/sandboxes' || p === '/sandboxes') && req.method === 'POST') {
      const sb = new Sandbox({ templateID: TEMPLATES['code-interpreter-v1'], alias: 'code-interpreter-v1', metadata: {}, envVars: {}, timeoutS: 300 });
      sandboxes.set(sb.id, sb);
      return sendRaw(res, 201, { 'Content-Type': 'application/json' }, JSON.stringify(sandboxJson(sb)));
    }
    const mm = /^\/sandboxes\/([^/]+)$/.exec(p);
    if (mm && req.method === 'DELETE') {
      sandboxes.delete(mm[1]);
      return sendRaw(res, 204, {}, '');
    }
    if (/\/timeout$/.test(p)) return sendRaw(res, 204, {}, '');
    return sendRaw(res, 404, { 'Content-Type': 'application/json' }, JSON.stringify({ code: 404, message: 'Not found' }));
  });
}

function benchSandbox(req, res, url) {
  req.resume();
  req.on('end', () => {
    if (url.pathname === '/execute') {
      res.writeHead(200, {});
      return res.end(BENCH_EXECUTE);
    }
    if (url.pathname === '/health') return sendRaw(res, 204, {}, '');
    return sendRaw(res, 404, { 'Content-Type': 'application/json' }, JSON.stringify({ code: 404, message: 'not found' }));
  });
}

// ------------------------------------------------------------------------------------------ lifecycle

function shutdown(why) {
  log(`shutting down (${why})`);
  for (const sb of [...sandboxes.values()]) killSandbox(sb, 'server exit');
  process.exit(0);
}

const apiServer = http.createServer((req, res) => {
  apiRequest(req, res).catch((e) => {
    log(`api error: ${e.stack || e.message}`);
    if (!res.headersSent) sendRaw(res, 500, { 'Content-Type': 'application/json' }, JSON.stringify({ code: 500, message: 'internal error' }));
  });
});
const sandboxServer = http.createServer((req, res) => {
  sandboxRequest(req, res).catch((e) => {
    log(`sandbox error: ${e.stack || e.message}`);
    if (!res.headersSent) sendRaw(res, 500, { 'Content-Type': 'application/json' }, JSON.stringify({ code: 500, message: 'internal error' }));
  });
});
for (const s of [apiServer, sandboxServer]) {
  s.keepAliveTimeout = 640_000; // docs/protocols/e2b.md "Surfaces and ports": envd idle timeout 640 s
  s.headersTimeout = 0;
  s.requestTimeout = 0; // streams and stalls may last long
  s.on('clientError', (err, socket) => socket.destroy());
}

process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('exit', () => {
  // Last resort if something called process.exit elsewhere: never leave children or dirs behind.
  for (const sb of [...sandboxes.values()]) killSandbox(sb, 'exit');
});
process.stdin.on('end', () => shutdown('stdin closed'));
process.stdin.on('error', () => shutdown('stdin error'));
process.stdin.resume();

await new Promise((r) => apiServer.listen(0, '127.0.0.1', r));
await new Promise((r) => sandboxServer.listen(0, '127.0.0.1', r));
process.stdout.write(JSON.stringify({
  api_url: `http://127.0.0.1:${apiServer.address().port}`,
  sandbox_url: `http://127.0.0.1:${sandboxServer.address().port}`,
}) + '\n');
log(`listening${BENCH ? ' (bench mode)' : ''}`);
