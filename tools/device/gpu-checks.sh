#!/usr/bin/env bash
# On a GPU host: build from scratch, run every gpu-labelled test (the CUDA demo among
# them), and leave logs, the demo's report, status and stage times, and the demo run
# directory (tarred) in $OUT (default /tmp/kforge-gpu). Usage, from the project root:
#   [source .devdeps/env.sh;] tools/device/gpu-checks.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/kforge-gpu}
mkdir -p "$out"
nvidia-smi -L | tee "$out/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$out/gpu.txt"
start=$(date +%s)
if ! { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-gpu -j "$(nproc)"; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
echo "build: $(( $(date +%s) - start )) s"
export KFORGE_TEST_TMP=/tmp/kforge-gpu-tests
rm -rf "$KFORGE_TEST_TMP"
ctest --test-dir build-gpu -L gpu --output-on-failure --timeout 3000 "$@" 2>&1 | tee "$out/gpu-tests.log"
demo=$(ls -d "$KFORGE_TEST_TMP"/e2e-demo-gpu-*/run 2>/dev/null | head -1)
if [ -n "$demo" ]; then
  build-gpu/kforge report "$demo" | tee "$out/demo-report.txt"
  build-gpu/kforge report "$demo" --json > "$out/demo-report.json"
  build-gpu/kforge status "$demo" > "$out/demo-status.txt"
  KFORGE_BIN=build-gpu/kforge python3 tools/stage_times.py "$demo" > "$out/demo-stages.txt"
  tail -16 "$out/demo-stages.txt"
  tar czf "$out/demo-run.tgz" --exclude=build -C "$(dirname "$demo")" run
fi
echo "total: $(( $(date +%s) - start )) s"
