#!/usr/bin/env bash
# Builds the tests with a sanitizer and runs the CTest labels it is for (docs/testing.md, "Sanitizers"):
#   asan  AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer (build-asan/, the tree scripts/fuzz.sh
#         builds its targets in): the labels unit and contract, and the security battery's
#         both-layers registration
#   tsan  ThreadSanitizer (build-tsan/): the label concurrency
# The presets build with clang and the confinement test switch; their test presets set the *SAN_OPTIONS under which
# every finding fails its test. Only the targets of those tests are built: a selected test whose target is missing
# below is "Not Run" and fails the run. Prints each build's and each run's time.
# Usage: scripts/sanitize.sh [asan] [tsan] (default both)
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=("$@")
((${#sanitizers[@]})) || sanitizers=(asan tsan)
for sanitizer in "${sanitizers[@]}"; do
  case "$sanitizer" in
    asan)
      select=(-L '^(unit|contract|security_both)$')
      targets=(unit_tests contract_tests security_tests security_api_tests) ;;
    tsan)
      select=(-L '^concurrency$')
      targets=(unit_tests contract_tests pyodide_tests confinement_tests interpreter_tests mcp_tests processes_tests) ;;
    *)
      echo "sanitize: unknown sanitizer '$sanitizer' (asan or tsan)" >&2
      exit 2 ;;
  esac
  start=$SECONDS
  cmake --preset "$sanitizer" >/dev/null
  cmake --build --preset "$sanitizer" --target "${targets[@]}"
  echo "sanitize: $sanitizer build took $((SECONDS - start)) s"
  start=$SECONDS
  # Unoptimised and instrumented, a frame of a recursive function is many times its size in a release build (the
  # JSON serialiser: 8.5 KiB a level under AddressSanitizer): the cases that nest 1000 levels deep need more than
  # the usual 8 MiB of stack. 64 MiB for the tests' main threads, and for every thread they start (glibc's default
  # thread stack follows this limit). The soft limit only; where the hard limit is lower, the tests run with it.
  if ! ulimit -S -s 65536 2>/dev/null; then
    echo "sanitize: cannot raise the stack limit to 64 MiB (hard limit: $(ulimit -H -s) KiB)" >&2
  fi
  ctest --preset "$sanitizer" "${select[@]}"
  echo "sanitize: $sanitizer tests took $((SECONDS - start)) s"
done
