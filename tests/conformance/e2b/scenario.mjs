#!/usr/bin/env node
// Conformance run: the official E2B JS clients (@e2b/code-interpreter 2.8.0 over e2b 2.51.0) against the
// local server in tests/servers/e2b. The server is trusted only while every check here passes.
//
//   node tests/conformance/e2b/scenario.mjs
//
// One line per check, then a summary; exit status 0 only if every check passed.

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SERVER = path.resolve(HERE, '../../servers/e2b/server.mjs');
const API_KEY = 'e2b_' + '0'.repeat(40);

// ------------------------------------------------------------------------------------------ server

const server = spawn(process.execPath, [SERVER, '--api-key', API_KEY], { stdio: ['pipe', 'pipe', 'pipe'] });
let serverLog = '';
server.stderr.on('data', (c) => {
  serverLog += c.toString();
  if (serverLog.length > 1 << 20) serverLog = serverLog.slice(-(1 << 19));
});
const first = await new Promise((resolve, reject) => {
  const rl = createInterface({ input: server.stdout });
  rl.once('line', (l) => resolve(JSON.parse(l)));
  server.once('exit', (code) => reject(new Error(`server exited early (${code}): ${serverLog}`)));
});
const { api_url: API, sandbox_url: SBX } = first;

// The SDK reads these when each call builds its connection config (docs/protocols/e2b.md "SDK endpoint settings").
process.env.E2B_API_KEY = API_KEY;
process.env.E2B_API_URL = API;
process.env.E2B_SANDBOX_URL = SBX;
delete process.env.E2B_DEBUG;
delete process.env.E2B_DOMAIN;

const { Sandbox } = await import('@e2b/code-interpreter');
const e2b = await import('e2b');
const { CommandExitError, TimeoutError, RateLimitError, AuthenticationError, FileNotFoundError, SandboxError,
  NotFoundError, SandboxNotFoundError } = e2b;

function stopServer() {
  try {
    server.stdin.end(); // the server exits at stdin EOF
  } catch { /* already gone */ }
  setTimeout(() => server.kill('SIGKILL'), 3000).unref();
}
process.on('exit', () => server.kill('SIGKILL'));

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
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack.split('\n').slice(0, 20).join('\n  ') : e}`);
  }
}

async function control(method, p, body) {
  const res = await fetch(API + p, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}
const addFaults = async (...faults) => assert.equal((await control('POST', '/_control/faults', { faults })).status, 200);
const clearFaults = () => control('DELETE', '/_control/faults');
const alive = async () => (await control('GET', '/_control/alive')).json.sandboxes;
const requests = async () => (await control('GET', '/_control/requests')).json.requests;

async function rejects(promise, check) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, 'expected a rejection');
  check(err);
  return err;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------------------------------ scenario

let sbx;
try {
  await check('Sandbox.create with metadata and envs', async () => {
    sbx = await Sandbox.create({ metadata: { suite: 'conformance', run: 'a b&c' }, envs: { SBX_ENV: 'from-create' }, timeoutMs: 120_000 });
    assert.match(sbx.sandboxId, /^[a-z0-9]{20}$/);
    assert.deepEqual(await alive(), [sbx.sandboxId]);
    const info = await sbx.getInfo();
    assert.equal(info.sandboxId, sbx.sandboxId);
    assert.equal(info.templateId, 'nlhz8vlwyupq845jsdg9');
    assert.equal(info.name, 'code-interpreter-v1');
    assert.deepEqual(info.metadata, { suite: 'conformance', run: 'a b&c' });
    assert.equal(info.envdVersion, '0.6.13');
    assert.equal(info.state, 'running');
    const created = (await requests()).filter((r) => r.method === 'POST' && r.path === '/v2/sandboxes');
    assert.equal(created.length, 1);
    assert.equal(created[0].body_complete, true);
    assert.equal(created[0].headers['x-api-key'], undefined, 'secrets never reach the request log');
  });

  await check('runCode stdout', async () => {
    const ex = await sbx.runCode("print('hi')");
    assert.deepEqual(ex.logs.stdout, ['hi\n']);
    assert.deepEqual(ex.logs.stderr, []);
    assert.equal(ex.error, undefined);
    assert.deepEqual(ex.results, []);
    assert.equal(ex.executionCount, 1);
  });

  await check('runCode result of the last expression', async () => {
    const ex = await sbx.runCode('1+1');
    assert.equal(ex.text, '2');
    assert.equal(ex.results.length, 1);
    assert.equal(ex.results[0].isMainResult, true);
    assert.deepEqual(ex.results[0].extra, {});
  });

  await check('runCode keeps state between calls', async () => {
    await sbx.runCode('x = 41');
    const ex = await sbx.runCode('x + 1');
    assert.equal(ex.text, '42');
  });

  await check('runCode error', async () => {
    const ex = await sbx.runCode('1/0');
    assert.equal(ex.error.name, 'ZeroDivisionError');
    assert.equal(ex.error.value, 'division by zero');
    assert.match(ex.error.traceback, /ZeroDivisionError: division by zero/);
    assert.doesNotMatch(ex.error.traceback, /python_kernel/);
  });

  await check('runCode stderr, streaming callbacks and order', async () => {
    const seen = [];
    const ex = await sbx.runCode("import sys, time\nprint('a')\ntime.sleep(0.3)\nprint('b', file=sys.stderr)\nprint('c')", {
      onStdout: (m) => seen.push(['out', m.line, Date.now()]),
      onStderr: (m) => seen.push(['err', m.line, Date.now()]),
    });
    assert.deepEqual(ex.logs.stdout, ['a\n', 'c\n']);
    assert.deepEqual(ex.logs.stderr, ['b\n']);
    assert.deepEqual(seen.map((s) => s.slice(0, 2)), [['out', 'a\n'], ['err', 'b\n'], ['out', 'c\n']]);
    assert.ok(seen[1][2] - seen[0][2] >= 250, 'the first line arrived before the sleep ended (streamed)');
  });

  await check('runCode envs apply to one call only', async () => {
    const ex = await sbx.runCode("import os\nprint(os.environ.get('RUN_ENV'), os.environ.get('SBX_ENV'))", { envs: { RUN_ENV: 'yes' } });
    assert.deepEqual(ex.logs.stdout, ['yes from-create\n']);
    const again = await sbx.runCode("import os\nprint(os.environ.get('RUN_ENV'))");
    assert.deepEqual(again.logs.stdout, ['None\n']);
  });

  await check('runCode contexts (create, list, run, restart, remove)', async () => {
    const ctx = await sbx.createCodeContext({ cwd: '/home/user' });
    assert.equal(ctx.language, 'python');
    assert.equal(ctx.cwd, '/home/user');
    await sbx.runCode('y = 7', { context: ctx });
    assert.equal((await sbx.runCode('y', { context: ctx })).text, '7');
    const other = await sbx.runCode("'y' in globals()");
    assert.equal(other.text, 'False');
    const list = await sbx.listCodeContexts();
    assert.ok(list.some((c) => c.id === ctx.id));
    await sbx.restartCodeContext(ctx);
    assert.equal((await sbx.runCode("'y' in globals()", { context: ctx })).text, 'False');
    await sbx.removeCodeContext(ctx);
    await rejects(sbx.runCode('1', { context: ctx }), (e) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.message, `Context ${ctx.id} not found`);
    });
  });

  await check('files.write / read text', async () => {
    const info = await sbx.files.write('/home/user/hello.txt', 'hello world\n');
    assert.deepEqual({ path: info.path, name: info.name, type: info.type }, { path: '/home/user/hello.txt', name: 'hello.txt', type: 'file' });
    assert.equal(await sbx.files.read('/home/user/hello.txt'), 'hello world\n');
    assert.equal(await sbx.files.read('hello.txt'), 'hello world\n', 'relative paths resolve against the home');
    const ex = await sbx.runCode("print(open('hello.txt').read(), end='')");
    assert.deepEqual(ex.logs.stdout, ['hello world\n']);
  });

  await check('files.write / read binary (all 256 byte values)', async () => {
    const bytes = new Uint8Array(512);
    for (let i = 0; i < 512; i++) bytes[i] = i % 256;
    await sbx.files.write('/files/bin/all.bin', bytes.buffer);
    const back = await sbx.files.read('/files/bin/all.bin', { format: 'bytes' });
    assert.deepEqual(Buffer.from(back), Buffer.from(bytes));
    const ex = await sbx.runCode("d = open('/files/bin/all.bin','rb').read()\nlen(d), d[:3], d[255]");
    assert.equal(ex.text, "(512, b'\\x00\\x01\\x02', 255)");
  });

  await check('code writes a file, file API downloads it', async () => {
    await sbx.runCode("with open('out.csv','w') as f:\n    f.write('a,b\\n1,2\\n')");
    assert.equal(await sbx.files.read('/home/user/out.csv'), 'a,b\n1,2\n');
  });

  await check('files.list, exists, makeDir, remove, missing file', async () => {
    await sbx.files.makeDir('/home/user/dir/sub');
    await sbx.files.write('/home/user/dir/f.txt', 'x');
    const list = await sbx.files.list('/home/user/dir');
    assert.deepEqual(list.map((e) => [e.name, e.type, e.path, e.size]), [
      ['f.txt', 'file', '/home/user/dir/f.txt', 1],
      ['sub', 'dir', '/home/user/dir/sub', 4096],
    ].map((r, i) => (i === 1 ? [r[0], r[1], r[2], list[1].size] : r)));
    assert.equal(list[0].permissions, '-rw-r--r--');
    assert.equal(await sbx.files.exists('/home/user/dir/f.txt'), true);
    assert.equal(await sbx.files.exists('/home/user/nope'), false);
    assert.equal(await sbx.files.makeDir('/home/user/dir/sub'), false, 'makeDir of an existing dir answers false');
    await sbx.files.remove('/home/user/dir');
    assert.equal(await sbx.files.exists('/home/user/dir'), false);
    await rejects(sbx.files.read('/home/user/nope.txt'), (e) => {
      assert.ok(e instanceof FileNotFoundError);
      assert.equal(e.message, "path '/home/user/nope.txt' does not exist");
    });
  });

  await check('files.getInfo, rename, and a name that is not ASCII', async () => {
    await sbx.files.write('/home/user/mv/ünï 名前.txt', 'utf-8 name');
    const info = await sbx.files.getInfo('/home/user/mv/ünï 名前.txt');
    assert.deepEqual([info.name, info.type, info.path, info.size, info.permissions],
      ['ünï 名前.txt', 'file', '/home/user/mv/ünï 名前.txt', 10, '-rw-r--r--']);
    assert.ok(info.modifiedTime instanceof Date && Math.abs(info.modifiedTime.getTime() - Date.now()) < 60000);
    assert.equal(await sbx.files.read('/home/user/mv/ünï 名前.txt'), 'utf-8 name', 'a download of a UTF-8 name');
    const moved = await sbx.files.rename('/home/user/mv/ünï 名前.txt', '/home/user/mv2/deep/b.txt');
    assert.deepEqual([moved.name, moved.type, moved.path, moved.size], ['b.txt', 'file', '/home/user/mv2/deep/b.txt', 10]);
    assert.equal(await sbx.files.exists('/home/user/mv/ünï 名前.txt'), false);
    assert.equal(await sbx.files.read('/home/user/mv2/deep/b.txt'), 'utf-8 name');
    await rejects(sbx.files.getInfo('/home/user/mv/none.txt'), (e) => assert.ok(e instanceof FileNotFoundError));
    await rejects(sbx.files.rename('/home/user/mv/none.txt', '/home/user/x.txt'), (e) => assert.ok(e instanceof FileNotFoundError));
  });

  await check('commands.run exit 3 → CommandExitError', async () => {
    await rejects(sbx.commands.run('echo hi; exit 3'), (e) => {
      assert.ok(e instanceof CommandExitError);
      assert.equal(e.exitCode, 3);
      assert.equal(e.stdout, 'hi\n');
      assert.equal(e.stderr, '');
      assert.equal(e.error, 'exit status 3');
    });
  });

  await check('commands.run success, envs and cwd', async () => {
    await sbx.files.makeDir('/home/user/work');
    const r = await sbx.commands.run('echo "$CMD_ENV $SBX_ENV"; basename "$PWD"; echo err >&2', { envs: { CMD_ENV: 'cmd' }, cwd: '/home/user/work' });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, 'cmd from-create\nwork\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.error, undefined);
  });

  await check('commands.run timeout kills the process', async () => {
    const t0 = Date.now();
    await rejects(sbx.commands.run('echo started; sleep 30; echo never', { timeoutMs: 700 }), (e) => {
      assert.ok(e instanceof TimeoutError, `got ${e && e.name}: ${e && e.message}`);
      assert.match(e.message, /timeoutMs/);
    });
    assert.ok(Date.now() - t0 < 5000);
    // The client gives up at its own deadline, the server kills at the same deadline: allow a moment.
    let procs;
    for (let i = 0; i < 20; i++) {
      procs = (await sbx.commands.list()).filter((p) => p.args && p.args.join(' ').includes('sleep 30'));
      if (procs.length === 0) break;
      await sleep(100);
    }
    assert.deepEqual(procs, []);
    const ps = await sbx.commands.run("ps -eo args | grep -c '^sleep 30$' || true");
    assert.equal(ps.stdout, '0\n');
  });

  await check('background command: list and kill', async () => {
    const h = await sbx.commands.run('sleep 20', { background: true });
    assert.ok(h.pid > 0);
    const procs = await sbx.commands.list();
    assert.ok(procs.some((p) => p.pid === h.pid && p.cmd === '/bin/bash'));
    assert.equal(await h.kill(), true);
    await rejects(h.wait(), (e) => {
      assert.ok(e instanceof CommandExitError);
      assert.equal(e.exitCode, -1);
      assert.equal(e.error, 'signal: killed');
    });
    assert.equal(await sbx.commands.kill(h.pid), false, 'a gone pid is not found');
  });

  // ---- processes (docs/protocols/e2b.md "process.Process"): stdin, CloseStdin, Connect by pid, a cut stream

  await check('background command: sendStdin, then closeStdin gives EOF', async () => {
    const h = await sbx.commands.run('cat; echo EOF', { background: true, stdin: true });
    await h.sendStdin('a\n');
    await sbx.commands.sendStdin(h.pid, 'b');
    await h.closeStdin();
    const r = await h.wait();
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, 'a\nbEOF\n');
  });

  await check('background command: connect by pid after a disconnect gets the later output', async () => {
    const h = await sbx.commands.run('read go; echo after $go', { background: true, stdin: true });
    await h.disconnect();
    const again = await sbx.commands.connect(h.pid);
    assert.equal(again.pid, h.pid);
    await sbx.commands.sendStdin(h.pid, 'connect\n');
    const r = await again.wait();
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, 'after connect\n');
    const listed = await sbx.commands.list();
    assert.ok(!listed.some((p) => p.pid === h.pid), 'an ended process is forgotten');
    await rejects(sbx.commands.connect(h.pid), (e) => assert.match(e.message, /not found/));
  });

  await check('background command: SIGTERM by SendSignal (the SDK\'s Connect client) ends it as terminated', async () => {
    const h = await sbx.commands.run('sleep 20', { background: true });
    // The SDK's kill sends only SIGKILL; its own Connect client sends SIGTERM (signal 15, as protojson's number).
    await sbx.commands.rpc.sendSignal({ process: { selector: { case: 'pid', value: h.pid } }, signal: 15 });
    await rejects(h.wait(), (e) => {
      assert.ok(e instanceof CommandExitError);
      assert.equal(e.exitCode, -1);
      assert.equal(e.error, 'signal: terminated');
    });
  });

  await check('a Start stream cut mid-run leaves the process running: connect by pid gets the rest', async () => {
    await addFaults({ surface: 'envd', path: '/process.Process/Start', action: 'cut_mid_line', after: 2 });
    const h = await sbx.commands.run('echo first; sleep 0.3; echo lost; sleep 1.5; echo third', { background: true });
    await h.wait().catch(() => {});  // the SDK sees the broken stream
    assert.equal(h.stdout, 'first\n');
    const again = await sbx.commands.connect(h.pid);
    const r = await again.wait();
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, 'third\n');
    await clearFaults();
  });

  await check('setTimeout extends the lease', async () => {
    const before = (await sbx.getInfo()).endAt.getTime();
    await sbx.setTimeout(600_000);
    const after = (await sbx.getInfo()).endAt.getTime();
    assert.ok(after > before + 400_000);
  });

  await check('Sandbox.list filtered by metadata', async () => {
    const other = await Sandbox.create({ metadata: { suite: 'other' } });
    try {
      const page = await Sandbox.list({ query: { metadata: { suite: 'conformance', run: 'a b&c' } } }).nextItems();
      assert.deepEqual(page.map((s) => s.sandboxId), [sbx.sandboxId]);
      assert.deepEqual(page[0].metadata, { suite: 'conformance', run: 'a b&c' });
      const none = await Sandbox.list({ query: { metadata: { suite: 'missing' } } }).nextItems();
      assert.deepEqual(none, []);
      const all = await Sandbox.list().nextItems();
      assert.deepEqual(all.map((s) => s.sandboxId).sort(), [sbx.sandboxId, other.sandboxId].sort());
    } finally {
      await other.kill();
    }
  });

  await check('Sandbox.connect reaches the same sandbox', async () => {
    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal(again.sandboxId, sbx.sandboxId);
    assert.equal((await again.runCode('x')).text, '41');
    assert.equal(await again.isRunning(), true);
    await rejects(Sandbox.connect('doesnotexist00000000'), (e) => assert.ok(e instanceof SandboxNotFoundError));
  });

  await check('Sandbox.list pages with limit and nextToken, and the state filter', async () => {
    const made = [];
    try {
      for (let i = 0; i < 3; i++) made.push(await Sandbox.create({ metadata: { suite: 'paging' } }));
      const paginator = Sandbox.list({ query: { metadata: { suite: 'paging' } }, limit: 2 });
      const first = await paginator.nextItems();
      assert.equal(first.length, 2);
      assert.equal(paginator.hasNext, true);
      const second = await paginator.nextItems();
      assert.equal(second.length, 1);
      assert.equal(paginator.hasNext, false);
      assert.deepEqual([...first, ...second].map((s) => s.sandboxId).sort(), made.map((s) => s.sandboxId).sort());
      const listed = (await requests()).filter((r) => r.method === 'GET' && r.path.startsWith('/v2/sandboxes?'));
      assert.ok(listed.some((r) => /[?&]limit=2(&|$)/.test(r.path) && /[?&]nextToken=/.test(r.path)), 'a page sent limit and nextToken');
      // state filter: a paused sandbox is listed only when paused ones are asked for
      assert.equal(await Sandbox.pause(made[0].sandboxId), true);
      const running = await Sandbox.list({ query: { metadata: { suite: 'paging' }, state: ['running'] } }).nextItems();
      assert.deepEqual(running.map((s) => s.sandboxId).sort(), [made[1].sandboxId, made[2].sandboxId].sort());
      const paused = await Sandbox.list({ query: { metadata: { suite: 'paging' }, state: ['paused'] } }).nextItems();
      assert.deepEqual(paused.map((s) => [s.sandboxId, s.state]), [[made[0].sandboxId, 'paused']]);
    } finally {
      for (const m of made) await Sandbox.kill(m.sandboxId);
    }
  });

  await check('Sandbox.kill answers true, then false for a gone sandbox', async () => {
    const other = await Sandbox.create({ metadata: { suite: 'kill' } });
    assert.equal(await Sandbox.kill(other.sandboxId), true);
    assert.equal(await Sandbox.kill(other.sandboxId), false);
    assert.ok(!(await alive()).includes(other.sandboxId));
  });

  await check('pause: true, then false when paused; a paused sandbox is unreachable; connect resumes it (201)', async () => {
    const other = await Sandbox.create({ metadata: { suite: 'pause' } });
    try {
      assert.equal((await other.runCode('y = 7')).error, undefined);
      assert.equal(await other.pause(), true);
      assert.equal(await Sandbox.pause(other.sandboxId), false);
      assert.equal((await other.getInfo()).state, 'paused');
      assert.equal(await other.isRunning(), false);
      await rejects(Sandbox.pause('doesnotexist00000000'), (e) => assert.ok(e instanceof SandboxNotFoundError));
      const resumed = await Sandbox.connect(other.sandboxId);
      const connects = (await requests()).filter((r) => r.method === 'POST' && r.path === `/v2/sandboxes/${other.sandboxId}/connect`);
      assert.equal(connects.at(-1).status, 201);
      assert.equal((await resumed.getInfo()).state, 'running');
      assert.equal(await resumed.isRunning(), true);
    } finally {
      await Sandbox.kill(other.sandboxId);
    }
  });

  await check('create with allowInternetAccess:false and with network allowOut/denyOut: the server stores exactly those', async () => {
    const closed = await Sandbox.create({ allowInternetAccess: false });
    const listed = await Sandbox.create({ network: { allowOut: ['pypi.org', '10.0.0.0/8'], denyOut: [e2b.ALL_TRAFFIC] } });
    try {
      // SandboxDetail as the server keeps it (getInfo() does not return the network fields)
      const detail = async (id) => (await (await fetch(`${API}/sandboxes/${id}`, { headers: { 'X-API-Key': API_KEY } })).json());
      const da = await detail(closed.sandboxId);
      assert.equal(da.allowInternetAccess, false);
      assert.equal(da.network, null);
      const db = await detail(listed.sandboxId);
      assert.equal(db.allowInternetAccess, null);
      assert.deepEqual(db.network, { allowOut: ['pypi.org', '10.0.0.0/8'], denyOut: ['0.0.0.0/0'] });
    } finally {
      await Sandbox.kill(closed.sandboxId);
      await Sandbox.kill(listed.sandboxId);
    }
  });

  await check('wrong API key → AuthenticationError', async () => {
    await rejects(Sandbox.create({ apiKey: 'e2b_' + '1'.repeat(40) }), (e) => {
      assert.ok(e instanceof AuthenticationError);
      assert.equal(e.message, 'Unauthorized, please check your credentials. - Invalid API key, please visit https://e2b.dev/docs/api-key for more information.');
    });
  });

  await check('unknown template → 404 error', async () => {
    await rejects(Sandbox.create('nope-template'), (e) => {
      assert.ok(e instanceof SandboxError);
      assert.equal(e.message, "404: template 'nope-template' not found");
    });
  });

  await check('client disconnect interrupts the kernel (next run is not blocked)', async () => {
    const t0 = Date.now();
    await rejects(sbx.runCode('import time\nwhile True: time.sleep(0.05)', { timeoutMs: 500 }), (e) => {
      assert.ok(e instanceof TimeoutError);
      assert.match(e.message, /Execution timed out/);
    });
    const ex = await sbx.runCode('x')
    assert.equal(ex.text, '41');
    assert.ok(Date.now() - t0 < 4000);
  });

  // -------------------------------------------------------------------------------- fault directives

  await check('fault status 429 (no Retry-After) on create → RateLimitError', async () => {
    await addFaults({ surface: 'api', method: 'POST', path: '/v2/sandboxes', action: 'status', status: 429,
      body: { code: 429, message: 'Rate limit exceeded' } });
    await rejects(Sandbox.create(), (e) => {
      assert.ok(e instanceof RateLimitError);
      assert.equal(e.message, 'Rate limit exceeded, please try again later - Rate limit exceeded');
    });
  });

  await check('fault status 429 + Retry-After: 1 → the SDK retries once and succeeds', async () => {
    const n0 = (await requests()).filter((r) => r.path === '/v2/sandboxes' && r.method === 'POST').length;
    await addFaults({ surface: 'api', method: 'POST', path: '/v2/sandboxes', action: 'status', status: 429, retry_after: 1 });
    const s = await Sandbox.create();
    const n1 = (await requests()).filter((r) => r.path === '/v2/sandboxes' && r.method === 'POST').length;
    assert.equal(n1 - n0, 2);
    await s.kill();
  });

  await check('fault status 500 on create → SandboxError', async () => {
    await addFaults({ surface: 'api', path: '/v2/sandboxes', method: 'POST', action: 'status', status: 500, body: { code: 500, message: 'Failed to place sandbox' } });
    await rejects(Sandbox.create(), (e) => {
      assert.ok(e instanceof SandboxError);
      assert.equal(e.message, '500: Failed to place sandbox');
    });
  });

  await check('fault refuse on create → fetch failure, no sandbox', async () => {
    const before = (await alive()).length;
    await addFaults({ surface: 'api', path: '/v2/sandboxes', action: 'refuse' });
    await rejects(Sandbox.create(), (e) => assert.match(String(e.cause?.code || e.message), /ECONNRESET|UND_ERR_SOCKET|other side closed|fetch failed/));
    assert.equal((await alive()).length, before);
  });

  await check('fault close_after_request on create → error, but the sandbox exists', async () => {
    const before = await alive();
    await addFaults({ surface: 'api', path: '/v2/sandboxes', action: 'close_after_request' });
    await rejects(Sandbox.create({ metadata: { lost: 'answer' } }), (e) => assert.ok(e instanceof Error));
    const after = await alive();
    assert.equal(after.length, before.length + 1);
    const lost = await Sandbox.list({ query: { metadata: { lost: 'answer' } } }).nextItems();
    assert.equal(lost.length, 1);
    await Sandbox.kill(lost[0].sandboxId);
  });

  await check('fault reset_after_headers on create → error', async () => {
    await addFaults({ surface: 'api', path: '/v2/sandboxes', action: 'reset_after_headers' });
    await rejects(Sandbox.create(), (e) => assert.ok(e instanceof Error));
  });

  await check('fault stall on create → request timeout', async () => {
    await addFaults({ surface: 'api', path: '/v2/sandboxes', action: 'stall' });
    await rejects(Sandbox.create({ requestTimeoutMs: 500 }), (e) => assert.ok(e instanceof Error));
    await clearFaults();
  });

  await check('fault gone on /execute → TimeoutError "likely due to sandbox timeout"', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'gone' });
    await rejects(sbx.runCode('1'), (e) => {
      assert.ok(e instanceof TimeoutError);
      assert.equal(e.message.split(': This error')[0], JSON.stringify({ sandboxId: sbx.sandboxId, message: 'The sandbox was not found', code: 502 }));
      assert.match(e.message, /likely due to sandbox timeout/);
    });
  });

  await check('fault status 503 on /execute → SandboxError', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'status', status: 503 });
    await rejects(sbx.runCode('1'), (e) => {
      assert.ok(e instanceof SandboxError);
      assert.equal(e.message, '503 Service Unavailable');
    });
  });

  await check('fault cut_mid_line on /execute → runCode rejects', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'cut_mid_line', after: 1 });
    const seen = [];
    await rejects(sbx.runCode("print('one')\nprint('two')", { onStdout: (m) => seen.push(m.line) }), (e) => assert.ok(e instanceof Error));
    assert.deepEqual(seen, []);
    const log = (await requests()).filter((r) => r.path === '/execute').pop();
    assert.equal(log.fault, 'cut_mid_line');
    // the execution itself was not interrupted and the context still works
    assert.equal((await sbx.runCode('x')).text, '41');
  });

  await check('fault reset_after_headers on /execute → runCode rejects', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'reset_after_headers' });
    await rejects(sbx.runCode('1'), (e) => assert.ok(e instanceof Error));
  });

  await check('fault malformed_line on /execute → JSON parse error', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'malformed_line', after: 1 });
    await rejects(sbx.runCode("print('a')"), (e) => assert.ok(e instanceof SyntaxError, `got ${e}`));
  });

  await check('fault no_end_of_execution → the official client still succeeds', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'no_end_of_execution' });
    const ex = await sbx.runCode("print('z')\n5");
    assert.deepEqual(ex.logs.stdout, ['z\n']);
    assert.equal(ex.text, '5');
  });

  await check('fault stall after 1 line on /execute → execution timeout', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'stall', after: 1 });
    await rejects(sbx.runCode("print('a')", { timeoutMs: 600 }), (e) => {
      assert.ok(e instanceof TimeoutError);
      assert.match(e.message, /Execution timed out/);
    });
  });

  await check('fault refuse on /execute → runCode rejects', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'refuse' });
    await rejects(sbx.runCode('1'), (e) => assert.ok(e instanceof Error));
  });

  await check('fault close_after_request on /execute → rejects, the code still ran', async () => {
    await addFaults({ surface: 'interpreter', path: '/execute', action: 'close_after_request' });
    await rejects(sbx.runCode('ran_anyway = 1'), (e) => assert.ok(e instanceof Error));
    assert.equal((await sbx.runCode('ran_anyway')).text, '1');
  });

  await check('fault cut_mid_line on Process/Start → commands.run rejects', async () => {
    await addFaults({ surface: 'envd', path: '/process.Process/Start', action: 'cut_mid_line', after: 1 });
    await rejects(sbx.commands.run('echo a; sleep 0.2; echo b'), (e) => assert.ok(e instanceof Error));
  });

  await check('fault malformed_line on Process/Start → commands.run rejects', async () => {
    await addFaults({ surface: 'envd', path: '/process.Process/Start', action: 'malformed_line', after: 1 });
    await rejects(sbx.commands.run('echo a'), (e) => assert.ok(e instanceof Error));
  });

  await check('fault no_end_of_execution on Process/Start → missing EndStreamResponse', async () => {
    await addFaults({ surface: 'envd', path: '/process.Process/Start', action: 'no_end_of_execution' });
    await rejects(sbx.commands.run('echo a'), (e) => assert.match(e.message, /EndStreamResponse/));
  });

  await check('fault status 401 on files.read → AuthenticationError', async () => {
    await addFaults({ surface: 'envd', path: '/files', method: 'GET', action: 'status', status: 401,
      body: { code: 401, message: 'unauthorized access' } });
    await rejects(sbx.files.read('/home/user/hello.txt'), (e) => {
      assert.ok(e instanceof AuthenticationError);
      assert.equal(e.message, 'unauthorized access');
    });
  });

  await check('fault gone on ListDir → TimeoutError', async () => {
    await addFaults({ surface: 'envd', path: '/filesystem.Filesystem/ListDir', action: 'gone' });
    await rejects(sbx.files.list('/home/user'), (e) => assert.ok(e instanceof TimeoutError, `got ${e}`));
  });

  await check('fault kill_during on /execute → sandbox killed mid-run, TimeoutError', async () => {
    const victim = await Sandbox.create();
    await addFaults({ surface: 'interpreter', path: '/execute', sandbox: victim.sandboxId, action: 'kill_during', after: 2 });
    await rejects(victim.runCode("import time\nprint('a')\ntime.sleep(0.3)\nprint('b')"), (e) => {
      assert.ok(e instanceof TimeoutError, `got ${e}`);
      assert.match(e.message, /killed while the request was in progress/);
    });
    assert.ok(!(await alive()).includes(victim.sandboxId));
  });

  await clearFaults();

  // -------------------------------------------------------------------------------- lifetimes

  await check('expired TTL: the sandbox is gone', async () => {
    const short = await Sandbox.create({ timeoutMs: 1000 });
    await short.files.write('keep.txt', 'x');
    await sleep(1600);
    assert.ok(!(await alive()).includes(short.sandboxId));
    assert.equal(await short.isRunning(), false);
    await rejects(short.runCode('1'), (e) => assert.ok(e instanceof TimeoutError));
    await rejects(short.files.read('keep.txt'), (e) => assert.ok(e instanceof TimeoutError));
  });

  await check('kill: the sandbox is gone (502 → SDK errors) and not alive', async () => {
    assert.equal(await sbx.kill(), true);
    assert.ok(!(await alive()).includes(sbx.sandboxId));
    await rejects(sbx.runCode('1'), (e) => {
      assert.ok(e instanceof TimeoutError);
      assert.match(e.message, /The sandbox was not found/);
    });
    await rejects(sbx.commands.run('echo hi'), (e) => assert.ok(e instanceof Error));
    assert.equal(await sbx.isRunning(), false);
    assert.equal(await Sandbox.kill(sbx.sandboxId), false, 'a second kill answers 404 → false');
  });
} finally {
  const passed = results.filter((r) => r.ok).length;
  console.log(`\n${passed}/${results.length} checks passed`);
  stopServer();
  // Pooled keep-alive sockets of the SDK's HTTP agents would keep the event loop alive for minutes.
  await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)));
  process.exit(passed === results.length && results.length > 0 ? 0 : 1);
}
