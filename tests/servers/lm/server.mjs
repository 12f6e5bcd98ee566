#!/usr/bin/env node
// Scripted local stand-in for the OpenAI Chat Completions and Anthropic Messages APIs.
// It validates requests as strictly as the real services do for the parts a tool-calling
// loop uses, answers each model call from a script, injects faults, and records every call
// so tests can assert what a client sent. See README.md in this directory.
import http from 'node:http';
import * as openai from './openai.mjs';
import * as anthropic from './anthropic.mjs';
import { RequestError } from './util.mjs';
import { parseScript, evaluate, ScriptError } from './script.mjs';

const args = parseArgs(process.argv.slice(2));
const KEYS = { openai: args['openai-key'] ?? 'test-openai-key', anthropic: args['anthropic-key'] ?? 'test-anthropic-key' };
const MAX_BODY = Number(args['max-body-bytes'] ?? 16 * 1024 * 1024);
const MAX_LOG = 1000;
// Headers that carry credentials never reach the log or stderr.
const SECRET_HEADERS = new Set(['authorization', 'x-api-key', 'proxy-authorization', 'cookie', 'set-cookie']);

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m) continue;
    out[m[1]] = m[2] ?? argv[++i];
  }
  return out;
}

const log = (...a) => process.stderr.write(`[lm-server] ${a.join(' ')}\n`);

// ---- state -------------------------------------------------------------------------------
const state = {
  steps: [],
  next: 0,
  calls: [],
  dropped: 0,
  seq: 0,
  ids: new Map(),
};

function resetState(steps = []) {
  state.steps = steps;
  state.next = 0;
  state.calls = [];
  state.dropped = 0;
  state.ids = new Map();
}

// Deterministic ids: call_1, call_2, … and toolu_1, … counted per script.
function nextId(prefix) {
  const n = (state.ids.get(prefix) ?? 0) + 1;
  state.ids.set(prefix, n);
  return `${prefix}${n}`;
}

function record(entry) {
  state.calls.push(entry);
  if (state.calls.length > MAX_LOG) {
    state.calls.shift();
    state.dropped += 1;
  }
}

// ---- HTTP helpers --------------------------------------------------------------------------
function sendJson(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

// Reads the body up to MAX_BODY bytes. Resolves {buf} or {tooLarge:true}.
function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    let size = 0;
    let done = false;
    req.on('data', (c) => {
      if (done) return;
      size += c.length;
      if (size > MAX_BODY) {
        done = true;
        chunks.length = 0;
        resolve({ tooLarge: true });
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => { if (!done) { done = true; resolve({ buf: Buffer.concat(chunks) }); } });
    req.on('error', () => { if (!done) { done = true; resolve({ aborted: true }); } });
    req.on('aborted', () => { if (!done) { done = true; resolve({ aborted: true }); } });
  });
}

function safeHeaders(headers) {
  const out = {};
  for (const [k, v] of Object.entries(headers)) if (!SECRET_HEADERS.has(k)) out[k] = v;
  return out;
}

function authScheme(headers) {
  if (headers['x-api-key'] !== undefined) return 'x-api-key';
  if (typeof headers['authorization'] === 'string' && /^Bearer\s/i.test(headers['authorization'])) return 'bearer';
  if (headers['authorization'] !== undefined) return 'other';
  return null;
}

const isJsonContentType = (ct) => typeof ct === 'string' && /^application\/json\s*(;|$)/i.test(ct.trim());

// ---- model endpoints ------------------------------------------------------------------------
const ROUTES = new Map([
  ['/v1/chat/completions', openai],
  ['/chat/completions', openai],
  ['/v1/messages', anthropic],
]);

async function handleModel(req, res, proto, path) {
  const seq = ++state.seq;
  const requestId = `req_${seq}`;
  const entry = {
    seq,
    protocol: proto.name,
    method: req.method,
    path,
    headers: safeHeaders(req.headers),
    auth_scheme: authScheme(req.headers),
    body: null,
    step: null,
    outcome: null,
    status: null,
    expectation_failures: [],
    error: null,
    client_aborted: false,
  };
  record(entry);
  const answer = (status, body, headers = {}) => {
    entry.status = status;
    sendJson(res, status, body, { [proto.requestIdHeader]: requestId, ...headers });
  };
  const reject = (outcome, r) => {
    entry.outcome = outcome;
    entry.error = r.body.error.message;
    answer(r.status, r.body);
  };
  const protoError = (err) => (proto === openai ? openai.errorResponse(err) : anthropic.errorResponse(err, requestId));

  const got = await readBody(req);
  if (got.aborted) {
    entry.outcome = 'client_aborted';
    entry.client_aborted = true;
    return;
  }
  if (got.tooLarge) {
    // Stop reading an oversize upload: answer and close instead of buffering it.
    res.setHeader('connection', 'close');
    reject('invalid_request', protoError(new RequestError(413, `Request body exceeds ${MAX_BODY} bytes.`,
      { type: proto === openai ? 'invalid_request_error' : 'request_too_large' })));
    req.destroy();
    return;
  }
  const raw = got.buf.toString('utf8');

  // The real services check credentials before looking at the body.
  const authFail = proto === openai ? openai.authenticate(req.headers, KEYS.openai)
    : anthropic.authenticate(req.headers, KEYS.anthropic, requestId);
  if (authFail) {
    entry.body = tryParse(raw);
    return reject(authFail.status === 401 ? 'auth_failed' : 'invalid_request', authFail);
  }

  let body;
  try {
    if (!isJsonContentType(req.headers['content-type'])) {
      throw new RequestError(400, `Content-Type must be application/json, got ${JSON.stringify(req.headers['content-type'] ?? null)}.`);
    }
    try {
      body = JSON.parse(raw);
    } catch {
      entry.raw_body = raw.slice(0, 4096);
      throw new RequestError(400, proto === openai
        ? "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library " +
          'correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)'
        : 'There was an error parsing the body of your request: it is not valid JSON');
    }
    entry.body = body;
    proto.validate(body);
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    return reject('invalid_request', protoError(err));
  }

  // A well-formed call: it consumes the next step.
  if (state.next >= state.steps.length) {
    const msg = `lm test server: script exhausted: this call needed step ${state.next} but the script has ` +
      `${state.steps.length} step(s)`;
    entry.outcome = 'script_exhausted';
    entry.error = msg;
    log(msg);
    const r = proto === openai ? { status: 500, body: openai.errorBody(msg, 'server_error') }
      : { status: 500, body: anthropic.errorBody(msg, 'api_error', requestId) };
    // Exhaustion is a test bug, not a transient outage: tell clients not to retry it.
    entry.status = 500;
    sendJson(res, 500, r.body, { [proto.requestIdHeader]: requestId, 'x-should-retry': 'false' });
    return;
  }
  const index = state.next++;
  const step = state.steps[index];
  entry.step = index;

  res.on('close', () => { if (!res.writableFinished) entry.client_aborted = true; });

  if (step.fault) return applyFault(req, res, entry, proto, step.fault, requestId);

  const failures = evaluate(step.expect, proto.name, proto.summarize(body), body);
  if (failures.length) {
    entry.outcome = 'expect_failed';
    entry.expectation_failures = failures;
    const msg = `lm test server: step ${index}: expectation failed: ` + failures.map((f) => `${f.check}: ${f.message}`).join('; ');
    entry.error = msg;
    log(msg);
    return answer(400, proto === openai ? openai.errorBody(msg, 'invalid_request_error', null, 'expectation_failed')
      : anthropic.errorBody(msg, 'invalid_request_error', requestId));
  }

  let rendered;
  try {
    rendered = proto.render(step.reply, { nextId, callNumber: index + 1, model: body.model });
  } catch (err) {
    const msg = `lm test server: step ${index}: cannot render reply: ${err.message}`;
    entry.outcome = 'script_error';
    entry.error = msg;
    return answer(500, proto === openai ? openai.errorBody(msg, 'server_error') : anthropic.errorBody(msg, 'api_error', requestId),
      { 'x-should-retry': 'false' });
  }
  entry.outcome = 'reply';
  entry.response = rendered;
  if (step.stall_ms) await stall(res, step.stall_ms);
  if (res.destroyed) return;
  answer(200, rendered);
}

function tryParse(raw) {
  try { return JSON.parse(raw); } catch { return null; }
}

// Waits ms, or less if the client goes away first.
function stall(res, ms) {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() { clearTimeout(t); res.off('close', done); resolve(); }
    res.on('close', done);
  });
}

async function applyFault(req, res, entry, proto, fault, requestId) {
  entry.outcome = 'fault';
  entry.fault = fault;
  if (fault.stall_ms) await stall(res, fault.stall_ms);
  if (res.destroyed) return;
  if (fault.status === undefined) {
    // reset, or a stall with nothing after it: drop the connection without a response byte.
    entry.status = null;
    if (typeof req.socket.resetAndDestroy === 'function') req.socket.resetAndDestroy();
    else req.socket.destroy();
    return;
  }
  const headers = { [proto.requestIdHeader]: requestId, ...(fault.headers ?? {}) };
  if (fault.retry_after !== undefined) headers['retry-after'] = String(fault.retry_after);
  if (fault.retry_after_ms !== undefined) headers['retry-after-ms'] = String(fault.retry_after_ms);
  const body = fault.body !== undefined ? fault.body
    : proto === openai ? openai.faultBody(fault.status) : anthropic.faultBody(fault.status, requestId);
  entry.status = fault.status;
  // A string body is sent verbatim, so scripts can serve malformed or non-JSON payloads.
  sendJson(res, fault.status, body, headers);
}

// ---- control API ---------------------------------------------------------------------------
async function handleControl(req, res, path) {
  if (req.method === 'GET' && path === '/_control/log') {
    return sendJson(res, 200, { calls: state.calls, steps: state.steps.length, next_step: state.next, dropped: state.dropped });
  }
  if (req.method === 'POST' && path === '/_control/reset') {
    await readBody(req);
    resetState();
    return sendJson(res, 200, { ok: true });
  }
  if (req.method === 'POST' && path === '/_control/script') {
    const got = await readBody(req);
    if (!got.buf) return sendJson(res, 413, { error: 'script body too large or aborted' });
    let doc;
    try {
      doc = JSON.parse(got.buf.toString('utf8'));
    } catch {
      return sendJson(res, 400, { error: 'script is not valid JSON' });
    }
    try {
      const steps = parseScript(doc);
      resetState(structuredClone(steps));
      return sendJson(res, 200, { ok: true, steps: steps.length });
    } catch (err) {
      if (err instanceof ScriptError) return sendJson(res, 400, { error: err.message });
      throw err;
    }
  }
  return sendJson(res, 404, { error: `no control endpoint ${req.method} ${path}` });
}

// ---- server --------------------------------------------------------------------------------
const server = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  const run = async () => {
    if (path.startsWith('/_control/')) return handleControl(req, res, path);
    const proto = ROUTES.get(path);
    if (proto) {
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        return sendJson(res, 405, proto === openai
          ? openai.errorBody(`Invalid method for URL (${req.method} ${path})`)
          : anthropic.errorBody(`Method ${req.method} not allowed for ${path}`));
      }
      return handleModel(req, res, proto, path);
    }
    // Unknown path: answer in the dialect the path suggests, like each service's 404.
    const body = path.includes('/messages') || req.headers['anthropic-version'] !== undefined
      ? anthropic.errorBody(`Not found: ${req.method} ${path}`, 'not_found_error')
      : openai.errorBody(`Invalid URL (${req.method} ${path})`);
    req.resume();
    return sendJson(res, 404, body);
  };
  run().catch((err) => {
    log('internal error:', err?.stack ?? String(err));
    sendJson(res, 500, { error: { message: 'lm test server internal error', type: 'server_error', param: null, code: null } });
  });
});

server.headersTimeout = 30_000;
server.requestTimeout = 0; // stall faults may hold a request open for minutes
server.keepAliveTimeout = 5_000;
server.on('clientError', (err, socket) => {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  else socket.destroy();
});

function shutdown(why) {
  log(`shutting down (${why})`);
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
}

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
  log(`listening on 127.0.0.1:${port}`);
});

// The parent holds our stdin; EOF means it is gone, so do not outlive it.
process.stdin.on('end', () => shutdown('stdin closed'));
process.stdin.on('error', () => shutdown('stdin error'));
process.stdin.resume();
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
