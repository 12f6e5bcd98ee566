#!/usr/bin/env bash
# Installs what building code_interpreter needs on Debian 12: the compiler, CMake, and the libraries from
# Debian's packages. Pyodide and Deno come from npm during the build (pinned by src/pyodide/host/package-lock.json),
# and so does the Node.js the tests run (tools/node/package-lock.json): Debian 12's nodejs (18.x, brought by its npm)
# only runs npm.
# Extra Debian package names given as arguments are installed too (scripts/fuzz.sh adds clang).
set -euo pipefail

packages=(g++ cmake ninja-build pkg-config ca-certificates
          libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libspdlog-dev libfmt-dev catch2 zlib1g-dev
          libseccomp-dev libedit-dev doxygen python3)
packages+=("$@")
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
