#!/usr/bin/env bash
# The tests: set up, build, run every test (GPU tests skip without a GPU), then the unit
# tests again under ASan+UBSan (those of kforge's C code: a test labelled python runs
# only the Python runner, which a sanitizer build does not change).
set -euo pipefail
cd "$(dirname "$0")/.."
# The fork servers the tests' evals leave (runner.server_idle_s) end with their sockets.
trap 'rm -rf build/test-cache/servers' EXIT
tools/setup.sh -DKB_WERROR=ON
tools/build.sh -DKB_WERROR=ON
# Two tests more than there are cores: with one a core the suite left 23% of the 2-core
# machine's CPU idle (tests waiting on hangs, deadlines and the mock LLM); ctest took
# 721 s so, 678 s with one more; at 2925688, 599 s with one more and 509 s with two
# (tools/bench/README.md, inner).
ctest --test-dir build --output-on-failure -j "$(( $(nproc) + 2 ))" --timeout 900
# The sanitizer build's tests use the main build's test cache, filled by now
# (tests/CMakeLists.txt, KB_TEST_CACHE_DIR).
KFORGE_BUILD_DIR=build-asan tools/build.sh -DKB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DKB_TEST_CACHE_DIR="$PWD/build/test-cache"
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -L unit -LE 'slow|python'
