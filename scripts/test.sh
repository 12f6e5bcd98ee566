#!/usr/bin/env bash
# Sets everything up, builds the library, examples, tests and benchmarks, fuzzes every hostile-input decoder with
# libFuzzer for a bounded time (FUZZ_SECONDS per decoder, default 15), runs every test with CTest, then builds the
# tests with the sanitizers and runs theirs (scripts/sanitize.sh: ASan+UBSan, then TSan). Prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
step() {
  local name="$1" start=$SECONDS
  shift
  "$@"
  echo "test: $name took $((SECONDS - start)) s"
}
step setup ./scripts/setup.sh clang libclang-rt-14-dev
step prerequisites ./scripts/check-prerequisites.sh --fuzz
# The unit and contract suites, and the security battery's both-layers registration, are built and run once, in the
# AddressSanitizer build (scripts/sanitize.sh); the default build runs every other test.
step build ./scripts/build.sh -DCODE_INTERPRETER_BUILD_TESTS=ON -DCODE_INTERPRETER_BUILD_BENCHMARKS=ON \
  -DCODE_INTERPRETER_SECURITY_TEST_SWITCHES=ON -DCODE_INTERPRETER_BUILD_UNIT_AND_CONTRACT_TESTS=OFF
step fuzz ./scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
step ctest ctest --preset default -LE '^security_both$'
step asan ./scripts/sanitize.sh asan
step tsan ./scripts/sanitize.sh tsan
