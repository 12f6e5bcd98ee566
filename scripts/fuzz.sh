#!/usr/bin/env bash
# Coverage-guided fuzzing of the hostile-input decoders with libFuzzer (clang), each for SECONDS (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
./scripts/setup.sh
command -v clang++ >/dev/null || { echo "fuzz.sh needs clang++ (apt-get install clang)" >&2; exit 1; }
CXX=clang++ CXXFLAGS="-fsanitize=fuzzer-no-link,address,undefined" cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCODE_INTERPRETER_LIBFUZZER=ON \
  -DCODE_INTERPRETER_BUILD_EXAMPLES=OFF -DCODE_INTERPRETER_BUILD_BENCHMARKS=OFF >/dev/null
for target in frame_fuzz output_fuzz ndjson_fuzz envelope_fuzz base64_fuzz event_stream_fuzz; do
  cmake --build build-fuzz --target "$target" "${target}_seeds"
  corpus="build-fuzz/corpus/$target"
  ./build-fuzz/tests/fuzz/"${target}_seeds" --write-seeds "$corpus"
  ./build-fuzz/tests/fuzz/"$target" -max_total_time="$seconds" -max_len=200000 "$corpus"
done
