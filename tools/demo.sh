#!/usr/bin/env bash
# The main job: set up, build, run configs/demo.yaml (cuda when a GPU is present, cpu
# otherwise) into a fresh run directory, and print its report.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
run_dir=runs/demo-$(date +%Y%m%d-%H%M%S)
build/kforge run configs/demo.yaml --run-dir "$run_dir" "$@"
build/kforge status "$run_dir"
echo
build/kforge report "$run_dir"
