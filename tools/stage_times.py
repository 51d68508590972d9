#!/usr/bin/env python3
"""stage_times.py RUN_DIR: where each stage's time went.

First the wall time of each stage (the stage list is kforge's, `kforge --list stages`,
rundir/rundir.h's RD_TASK_STAGES: GENERATE, PRECOMPILE, EXECUTE, PROFILE, FEEDBACK) per
task and turn, from the trajectory timestamps, with per-stage medians: a stage's wall
time runs from the record that entered it to the record that left it, so it includes
the time spent waiting for a slot (an LLM request, a compile slot, a GPU or CPU
execution slot).

Then, for the turns that were profiled (P feedback), PROFILE's wall time next to the
same candidate's EXECUTE: what the profile costs.

Then, for the stages that take a slot, that wall time split into waiting for the slot
and holding it (median and p90 of each), as `kforge status DIR --json` reports it under
"stages". That split is defined once, in report/views.c (stage_times_json): it is
read from the lease record of each step, and a step that took no slot (a cache hit)
holds nothing and is counted apart. Beside the stages, status keeps a row "runner start":
the time a worker waited for its runner to start (torch imported) before its step asked
for a slot, which holds none. This tool prints it and does not recompute it.

The kforge binary: $KFORGE_BIN, else build/kforge beside this checkout, else kforge on
PATH. Standard library only.
"""
import datetime
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

def ms(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000.0


def kforge_bin():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "kforge")
    for b in (os.environ.get("KFORGE_BIN"), here, shutil.which("kforge")):
        if b and os.access(b, os.X_OK):
            return b
    sys.exit("stage_times.py: no kforge binary (set KFORGE_BIN, or build into build/)")


def stages():
    """The stages, in order, as (name, takes a slot): kforge --list stages."""
    p = subprocess.run([kforge_bin(), "--list", "stages"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("stage_times.py: kforge --list stages failed: %s" % p.stderr.strip())
    return [(name, kind == "slot") for name, kind in (line.split() for line in p.stdout.splitlines())]


def wall_times(run_dir):
    per_stage, per_turn = {}, {}
    for path in sorted(glob.glob(os.path.join(run_dir, "tasks", "*", "trajectory.jsonl"))):
        with open(path) as f:
            recs = [json.loads(line) for line in f if line.endswith("\n")]
        for prev, cur in zip(recs, recs[1:]):
            if cur["from"] != prev["to"]:
                continue
            d = ms(cur["ts"]) - ms(prev["ts"])
            per_stage.setdefault(cur["from"], []).append(d)
            if cur["from"] in ("EXECUTE", "PROFILE"):
                per_turn.setdefault((cur["task"], cur["turn"]), {})[cur["from"]] = d
            print("%-28s turn %-2d %-10s %9.1f ms  -> %s %s" % (
                cur["task"], cur["turn"], cur["from"], d, cur["event"], cur["data"].get("status", "")))
    print()
    print("wall time per stage (waiting included):")
    for stage, _ in stages():
        v = per_stage.get(stage)
        if v:
            print("  %-10s n=%-4d median %10.1f ms  min %10.1f  max %10.1f" % (
                stage, len(v), statistics.median(v), min(v), max(v)))


    # What P costs: a turn's PROFILE (the candidate under the profiler; on a GPU the
    # CUPTI trace and metrics runs, and the reference's profile on a task's first
    # profiled turn) next to its EXECUTE.
    pairs = [(t["EXECUTE"], t["PROFILE"]) for t in per_turn.values() if len(t) == 2]
    if pairs:
        print()
        print("PROFILE next to EXECUTE (the same candidate, %d turns):" % len(pairs))
        print("  EXECUTE median %10.1f ms   PROFILE median %10.1f ms   PROFILE/EXECUTE median %.2f" % (
            statistics.median(e for e, _ in pairs), statistics.median(p for _, p in pairs),
            statistics.median(p / e for e, p in pairs if e > 0) if any(e > 0 for e, _ in pairs) else 0))


def slot_times(run_dir):
    p = subprocess.run([kforge_bin(), "status", run_dir, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("stage_times.py: kforge status failed: %s" % p.stderr.strip())
    timed = json.loads(p.stdout).get("stages", {})
    print()
    print("waiting for a slot vs holding it (kforge status; a step without a slot, "
          "such as a cache hit, holds nothing):")
    print("  %-12s %6s %6s %8s  %13s %13s  %13s %13s" % (
        "STAGE", "steps", "slot", "no slot", "wait median", "wait p90", "hold median", "hold p90"))
    listed = stages()
    # The stages that take a slot, then the rows status keeps beside them (runner start:
    # a worker's runner starting, torch imported, before its step asks for a slot).
    rows = [stage for stage, slot in listed if slot]
    rows += sorted(k for k in timed if k not in {stage for stage, _ in listed})
    for stage in rows:
        s = timed.get(stage)
        if not s:
            continue
        cells = []
        for v in (s["wait_ms"], s["hold_ms"]):
            cells += ["%10.1f ms" % x for x in (v["median"], v["p90"])] if v else ["-"] * 2
        print("  %-12s %6d %6d %8d  %13s %13s  %13s %13s" % (
            stage, s["steps"], s["held_slot"], s["no_slot"], *cells))


def main(run_dir):
    wall_times(run_dir)
    slot_times(run_dir)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: stage_times.py RUN_DIR")
    main(sys.argv[1])
