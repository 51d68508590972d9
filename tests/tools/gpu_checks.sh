#!/usr/bin/env bash
# tools/device/gpu-checks.sh, as far as it runs without a GPU: bash -n (and shellcheck
# where installed); then the whole script, as a user runs it, into a scratch directory: a
# build from scratch, the gpu tests skipping. It must exit 0 and leave gpu.txt, build.log,
# gpu-tests.log and demo-report.txt, the last two saying that every gpu test skipped and
# why there is no demo run, and drop what an earlier call left. A second call whose
# KFORGE_DEMO_GPU_RUN holds something that is not a run must refuse to touch it. On a GPU
# host the script itself is the check: skip (77).
set -uo pipefail
home=${KFORGE_HOME:-$(cd "$(dirname "$0")/../.." && pwd)}
script=$home/tools/device/gpu-checks.sh
fail() {
  echo "FAIL: $*"
  exit 1
}

bash -n "$script" || fail "bash -n $script"
if command -v shellcheck >/dev/null; then
  shellcheck "$script" || fail "shellcheck $script"
fi
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIP: a GPU host: run tools/device/gpu-checks.sh itself"
  exit 77
fi
base=${KFORGE_TEST_TMP:-/tmp}
mkdir -p "$base"
tmp=$(mktemp -d "$base/gpu-checks-XXXXXX")
mkdir -p "$tmp/out"
echo '{"stale": true}' > "$tmp/out/demo-report.json"
export OUT=$tmp/out BUILD=$tmp/build-gpu KFORGE_DEMO_GPU_RUN=$tmp/demo/run

"$script" > "$tmp/stdout" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -40 "$tmp/stdout"; fail "the script exited $rc"; }
for f in gpu.txt build.log gpu-tests.log demo-report.txt; do
  [ -s "$OUT/$f" ] || fail "no $f in $OUT (have: $(ls "$OUT"))"
done
[ ! -e "$OUT/demo-report.json" ] || fail "an earlier call's demo-report.json is left"
grep -q '^no GPU' "$OUT/gpu.txt" || fail "gpu.txt does not say there is no GPU: $(cat "$OUT/gpu.txt")"
grep -q 'no demo run: this host has no GPU' "$OUT/demo-report.txt" ||
  fail "demo-report.txt: $(cat "$OUT/demo-report.txt")"
grep -q '^build: ' "$tmp/stdout" || fail "no build time in the script's output"
[ -x "$BUILD/kforge" ] || fail "nothing was built in $BUILD"
ngpu=$(ctest --test-dir "$BUILD" -N -L gpu | sed -n 's/^Total Tests: //p')
nskip=$(grep -c 'Test *#[0-9]*: .*\*\*\*Skipped' "$OUT/gpu-tests.log")
if [ "${ngpu:-0}" -eq 0 ] || [ "$nskip" -ne "$ngpu" ]; then
  fail "$nskip of ${ngpu:-?} gpu tests skipped: $(cat "$OUT/gpu-tests.log")"
fi
grep -q 'e2e_demo_gpu .*Skipped' "$OUT/gpu-tests.log" || fail "the demo test did not skip"
[ ! -e "$KFORGE_DEMO_GPU_RUN" ] || fail "a demo run directory appeared without a GPU"

# Something that is not a run where the demo's run would go: left alone, said, exit 1.
mkdir -p "$KFORGE_DEMO_GPU_RUN"
echo keep > "$KFORGE_DEMO_GPU_RUN/notes.txt"
"$script" > "$tmp/stdout2" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "with a foreign KFORGE_DEMO_GPU_RUN the script exited $rc, want 1"
[ "$(cat "$KFORGE_DEMO_GPU_RUN/notes.txt")" = keep ] || fail "the script removed what it does not own"
grep -q 'is not a kforge run directory' "$OUT/demo-report.txt" ||
  fail "demo-report.txt: $(cat "$OUT/demo-report.txt")"

rm -rf "$tmp"
echo "ok: without a GPU, gpu-checks.sh built, skipped all $ngpu gpu tests and said why there is no demo"
