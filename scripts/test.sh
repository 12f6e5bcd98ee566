#!/usr/bin/env bash
# Sets everything up, builds the library, examples, tests and benchmarks, and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh -DCODE_INTERPRETER_BUILD_TESTS=ON -DCODE_INTERPRETER_BUILD_BENCHMARKS=ON
ctest --preset default
