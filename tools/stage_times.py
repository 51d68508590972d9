#!/usr/bin/env python3
"""stage_times.py RUN_DIR: wall time of each stage (GENERATE, PRECOMPILE, EXECUTE,
PROFILE, FEEDBACK) per task and turn, from the trajectory timestamps, with the median
of each stage. A stage's time runs from the record that entered it to the record that
left it, so it includes waiting for its slot."""
import datetime
import glob
import json
import os
import statistics
import sys


def ms(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000.0


def main(run_dir):
    per_stage = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "tasks", "*", "trajectory.jsonl"))):
        recs = [json.loads(line) for line in open(path) if line.endswith("\n")]
        for prev, cur in zip(recs, recs[1:]):
            if cur["from"] != prev["to"]:
                continue
            d = ms(cur["ts"]) - ms(prev["ts"])
            per_stage.setdefault(cur["from"], []).append(d)
            print("%-28s turn %-2d %-10s %9.1f ms  -> %s %s" % (cur["task"], cur["turn"], cur["from"],
                  d, cur["event"], cur["data"].get("status", "")))
    print()
    for stage in ("GENERATE", "PRECOMPILE", "EXECUTE", "PROFILE", "FEEDBACK"):
        v = per_stage.get(stage)
        if v:
            print("%-10s n=%-3d median %9.1f ms  min %9.1f  max %9.1f" % (stage, len(v), statistics.median(v),
                  min(v), max(v)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: stage_times.py RUN_DIR")
    main(sys.argv[1])
