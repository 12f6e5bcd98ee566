#!/usr/bin/env node
// The official client's side of the E2B benchmark: @e2b/code-interpreter against the local server started
// with --bench (it answers at once, so the figures are the client's own cost).
//
//   node tests/bench/e2b_bench_js.mjs --api-url U --sandbox-url S [--calls N] [--concurrency 32]
//        [--concurrent-calls M]
//
// Prints one JSON line: {"cpu_us_per_call","rtt_median_ms","rtt_p99_ms","throughput_per_s","peak_rss_kib",...}

function arg(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const apiUrl = arg('--api-url');
const sandboxUrl = arg('--sandbox-url');
const calls = Number(arg('--calls', '1000'));
const concurrency = Number(arg('--concurrency', '32'));
const serverPid = arg('--server-pid');
const concurrentCalls = Number(arg('--concurrent-calls', String(Math.max(10, Math.ceil(calls / 10)))));
if (!apiUrl || !sandboxUrl || !(calls > 0) || !(concurrency > 0) || !(concurrentCalls > 0)) {
  process.stderr.write('usage: e2b_bench_js.mjs --api-url U --sandbox-url S [--calls N] [--concurrency C] [--concurrent-calls M]\n');
  process.exit(2);
}

// docs/protocols/e2b.md "SDK endpoint settings": the SDK takes its endpoints from these.
process.env.E2B_API_URL = apiUrl;
process.env.E2B_SANDBOX_URL = sandboxUrl;
process.env.E2B_API_KEY ||= 'e2b_' + '0'.repeat(40);

const { Sandbox } = await import('@e2b/code-interpreter');
const { readFileSync } = await import('node:fs');

// utime + stime of the server process in seconds (/proc/<pid>/stat fields 14 and 15; USER_HZ is 100 on Linux).
function serverCpuSeconds() {
  if (!serverPid) return 0;
  const text = readFileSync(`/proc/${serverPid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const created = [];
try {
  const sbx = await Sandbox.create();
  created.push(sbx);
  for (let i = 0; i < 50; i++) await sbx.runCode('x'); // warm-up: JIT, connection pool

  const rtts = new Float64Array(calls);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    await sbx.runCode('x');
    rtts[i] = Number(process.hrtime.bigint() - t0) / 1e6;
  }
  const cpu = process.cpuUsage(cpu0);
  const sorted = Array.from(rtts).sort((a, b) => a - b);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

  const pool = await Promise.all(Array.from({ length: concurrency }, () => Sandbox.create()));
  created.push(...pool);
  await Promise.all(pool.map((s) => s.runCode('x'))); // warm each connection
  const server0 = serverCpuSeconds();
  const t0 = process.hrtime.bigint();
  await Promise.all(pool.map(async (s) => {
    for (let i = 0; i < concurrentCalls; i++) await s.runCode('x');
  }));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const serverShare = (serverCpuSeconds() - server0) / seconds;

  const result = {
    client: '@e2b/code-interpreter@2.8.0',
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
  await Promise.allSettled(created.map((s) => s.kill()));
}
process.exit(0);
