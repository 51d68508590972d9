#!/usr/bin/env bash
# Configures and builds kforge into build/ (or $KFORGE_BUILD_DIR); extra arguments go to
# CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KFORGE_BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
