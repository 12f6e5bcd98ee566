#!/usr/bin/env bash
# The prerequisite checks fail early and name what is missing: scripts/check-prerequisites.sh with a tool that is
# too old, one that is absent and a library that is too old; tools/node/check-engines.mjs with a pinned package
# whose engines range excludes the running Node. Each case checks the exact exit status and message.
# Usage: prerequisites_test.sh SOURCE_DIR NODE_EXECUTABLE NODE_INSTALL_DIR
set -uo pipefail
src="$1" node="$2" node_dir="$3"
check="$src/scripts/check-prerequisites.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0

# expect NAME WANT_STATUS WANT_STDERR COMMAND...
expect() {
  local name="$1" want_status="$2" want_err="$3"
  shift 3
  local err status
  err=$("$@" 2>&1 >/dev/null)
  status=$?
  if [ "$status" -ne "$want_status" ] || [ "$err" != "$want_err" ]; then
    printf 'FAIL %s: status %s (want %s), stderr:\n%s\nwanted:\n%s\n' "$name" "$status" "$want_status" "$err" \
      "$want_err"
    failures=$((failures + 1))
  else
    echo "ok   $name"
    passed=$((passed + 1))
  fi
}

expect "everything present" 0 "" "$check"

mkdir -p "$work/old-cmake"
printf '#!/bin/sh\necho "cmake version 3.18.4"\n' >"$work/old-cmake/cmake"
chmod +x "$work/old-cmake/cmake"
expect "an old cmake is named with its version" 1 \
  "prerequisites: cmake 3.18.4 is older than 3.25 (Debian package cmake: run scripts/setup.sh)" \
  env PATH="$work/old-cmake:$PATH" "$check"

# A PATH holding every tool the check and its script need, except ninja.
mkdir -p "$work/no-ninja"
for tool in bash env sh grep sort head cmake g++ pkg-config npm; do
  ln -s "$(command -v "$tool")" "$work/no-ninja/$tool"
done
ln -s "$(python3 -c 'import sys; print(sys.executable)')" "$work/no-ninja/python3"   # not a wrapper script
expect "a missing ninja is named with its Debian package" 1 \
  "prerequisites: ninja is missing (Debian package ninja-build: run scripts/setup.sh)" \
  env PATH="$work/no-ninja" "$check"

mkdir -p "$work/pc"
printf 'Name: libseccomp\nDescription: old\nVersion: 2.3.1\nLibs: -lseccomp\nCflags:\n' >"$work/pc/libseccomp.pc"
expect "an old library is named with its version" 1 \
  "prerequisites: libseccomp 2.3.1 is older than 2.5 (Debian package libseccomp-dev: run scripts/setup.sh)" \
  env PKG_CONFIG_PATH="$work/pc" "$check"

# check-engines.mjs resolves semver beside itself: run a copy from the pinned Node's install folder.
cp "$src/tools/node/check-engines.mjs" "$node_dir/check-engines-test.mjs"
cat >"$work/lock.json" <<'JSON'
{"lockfileVersion": 3, "packages": {
  "": {"name": "x"},
  "node_modules/fine": {"version": "1.0.0", "engines": {"node": ">=18"}},
  "node_modules/future": {"version": "2.0.0", "engines": {"node": ">=99"}},
  "node_modules/skipped": {"version": "3.0.0", "optional": true, "engines": {"node": ">=99"}}}}
JSON
version=$("$node" --version)
expect "a pinned package whose engines range excludes the Node is named" 1 \
  "Node.js $version is outside the engines range of 1 pinned package(s):
  future 2.0.0 needs node >=99 ($work/lock.json)" \
  "$node" "$node_dir/check-engines-test.mjs" "$work/lock.json"
expect "the pinned Node satisfies every pinned package" 0 "" \
  "$node" "$node_dir/check-engines-test.mjs" "$src/tests/package-lock.json" "$src/src/pyodide/host/package-lock.json"
rm -f "$node_dir/check-engines-test.mjs"

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
