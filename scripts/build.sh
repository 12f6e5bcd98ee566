#!/usr/bin/env bash
# Configures and builds into build/ (the "default" preset). Extra arguments go to the configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default -G Ninja "$@" >/dev/null
cmake --build --preset default
