#!/usr/bin/env bash
# On a GPU host: one CUDA task (the demo's LeakyReLU, replayed) and what the supervisor
# says of the runners' containment (user, network), to show CUDA candidates build and run
# as the unprivileged user inside their own network namespace. Usage, from the project
# root after a build in build-gpu:  tools/device/contain-check.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/kforge-contain}
work=$(mktemp -d /tmp/kforge-contain-XXXXXX)
chmod 755 "$work"
mkdir -p "$out" "$work/problems/level1"
cp problems/level1/2_LeakyReLU.py "$work/problems/level1/"
cat > "$work/c.yaml" <<YAML
name: contain-check
problems: {dir: $work/problems, levels: [1], samples: 1}
llm: {provider: replay, replay_dir: $PWD/configs/demo_responses}
refinement: {turns: 3, feedback: [G, E]}
eval: {device: cuda, correctness_trials: 2, perf_trials: 10, warmup: 1}
workers: 1
YAML
id | tee "$out/id.txt"
build-gpu/kforge run "$work/c.yaml" --run-dir "$work/run" > "$out/run.out" 2>&1
grep -E "user:|network" "$work/run/supervisor.log" | tee "$out/contain.txt"
build-gpu/kforge report "$work/run" | tee "$out/report.txt"
stat -c '%U %a %n' "$work/run/tasks/L1_2_LeakyReLU_s0/work" "$work/run/tasks/L1_2_LeakyReLU_s0/trajectory.jsonl" | tee -a "$out/contain.txt"
