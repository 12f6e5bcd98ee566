// The baseline of pyodide_bench: Pyodide driven directly, with nothing of the sandbox's transport in between.
//
//   deno run <the sandbox's flags> raw_pyodide.mjs <runtime dir> <warm-up calls> <timed calls> [--interrupt-buffer]
//     [--snapshot FILE] [--idle-ms N]
//
// It loads Pyodide and runner.py the way host.mjs does, so the only difference to the sandbox is the C++ <-> Deno
// frame transport: the stdin worker, the shared ring to the main thread, and the pipes. It prints one JSON line:
//   {"cold_ms": <performance.now() when the first run("1+1") resolved>, "warm_ms": [<one per timed call>],
//    "pyodide": "<version>", "deno": "<version>", "rss_mib": <resident memory after N ms idle, with --idle-ms>}
// performance.now() counts from the start of the Deno runtime, which is the closest this process can see of its
// own start without extra permissions. Timed calls are reported individually so the C++ side computes the
// statistics of both columns with the same code.
const [runtimeArg, warmupArg = "0", countArg = "0", ...flags] = Deno.args;
if (!runtimeArg) {
  console.error("usage: raw_pyodide.mjs <runtime dir> [warm-up calls] [timed calls] [--interrupt-buffer]");
  Deno.exit(64);
}
const runtimeDir = new URL(runtimeArg.endsWith("/") ? runtimeArg : `${runtimeArg}/`, "file:///");
const warmup = Number.parseInt(warmupArg, 10) || 0;
const count = Number.parseInt(countArg, 10) || 0;
// host.mjs always installs an interrupt buffer, which Python polls while it runs; off by default so the baseline is
// plain Pyodide, and available to measure what the buffer itself costs.
const withInterruptBuffer = flags.includes("--interrupt-buffer");
// --snapshot FILE: restore the library's snapshot file (an 80-byte header, then the image) instead of loading.
const snapshotAt = flags.indexOf("--snapshot");
// --idle-ms N: after the calls, sit idle N ms, then report the process's resident memory.
const idleAt = flags.indexOf("--idle-ms");
const idleMs = idleAt >= 0 ? Number.parseInt(flags[idleAt + 1], 10) || 0 : -1;
const snapshot = snapshotAt >= 0 ? Deno.readFileSync(flags[snapshotAt + 1]).subarray(80) : undefined;

const { loadPyodide } = await import(new URL("./node_modules/pyodide/pyodide.mjs", runtimeDir).href);

// The same options as host.mjs init().
const pyodide = await loadPyodide({
  indexURL: new URL("./node_modules/pyodide/", runtimeDir).pathname,
  jsglobals: Object.create(null),
  stdout: () => {},
  stderr: () => {},
  ...(snapshot ? { _loadSnapshot: snapshot } : {}),
});
if (withInterruptBuffer) pyodide.setInterruptBuffer(new Uint8Array(new SharedArrayBuffer(1)));

// runner.py becomes the module _code_interpreter_runner, exactly as host.mjs builds it.
const source = await Deno.readTextFile(new URL("./runner.py", runtimeDir));
const runner = pyodide.runPython("import types as _t\n_m = _t.ModuleType('_code_interpreter_runner')\n_m");
pyodide.runPython(source, { globals: runner.__dict__ });

function check(answer) {
  const outcome = JSON.parse(answer);
  if (outcome.status !== "ok" || outcome.value !== "2") {
    console.error(`unexpected outcome of 1+1: ${answer}`);
    Deno.exit(1);
  }
}

const first = await runner.run("1+1", "{}");
const coldMs = performance.now();
check(first);

for (let i = 0; i < warmup; ++i) check(await runner.run("1+1", "{}"));
const warmMs = new Array(count);
for (let i = 0; i < count; ++i) {
  const t0 = performance.now();
  const answer = await runner.run("1+1", "{}");
  warmMs[i] = performance.now() - t0;
  check(answer);
}

let rssMib;
if (idleMs >= 0) {
  await new Promise((resolve) => setTimeout(resolve, idleMs));
  rssMib = Deno.memoryUsage().rss / 1048576;
}
const line = JSON.stringify({
  cold_ms: coldMs, warm_ms: warmMs, pyodide: pyodide.version, deno: Deno.version.deno, rss_mib: rssMib,
});
const bytes = new TextEncoder().encode(`${line}\n`);
for (let off = 0; off < bytes.length;) off += Deno.stdout.writeSync(bytes.subarray(off));
Deno.exit(0);
