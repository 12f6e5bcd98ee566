#!/usr/bin/env node
// Conformance run: the official AWS JS client (@aws-sdk/client-bedrock-agentcore 3.1141.0) against the local
// AgentCore server in tests/servers/bedrock. The server is trusted only while every check here passes.
// Wire facts are those of docs/protocols/bedrock.md.
//
//   node tests/conformance/bedrock/scenario.mjs
//
// Two servers are started: one with long-term credentials (no session token) and one with temporary
// credentials (a session token). The session flow runs against both; fault directives run against the first.
// One line per check, then a summary; exit status 0 only if every check passed.

import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

process.removeAllListeners('warning'); // the SDK's Node-20 support notice would clutter the output
process.on('warning', (w) => { if (!/NodeVersionSupportWarning/.test(`${w.name} ${w.message}`)) console.error(w); });

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SERVER = path.resolve(HERE, '../../servers/bedrock/server.mjs');
const AKID = 'AKIDEXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const TOKEN = 'FwoGZXIvYXdzEXAMPLETOKEN//////////wEaDEXAMPLE';
const ODD_ID = 'my interp/x'; // needs percent-encoding: canonical path is double-encoded (docs/protocols/bedrock.md "Endpoints and SigV4 signing")
const T_START = Date.now();
// Never hang: a stuck check fails the run instead of waiting for an outer timeout.
setTimeout(() => {
  console.log('FAIL watchdog: the run did not finish within 55 s');
  stopServers();
  Promise.race([Promise.all(servers.map((s) => s.exited)), sleep(3000)]).then(() => process.exit(1));
}, 55_000).unref();

const {
  BedrockAgentCoreClient, StartCodeInterpreterSessionCommand, GetCodeInterpreterSessionCommand,
  ListCodeInterpreterSessionsCommand, StopCodeInterpreterSessionCommand, InvokeCodeInterpreterCommand,
} = await import('@aws-sdk/client-bedrock-agentcore');
const { SignatureV4 } = await import('@smithy/signature-v4');
const { Sha256 } = await import('@aws-crypto/sha256-js');

// ------------------------------------------------------------------------------------------ servers

const servers = [];
async function startServer(args) {
  const child = spawn(process.execPath, [SERVER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let logText = '';
  child.stderr.on('data', (c) => {
    logText += c.toString();
    if (logText.length > 1 << 20) logText = logText.slice(-(1 << 19));
  });
  const first = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (l) => resolve(JSON.parse(l)));
    child.once('exit', (code) => reject(new Error(`server exited early (${code}): ${logText}`)));
  });
  const srv = { child, url: first.url, log: () => logText, exited: new Promise((r) => child.once('exit', r)) };
  servers.push(srv);
  return srv;
}
function stopServers() {
  for (const s of servers) {
    try { s.child.stdin.end(); } catch { /* gone */ }
    setTimeout(() => s.child.kill('SIGKILL'), 3000).unref();
  }
}
// If this process dies, the servers see stdin EOF and clean up themselves (a SIGKILL here would stop that).
process.on('exit', () => { for (const s of servers) s.child.stdin.destroy(); });

const A = await startServer(['--interpreter', ODD_ID]); // no session token
const B = await startServer(['--session-token', TOKEN]); // temporary credentials

function client(srv, { token, secret = SECRET, akid = AKID, maxAttempts = 1, requestTimeout } = {}) {
  return new BedrockAgentCoreClient({
    region: 'us-east-1',
    endpoint: srv.url,
    credentials: { accessKeyId: akid, secretAccessKey: secret, ...(token ? { sessionToken: token } : {}) },
    maxAttempts,
    ...(requestTimeout ? { requestHandler: { requestTimeout, throwOnRequestTimeout: true } } : {}),
  });
}

// ------------------------------------------------------------------------------------------ helpers

const results = [];
async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`PASS ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack.split('\n').slice(0, 12).join('\n  ') : e}`);
  }
}

async function control(srv, method, p, body) {
  const res = await fetch(srv.url + p, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}
const addFaults = async (srv, ...faults) => assert.equal((await control(srv, 'POST', '/_control/faults', { faults })).status, 200);
const clearFaults = (srv) => control(srv, 'DELETE', '/_control/faults');
const alive = async (srv) => (await control(srv, 'GET', '/_control/alive')).json.sessions;
const requests = async (srv) => (await control(srv, 'GET', '/_control/requests')).json.requests;

const ID = 'aws.codeinterpreter.v1';
const start = (c, extra = {}, id = ID) => c.send(new StartCodeInterpreterSessionCommand({ codeInterpreterIdentifier: id, ...extra }));
const get = (c, sessionId, id = ID) => c.send(new GetCodeInterpreterSessionCommand({ codeInterpreterIdentifier: id, sessionId }));
const stop = (c, sessionId, id = ID) => c.send(new StopCodeInterpreterSessionCommand({ codeInterpreterIdentifier: id, sessionId }));
const list = (c, extra = {}, id = ID) => c.send(new ListCodeInterpreterSessionsCommand({ codeInterpreterIdentifier: id, ...extra }));
const invokeRaw = (c, sessionId, name, args, id = ID) =>
  c.send(new InvokeCodeInterpreterCommand({ codeInterpreterIdentifier: id, sessionId, name, arguments: args }));
// Consumes the whole stream (docs/protocols/bedrock.md "InvokeCodeInterpreter") and returns the events.
async function invoke(c, sessionId, name, args, id = ID) {
  const out = await invokeRaw(c, sessionId, name, args, id);
  const events = [];
  for await (const e of out.stream) events.push(e);
  return events;
}
// The single `result` of a call (docs/protocols/bedrock.md "Events and exception frames": one result event per call).
async function result(c, sessionId, name, args, id = ID) {
  const events = await invoke(c, sessionId, name, args, id);
  assert.equal(events.length, 1, `expected one event, got ${JSON.stringify(events)}`);
  assert.ok(events[0].result, `expected a result event, got ${JSON.stringify(events[0])}`);
  return events[0].result;
}
const py = (c, s, code, extra = {}) => result(c, s, 'executeCode', { code, language: 'python', ...extra });
async function rejects(promise, name, status) {
  let err;
  try { await promise; } catch (e) { err = e; }
  assert.ok(err, `expected ${name}, got success`);
  assert.equal(err.name, name, `expected ${name}, got ${err.name}: ${err.message}`);
  if (status !== undefined) assert.equal(err.$metadata?.httpStatusCode, status);
  return err;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i);
const knownSessionIds = new Set();

// ------------------------------------------------------------------------------------------ session flow

async function sessionFlow(label, srv, c) {
  let sid;
  await check(`${label}: Start with name and sessionTimeoutSeconds`, async () => {
    const r = await start(c, { name: 'conformance', sessionTimeoutSeconds: 600 });
    assert.equal(r.codeInterpreterIdentifier, ID);
    assert.match(r.sessionId, /^[0-9A-Z]{26}$/);
    assert.ok(r.createdAt instanceof Date && Math.abs(r.createdAt - Date.now()) < 60_000);
    sid = r.sessionId;
    knownSessionIds.add(sid);
  });
  await check(`${label}: Get shows READY with name and timeout`, async () => {
    const r = await get(c, sid);
    assert.equal(r.status, 'READY');
    assert.equal(r.name, 'conformance');
    assert.equal(r.sessionTimeoutSeconds, 600);
    assert.equal(r.sessionId, sid);
    assert.deepEqual(await alive(srv), [sid]);
  });
  await check(`${label}: executeCode python prints exactly`, async () => {
    const r = await py(c, sid, 'print("hello")');
    assert.equal(r.structuredContent.stdout, 'hello\n');
    assert.equal(r.structuredContent.stderr, '');
    assert.equal(r.structuredContent.exitCode, 0);
    assert.equal(typeof r.structuredContent.executionTime, 'number');
    assert.equal(r.isError, false);
    assert.deepEqual(r.content, [{ type: 'text', text: 'hello\n' }]);
  });
  await check(`${label}: python state persists across calls`, async () => {
    await py(c, sid, 'x = 41');
    assert.equal((await py(c, sid, 'print(x + 1)')).structuredContent.stdout, '42\n');
  });
  await check(`${label}: python exception -> isError, traceback on stderr`, async () => {
    const r = await py(c, sid, 'print("before")\n1/0');
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.exitCode, 1);
    assert.equal(r.structuredContent.stdout, 'before\n');
    assert.match(r.structuredContent.stderr, /^Traceback \(most recent call last\):\n/);
    assert.ok(r.structuredContent.stderr.endsWith('ZeroDivisionError: division by zero\n'));
    assert.ok(!r.structuredContent.stderr.includes('python_kernel'), 'driver frames are hidden');
  });
  await check(`${label}: sys.exit(3) -> exitCode 3`, async () => {
    const r = await py(c, sid, 'import sys\nsys.exit(3)');
    assert.equal(r.structuredContent.exitCode, 3);
    assert.equal(r.isError, true);
  });
  await check(`${label}: clearContext resets the globals`, async () => {
    const r = await py(c, sid, 'print("x" in globals())', { clearContext: true });
    assert.equal(r.structuredContent.stdout, 'False\n');
  });
  await check(`${label}: executeCommand stdout/stderr/exit code`, async () => {
    const r = await result(c, sid, 'executeCommand', { command: 'echo cmd-out; echo cmd-err >&2; exit 3' });
    assert.equal(r.structuredContent.stdout, 'cmd-out\n');
    assert.equal(r.structuredContent.stderr, 'cmd-err\n');
    assert.equal(r.structuredContent.exitCode, 3);
    assert.equal(r.isError, true);
    const ok = await result(c, sid, 'executeCommand', { command: 'printf abc' });
    assert.equal(ok.structuredContent.stdout, 'abc');
    assert.equal(ok.isError, false);
  });
  await check(`${label}: writeFiles text + blob (all 256 byte values)`, async () => {
    const r = await result(c, sid, 'writeFiles', { content: [{ path: 'hello.txt', text: 'héllo\n' }, { path: 'all.bin', blob: allBytes }] });
    assert.equal(r.isError, false);
  });
  await check(`${label}: readFiles returns both exactly (text block, blob block)`, async () => {
    const r = await result(c, sid, 'readFiles', { paths: ['hello.txt', 'all.bin'] });
    assert.equal(r.isError, false);
    assert.equal(r.content.length, 2);
    assert.equal(r.content[0].type, 'resource');
    assert.equal(r.content[0].resource.type, 'text');
    assert.equal(r.content[0].resource.uri, 'file:///hello.txt');
    assert.equal(r.content[0].resource.text, 'héllo\n');
    assert.equal(r.content[1].resource.type, 'blob');
    assert.equal(r.content[1].resource.uri, 'file:///all.bin');
    assert.deepEqual(new Uint8Array(r.content[1].resource.blob), allBytes);
  });
  await check(`${label}: code sees the written files in its cwd`, async () => {
    const r = await py(c, sid, 'print(open("hello.txt", encoding="utf-8").read(), end="")\nprint(list(open("all.bin","rb").read()) == list(range(256)))');
    assert.equal(r.structuredContent.stdout, 'héllo\nTrue\n');
  });
  await check(`${label}: listFiles -> resource_link blocks with name, uri, size`, async () => {
    await result(c, sid, 'executeCommand', { command: 'mkdir sub' });
    const r = await result(c, sid, 'listFiles', { directoryPath: '.' });
    const links = r.content.map((b) => ({ type: b.type, name: b.name, uri: b.uri, size: b.size, description: b.description }));
    assert.deepEqual(links, [
      { type: 'resource_link', name: 'all.bin', uri: 'file:///all.bin', size: 256, description: 'File' },
      { type: 'resource_link', name: 'hello.txt', uri: 'file:///hello.txt', size: 7, description: 'File' },
      { type: 'resource_link', name: 'sub', uri: 'file:///sub', size: undefined, description: 'Directory' },
    ]);
  });
  await check(`${label}: writeFiles into a missing directory is a tool error and writes nothing`, async () => {
    const r = await result(c, sid, 'writeFiles', { content: [{ path: 'ok.txt', text: 'x' }, { path: 'nodir/a.txt', text: 'y' }] });
    assert.equal(r.isError, true);
    const l = await result(c, sid, 'listFiles', {});
    assert.ok(!l.content.some((b) => b.name === 'ok.txt'));
  });
  await check(`${label}: removeFiles`, async () => {
    const r = await result(c, sid, 'removeFiles', { paths: ['hello.txt', 'sub'] });
    assert.equal(r.isError, false);
    const l = await result(c, sid, 'listFiles', { directoryPath: '.' });
    assert.deepEqual(l.content.map((b) => b.name), ['all.bin']);
    const missing = await result(c, sid, 'readFiles', { paths: ['hello.txt'] });
    assert.equal(missing.isError, true);
  });
  await check(`${label}: absolute and escaping paths -> ValidationException`, async () => {
    await rejects(invoke(c, sid, 'readFiles', { paths: ['/etc/passwd'] }), 'ValidationException', 400);
    await rejects(invoke(c, sid, 'listFiles', { directoryPath: '../..' }), 'ValidationException', 400);
    await rejects(invoke(c, sid, 'writeFiles', { content: [{ path: '/tmp/x', text: 'x' }] }), 'ValidationException', 400);
  });
  await check(`${label}: startCommandExecution / getTask / stopTask really kills`, async () => {
    const marker = `sleep 30.${process.pid}${label.length}`;
    const st = await result(c, sid, 'startCommandExecution', { command: `echo started; ${marker}` });
    const taskId = st.structuredContent.taskId;
    assert.ok(taskId);
    assert.equal(st.structuredContent.taskStatus, 'submitted');
    let g;
    for (let i = 0; i < 100; i++) {
      g = (await result(c, sid, 'getTask', { taskId })).structuredContent;
      if (g.stdout === 'started\n') break;
      await sleep(20);
    }
    assert.equal(g.taskStatus, 'working');
    assert.equal(g.stdout, 'started\n');
    const s2 = await result(c, sid, 'stopTask', { taskId });
    assert.equal(s2.structuredContent.taskStatus, 'canceled');
    assert.equal((await result(c, sid, 'getTask', { taskId })).structuredContent.taskStatus, 'canceled');
    await sleep(100);
    const pg = await result(c, sid, 'executeCommand', { command: `pgrep -f '${marker}'` });
    assert.equal(pg.structuredContent.exitCode, 1, `still running: ${pg.structuredContent.stdout}`);
  });
  await check(`${label}: background task completes / fails with exit code`, async () => {
    const a = (await result(c, sid, 'startCommandExecution', { command: 'echo done' })).structuredContent.taskId;
    const b = (await result(c, sid, 'startCommandExecution', { command: 'echo bad >&2; exit 4' })).structuredContent.taskId;
    let ga, gb;
    for (let i = 0; i < 100; i++) {
      ga = (await result(c, sid, 'getTask', { taskId: a })).structuredContent;
      gb = (await result(c, sid, 'getTask', { taskId: b })).structuredContent;
      if (ga.taskStatus === 'completed' && gb.taskStatus === 'failed') break;
      await sleep(20);
    }
    assert.deepEqual({ ...ga }, { taskId: a, taskStatus: 'completed', stdout: 'done\n', stderr: '', exitCode: 0 });
    assert.deepEqual({ ...gb }, { taskId: b, taskStatus: 'failed', stdout: '', stderr: 'bad\n', exitCode: 4 });
    const unknown = await result(c, sid, 'getTask', { taskId: 'nope' });
    assert.equal(unknown.isError, true);
  });
  await check(`${label}: javascript executeCode`, async () => {
    const r = await result(c, sid, 'executeCode', { code: 'console.log(1 + 1); console.error("e")', language: 'javascript' });
    assert.equal(r.structuredContent.stdout, '2\n');
    assert.equal(r.structuredContent.stderr, 'e\n');
    assert.equal(r.structuredContent.exitCode, 0);
    const bad = await result(c, sid, 'executeCode', { code: 'throw new Error("js boom")', language: 'javascript' });
    assert.equal(bad.isError, true);
    assert.match(bad.structuredContent.stderr, /js boom/);
  });
  await check(`${label}: List with status READY`, async () => {
    const r = await list(c, { status: 'READY' });
    assert.deepEqual(r.items.map((i) => i.sessionId), [sid]);
    assert.equal(r.items[0].status, 'READY');
    assert.equal(r.items[0].name, 'conformance');
    assert.ok(r.items[0].createdAt instanceof Date && r.items[0].lastUpdatedAt instanceof Date);
    assert.equal(r.nextToken, undefined);
  });
  await check(`${label}: Stop`, async () => {
    const r = await stop(c, sid);
    assert.equal(r.sessionId, sid);
    assert.equal(r.codeInterpreterIdentifier, ID);
    assert.ok(r.lastUpdatedAt instanceof Date);
    assert.deepEqual(await alive(srv), []);
    assert.equal((await get(c, sid)).status, 'TERMINATED');
  });
  await check(`${label}: Invoke on the stopped session -> ResourceNotFoundException`, async () => {
    const e = await rejects(invoke(c, sid, 'executeCode', { code: 'print(1)', language: 'python' }), 'ResourceNotFoundException', 404);
    assert.equal(e.$fault, 'client');
    assert.ok(e.$metadata.requestId);
    await rejects(stop(c, sid), 'ResourceNotFoundException', 404);
  });
  await check(`${label}: List with status TERMINATED`, async () => {
    const r = await list(c, { status: 'TERMINATED' });
    assert.ok(r.items.some((i) => i.sessionId === sid && i.status === 'TERMINATED'));
    assert.equal((await list(c, { status: 'READY' })).items.length, 0);
  });
}

const cA = client(A);
const cB = client(B, { token: TOKEN });
await sessionFlow('no-token', A, cA);
await sessionFlow('session-token', B, cB);

// ------------------------------------------------------------------------------------------ signatures
// docs/protocols/bedrock.md "Endpoints and SigV4 signing", "Verifying a signature"

await check('percent-encoded identifier "my interp/x" verifies (double-encoded canonical path)', async () => {
  const s = await start(cA, {}, ODD_ID);
  knownSessionIds.add(s.sessionId);
  assert.equal(s.codeInterpreterIdentifier, ODD_ID);
  const r = await result(cA, s.sessionId, 'executeCode', { code: 'print(7)', language: 'python' }, ODD_ID);
  assert.equal(r.structuredContent.stdout, '7\n');
  assert.equal((await get(cA, s.sessionId, ODD_ID)).status, 'READY');
  await stop(cA, s.sessionId, ODD_ID);
  const log = await requests(A);
  const mine = log.filter((e) => e.interpreter === ODD_ID);
  assert.ok(mine.length >= 4);
  for (const e of mine) {
    assert.ok(e.path.startsWith('/code-interpreters/my%20interp%2Fx/'), e.path);
    assert.equal(e.signature_valid, true);
  }
  // The same session is not reachable through another interpreter id.
  await rejects(get(cA, s.sessionId), 'ResourceNotFoundException', 404);
});
await check('unknown interpreter id -> ResourceNotFoundException', async () => {
  await rejects(start(cA, {}, 'nope-1234567890'), 'ResourceNotFoundException', 404);
});
await check('wrong secret -> 403 InvalidSignatureException, nothing created', async () => {
  const before = (await alive(A)).length;
  const e = await rejects(start(client(A, { secret: SECRET.replace('K7', 'K8') })), 'InvalidSignatureException', 403);
  assert.match(e.message, /signature we calculated does not match/);
  assert.equal((await alive(A)).length, before);
  const last = (await requests(A)).at(-1);
  assert.equal(last.signature_valid, false);
  assert.equal(last.signature_error, 'signature_mismatch');
  assert.equal(last.status, 403);
});
await check('unknown access key -> 403 UnrecognizedClientException', async () => {
  await rejects(start(client(A, { akid: 'AKIDOTHER' })), 'UnrecognizedClientException', 403);
});
await check('session token: missing, wrong, or unexpected -> 403 UnrecognizedClientException', async () => {
  await rejects(start(client(B)), 'UnrecognizedClientException', 403);
  await rejects(start(client(B, { token: TOKEN + 'x' })), 'UnrecognizedClientException', 403);
  await rejects(start(client(A, { token: TOKEN })), 'UnrecognizedClientException', 403);
});
await check('request signed 10 minutes ago -> 403 InvalidSignatureException "Signature expired"', async () => {
  const signer = new SignatureV4({ service: 'bedrock-agentcore', region: 'us-east-1', credentials: { accessKeyId: AKID, secretAccessKey: SECRET }, sha256: Sha256 });
  const u = new URL(A.url);
  const body = '{}';
  const signed = await signer.sign({
    method: 'POST', protocol: 'http:', hostname: u.hostname, port: Number(u.port), path: `/code-interpreters/${ID}/sessions/list`,
    query: {}, headers: { host: u.host, 'content-type': 'application/json' }, body,
  }, { signingDate: new Date(Date.now() - 10 * 60_000) });
  const res = await fetch(`${A.url}/code-interpreters/${ID}/sessions/list`, { method: 'POST', headers: signed.headers, body });
  assert.equal(res.status, 403);
  assert.equal(res.headers.get('x-amzn-errortype'), 'InvalidSignatureException');
  assert.match((await res.json()).message, /^Signature expired: /);
  // The same request signed now is accepted (the fetch path is otherwise right).
  const ok = await signer.sign({
    method: 'POST', protocol: 'http:', hostname: u.hostname, port: Number(u.port), path: `/code-interpreters/${ID}/sessions/list`,
    query: {}, headers: { host: u.host, 'content-type': 'application/json' }, body,
  });
  assert.equal((await fetch(`${A.url}/code-interpreters/${ID}/sessions/list`, { method: 'POST', headers: ok.headers, body })).status, 200);
});
await check('unsigned request -> 403 MissingAuthenticationTokenException', async () => {
  const res = await fetch(`${A.url}/code-interpreters/${ID}/sessions/list`, { method: 'POST', body: '{}' });
  assert.equal(res.status, 403);
  assert.equal(res.headers.get('x-amzn-errortype'), 'MissingAuthenticationTokenException');
});
await check('request log holds no secret, token or signature', async () => {
  const text = JSON.stringify(await requests(B)) + JSON.stringify(await requests(A)) + A.log() + B.log();
  for (const s of [SECRET, TOKEN, 'Signature=', 'AWS4-HMAC-SHA256']) assert.ok(!text.includes(s), `leaked ${s.slice(0, 8)}...`);
});

// ------------------------------------------------------------------------------------------ validation
// docs/protocols/bedrock.md "Interpreters and session lifetime", "Session operations", "Tools"

await check('Start validation: sessionTimeoutSeconds 0 and 28801, name 101 chars', async () => {
  const e = await rejects(start(cA, { sessionTimeoutSeconds: 0 }), 'ValidationException', 400);
  assert.equal(e.reason, 'FieldValidationFailed');
  assert.deepEqual(e.fieldList.map((f) => f.name), ['sessionTimeoutSeconds']);
  await rejects(start(cA, { sessionTimeoutSeconds: 28801 }), 'ValidationException', 400);
  await rejects(start(cA, { name: 'n'.repeat(101) }), 'ValidationException', 400);
});
await check('Start idempotency: same clientToken -> same session; other params -> IdempotentParameterMismatch', async () => {
  const token = 'conformance-token-0123456789abcdef0123';
  const a = await start(cA, { clientToken: token, name: 'idem' });
  const b = await start(cA, { clientToken: token, name: 'idem' });
  knownSessionIds.add(a.sessionId);
  assert.equal(a.sessionId, b.sessionId);
  assert.equal(a.createdAt.getTime(), b.createdAt.getTime());
  const e = await rejects(start(cA, { clientToken: token, name: 'other' }), 'ValidationException', 400);
  assert.equal(e.reason, 'IdempotentParameterMismatchException');
  await stop(cA, a.sessionId);
});
await check('List pagination with nextToken visits every session once', async () => {
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await start(cA, { name: `p${i}` })).sessionId);
  ids.forEach((x) => knownSessionIds.add(x));
  const seen = [];
  let nextToken;
  let pages = 0;
  do {
    const r = await list(cA, { status: 'READY', maxResults: 2, nextToken });
    assert.ok(r.items.length <= 2);
    seen.push(...r.items.map((i) => i.sessionId));
    nextToken = r.nextToken;
    pages++;
  } while (nextToken);
  assert.equal(pages, 3);
  assert.deepEqual([...seen].sort(), [...ids].sort());
  assert.deepEqual(seen, [...ids].reverse(), 'newest first');
  await rejects(list(cA, { nextToken: 'garbage' }), 'ValidationException', 400);
  for (const x of ids) await stop(cA, x);
  assert.deepEqual(await alive(A), []);
});
await check('a tagged session name (ci.<tag>.<name>, 100 characters in all) round-trips through Start, Get and List', async () => {
  // The library's tag encoding (docs/backends/bedrock.md "Tags and session names") as the official client sends it.
  const name = 'ci.A.' + 'n'.repeat(95);
  const a = await start(cA, { name });
  knownSessionIds.add(a.sessionId);
  assert.equal((await get(cA, a.sessionId)).name, name);
  const listed = await list(cA, { status: 'READY', maxResults: 100 });
  assert.deepEqual(listed.items.filter((i) => i.name === name).map((i) => i.sessionId), [a.sessionId]);
  await rejects(start(cA, { name: name + 'x' }), 'ValidationException', 400);
  await stop(cA, a.sessionId);
  await rejects(stop(cA, a.sessionId), 'ResourceNotFoundException', 404);
  assert.deepEqual(await alive(A), []);
});
await check('Invoke validation: unknown tool, bad language, missing code', async () => {
  const s = (await start(cA)).sessionId;
  knownSessionIds.add(s);
  await rejects(invoke(cA, s, 'fly', {}), 'ValidationException', 400);
  await rejects(invoke(cA, s, 'executeCode', { code: 'x', language: 'ruby' }), 'ValidationException', 400);
  await rejects(invoke(cA, s, 'executeCode', { language: 'python' }), 'ValidationException', 400);
  await rejects(invoke(cA, 'NOSUCHSESSION', 'executeCode', { code: 'x' }), 'ResourceNotFoundException', 404);
  await stop(cA, s);
});
await check('python process death -> isError, state lost, next call gets a fresh process', async () => {
  const s = (await start(cA)).sessionId;
  knownSessionIds.add(s);
  await py(cA, s, 'y = 5');
  const dead = await py(cA, s, 'import os\nprint("bye", flush=True)\nos._exit(9)');
  assert.equal(dead.isError, true);
  assert.equal(dead.structuredContent.stdout, 'bye\n');
  assert.match(dead.structuredContent.stderr, /exited unexpectedly.*state was lost/);
  assert.equal((await py(cA, s, 'print("y" in globals())')).structuredContent.stdout, 'False\n');
  await stop(cA, s);
});
await check('typescript executeCode: runs where Node can strip types, else isError naming the reason', async () => {
  const s = (await start(cA)).sessionId;
  knownSessionIds.add(s);
  const r = await result(cA, s, 'executeCode', { code: 'const n: number = 6; console.log(n * 7)', language: 'typescript' });
  if (r.isError) assert.match(r.structuredContent.stderr, /typescript is not supported by this local server/);
  else assert.equal(r.structuredContent.stdout, '42\n');
  await stop(cA, s);
});
await check('session TTL: sessionTimeoutSeconds 1 -> TERMINATED, processes killed', async () => {
  const t0 = Date.now();
  const s = (await start(cA, { sessionTimeoutSeconds: 1 })).sessionId;
  knownSessionIds.add(s);
  const marker = `sleep 40.${process.pid}`;
  await result(cA, s, 'startCommandExecution', { command: marker });
  assert.equal(spawnSync('pgrep', ['-f', marker]).status, 0, 'task running before the TTL');
  await sleep(Math.max(0, 1300 - (Date.now() - t0)));
  assert.equal((await get(cA, s)).status, 'TERMINATED');
  assert.ok(!(await alive(A)).includes(s));
  assert.equal(spawnSync('pgrep', ['-f', marker]).status, 1, 'task killed at the TTL');
  await rejects(invoke(cA, s, 'executeCode', { code: 'print(1)' }), 'ResourceNotFoundException', 404);
});

// ------------------------------------------------------------------------------------------ fault directives

const cA3 = client(A, { maxAttempts: 3 });
const fs1 = (await start(cA, { name: 'faults' })).sessionId;
knownSessionIds.add(fs1);
const invokesSince = async (seq) => (await requests(A)).filter((e) => e.seq > seq && e.operation === 'invoke');
const lastSeq = async () => (await requests(A)).at(-1)?.seq ?? 0;
await py(cA, fs1, 'n = 0');
const bump = { code: 'n += 1\nprint(n)', language: 'python' };

await check('fault status 429 on invoke -> ThrottlingException after 3 attempts (client retries)', async () => {
  await clearFaults(A);
  await addFaults(A, { operation: 'invoke', action: 'status', status: 429, count: -1, retry_after: 0 });
  const seq = await lastSeq();
  const e = await rejects(invoke(cA3, fs1, 'executeCode', bump), 'ThrottlingException', 429);
  assert.equal(e.$metadata.attempts, 3);
  const posts = await invokesSince(seq);
  assert.equal(posts.length, 3);
  assert.deepEqual(posts.map((p) => p.attempt), [1, 2, 3]);
  assert.equal(new Set(posts.map((p) => p.invocation_id)).size, 1);
  assert.ok(posts.every((p) => p.fault === 'status' && p.status === 429));
  await clearFaults(A);
  assert.equal((await py(cA, fs1, 'print(n)')).structuredContent.stdout, '0\n', 'code never ran');
});
await check('fault status 500 on start -> retried, succeeds on attempt 2', async () => {
  await addFaults(A, { operation: 'start', action: 'status', status: 500 });
  const r = await start(cA3);
  knownSessionIds.add(r.sessionId);
  assert.equal(r.$metadata.attempts, 2);
  await stop(cA, r.sessionId);
});
await check('fault status 503 (maxAttempts 1) -> ServiceUnavailableException', async () => {
  await addFaults(A, { operation: 'get', action: 'status', status: 503 });
  const e = await rejects(get(cA, fs1), 'ServiceUnavailableException', 503);
  assert.equal(e.$fault, 'server');
});
await check('fault exception_first throttlingException x2 -> client re-POSTs, 3rd attempt runs once', async () => {
  await addFaults(A, { operation: 'invoke', tool: 'executeCode', action: 'exception_first', exception_type: 'throttlingException', count: 2 });
  const seq = await lastSeq();
  const out = await invokeRaw(cA3, fs1, 'executeCode', bump);
  const events = [];
  for await (const e of out.stream) events.push(e);
  assert.equal(events[0].result.structuredContent.stdout, '1\n', 'the code ran exactly once');
  assert.equal(out.$metadata.attempts, 3);
  const posts = await invokesSince(seq);
  assert.deepEqual(posts.map((p) => [p.attempt, p.fault, p.status]), [[1, 'exception_first', 200], [2, 'exception_first', 200], [3, null, 200]]);
});
await check('fault exception_first (maxAttempts 1) -> send() throws ThrottlingException, code not run', async () => {
  await addFaults(A, { operation: 'invoke', action: 'exception_first', message: 'slow down' });
  const e = await rejects(invokeRaw(cA, fs1, 'executeCode', bump), 'ThrottlingException');
  assert.equal(e.message, 'slow down');
  assert.equal((await py(cA, fs1, 'print(n)')).structuredContent.stdout, '1\n');
});
await check('fault exception_after -> result, then InternalServerException thrown during iteration', async () => {
  await addFaults(A, { operation: 'invoke', action: 'exception_after', exception_type: 'internalServerException', message: 'late' });
  const out = await invokeRaw(cA, fs1, 'executeCode', bump);
  const events = [];
  const e = await rejects((async () => { for await (const ev of out.stream) events.push(ev); })(), 'InternalServerException');
  assert.equal(e.message, 'late');
  assert.equal(events.length, 1);
  assert.equal(events[0].result.structuredContent.stdout, '2\n');
});
await check('fault error_frame after a result -> Error(name=:error-code) during iteration', async () => {
  await addFaults(A, { operation: 'invoke', action: 'error_frame', error_code: 'InternalFailure', error_message: 'boom frame' });
  const out = await invokeRaw(cA, fs1, 'executeCode', bump);
  const events = [];
  const e = await rejects((async () => { for await (const ev of out.stream) events.push(ev); })(), 'InternalFailure');
  assert.equal(e.message, 'boom frame');
  assert.equal(events.length, 1);
});
await check('fault error_frame first (after 0) -> send() throws, code not run', async () => {
  await addFaults(A, { operation: 'invoke', action: 'error_frame', after: 0 });
  await rejects(invokeRaw(cA, fs1, 'executeCode', bump), 'InternalFailure');
  assert.equal((await py(cA, fs1, 'print(n)')).structuredContent.stdout, '3\n');
});
async function invokeError(args = bump, c = cA) {
  try {
    const out = await invokeRaw(c, fs1, 'executeCode', args);
    for await (const ev of out.stream) void ev;
  } catch (e) {
    return e;
  }
  throw new Error('expected an error');
}
await check('fault bad_crc (message CRC) -> the codec\'s checksum error', async () => {
  await addFaults(A, { operation: 'invoke', action: 'bad_crc' });
  const e = await invokeError();
  assert.match(e.message, /^The message checksum \(\d+\) did not match the expected value of \d+/);
});
await check('fault bad_crc (prelude CRC) -> the codec\'s prelude checksum error', async () => {
  await addFaults(A, { operation: 'invoke', action: 'bad_crc', crc: 'prelude' });
  const e = await invokeError();
  assert.match(e.message, /prelude checksum specified in the message .* does not match the calculated CRC32 checksum/);
});
await check('fault truncated -> an error (partial frame, clean chunked end)', async () => {
  await addFaults(A, { operation: 'invoke', action: 'truncated' });
  const e = await invokeError();
  assert.match(e.message, /Truncated event message received/);
});
await check('fault reset before -> socket error, code not run', async () => {
  const before = (await py(cA, fs1, 'print(n)')).structuredContent.stdout;
  await addFaults(A, { operation: 'invoke', action: 'reset' });
  const e = await invokeError();
  assert.match(`${e.code} ${e.message}`, /ECONNRESET|socket hang up/);
  assert.equal((await py(cA, fs1, 'print(n)')).structuredContent.stdout, before);
});
await check('fault reset after_headers -> error, code not run', async () => {
  const before = (await py(cA, fs1, 'print(n)')).structuredContent.stdout;
  await addFaults(A, { operation: 'invoke', action: 'reset', when: 'after_headers' });
  const e = await invokeError();
  assert.ok(e instanceof Error);
  assert.equal((await py(cA, fs1, 'print(n)')).structuredContent.stdout, before);
});
await check('fault reset after_first_frame -> result, then the stream errors', async () => {
  await addFaults(A, { operation: 'invoke', action: 'reset', when: 'after_first_frame' });
  const out = await invokeRaw(cA, fs1, 'executeCode', bump);
  const events = [];
  let err;
  try { for await (const ev of out.stream) events.push(ev); } catch (e) { err = e; }
  assert.equal(events.length, 1);
  assert.ok(events[0].result);
  assert.ok(err, 'iteration must fail: the body ended without its chunked terminator');
});
await check('fault stall before -> client request timeout', async () => {
  await addFaults(A, { operation: 'invoke', action: 'stall' });
  const e = await invokeError(bump, client(A, { requestTimeout: 400 }));
  assert.equal(e.name, 'TimeoutError');
});
await check('fault stall after_headers -> no event; only an abort ends the call', async () => {
  await addFaults(A, { operation: 'invoke', action: 'stall', when: 'after_headers' });
  // The handler's requestTimeout no longer applies once headers arrived; the caller's abort signal does.
  const t0 = Date.now();
  let err;
  try {
    const out = await cA.send(new InvokeCodeInterpreterCommand({ codeInterpreterIdentifier: ID, sessionId: fs1, name: 'executeCode', arguments: bump }),
      { abortSignal: AbortSignal.timeout(500) });
    for await (const ev of out.stream) void ev;
  } catch (e) { err = e; }
  assert.ok(err, 'expected an abort');
  assert.ok(Date.now() - t0 >= 450);
  const entry = (await requests(A)).filter((e) => e.fault === 'stall').at(-1);
  assert.equal(entry.status, 200);
});
await check('fault split bytes / random -> same result, reassembled', async () => {
  await addFaults(A, { operation: 'invoke', action: 'split', mode: 'bytes' }, { operation: 'invoke', action: 'split', mode: 'random' });
  const r1 = await py(cA, fs1, 'print("split-1")');
  const r2 = await py(cA, fs1, 'print("split-2")');
  assert.equal(r1.structuredContent.stdout, 'split-1\n');
  assert.equal(r2.structuredContent.stdout, 'split-2\n');
  const log = (await requests(A)).filter((e) => e.fault === 'split');
  assert.equal(log.length, 2);
});
await check('fault unknown_event -> skipped by the client, result still arrives', async () => {
  await addFaults(A, { operation: 'invoke', action: 'unknown_event', event_type: 'futureEvent' });
  const events = await invoke(cA, fs1, 'executeCode', { code: 'print("after unknown")', language: 'python' });
  // docs/protocols/bedrock.md "Events and exception frames": an unknown :event-type is silently skipped by the client.
  assert.equal(events.length, 1, JSON.stringify(events));
  assert.equal(events[0].result.structuredContent.stdout, 'after unknown\n');
  assert.equal((await requests(A)).filter((e) => e.fault === 'unknown_event').length, 1);
});
await check('fault expire_session -> ResourceNotFoundException, session TERMINATED', async () => {
  await addFaults(A, { operation: 'invoke', action: 'expire_session' });
  await rejects(invoke(cA, fs1, 'executeCode', bump), 'ResourceNotFoundException', 404);
  assert.equal((await get(cA, fs1)).status, 'TERMINATED');
  assert.deepEqual(await alive(A), []);
});
await check('invalid fault directive -> 400', async () => {
  const r = await control(A, 'POST', '/_control/faults', { faults: [{ action: 'bad_crc', operation: 'start' }] });
  assert.equal(r.status, 400);
  const r2 = await control(A, 'POST', '/_control/faults', { faults: [{ action: 'explode' }] });
  assert.equal(r2.status, 400);
});
await check('every session gone from /_control/alive', async () => {
  assert.deepEqual(await alive(A), []);
  assert.deepEqual(await alive(B), []);
});

// ------------------------------------------------------------------------------------------ teardown

stopServers();
await Promise.all(servers.map((s) => s.exited));
await check('servers exited on stdin EOF and removed every session directory', async () => {
  const left = fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('agentcore-') && knownSessionIds.has(n.split('-')[1]));
  assert.deepEqual(left, []);
});

const failed = results.filter((r) => !r.ok);
console.log(`\n${results.length - failed.length}/${results.length} checks passed in ${((Date.now() - T_START) / 1000).toFixed(1)} s`);
if (failed.length) {
  console.log('FAILED:');
  for (const f of failed) console.log(`  ${f.name}`);
}
process.exit(failed.length ? 1 : 0);
