#!/usr/bin/env node
// Conformance: the official MCP client (@modelcontextprotocol/sdk) drives `code-interpreter mcp` over stdio with the
// real Pyodide backend: initialize, list, calls that succeed, fail, time out or are refused, a cancellation mid-call,
// state shared by calls, a fresh sandbox on request, progress and log notifications, and a shutdown that leaves no
// process behind.
//
//   node tests/conformance/mcp/scenario.mjs PATH/TO/code-interpreter      (exit 0 only if every check passes)
import assert from 'node:assert/strict';
import fs from 'node:fs';

const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
const { LoggingMessageNotificationSchema, LATEST_PROTOCOL_VERSION } = await import('@modelcontextprotocol/sdk/types.js');

const CLI = process.argv[2];
assert.ok(CLI, 'usage: scenario.mjs CODE_INTERPRETER');

let failures = 0;
async function check(name, body) {
  try {
    await body();
    console.log(`ok   ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

// Every process below `pid`, from /proc (pid -> parent pid).
function descendants(pid) {
  const parent = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(entry), Number(fields[1]));
    } catch { /* gone meanwhile */ }
  }
  const out = [];
  const walk = (p) => { for (const [child, pp] of parent) if (pp === p) { out.push(child); walk(child); } };
  walk(pid);
  return out;
}
const alive = (pid) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch { return false; }
};
const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

const transport = new StdioClientTransport({ command: CLI, args: ['mcp', '--max-sandboxes', '2'], stderr: 'inherit' });
// The client hands the initialize result's protocolVersion to a transport that takes it (HTTP ones do); the stdio
// transport does not, so this records the version the server answered with.
let negotiated;
transport.setProtocolVersion = (version) => { negotiated = version; };
const client = new Client({ name: 'conformance', version: '1.0.0' });
const logged = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logged.push(n.params));

await check('initialize negotiates the latest revision and declares tools and logging', async () => {
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, 'code-interpreter');
  const caps = client.getServerCapabilities();
  assert.ok(caps.tools, 'tools capability');
  assert.ok(caps.logging, 'logging capability');
  assert.equal(negotiated, LATEST_PROTOCOL_VERSION);
});
const serverProcess = transport._process;
const serverPid = transport.pid;

await check('tools/list is answered before any sandbox starts', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ['execute_code', 'reset_sandbox']);
  assert.match(tools[0].description, /The sandbox keeps its state between calls/);
  assert.match(tools[0].description, /call reset_sandbox to start over in a fresh one \(at most 2 sandboxes per session\)/);
  assert.deepEqual(tools[0].inputSchema.required, ['code']);
  assert.equal(tools[0].inputSchema.properties.timeout.maximum, 300);
  assert.deepEqual(descendants(serverPid), [], 'no child process before the first call');
});

await check('the first call starts the sandbox with progress notifications, and runs', async () => {
  await client.setLoggingLevel('info');
  const progress = [];
  const result = await client.callTool({ name: 'execute_code', arguments: { code: 'x = 6 * 7\nprint("set")' } },
    undefined, { onprogress: (p) => progress.push(p), timeout: 120000 });
  assert.equal(result.isError, false);
  assert.equal(text(result), 'set');
  assert.ok(progress.length >= 1, 'at least one progress notification');
  assert.equal(progress[0].message, 'starting the pyodide sandbox');
  assert.ok(logged.some((m) => m.level === 'info' && m.data === 'the sandbox started'), JSON.stringify(logged));
  assert.ok(descendants(serverPid).length >= 1, 'the sandbox runs in a child process');
});

await check('several calls share the sandbox\'s state', async () => {
  const result = await client.callTool({ name: 'execute_code', arguments: { code: 'x += 1\nx' } });
  assert.equal(result.isError, false);
  assert.equal(text(result), '43');
});

await check('a Python exception is a tool error with its traceback', async () => {
  const result = await client.callTool({ name: 'execute_code', arguments: { code: '1 / 0' } });
  assert.equal(result.isError, true);
  assert.match(text(result), /ZeroDivisionError: division by zero/);
});

await check('a timeout is a tool error saying so', async () => {
  const result = await client.callTool({ name: 'execute_code',
    arguments: { code: 'import time\nwhile True:\n    time.sleep(0.01)', timeout: 1 } });
  assert.equal(result.isError, true);
  assert.match(text(result), /\[TIMEOUT \(execution\): the code did not finish in time\./);
});

await check('an unknown argument is refused as a tool error and nothing runs', async () => {
  const result = await client.callTool({ name: 'execute_code', arguments: { code: 'x = 0', shell: 'ls' } });
  assert.equal(result.isError, true);
  assert.equal(text(result), "[error: unknown argument 'shell'; the arguments are code, timeout, files. Nothing was run.]");
});

await check('oversize arguments are refused as a tool error', async () => {
  const code = 'x = 0  # ' + 'a'.repeat(3 << 20);
  const result = await client.callTool({ name: 'execute_code', arguments: { code } });
  assert.equal(result.isError, true);
  assert.match(text(result), /^\[error: the arguments are \d+ bytes, more than the 2097152 this tool takes\. Nothing was run\.\]$/);
});

await check('a timeout over the maximum and a path in files are refused', async () => {
  const over = await client.callTool({ name: 'execute_code', arguments: { code: 'x = 0', timeout: 301 } });
  assert.equal(over.isError, true);
  assert.match(text(over), /at most 300/);
  const escape = await client.callTool({ name: 'execute_code', arguments: { code: 'x = 0', files: ['../../etc/passwd'] } });
  assert.equal(escape.isError, true);
  assert.equal(text(escape), "[error: '../../etc/passwd' in files is not a plain file name in the upload directory. Nothing was run.]");
});

await check('an unknown tool is a protocol error', async () => {
  await assert.rejects(client.callTool({ name: 'rm_rf', arguments: {} }), /unknown tool/);
});

await check('a call cancelled mid-run stops, and a later call still works with the state kept', async () => {
  const controller = new AbortController();
  const started = Date.now();
  const pending = client.callTool({ name: 'execute_code',
    arguments: { code: 'import time\nwhile True:\n    time.sleep(0.01)', timeout: 60 } }, undefined, { signal: controller.signal });
  setTimeout(() => controller.abort('enough'), 1000);
  await assert.rejects(pending);
  const after = await client.callTool({ name: 'execute_code', arguments: { code: 'print(x)' } });
  assert.equal(after.isError, false);
  assert.equal(text(after), '43');
  assert.ok(Date.now() - started < 30000, 'the cancelled call did not run to its timeout');
});

await check('reset_sandbox gives a fresh sandbox, at most --max-sandboxes per session', async () => {
  const reset = await client.callTool({ name: 'reset_sandbox', arguments: {} });
  assert.equal(reset.isError, false);
  const fresh = await client.callTool({ name: 'execute_code', arguments: { code: 'print(x)' } }, undefined, { timeout: 120000 });
  assert.equal(fresh.isError, true);
  assert.match(text(fresh), /NameError: name 'x' is not defined/);
  const refused = await client.callTool({ name: 'reset_sandbox', arguments: {} });
  assert.equal(refused.isError, true);
});

await check('a ping is answered', async () => {
  assert.deepEqual(await client.ping(), {});
});

await check('closing the session ends the server by itself and leaves no process behind', async () => {
  const children = descendants(serverPid);
  assert.ok(children.length >= 1, 'the sandbox child was running');
  await client.close();
  assert.equal(serverProcess.exitCode, 0, 'the server exited 0 on end of input, not by a signal');
  assert.equal(serverProcess.signalCode, null);
  const deadline = Date.now() + 5000;
  while (children.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(children.filter(alive), [], 'no child process remains');
});

if (failures > 0) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all checks passed');
