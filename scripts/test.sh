#!/usr/bin/env bash
# Sets everything up, builds the library, examples, tests and benchmarks, fuzzes every hostile-input decoder with
# libFuzzer for a bounded time (FUZZ_SECONDS per decoder, default 15), and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh clang libclang-rt-14-dev
./scripts/check-prerequisites.sh --fuzz
./scripts/build.sh -DCODE_INTERPRETER_BUILD_TESTS=ON -DCODE_INTERPRETER_BUILD_BENCHMARKS=ON \
  -DCODE_INTERPRETER_SECURITY_TEST_SWITCHES=ON
./scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
ctest --preset default
