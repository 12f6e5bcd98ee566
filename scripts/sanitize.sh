#!/usr/bin/env bash
# Builds the tests with a sanitizer and runs the CTest labels it is for (docs/testing.md, "Sanitizers"):
#   asan  AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer (build-asan): unit, security, contract
#   tsan  ThreadSanitizer (build-tsan): concurrency
# The presets build with clang and the confinement test switch; their test presets set the *SAN_OPTIONS under which
# every finding fails its test. Only the test targets of those labels are built: a labelled test whose target is
# missing from the list below is "Not Run", and fails the run. Usage: scripts/sanitize.sh [asan] [tsan] (default both)
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=("$@")
((${#sanitizers[@]})) || sanitizers=(asan tsan)
for sanitizer in "${sanitizers[@]}"; do
  case "$sanitizer" in
    asan)
      labels='^(unit|security|contract)$'
      targets=(unit_tests security_tests security_api_tests) ;;
    tsan)
      labels='^concurrency$'
      targets=(unit_tests pyodide_tests confinement_tests interpreter_tests e2b_tests bedrock_tests security_api_tests) ;;
    *)
      echo "sanitize: unknown sanitizer '$sanitizer' (asan or tsan)" >&2
      exit 2 ;;
  esac
  cmake --preset "$sanitizer" >/dev/null
  cmake --build --preset "$sanitizer" --target "${targets[@]}"
  ctest --preset "$sanitizer" -L "$labels"
done
