#!/usr/bin/env node
// A local server that speaks the AWS Bedrock AgentCore Code Interpreter data plane (restJson1 + the
// vnd.amazon.eventstream response of InvokeCodeInterpreter), as described in
// docs/protocols/bedrock.md. Every request's SigV4 signature is verified with the
// official @smithy/signature-v4 signer (sigv4.mjs) and every frame is encoded with the official
// @smithy/core event-stream codec (frames.mjs). Code, commands and file tools run for real, each session
// in its own temporary directory. Fault directives provoke every failure a client must survive.
// See README.md next to this file.
//
//   node tests/servers/bedrock/server.mjs [--bench] [--access-key-id K --secret-access-key S
//        --session-token T] [--region R] [--interpreter ID]...
//
// Prints one line {"url":"http://127.0.0.1:P"} on stdout when listening; logs go to stderr.
// Exits (killing every child process and removing every temp dir) on stdin EOF, SIGTERM or SIGINT.

import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import readline from 'node:readline';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { verifyRequest } from './sigv4.mjs';
import { resultFrame, eventFrame, exceptionFrame, errorFrame, corruptCrc } from './frames.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const KERNEL_SCRIPT = path.join(HERE, 'python_kernel.py');

// ------------------------------------------------------------------------------------------ configuration

const argv = process.argv.slice(2);
function flag(name, def) {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def;
}
const BENCH = argv.includes('--bench');
const CREDS = {
  accessKeyId: flag('--access-key-id', 'AKIDEXAMPLE'),
  secretAccessKey: flag('--secret-access-key', 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY'),
  sessionToken: flag('--session-token', null),
  region: flag('--region', 'us-east-1'),
};
// docs/protocols/bedrock.md "Interpreters and session lifetime": the built-in interpreter exists everywhere;
// custom ids come from the control plane (here: flags).
const INTERPRETERS = new Set(['aws.codeinterpreter.v1']);
argv.forEach((a, i) => { if (a === '--interpreter' && i + 1 < argv.length) INTERPRETERS.add(argv[i + 1]); });

const CAP_JSON = 1 << 20; // Start/Get/List/Stop bodies
const CAP_INVOKE = 160 << 20; // docs/protocols/bedrock.md "File tools": 100 MB inline upload per file, base64 in JSON -> ~134 MB
const CAP_OUTPUT = 16 << 20; // bytes of stdout/stderr kept per stream per call
const LOG_CAP = 10000;
const DEFAULT_TIMEOUT_S = 900; // docs/protocols/bedrock.md "Interpreters and session lifetime" (smithy.api#default)
const TOOL_NAMES = new Set(['executeCode', 'executeCommand', 'getTask', 'listFiles', 'readFiles', 'removeFiles',
  'startCommandExecution', 'stopTask', 'writeFiles']); // docs/protocols/bedrock.md "Tools", enums.js ToolName
const LANGUAGES = new Set(['python', 'javascript', 'typescript']);
const RUNTIMES = new Set(['deno', 'nodejs', 'python']);
// Node >= 22.6 can strip TypeScript types; Node 20 cannot (then typescript answers isError, see README).
const TS_FLAG = spawnSync(process.execPath, ['--experimental-strip-types', '-e', '0'], { stdio: 'ignore' }).status === 0;

function log(...args) {
  process.stderr.write(`[bedrock-server] ${args.join(' ')}\n`);
}

// ------------------------------------------------------------------------------------------ state

const sessions = new Map(); // id -> Session (READY and TERMINATED; TERMINATED ones stay for Get/List)
let startTokens = new Map(); // interpreter \n clientToken -> {fingerprint, response}
let stopTokens = new Map(); // interpreter \n clientToken -> {sessionId, response}
let faults = [];
let requestLog = [];
let requestSeq = 0;

// docs/protocols/bedrock.md "Session operations": ids are 1..40 alphanumerics; this server issues 26-char uppercase
// ULID-like ids.
function newSessionId() {
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  const b = crypto.randomBytes(26);
  let s = '';
  for (let i = 0; i < 26; i++) s += alphabet[b[i] & 31];
  return s;
}

const rfc3339 = (d) => d.toISOString(); // docs/protocols/bedrock.md "Session operations": date-time strings, never epoch numbers

// ------------------------------------------------------------------------------------------ errors
// docs/protocols/bedrock.md "Error answers and what proves a call never ran"

class ApiError extends Error {
  constructor(status, type, message, extra = {}) {
    super(message);
    this.status = status;
    this.type = type;
    this.extra = extra;
  }
}

// One validation error in the shape AWS services use ("1 validation error detected: ...";
// docs/protocols/bedrock.md "Error answers and what proves a call never ran").
function validation(field, constraint, value) {
  const shown = value === undefined ? 'null' : typeof value === 'string' ? value.slice(0, 100) : JSON.stringify(value)?.slice(0, 100);
  return new ApiError(400, 'ValidationException',
    `1 validation error detected: Value '${shown}' at '${field}' failed to satisfy constraint: ${constraint}`,
    { reason: 'FieldValidationFailed', fieldList: [{ name: field, message: constraint }] });
}
const cannotParse = (message) => new ApiError(400, 'ValidationException', message, { reason: 'CannotParse' });
const notFound = (message) => new ApiError(404, 'ResourceNotFoundException', message);

// Default error shape per HTTP status for `status` directives (docs/protocols/bedrock.md "Events and exception frames" table,
// "Error answers and what proves a call never ran").
const STATUS_ERROR_TYPES = {
  400: 'ValidationException', 402: 'ServiceQuotaExceededException', 403: 'AccessDeniedException',
  404: 'ResourceNotFoundException', 409: 'ConflictException', 429: 'ThrottlingException',
  500: 'InternalServerException', 503: 'ServiceUnavailableException',
};

function sendJson(res, entry, status, obj, extraHeaders = {}) {
  const body = Buffer.from(JSON.stringify(obj));
  if (entry) entry.status = status;
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': String(body.length),
    'x-amzn-RequestId': entry?.request_id ?? crypto.randomUUID(),
    ...extraHeaders,
  });
  res.end(body);
}

// docs/protocols/bedrock.md "Error answers and what proves a call never ran": restJson1 error = status + x-amzn-ErrorType +
// JSON body {"message", ...}.
function sendError(res, entry, err, extraHeaders = {}) {
  if (entry) entry.error_type = err.type;
  sendJson(res, entry, err.status, { message: err.message, ...err.extra }, { 'x-amzn-ErrorType': err.type, ...extraHeaders });
}

// ------------------------------------------------------------------------------------------ request body

function readBody(req, cap) {
  return new Promise((resolve) => {
    const chunks = [];
    let size = 0;
    let done = false;
    const finish = (r) => { if (!done) { done = true; resolve(r); } };
    req.on('data', (c) => {
      if (done) return;
      size += c.length;
      if (size > cap) { finish({ tooLarge: true }); req.pause(); return; }
      chunks.push(c);
    });
    req.on('end', () => finish({ body: Buffer.concat(chunks) }));
    req.on('error', () => finish({ aborted: true }));
    req.on('close', () => finish({ aborted: true }));
  });
}

function parseJsonObject(buf) {
  if (buf.length === 0) return {};
  let v;
  try {
    v = JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw cannotParse(`Could not parse request body into json: ${e.message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw cannotParse('Request body must be a JSON object');
  return v;
}

// ------------------------------------------------------------------------------------------ validation

const isInt = (v) => Number.isInteger(v);
function optString(obj, key, field, min, max, pattern) {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw cannotParse(`Expected a string for '${field}'`);
  if (v.length < min) throw validation(field, `Member must have length greater than or equal to ${min}`, v);
  if (v.length > max) throw validation(field, `Member must have length less than or equal to ${max}`, v);
  if (pattern && !pattern.test(v)) throw validation(field, `Member must satisfy regular expression pattern: ${pattern.source}`, v);
  return v;
}
function optInt(obj, key, field, min, max) {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!isInt(v)) throw cannotParse(`Expected an integer for '${field}'`);
  if (v < min) throw validation(field, `Member must have value greater than or equal to ${min}`, v);
  if (v > max) throw validation(field, `Member must have value less than or equal to ${max}`, v);
  return v;
}
const SESSION_ID_RE = /^[0-9a-zA-Z]{1,40}$/; // docs/protocols/bedrock.md "Session operations"
const CLIENT_TOKEN_RE = /^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,256}$/; // docs/protocols/bedrock.md "Session operations"

function requireSessionId(v, field) {
  if (v === undefined || v === null || v === '') throw validation(field, 'Member must not be null', undefined);
  if (!SESSION_ID_RE.test(v)) throw validation(field, `Member must satisfy regular expression pattern: ${SESSION_ID_RE.source}`, v);
  return v;
}

// ------------------------------------------------------------------------------------------ sessions

class Session {
  constructor(interpreter, name, timeoutS, extra) {
    this.id = newSessionId();
    this.interpreter = interpreter;
    this.name = name;
    this.timeoutS = timeoutS;
    this.certificates = extra.certificates;
    this.filesystemConfigurations = extra.filesystemConfigurations;
    this.createdAt = new Date();
    this.lastUpdatedAt = this.createdAt;
    this.status = 'READY';
    this.kernel = null; // python process, started on first use
    this.pyChain = Promise.resolve(); // python executions are serialized per session (one globals dict)
    this.procs = new Set(); // every live child (commands, node, tasks, kernel)
    this.tasks = new Map(); // taskId -> Task
    this.sockets = new Set(); // sockets of in-flight invocations: cut when the session dies
    this.seq = 0;
    if (BENCH) return;
    // <tmp>/agentcore-<id>-XXXX/work is the session's cwd (what /opt/amazon/genesis1p-tools/var is on the
    // service, docs/protocols/bedrock.md "File tools"); ctl/ holds the kernel's capture files and JS snippets,
    // invisible to the file tools.
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), `agentcore-${this.id}-`));
    this.work = path.join(this.root, 'work');
    this.ctl = path.join(this.root, 'ctl');
    fs.mkdirSync(this.work);
    fs.mkdirSync(this.ctl);
    this.workReal = fs.realpathSync(this.work);
    // docs/protocols/bedrock.md "Interpreters and session lifetime": the timeout is a TTL from creation; nothing extends it.
    this.timer = setTimeout(() => terminateSession(this, 'session timeout'), timeoutS * 1000);
    this.timer.unref();
  }
}

function killTree(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  try { process.kill(-child.pid, 'SIGKILL'); } catch { try { child.kill('SIGKILL'); } catch { /* gone */ } }
}

function terminateSession(s, why) {
  if (s.status === 'TERMINATED') return;
  s.status = 'TERMINATED';
  s.lastUpdatedAt = new Date();
  if (s.timer) clearTimeout(s.timer);
  for (const child of s.procs) killTree(child);
  for (const t of s.tasks.values()) if (t.status === 'submitted' || t.status === 'working') t.status = 'canceled';
  // An invocation in flight when its session dies loses its connection (the microVM is gone).
  for (const sock of s.sockets) sock.destroy();
  if (s.root) {
    const root = s.root;
    const rm = () => { try { fs.rmSync(root, { recursive: true, force: true }); } catch { /* retried below */ } };
    rm();
    if (fs.existsSync(root)) setTimeout(rm, 200).unref();
  }
  log(`session ${s.id} terminated (${why})`);
}

function lookupSession(interpreter, id, { ready }) {
  const s = sessions.get(id);
  if (!s || s.interpreter !== interpreter || (ready && s.status !== 'READY')) {
    throw notFound(`Session not found: ${id}`);
  }
  return s;
}

// Environment for code and commands: never hand the server's own AWS settings to sandboxed code.
function childEnv(s, extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AWS_')) env[k] = v;
  return { ...env, PWD: s.work, ...extra };
}

function spawnIn(s, cmd, args, opts = {}) {
  const child = spawn(cmd, args, { cwd: s.work, env: childEnv(s, opts.env), detached: true, stdio: opts.stdio ?? ['ignore', 'pipe', 'pipe'] });
  s.procs.add(child);
  child.on('exit', () => s.procs.delete(child));
  child.on('error', () => s.procs.delete(child));
  return child;
}

// Collects a stream up to CAP_OUTPUT bytes (the rest is dropped and `truncated` set).
function collector(stream) {
  const c = { chunks: [], size: 0, truncated: false };
  stream?.on('data', (d) => {
    if (c.size >= CAP_OUTPUT) { c.truncated = true; return; }
    const take = d.subarray(0, CAP_OUTPUT - c.size);
    if (take.length < d.length) c.truncated = true;
    c.chunks.push(take);
    c.size += take.length;
  });
  c.text = () => Buffer.concat(c.chunks).toString('utf8'); // invalid UTF-8 -> U+FFFD (README)
  return c;
}

// Runs a child to completion: {stdout, stderr, exitCode, executionTime}.
function runToEnd(s, cmd, args, opts) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const child = spawnIn(s, cmd, args, opts);
    const out = collector(child.stdout);
    const err = collector(child.stderr);
    let spawnError = null;
    child.on('error', (e) => { spawnError = e; });
    child.on('close', (code, signal) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      let stderr = err.text();
      if (spawnError) stderr += `${spawnError.message}\n`;
      resolve({
        stdout: out.text(), stderr,
        exitCode: code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1),
        executionTime: Math.round(ms * 1000) / 1000,
      });
    });
  });
}

// ------------------------------------------------------------------------------------------ python kernel

function startKernel(s) {
  const child = spawnIn(s, 'python3', [KERNEL_SCRIPT], {
    stdio: ['ignore', 'ignore', 'inherit', 'pipe', 'pipe'],
    env: { BEDROCK_KERNEL_CTL: s.ctl, BEDROCK_OUTPUT_CAP: String(CAP_OUTPUT), PYTHONDONTWRITEBYTECODE: '1' },
  });
  const k = { child, pending: new Map(), nextId: 1, dead: false };
  const rl = readline.createInterface({ input: child.stdio[4], crlfDelay: Infinity });
  rl.on('line', (line) => {
    let msg;
    try { msg = JSON.parse(line); } catch { return; }
    const p = k.pending.get(msg.id);
    if (p) { k.pending.delete(msg.id); p(msg); }
  });
  const onDeath = (code, signal) => {
    if (k.dead) return;
    k.dead = true;
    if (s.kernel === k) s.kernel = null; // the next call starts a fresh process: state is lost
    const salvage = (name) => { try { return fs.readFileSync(path.join(s.ctl, name), 'utf8'); } catch { return ''; } };
    for (const [id, p] of k.pending) {
      p({ id, stdout: salvage('py.stdout'), stderr: salvage('py.stderr') + `The Python process exited unexpectedly (${signal ?? `exit code ${code}`}); its state was lost.\n`, exitCode: 1, executionTime: 0 });
    }
    k.pending.clear();
  };
  child.on('exit', onDeath);
  child.on('error', () => onDeath(null, 'spawn error'));
  child.stdio[3].on('error', () => {});
  return k;
}

function runPython(s, code, clear) {
  const run = () => new Promise((resolve) => {
    if (s.status !== 'READY') return resolve({ stdout: '', stderr: 'Session terminated\n', exitCode: 1, executionTime: 0 });
    if (!s.kernel) s.kernel = startKernel(s);
    const k = s.kernel;
    const id = k.nextId++;
    k.pending.set(id, resolve);
    k.child.stdio[3].write(JSON.stringify({ id, code, clear: !!clear }) + '\n');
  });
  const p = s.pyChain.then(run);
  s.pyChain = p.catch(() => {});
  return p;
}

// ------------------------------------------------------------------------------------------ file tools
// docs/protocols/bedrock.md "File tools"

// Paths (docs/protocols/bedrock.md "File tools"): file-tool paths are relative to the session's working
// directory. Absolute paths, NUL bytes, and paths that climb out of the directory (`..`, or a symlink pointing
// outside) are refused with a ValidationException before anything runs.
function resolvePath(s, p, field) {
  if (typeof p !== 'string') throw cannotParse(`Expected a string for '${field}'`);
  if (p.length === 0) throw validation(field, 'Member must have length greater than or equal to 1', p);
  if (p.includes('\0')) throw validation(field, 'Path must not contain NUL characters', p);
  if (p.startsWith('/')) throw validation(field, 'Path must be relative to the session working directory (absolute paths are not allowed)', p);
  const norm = path.posix.normalize(p);
  if (norm === '..' || norm.startsWith('../')) throw validation(field, 'Path must not leave the session working directory', p);
  const host = path.join(s.work, norm);
  // The deepest existing ancestor (or the file itself) must really be inside the working directory.
  let probe = host;
  while (!fs.existsSync(probe) && probe !== s.work) probe = path.dirname(probe);
  let real;
  try { real = fs.realpathSync(probe); } catch { real = probe; }
  if (real !== s.workReal && !real.startsWith(s.workReal + path.sep)) {
    throw validation(field, 'Path must not leave the session working directory', p);
  }
  const rel = norm === '.' ? '' : norm.replace(/\/$/, '');
  return { host, rel, uri: 'file:///' + rel };
}

const MIME = {
  '.txt': 'text/plain', '.py': 'text/x-python', '.js': 'text/javascript', '.mjs': 'text/javascript', '.ts': 'text/typescript',
  '.json': 'application/json', '.csv': 'text/csv', '.md': 'text/markdown', '.html': 'text/html', '.xml': 'application/xml',
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.svg': 'image/svg+xml',
  '.pdf': 'application/pdf', '.zip': 'application/zip', '.bin': 'application/octet-stream',
};

// readFiles text-vs-blob rule (README): strictly valid UTF-8 without NUL bytes -> text, anything else -> blob.
function isText(buf) {
  if (buf.includes(0)) return false;
  try { new TextDecoder('utf-8', { fatal: true }).decode(buf); return true; } catch { return false; }
}

const STRICT_B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function textResult(text, isError = false, structuredContent) {
  const r = { content: [{ type: 'text', text }], isError };
  if (structuredContent) r.structuredContent = structuredContent;
  return r;
}

// stdout/stderr results (executeCode, executeCommand): one text block per non-empty stream, stdout first.
function execResult(r) {
  const content = [];
  if (r.stdout) content.push({ type: 'text', text: r.stdout });
  if (r.stderr) content.push({ type: 'text', text: r.stderr });
  return {
    content,
    structuredContent: { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode, executionTime: r.executionTime },
    isError: r.exitCode !== 0,
  };
}

// Validates the arguments of one tool call; throws ApiError (HTTP 400, nothing runs) or returns a plan.
function planTool(s, name, args) {
  const a = args ?? {};
  if (typeof a !== 'object' || Array.isArray(a)) throw cannotParse("Expected an object for 'arguments'");
  const str = (key) => {
    const v = a[key];
    if (v === undefined || v === null) throw validation(`arguments.${key}`, 'Member must not be null', undefined);
    if (typeof v !== 'string') throw cannotParse(`Expected a string for 'arguments.${key}'`);
    return v;
  };
  const list = (key) => {
    const v = a[key];
    if (v === undefined || v === null) throw validation(`arguments.${key}`, 'Member must not be null', undefined);
    if (!Array.isArray(v)) throw cannotParse(`Expected a list for 'arguments.${key}'`);
    if (v.length === 0) throw validation(`arguments.${key}`, 'Member must have length greater than or equal to 1', v);
    return v;
  };
  switch (name) {
    case 'executeCode': {
      const code = str('code');
      const language = a.language ?? 'python';
      if (!LANGUAGES.has(language)) throw validation('arguments.language', 'Member must satisfy enum value set: [python, javascript, typescript]', language);
      if (a.runtime !== undefined && !RUNTIMES.has(a.runtime)) throw validation('arguments.runtime', 'Member must satisfy enum value set: [deno, nodejs, python]', a.runtime);
      if (a.clearContext !== undefined && typeof a.clearContext !== 'boolean') throw cannotParse("Expected a boolean for 'arguments.clearContext'");
      return { code, language, clear: a.clearContext === true };
    }
    case 'executeCommand':
    case 'startCommandExecution':
      return { command: str('command') };
    case 'getTask':
    case 'stopTask':
      return { taskId: str('taskId') };
    case 'readFiles':
    case 'removeFiles':
      return { targets: list('paths').map((p, i) => ({ ...resolvePath(s, p, `arguments.paths.${i}`), given: p })) };
    case 'listFiles': {
      const dir = a.directoryPath ?? '.'; // the TS SDK's default (docs/protocols/bedrock.md "File tools")
      return { dir: { ...resolvePath(s, dir, 'arguments.directoryPath'), given: dir } };
    }
    case 'writeFiles': {
      const blocks = list('content').map((b, i) => {
        if (!b || typeof b !== 'object') throw cannotParse(`Expected an object for 'arguments.content.${i}'`);
        const target = resolvePath(s, b.path, `arguments.content.${i}.path`);
        const hasText = b.text !== undefined && b.text !== null;
        const hasBlob = b.blob !== undefined && b.blob !== null;
        if (hasText === hasBlob) throw validation(`arguments.content.${i}`, 'Exactly one of text or blob must be set', undefined);
        let data;
        if (hasText) {
          if (typeof b.text !== 'string') throw cannotParse(`Expected a string for 'arguments.content.${i}.text'`);
          data = Buffer.from(b.text, 'utf8');
        } else {
          // docs/protocols/bedrock.md "File tools": base64 happens exactly once, at the JSON layer; the decoded bytes are the file.
          if (typeof b.blob !== 'string' || !STRICT_B64.test(b.blob)) throw cannotParse(`Invalid base64 for 'arguments.content.${i}.blob'`);
          data = Buffer.from(b.blob, 'base64');
        }
        return { ...target, given: b.path, data };
      });
      return { blocks };
    }
    default:
      throw validation('name', `Member must satisfy enum value set: [${[...TOOL_NAMES].join(', ')}]`, name);
  }
}

async function runTool(s, name, plan) {
  switch (name) {
    case 'executeCode': {
      if (plan.language === 'python') return execResult(await runPython(s, plan.code, plan.clear));
      if (plan.language === 'typescript' && !TS_FLAG) {
        return execResult({ stdout: '', stderr: `typescript is not supported by this local server: Node ${process.version} cannot strip types\n`, exitCode: 1, executionTime: 0 });
      }
      // JavaScript/TypeScript: a fresh Node process per call (no state across calls; README).
      const file = path.join(s.ctl, `snippet-${++s.seq}.${plan.language === 'typescript' ? 'mts' : 'mjs'}`);
      fs.writeFileSync(file, plan.code);
      const args = plan.language === 'typescript' ? ['--experimental-strip-types', '--no-warnings', file] : [file];
      const r = await runToEnd(s, process.execPath, args);
      fs.rm(file, { force: true }, () => {});
      return execResult(r);
    }
    case 'executeCommand':
      return execResult(await runToEnd(s, 'bash', ['-c', plan.command]));
    case 'startCommandExecution': {
      const taskId = crypto.randomUUID();
      const child = spawnIn(s, 'bash', ['-c', plan.command]);
      const t = { taskId, status: 'submitted', out: collector(child.stdout), err: collector(child.stderr), exitCode: undefined, child };
      s.tasks.set(taskId, t);
      child.on('spawn', () => { if (t.status === 'submitted') t.status = 'working'; });
      child.on('error', () => { if (t.status !== 'canceled') t.status = 'failed'; });
      child.on('close', (code, signal) => {
        t.exitCode = code ?? 128 + (os.constants.signals[signal] ?? 0);
        if (t.status !== 'canceled') t.status = code === 0 ? 'completed' : 'failed';
      });
      return textResult(`Task ${taskId} submitted`, false, { taskId, taskStatus: 'submitted' });
    }
    case 'getTask':
    case 'stopTask': {
      const t = s.tasks.get(plan.taskId);
      if (!t) return textResult(`Task not found: ${plan.taskId}`, true, { taskId: plan.taskId });
      if (name === 'stopTask' && (t.status === 'submitted' || t.status === 'working')) {
        t.status = 'canceled';
        killTree(t.child);
      }
      const sc = { taskId: t.taskId, taskStatus: t.status, stdout: t.out.text(), stderr: t.err.text() };
      if (t.exitCode !== undefined && t.status !== 'canceled') sc.exitCode = t.exitCode;
      return textResult(`Task ${t.taskId}: ${t.status}`, false, sc);
    }
    case 'writeFiles': {
      // docs/protocols/bedrock.md "File tools": reported to be atomic, so every target is checked first, and a failure undoes
      // what was written. Parent directories are NOT created; a missing parent is a tool error.
      for (const b of plan.blocks) {
        const parent = path.dirname(b.host);
        if (!fs.existsSync(parent) || !fs.statSync(parent).isDirectory()) return textResult(`Parent directory does not exist: ${b.given}`, true);
        if (fs.existsSync(b.host) && fs.statSync(b.host).isDirectory()) return textResult(`Is a directory: ${b.given}`, true);
      }
      const done = [];
      try {
        for (const b of plan.blocks) {
          const tmp = `${b.host}.tmp-${crypto.randomBytes(6).toString('hex')}`;
          fs.writeFileSync(tmp, b.data);
          done.push(tmp);
        }
        plan.blocks.forEach((b, i) => fs.renameSync(done[i], b.host));
      } catch (e) {
        for (const tmp of done) fs.rmSync(tmp, { force: true });
        return textResult(`Failed to write files: ${e.code ?? e.message}`, true);
      }
      return textResult(`Successfully wrote ${plan.blocks.length} file(s)`);
    }
    case 'readFiles': {
      const content = [];
      for (const t of plan.targets) {
        let st;
        try { st = fs.statSync(t.host); } catch { return textResult(`File not found: ${t.given}`, true); }
        if (st.isDirectory()) return textResult(`Is a directory: ${t.given}`, true);
        const data = fs.readFileSync(t.host);
        const mime = MIME[path.extname(t.host).toLowerCase()];
        if (isText(data)) {
          content.push({ type: 'resource', resource: { type: 'text', uri: t.uri, mimeType: mime ?? 'text/plain', text: data.toString('utf8') } });
        } else {
          content.push({ type: 'resource', resource: { type: 'blob', uri: t.uri, mimeType: mime ?? 'application/octet-stream', blob: data.toString('base64') } });
        }
      }
      return { content, isError: false };
    }
    case 'listFiles': {
      let entries;
      try { entries = fs.readdirSync(plan.dir.host, { withFileTypes: true }); } catch (e) {
        return textResult(e.code === 'ENOTDIR' ? `Not a directory: ${plan.dir.given}` : `Directory not found: ${plan.dir.given}`, true);
      }
      entries.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
      const content = [];
      for (const e of entries) {
        const rel = plan.dir.rel ? `${plan.dir.rel}/${e.name}` : e.name;
        let st;
        try { st = fs.statSync(path.join(plan.dir.host, e.name)); } catch { continue; }
        const block = { type: 'resource_link', uri: 'file:///' + rel, name: e.name };
        if (st.isDirectory()) {
          block.description = 'Directory';
        } else {
          block.description = 'File';
          block.mimeType = MIME[path.extname(e.name).toLowerCase()] ?? 'application/octet-stream';
          block.size = st.size;
        }
        content.push(block);
      }
      return { content, isError: false };
    }
    case 'removeFiles': {
      for (const t of plan.targets) {
        if (!t.rel) return textResult('Refusing to remove the working directory', true);
        if (!fs.existsSync(t.host)) return textResult(`File not found: ${t.given}`, true);
      }
      for (const t of plan.targets) fs.rmSync(t.host, { recursive: true, force: true });
      return textResult(`Successfully removed ${plan.targets.length} path(s)`);
    }
    default:
      throw new Error(`unreachable tool ${name}`);
  }
}

// ------------------------------------------------------------------------------------------ faults

const OPERATIONS = new Set(['start', 'get', 'list', 'stop', 'invoke']);
const STREAM_ACTIONS = new Set(['exception_first', 'exception_after', 'error_frame', 'bad_crc', 'truncated', 'split', 'unknown_event', 'result', 'gateway_after_run']);
const ACTIONS = new Set([...STREAM_ACTIONS, 'status', 'reset', 'stall', 'expire_session']);

function validateFault(f) {
  if (!f || typeof f !== 'object' || Array.isArray(f)) throw new Error('a fault must be an object');
  if (!ACTIONS.has(f.action)) throw new Error(`unknown fault action: ${f.action}`);
  if (f.operation !== undefined && !OPERATIONS.has(f.operation)) throw new Error('operation must be start|stop|get|list|invoke');
  if (f.tool !== undefined && !TOOL_NAMES.has(f.tool)) throw new Error(`unknown tool: ${f.tool}`);
  const streamOnly = STREAM_ACTIONS.has(f.action) || (f.action === 'reset' && f.when === 'after_first_frame');
  if (streamOnly && f.operation !== undefined && f.operation !== 'invoke') throw new Error(`${f.action} applies to invoke only`);
  if (f.action === 'status' && !(isInt(f.status) && f.status >= 100 && f.status <= 599)) throw new Error('status needs an integer "status" 100..599');
  if (f.action === 'reset' && f.when !== undefined && !['before', 'after_headers', 'after_first_frame'].includes(f.when)) throw new Error('reset.when must be before|after_headers|after_first_frame');
  if (f.action === 'stall' && f.when !== undefined && !['before', 'after_headers'].includes(f.when)) throw new Error('stall.when must be before|after_headers');
  if (f.action === 'bad_crc' && f.crc !== undefined && !['message', 'prelude'].includes(f.crc)) throw new Error('bad_crc.crc must be message|prelude');
  if (f.action === 'split' && f.mode !== undefined && !['bytes', 'random'].includes(f.mode)) throw new Error('split.mode must be bytes|random');
  if (f.action === 'error_frame' && f.after !== undefined && f.after !== 0 && f.after !== 1) throw new Error('error_frame.after must be 0 or 1');
  if (f.action === 'result' && (!f.result || typeof f.result !== 'object' || Array.isArray(f.result))) throw new Error('result needs an object "result"');
  if (f.action === 'result' && f.repeat !== undefined && !(isInt(f.repeat) && f.repeat >= 1)) throw new Error('result.repeat must be a positive integer');
  const count = f.count === undefined ? 1 : f.count;
  if (!isInt(count) || count === 0 || count < -1) throw new Error('count must be a positive integer or -1');
  return { ...f, count, remaining: count };
}

function matchFault(ctx) {
  for (const f of faults) {
    if (f.remaining === 0) continue;
    const streamOnly = STREAM_ACTIONS.has(f.action) || (f.action === 'reset' && f.when === 'after_first_frame');
    if (streamOnly && ctx.operation !== 'invoke') continue;
    if (f.operation !== undefined && f.operation !== ctx.operation) continue;
    if (f.tool !== undefined && f.tool !== ctx.tool) continue;
    if (f.session !== undefined && f.session !== ctx.sessionId) continue;
    if (f.interpreter !== undefined && f.interpreter !== ctx.interpreter) continue;
    if (f.remaining > 0) f.remaining--;
    return f;
  }
  return null;
}

// ------------------------------------------------------------------------------------------ control API

async function handleControl(req, res, url) {
  const p = url.pathname;
  const m = req.method;
  const { body, tooLarge } = await readBody(req, CAP_JSON);
  const json = (status, obj) => sendJson(res, null, status, obj);
  if (tooLarge) return json(413, { message: 'too large' });
  if (p === '/_control/faults' && m === 'POST') {
    let parsed;
    try {
      parsed = JSON.parse(body.toString('utf8'));
      if (!parsed || !Array.isArray(parsed.faults)) throw new Error('expected {"faults":[...]}');
      parsed = parsed.faults.map(validateFault);
    } catch (e) {
      return json(400, { message: e.message });
    }
    faults.push(...parsed);
    return json(200, { faults: faults.filter((f) => f.remaining !== 0).length });
  }
  if (p === '/_control/faults' && m === 'DELETE') { faults = []; res.writeHead(204); return res.end(); }
  if (p === '/_control/faults' && m === 'GET') return json(200, { faults });
  if (p === '/_control/alive' && m === 'GET') {
    return json(200, { sessions: [...sessions.values()].filter((s) => s.status === 'READY').map((s) => s.id) });
  }
  if (p === '/_control/requests' && m === 'GET') return json(200, { requests: requestLog });
  if (p === '/_control/reset' && m === 'POST') {
    for (const s of sessions.values()) terminateSession(s, 'reset');
    sessions.clear();
    startTokens = new Map();
    stopTokens = new Map();
    faults = [];
    requestLog = [];
    res.writeHead(204);
    return res.end();
  }
  return json(404, { message: 'unknown control endpoint' });
}

// ------------------------------------------------------------------------------------------ routing
// docs/protocols/bedrock.md "Session operations", "InvokeCodeInterpreter"

// Returns {operation, interpreter} for a data-plane path (raw, percent-encoded), or null.
function route(method, rawPath) {
  const seg = rawPath.split('/');
  if (seg.length !== 5 || seg[0] !== '' || seg[1] !== 'code-interpreters' || seg[2] === '') return null;
  const tail = `${method} ${seg[3]}/${seg[4]}`;
  const op = { 'PUT sessions/start': 'start', 'GET sessions/get': 'get', 'POST sessions/list': 'list',
    'PUT sessions/stop': 'stop', 'POST tools/invoke': 'invoke' }[tail];
  if (!op) return null;
  let interpreter;
  try { interpreter = decodeURIComponent(seg[2]); } catch { return { operation: op, interpreter: null }; }
  return { operation: op, interpreter };
}

function logEntry(req, rawPath, r) {
  const attempt = /attempt=(\d+)/.exec(String(req.headers['amz-sdk-request'] ?? ''));
  const entry = {
    seq: ++requestSeq,
    time: new Date().toISOString(),
    request_id: crypto.randomUUID(),
    method: req.method,
    path: req.url,
    operation: r?.operation ?? null,
    interpreter: r?.interpreter ?? null,
    session_id: req.headers['x-amzn-code-interpreter-session-id'] ?? null,
    tool: null,
    invocation_id: req.headers['amz-sdk-invocation-id'] ?? null,
    attempt: attempt ? Number(attempt[1]) : null,
    signature_valid: null,
    signature_error: null,
    body_complete: false,
    fault: null,
    status: null,
    error_type: null,
  };
  requestLog.push(entry);
  if (requestLog.length > LOG_CAP) requestLog = requestLog.slice(-LOG_CAP);
  return entry;
}

async function handleRequest(req, res) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname.startsWith('/_control/')) return handleControl(req, res, url);
  const rawPath = req.url.split('?')[0];
  const r = route(req.method, rawPath);
  if (BENCH) return benchRequest(req, res, r, url);
  const entry = logEntry(req, rawPath, r);
  const { body, tooLarge, aborted } = await readBody(req, r?.operation === 'invoke' ? CAP_INVOKE : CAP_JSON);
  if (aborted) return;
  if (tooLarge) {
    // Stop reading an oversize body; answer and close (the rest of it is never consumed).
    return sendError(res, entry, new ApiError(400, 'ValidationException', 'Request body exceeds the size limit of this server', { reason: 'FieldValidationFailed' }), { Connection: 'close' });
  }
  entry.body_complete = true;

  // docs/protocols/bedrock.md "Verifying a signature": every data-plane request is signed; the check comes before anything
  // else about the request.
  const v = await verifyRequest(req, body, CREDS);
  entry.signature_valid = v.ok;
  if (!v.ok) {
    entry.signature_error = v.reason;
    log(`signature rejected (${v.reason}) for ${req.method} ${rawPath}`);
    return sendError(res, entry, new ApiError(v.status, v.type, v.message));
  }
  if (!r) return sendError(res, entry, new ApiError(404, 'UnknownOperationException', 'Unknown operation'));
  if (r.interpreter === null) return sendError(res, entry, cannotParse('Invalid percent-encoding in codeInterpreterIdentifier'));

  try {
    const input = req.method === 'GET' ? {} : parseJsonObject(body);
    const ctx = { operation: r.operation, interpreter: r.interpreter, tool: undefined, sessionId: undefined };
    if (r.operation === 'invoke') {
      ctx.sessionId = req.headers['x-amzn-code-interpreter-session-id'];
      if (typeof input.name === 'string') ctx.tool = entry.tool = input.name;
    } else if (r.operation === 'get' || r.operation === 'stop') {
      ctx.sessionId = url.searchParams.get('sessionId') ?? undefined;
      entry.session_id = ctx.sessionId ?? null;
    }
    const fault = matchFault(ctx);
    if (fault) {
      entry.fault = fault.action;
      if (await preFault(fault, req, res, entry, ctx)) return;
    }
    if (!INTERPRETERS.has(r.interpreter)) throw notFound(`Code interpreter not found: ${r.interpreter}`);
    switch (r.operation) {
      case 'start': return opStart(res, entry, r.interpreter, input);
      case 'get': return opGet(res, entry, r.interpreter, url);
      case 'list': return opList(res, entry, r.interpreter, input);
      case 'stop': return opStop(res, entry, r.interpreter, url, input);
      case 'invoke': return await opInvoke(req, res, entry, r.interpreter, input, fault);
      default: throw new Error('unreachable');
    }
  } catch (e) {
    if (e instanceof ApiError) return sendError(res, entry, e);
    throw e;
  }
}

// Directives that act before the operation runs. Returns true when the request is finished with.
async function preFault(f, req, res, entry, ctx) {
  switch (f.action) {
    case 'expire_session': {
      const s = sessions.get(f.session ?? ctx.sessionId);
      if (s) terminateSession(s, 'expire_session directive');
      return false; // then handled normally (it now finds a TERMINATED session)
    }
    case 'status': {
      const type = f.error_type ?? STATUS_ERROR_TYPES[f.status] ?? 'UnknownError';
      const headers = {};
      if (f.retry_after !== undefined) headers['Retry-After'] = String(f.retry_after);
      if (f.body !== undefined) {
        const raw = Buffer.from(typeof f.body === 'string' ? f.body : JSON.stringify(f.body));
        entry.status = f.status;
        res.writeHead(f.status, { 'Content-Type': 'application/json', 'Content-Length': String(raw.length), 'x-amzn-RequestId': entry.request_id, 'x-amzn-ErrorType': type, ...headers });
        res.end(raw);
        return true;
      }
      const extra = type === 'ValidationException' ? { reason: 'FieldValidationFailed' } : {};
      sendError(res, entry, new ApiError(f.status, type, f.message ?? http.STATUS_CODES[f.status] ?? 'Error', extra), headers);
      return true;
    }
    case 'reset':
      if ((f.when ?? 'before') === 'before') { req.socket.destroy(); return true; }
      if (f.when === 'after_headers') {
        writeRawHeaders(req.socket, entry, ctx, () => req.socket.destroy());
        return true;
      }
      return false; // after_first_frame: handled by the stream writer
    case 'stall':
      if ((f.when ?? 'before') === 'after_headers') writeRawHeaders(req.socket, entry, ctx, () => {});
      return true; // never answered; the socket stays open until the client gives up
    default:
      return false;
  }
}

// The status line and headers of a successful answer, promising a chunked body that never comes.
function writeRawHeaders(socket, entry, ctx, then) {
  entry.status = 200;
  const ctype = ctx.operation === 'invoke' ? 'application/vnd.amazon.eventstream' : 'application/json';
  let head = `HTTP/1.1 200 OK\r\nContent-Type: ${ctype}\r\nx-amzn-RequestId: ${entry.request_id}\r\n`;
  if (ctx.operation === 'invoke' && SESSION_ID_RE.test(ctx.sessionId ?? '')) head += `x-amzn-code-interpreter-session-id: ${ctx.sessionId}\r\n`;
  head += 'Date: ' + new Date().toUTCString() + '\r\nTransfer-Encoding: chunked\r\n\r\n';
  socket.write(head, then);
}

// ------------------------------------------------------------------------------------------ operations

function opStart(res, entry, interpreter, input) {
  const name = optString(input, 'name', 'name', 1, 100);
  const timeoutS = optInt(input, 'sessionTimeoutSeconds', 'sessionTimeoutSeconds', 1, 28800) ?? DEFAULT_TIMEOUT_S;
  const token = optString(input, 'clientToken', 'clientToken', 33, 256, CLIENT_TOKEN_RE);
  const extra = {};
  if (input.certificates !== undefined) {
    if (!Array.isArray(input.certificates)) throw cannotParse("Expected a list for 'certificates'");
    if (input.certificates.length < 1 || input.certificates.length > 200) throw validation('certificates', 'Member must have length between 1 and 200', input.certificates);
    extra.certificates = input.certificates;
  }
  if (input.filesystemConfigurations !== undefined) {
    if (!Array.isArray(input.filesystemConfigurations)) throw cannotParse("Expected a list for 'filesystemConfigurations'");
    extra.filesystemConfigurations = input.filesystemConfigurations; // accepted and echoed; nothing is mounted
  }
  // docs/protocols/bedrock.md "Session operations": clientToken is an idempotency token. Same token + same
  // parameters -> the original answer; same token + different parameters -> ValidationException
  // (IdempotentParameterMismatchException).
  const fingerprint = JSON.stringify([name ?? null, timeoutS, extra.certificates ?? null, extra.filesystemConfigurations ?? null]);
  const key = token !== undefined ? `${interpreter}\n${token}` : null;
  if (key && startTokens.has(key)) {
    const prior = startTokens.get(key);
    if (prior.fingerprint !== fingerprint) {
      throw new ApiError(400, 'ValidationException', 'The request parameters do not match the original request with the same clientToken',
        { reason: 'IdempotentParameterMismatchException' });
    }
    return sendJson(res, entry, 200, prior.response);
  }
  const s = new Session(interpreter, name, timeoutS, extra);
  sessions.set(s.id, s);
  // The service's sessions are warm; start the Python process now so the first executeCode does not pay
  // for interpreter start-up (which can take a second on a loaded machine).
  s.kernel = startKernel(s);
  const response = { codeInterpreterIdentifier: interpreter, sessionId: s.id, createdAt: rfc3339(s.createdAt) };
  if (key) startTokens.set(key, { fingerprint, response });
  entry.session_id = s.id;
  log(`session ${s.id} started (interpreter ${interpreter}, ttl ${timeoutS}s)`);
  return sendJson(res, entry, 200, response);
}

function opGet(res, entry, interpreter, url) {
  const id = requireSessionId(url.searchParams.get('sessionId') ?? undefined, 'sessionId');
  const s = lookupSession(interpreter, id, { ready: false });
  const out = { codeInterpreterIdentifier: interpreter, sessionId: s.id, createdAt: rfc3339(s.createdAt), sessionTimeoutSeconds: s.timeoutS, status: s.status };
  if (s.name !== undefined) out.name = s.name;
  if (s.certificates) out.certificates = s.certificates;
  if (s.filesystemConfigurations) out.filesystemConfigurations = s.filesystemConfigurations;
  return sendJson(res, entry, 200, out);
}

// nextToken: an opaque cursor (base64url JSON of the last item's sort key and the request's filter).
function opList(res, entry, interpreter, input) {
  const maxResults = optInt(input, 'maxResults', 'maxResults', 1, 100) ?? 10;
  const token = optString(input, 'nextToken', 'nextToken', 1, 2048, /^\S*$/);
  const status = input.status;
  if (status !== undefined && status !== 'READY' && status !== 'TERMINATED') throw validation('status', 'Member must satisfy enum value set: [READY, TERMINATED]', status);
  let cursor = null;
  if (token !== undefined) {
    try {
      cursor = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
      if (!cursor || cursor.i !== interpreter || cursor.s !== (status ?? null) || !isInt(cursor.t) || typeof cursor.id !== 'string') throw new Error();
    } catch {
      throw validation('nextToken', 'Member must be a token returned by a previous call with the same parameters', token);
    }
  }
  // Newest first; ties broken by id.
  const before = (a, t, id) => a.createdAt.getTime() < t || (a.createdAt.getTime() === t && a.id < id);
  const all = [...sessions.values()]
    .filter((s) => s.interpreter === interpreter && (status === undefined || s.status === status))
    .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
    .filter((s) => !cursor || before(s, cursor.t, cursor.id));
  const page = all.slice(0, maxResults);
  const out = {
    items: page.map((s) => {
      const item = { codeInterpreterIdentifier: interpreter, sessionId: s.id, status: s.status, createdAt: rfc3339(s.createdAt), lastUpdatedAt: rfc3339(s.lastUpdatedAt) };
      if (s.name !== undefined) item.name = s.name;
      return item;
    }),
  };
  if (all.length > maxResults) {
    const last = page[page.length - 1];
    out.nextToken = Buffer.from(JSON.stringify({ t: last.createdAt.getTime(), id: last.id, s: status ?? null, i: interpreter })).toString('base64url');
  }
  return sendJson(res, entry, 200, out);
}

function opStop(res, entry, interpreter, url, input) {
  const id = requireSessionId(url.searchParams.get('sessionId') ?? undefined, 'sessionId');
  const token = optString(input, 'clientToken', 'clientToken', 33, 256, CLIENT_TOKEN_RE);
  const key = token !== undefined ? `${interpreter}\n${token}` : null;
  if (key && stopTokens.has(key)) {
    const prior = stopTokens.get(key);
    if (prior.sessionId !== id) {
      throw new ApiError(400, 'ValidationException', 'The request parameters do not match the original request with the same clientToken',
        { reason: 'IdempotentParameterMismatchException' });
    }
    return sendJson(res, entry, 200, prior.response); // a retried Stop that already succeeded
  }
  // docs/protocols/bedrock.md "Session operations": a session that is unknown or already terminated answers
  // ResourceNotFoundException.
  const s = lookupSession(interpreter, id, { ready: true });
  terminateSession(s, 'stopped');
  const response = { codeInterpreterIdentifier: interpreter, sessionId: s.id, lastUpdatedAt: rfc3339(s.lastUpdatedAt) };
  if (key) stopTokens.set(key, { sessionId: id, response });
  return sendJson(res, entry, 200, response);
}

async function opInvoke(req, res, entry, interpreter, input, fault) {
  const sessionId = requireSessionId(req.headers['x-amzn-code-interpreter-session-id'], 'sessionId');
  if (input.name === undefined || input.name === null) throw validation('name', 'Member must not be null', undefined);
  if (typeof input.name !== 'string') throw cannotParse("Expected a string for 'name'");
  if (!TOOL_NAMES.has(input.name)) throw validation('name', `Member must satisfy enum value set: [${[...TOOL_NAMES].join(', ')}]`, input.name);
  // docs/protocols/bedrock.md "InvokeCodeInterpreter": an unknown, expired or stopped session is an HTTP 404 before any frame.
  const s = lookupSession(interpreter, sessionId, { ready: true });
  const plan = planTool(s, input.name, input.arguments);
  const head = {
    'Content-Type': 'application/vnd.amazon.eventstream',
    'x-amzn-RequestId': entry.request_id,
    'x-amzn-code-interpreter-session-id': s.id, // docs/protocols/bedrock.md "InvokeCodeInterpreter": echoed
  };
  const action = fault?.action;

  // Directives under which the code must NOT run: the exception / error frame is the whole stream.
  if (action === 'exception_first' || (action === 'error_frame' && fault.after === 0)) {
    entry.status = 200;
    res.writeHead(200, head);
    res.end(action === 'exception_first'
      ? exceptionFrame(fault.exception_type ?? 'throttlingException', fault.payload ?? { message: fault.message ?? 'Rate exceeded' })
      : errorFrame(fault.error_code ?? 'InternalFailure', fault.error_message ?? 'An internal error occurred'));
    return;
  }

  // A scripted answer in place of the tool's own (hostile listings, oversize or repeated file content).
  if (action === 'result') {
    entry.status = 200;
    res.writeHead(200, head);
    const frame = resultFrame(fault.result);
    const repeat = fault.repeat ?? 1;
    res.on('error', () => {});
    for (let i = 0; i < repeat && !res.destroyed; i++) {
      if (!res.write(frame)) await new Promise((r) => { res.once('drain', r); res.once('close', r); });
    }
    if (!res.destroyed) res.end();
    return;
  }

  s.sockets.add(req.socket);
  let result;
  try {
    result = await runTool(s, input.name, plan);
  } finally {
    s.sockets.delete(req.socket);
  }
  if (res.destroyed || req.socket.destroyed) return; // the client left, or the session died mid-call
  if (action === 'gateway_after_run') {
    // A proxy in front of the service answering its own error after the tool ran: no AWS error shape at all.
    const status = isInt(fault.status) && fault.status >= 500 && fault.status <= 599 ? fault.status : 502;
    entry.status = status;
    res.writeHead(status, { 'Content-Type': 'text/html' });
    res.end(`<html><body><h1>${status} ${http.STATUS_CODES[status] ?? ''}</h1></body></html>`);
    return;
  }
  const frame = resultFrame(result);
  entry.status = 200;
  res.writeHead(200, head);
  switch (action) {
    case 'exception_after':
      res.write(frame);
      res.end(exceptionFrame(fault.exception_type ?? 'internalServerException', fault.payload ?? { message: fault.message ?? 'Internal server error' }));
      return;
    case 'error_frame':
      res.write(frame);
      res.end(errorFrame(fault.error_code ?? 'InternalFailure', fault.error_message ?? 'An internal error occurred'));
      return;
    case 'unknown_event':
      res.write(eventFrame(fault.event_type ?? 'futureEvent', fault.payload ?? {}));
      res.end(frame);
      return;
    case 'bad_crc':
      res.end(corruptCrc(frame, fault.crc ?? 'message'));
      return;
    case 'truncated': {
      const n = isInt(fault.bytes) ? Math.min(Math.max(fault.bytes, 1), frame.length - 1) : Math.max(1, frame.length >> 1);
      res.end(frame.subarray(0, n)); // one chunk with the first n bytes, then the terminating 0-length chunk
      return;
    }
    case 'reset':
      res.write(frame, () => req.socket.destroy()); // after_first_frame: no terminating chunk
      return;
    case 'split': {
      // Each piece is its own HTTP chunk, written on a later turn of the event loop (TCP may still coalesce).
      const delay = isInt(fault.delay_ms) && fault.delay_ms > 0 ? fault.delay_ms : 0;
      let off = 0;
      while (off < frame.length) {
        const n = fault.mode === 'random' ? 1 + crypto.randomInt(Math.min(64, frame.length - off)) : 1;
        res.write(frame.subarray(off, off + n));
        off += n;
        await new Promise((r) => (delay ? setTimeout(r, delay) : setImmediate(r)));
        if (res.destroyed) return;
      }
      res.end();
      return;
    }
    default:
      res.end(frame);
  }
}

// ------------------------------------------------------------------------------------------ bench mode

// Answers at once, no signature check, no processes: the figures measure the client (docs/benchmarks.md "The HTTP clients: `e2b_bench` and `bedrock_bench`").
const BENCH_FRAME = resultFrame({
  content: [{ type: 'text', text: 'x\n' }],
  structuredContent: { stdout: 'x\n', stderr: '', exitCode: 0, executionTime: 0.1 },
  isError: false,
});

function benchRequest(req, res, r, url) {
  req.resume();
  req.on('end', () => {
    const now = rfc3339(new Date());
    if (!r) return sendError(res, null, new ApiError(404, 'UnknownOperationException', 'Unknown operation'));
    switch (r.operation) {
      case 'start': {
        const id = newSessionId();
        return sendJson(res, null, 200, { codeInterpreterIdentifier: r.interpreter, sessionId: id, createdAt: now });
      }
      case 'invoke':
        res.writeHead(200, { 'Content-Type': 'application/vnd.amazon.eventstream', 'x-amzn-code-interpreter-session-id': String(req.headers['x-amzn-code-interpreter-session-id'] ?? '') });
        return res.end(BENCH_FRAME);
      case 'stop':
        return sendJson(res, null, 200, { codeInterpreterIdentifier: r.interpreter, sessionId: url.searchParams.get('sessionId') ?? '', lastUpdatedAt: now });
      case 'get':
        return sendJson(res, null, 200, { codeInterpreterIdentifier: r.interpreter, sessionId: url.searchParams.get('sessionId') ?? '', createdAt: now, status: 'READY', sessionTimeoutSeconds: DEFAULT_TIMEOUT_S });
      default:
        return sendJson(res, null, 200, { items: [] });
    }
  });
}

// ------------------------------------------------------------------------------------------ lifecycle

let shuttingDown = false;
function shutdown(why) {
  if (shuttingDown) return;
  shuttingDown = true;
  log(`shutting down (${why})`);
  const all = [...sessions.values()];
  const children = all.flatMap((s) => [...s.procs]);
  for (const s of all) terminateSession(s, 'server exit');
  // SIGKILL is asynchronous: wait (briefly) until every child is gone, then remove the directories again in
  // case a dying process wrote into one after the first removal.
  const gone = children.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : new Promise((r) => c.once('exit', r))));
  Promise.race([Promise.all(gone), new Promise((r) => setTimeout(r, 2000))]).then(() => {
    for (const s of all) if (s.root) fs.rmSync(s.root, { recursive: true, force: true });
    process.exit(0);
  });
}

const server = http.createServer((req, res) => {
  handleRequest(req, res).catch((e) => {
    log(`internal error: ${e.stack || e.message}`);
    if (!res.headersSent) sendError(res, null, new ApiError(500, 'InternalServerException', 'Internal server error'));
    else res.destroy();
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 0;
server.requestTimeout = 0; // long executions and stalls are legitimate
server.on('clientError', (err, socket) => socket.destroy());

process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('exit', () => {
  // Last resort: never leave children or directories behind.
  for (const s of sessions.values()) terminateSession(s, 'exit');
});
process.stdin.on('end', () => shutdown('stdin closed'));
process.stdin.on('error', () => shutdown('stdin error'));
process.stdin.resume();

await new Promise((r) => server.listen(0, '127.0.0.1', r));
process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` }) + '\n');
log(`listening${BENCH ? ' (bench mode)' : ''} region=${CREDS.region} session_token=${CREDS.sessionToken ? 'required' : 'none'} interpreters=${[...INTERPRETERS].join(',')}`);
