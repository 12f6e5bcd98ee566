#!/usr/bin/env bash
# Sets everything up, builds, and runs examples/hello.py in the local Pyodide sandbox (real CPython 3.14 in
# WebAssembly, in a Deno process with no network and no access to this machine's files), printing its output.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/check-prerequisites.sh >/dev/null
./scripts/build.sh -DCODE_INTERPRETER_BUILD_TESTS=OFF -DCODE_INTERPRETER_BUILD_BENCHMARKS=OFF >/dev/null
exec ./build/bin/code-interpreter run examples/hello.py
