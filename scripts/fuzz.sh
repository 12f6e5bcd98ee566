#!/usr/bin/env bash
# Coverage-guided fuzzing of the hostile-input decoders with libFuzzer (clang, ASan+UBSan): each target for
# SECONDS (default 60), starting from its seed corpus, as many at a time as there are CPUs. A finding makes the
# script end with a non-zero status once the targets running beside it are done, and leaves
# the crashing input in build-asan/ (libFuzzer prints its path). Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(frame_fuzz output_fuzz ndjson_fuzz envelope_fuzz base64_fuzz event_stream_fuzz python_error_fuzz)
# clang and its libFuzzer runtime come from Debian's clang and libclang-rt-14-dev.
./scripts/setup.sh clang libclang-rt-14-dev
# Quiet when it works; when configuring or building fails, the end of its output and what failed.
quiet() {
  local what="$1" out
  shift
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out" | tail -n 60 >&2
    echo "fuzz: $what failed" >&2
    exit 1
  fi
}
# The asan preset's build (build-asan/): scripts/sanitize.sh asan builds the tests there too, on the same objects.
quiet "configuring build-asan" cmake --preset asan
quiet "building the fuzz targets" cmake --build --preset asan --target "${targets[@]}" "${targets[@]/%/_seeds}"
mkdir -p build-asan/logs
# libFuzzer runs on one thread: as many targets run side by side as the machine has CPUs.
fuzz_one() {
  local target="$1" corpus="build-asan/corpus/$1" log="build-asan/logs/$1.log" runs
  ./build-asan/tests/fuzz/"${target}_seeds" --write-seeds "$corpus"
  if ! (cd build-asan && ./tests/fuzz/"$target" -max_total_time="$seconds" -max_len=200000 -print_final_stats=1 \
          "corpus/$target") >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $target found a failing input (log: $log)" >&2
    return 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz: $target: ${runs:-?} inputs in ${seconds} s, no finding"
}
parallel=$(nproc)
failed=0
running=0
for target in "${targets[@]}"; do
  if ((running >= parallel)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
