#!/usr/bin/env bash
# The main job: set up, build, run configs/demo.yaml (cuda when a GPU is present, cpu
# otherwise) into a fresh run directory, print its report, and check every turn against
# the outcomes its recorded replies were written to get (tools/demo_check.py): exits
# non-zero, naming the task, when one differs.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
run_dir=runs/demo-$(date +%Y%m%d-%H%M%S)
build/kforge run configs/demo.yaml --run-dir "$run_dir" "$@"
build/kforge status "$run_dir"
echo
build/kforge report "$run_dir"
echo
python3 tools/demo_check.py "$run_dir"
