#!/usr/bin/env bash
# Checks that everything building and testing code_interpreter needs is present and new enough, and names what is
# not (with the Debian package that brings it), so a missing or old tool fails here rather than hundreds of tests
# later. scripts/setup.sh installs all of it on Debian 12; this runs after it. The Node.js the tests use is pinned
# and checked against every pinned package's engines range when CMake configures (cmake/NodeRuntime.cmake).
# Usage: scripts/check-prerequisites.sh [--fuzz]   (--fuzz: also clang and its libFuzzer runtime)
# Exit status: 0 all present; 1 something missing or too old (one line each on stderr).
set -uo pipefail
fuzz=0
[ "${1:-}" = "--fuzz" ] && fuzz=1

problems=()
missing() { problems+=("$1 is missing (Debian package $2: run scripts/setup.sh)"); }

# version_at_least HAVE WANT: true if dotted version HAVE >= WANT.
version_at_least() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# need_tool COMMAND PACKAGE [MIN_VERSION VERSION_COMMAND...]
need_tool() {
  local tool="$1" package="$2" min="${3:-}"
  shift 3 2>/dev/null || shift $#
  if ! command -v "$tool" >/dev/null 2>&1; then
    missing "$tool" "$package"
    return
  fi
  [ -n "$min" ] || return
  local have
  have=$("$@" 2>/dev/null | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -n 1)
  if [ -z "$have" ]; then
    problems+=("$tool does not report a version (need $min or newer; Debian package $package: run scripts/setup.sh)")
  elif ! version_at_least "$have" "$min"; then
    problems+=("$tool $have is older than $min (Debian package $package: run scripts/setup.sh)")
  fi
}

# need_library PKG_CONFIG_MODULE PACKAGE MIN_VERSION (libraries are found as CMake finds them: by pkg-config or
# their package config, both installed by the -dev package)
need_library() {
  local have
  if ! have=$(pkg-config --modversion "$1" 2>/dev/null); then
    missing "$1" "$2"
  elif ! version_at_least "$have" "$3"; then
    problems+=("$1 $have is older than $3 (Debian package $2: run scripts/setup.sh)")
  fi
}

need_tool cmake cmake 3.25 cmake --version
need_tool ninja ninja-build
need_tool g++ g++ 12 g++ -dumpfullversion
need_tool pkg-config pkg-config
need_tool python3 python3 3.9 python3 --version
need_tool npm npm
if command -v pkg-config >/dev/null 2>&1; then
  need_library nlohmann_json nlohmann-json3-dev 3.10
  need_library spdlog libspdlog-dev 1.10
  need_library fmt libfmt-dev 9
  need_library catch2 catch2 2.13
  need_library libcurl libcurl4-openssl-dev 7.88
  need_library zlib zlib1g-dev 1.2
  need_library libcrypto libssl-dev 3.0
  need_library libseccomp libseccomp-dev 2.5
  need_library libedit libedit-dev 3.1
fi
if ((fuzz)); then
  need_tool clang++ clang 14 clang++ --version
  if command -v clang++ >/dev/null 2>&1; then
    runtime=$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
    [ -f "$runtime" ] || missing "libFuzzer's runtime (libclang_rt.fuzzer)" libclang-rt-14-dev
  fi
fi

if ((${#problems[@]})); then
  for p in "${problems[@]}"; do echo "prerequisites: $p" >&2; done
  exit 1
fi
echo "prerequisites: all present"
