#!/usr/bin/env node
// The official client's side of the Bedrock AgentCore benchmark: @aws-sdk/client-bedrock-agentcore against
// the local server started with --bench (it answers at once, with no signature check and no code run, so
// the figures are the client's own cost: SigV4 signing, HTTP, event-stream decoding).
//
//   node tests/bench/bedrock_bench_js.mjs --url U [--calls N] [--concurrency 32] [--concurrent-calls M]
//        [--server-pid P]
//
// Prints one JSON line: {"cpu_us_per_call","rtt_median_ms","rtt_p99_ms","throughput_per_s","peak_rss_kib",
// "server_cpu_share",...}

function arg(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const url = arg('--url');
const calls = Number(arg('--calls', '1000'));
const concurrency = Number(arg('--concurrency', '32'));
const serverPid = arg('--server-pid');
const concurrentCalls = Number(arg('--concurrent-calls', String(Math.max(10, Math.ceil(calls / 10)))));
if (!url || !(calls > 0) || !(concurrency > 0) || !(concurrentCalls > 0)) {
  process.stderr.write('usage: bedrock_bench_js.mjs --url U [--calls N] [--concurrency C] [--concurrent-calls M] [--server-pid P]\n');
  process.exit(2);
}

// The SDK warns once on Node 20 (support notice); keep stderr for real problems.
process.removeAllListeners('warning');
process.on('warning', (w) => { if (!/NodeVersionSupportWarning/.test(`${w.name} ${w.message}`)) console.error(w); });

const {
  BedrockAgentCoreClient, StartCodeInterpreterSessionCommand, StopCodeInterpreterSessionCommand,
  InvokeCodeInterpreterCommand,
} = await import('@aws-sdk/client-bedrock-agentcore');
const { readFileSync } = await import('node:fs');
const http = await import('node:http');

const ID = 'aws.codeinterpreter.v1'; // docs/protocols/bedrock.md "Interpreters and session lifetime"
// Same credentials as the server's defaults; in --bench mode the server does not check them, but the client
// still signs every request, which is part of the cost being measured.
const client = new BedrockAgentCoreClient({
  region: 'us-east-1',
  endpoint: url,
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  maxAttempts: 1,
  // One connection per concurrent session (the default pool allows 50 sockets per host).
  requestHandler: { httpAgent: new http.Agent({ keepAlive: true, maxSockets: Math.max(50, concurrency) }) },
});

// utime + stime of the server process in seconds (/proc/<pid>/stat fields 14 and 15; USER_HZ is 100 on Linux).
function serverCpuSeconds() {
  if (!serverPid) return 0;
  const text = readFileSync(`/proc/${serverPid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

// One executeCode call, consuming the whole event stream (docs/protocols/bedrock.md "InvokeCodeInterpreter": the connection is held until then).
async function run(sessionId) {
  const out = await client.send(new InvokeCodeInterpreterCommand({
    codeInterpreterIdentifier: ID, sessionId, name: 'executeCode', arguments: { code: 'x', language: 'python' },
  }));
  let n = 0;
  for await (const ev of out.stream) if (ev.result) n++;
  if (n !== 1) throw new Error(`expected one result event, got ${n}`);
}
const startSession = async () => (await client.send(new StartCodeInterpreterSessionCommand({ codeInterpreterIdentifier: ID }))).sessionId;

const created = [];
try {
  const sid = await startSession();
  created.push(sid);
  for (let i = 0; i < 50; i++) await run(sid); // warm-up: JIT, connection pool

  const rtts = new Float64Array(calls);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    await run(sid);
    rtts[i] = Number(process.hrtime.bigint() - t0) / 1e6;
  }
  const cpu = process.cpuUsage(cpu0);
  const sorted = Array.from(rtts).sort((a, b) => a - b);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

  const pool = await Promise.all(Array.from({ length: concurrency }, () => startSession()));
  created.push(...pool);
  await Promise.all(pool.map((s) => run(s))); // warm each connection
  const server0 = serverCpuSeconds();
  const t0 = process.hrtime.bigint();
  await Promise.all(pool.map(async (s) => {
    for (let i = 0; i < concurrentCalls; i++) await run(s);
  }));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const serverShare = (serverCpuSeconds() - server0) / seconds;

  const result = {
    client: '@aws-sdk/client-bedrock-agentcore@3.1141.0',
    calls,
    cpu_us_per_call: Number(((cpu.user + cpu.system) / calls).toFixed(2)),
    rtt_median_ms: Number(pct(50).toFixed(4)),
    rtt_p99_ms: Number(pct(99).toFixed(4)),
    concurrency,
    concurrent_calls_each: concurrentCalls,
    throughput_per_s: Number(((concurrency * concurrentCalls) / seconds).toFixed(1)),
    peak_rss_kib: process.resourceUsage().maxRSS,
    server_cpu_share: serverPid ? Number(serverShare.toFixed(3)) : null,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  await Promise.allSettled(created.map((sessionId) =>
    client.send(new StopCodeInterpreterSessionCommand({ codeInterpreterIdentifier: ID, sessionId }))));
}
process.exit(0);
