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
# AddressSanitizer build (scripts/sanitize.sh); the default build runs every other test. Its debug information is
# line tables only (-g1): enough for a backtrace with file and line, and a third less compile time than -g.
step build ./scripts/build.sh -DCODE_INTERPRETER_BUILD_TESTS=ON -DCODE_INTERPRETER_BUILD_BENCHMARKS=ON \
  -DCODE_INTERPRETER_SECURITY_TEST_SWITCHES=ON -DCODE_INTERPRETER_BUILD_UNIT_AND_CONTRACT_TESTS=OFF \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
step fuzz ./scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
# Four tests at a time, of which a test that runs Deno takes two slots (tests/CMakeLists.txt,
# CODE_INTERPRETER_DENO_TEST_SLOTS): those tests keep the cores busy, the ones against the local servers mostly wait.
step ctest ctest --preset default -LE '^security_both$'
step asan ./scripts/sanitize.sh asan
step tsan ./scripts/sanitize.sh tsan
