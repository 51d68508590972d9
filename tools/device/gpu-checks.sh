#!/usr/bin/env bash
# On a GPU host: build from scratch, run every gpu-labelled test (the CUDA demo among
# them), and leave in $OUT (default /tmp/kforge-gpu):
#   gpu.txt           the GPUs (nvidia-smi -L), torch and its CUDA
#   build.log         the build
#   gpu-tests.log     ctest -L gpu
#   demo-report.txt, demo-report.json, demo-status.txt, demo-stages.txt, demo-run.tgz
#                     the CUDA demo's report, status and stage times, and its run
#                     directory tarred (builds left out)
# The demo test (tests/e2e/test_demo_gpu.py) keeps its run where KFORGE_DEMO_GPU_RUN says,
# which this script sets (default /tmp/kforge-gpu-demo/run): ctest gives every test its
# own KFORGE_TEST_TMP, so that is the one way to find the run afterwards.
# Without a GPU the gpu tests skip; gpu.txt and demo-report.txt then say why, and the exit
# status is 0. On a GPU host it is 1 when the build or a test fails or the demo left no
# run. Usage, from anywhere (extra arguments go to ctest; BUILD, default build-gpu, is the
# build directory, relative to the project root):
#   [source .devdeps/env.sh;] tools/device/gpu-checks.sh [ctest arguments]
# A GPU host without libyaml, jansson or libmicrohttpd (kforge view) gets them as Debian
# packages carried in .devdeps: ../shared/tools/device-deps.sh libmicrohttpd12 libmicrohttpd-dev
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-/tmp/kforge-gpu}
build=${BUILD:-build-gpu}
demo=${KFORGE_DEMO_GPU_RUN:-/tmp/kforge-gpu-demo/run}
export KFORGE_DEMO_GPU_RUN=$demo
status=0
mkdir -p "$out"
# What an earlier call left must not pass for this one's.
rm -f "$out"/gpu.txt "$out"/build.log "$out"/gpu-tests.log "$out"/demo-*

# The Python the tests use, found the way tests/e2e/kfe2e.py finds it.
py=
for cand in "${KFORGE_PYTHON:-}" /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3)"; do
  if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c "import torch" >/dev/null 2>&1; then
    py=$cand
    break
  fi
done

gpu=0
if ! command -v nvidia-smi >/dev/null; then
  echo "no GPU: nvidia-smi is not installed" > "$out/gpu.txt"
elif ! nvidia-smi -L > "$out/gpu.txt" 2>&1 || ! grep -q '^GPU ' "$out/gpu.txt"; then
  sed -i '1s/^/no GPU: nvidia-smi -L says: /' "$out/gpu.txt"
else
  gpu=1
fi
if [ -n "$py" ]; then
  "$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda,
'cuda available', torch.cuda.is_available(), '($py)')" >> "$out/gpu.txt" 2>&1
else
  echo "no Python imports torch (tried \$KFORGE_PYTHON, /usr/bin/python3, /usr/local/bin/python3, python3)" >> "$out/gpu.txt"
fi
cat "$out/gpu.txt"

# Debian's libmicrohttpd.pc names gnutls as a private requirement; a host with the
# library (libgnutls30) but not its .pc (no libgnutls28-dev, as the carried packages
# leave it) fails pkg-config for want of a file the build does not use. A stub .pc
# answers that one question; the link still takes the host's libgnutls.so.30.
# (The errors are taken whole first: under pipefail, pkg-config's own failure would fail
# a pipe into grep even where grep matched.)
mhd_why=$(pkg-config --print-errors --exists libmicrohttpd 2>&1) || true
if ! pkg-config --exists libmicrohttpd 2>/dev/null && [[ $mhd_why == *"'gnutls'"* ]]; then
  stub=$(mktemp -d)
  printf 'Name: gnutls\nDescription: stub for libmicrohttpd.pc (gpu-checks.sh)\nVersion: 3.8.0\n' > "$stub/gnutls.pc"
  export PKG_CONFIG_PATH=${PKG_CONFIG_PATH:+$PKG_CONFIG_PATH:}$stub
fi

start=$(date +%s)
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build "$build" -j "$(nproc)"; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  echo "the build failed (see $out/build.log)" | tee "$out/demo-report.txt"
  exit 1
fi
echo "build: $(( $(date +%s) - start )) s"

# A fresh demo run: kforge refuses a directory that holds one. Only a run directory is
# removed, never something else that happens to be there.
if [ -e "$demo/run.json" ]; then
  rm -rf "$demo"
elif [ -e "$demo" ] && [ -n "$(ls -A "$demo")" ]; then
  echo "KFORGE_DEMO_GPU_RUN=$demo exists and is not a kforge run directory; name another" | tee "$out/demo-report.txt"
  exit 1
fi
mkdir -p "$(dirname "$demo")"
ctest --test-dir "$build" -L gpu --output-on-failure --timeout 3000 "$@" 2>&1 | tee "$out/gpu-tests.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if [ -f "$demo/run.json" ]; then
  "$build/kforge" report "$demo" | tee "$out/demo-report.txt"
  "$build/kforge" report "$demo" --json > "$out/demo-report.json"
  "$build/kforge" status "$demo" > "$out/demo-status.txt"
  KFORGE_BIN="$build/kforge" python3 tools/stage_times.py "$demo" > "$out/demo-stages.txt"
  tail -16 "$out/demo-stages.txt"
  tar czf "$out/demo-run.tgz" --exclude=build -C "$(dirname "$demo")" "$(basename "$demo")"
elif [ "$gpu" -eq 0 ]; then
  echo "no demo run: this host has no GPU, so the CUDA demo test (e2e_demo_gpu) skipped" | tee "$out/demo-report.txt"
else
  echo "no demo run in $demo: see e2e_demo_gpu in $out/gpu-tests.log" | tee "$out/demo-report.txt"
  status=1
fi
echo "total: $(( $(date +%s) - start )) s; files in $out: $(cd "$out" && echo *)"
exit $status
