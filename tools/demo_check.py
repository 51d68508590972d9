#!/usr/bin/env python3
"""demo_check.py RUN_DIR [DEVICE]: does a run of configs/demo.yaml end every turn the way
its recorded replies were written to? configs/demo_responses/expected.json holds, per
device, the status each turn is written to get; DEVICE defaults to the run's own
(gpus.json). Prints one line per task that differs, naming it, and exits 1; exits 0 with
a one-line summary when every turn of every task matches. Used by tools/demo.sh and by
the e2e demo tests, so the demo is judged in one place.

Standard library only: it runs under any python3.
"""
import json
import os
import sys

HOME = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
EXPECTED = os.path.join(HOME, "configs", "demo_responses", "expected.json")
SAMPLE_SUFFIX = "_s0"  # the demo has samples: 1


def tasks_dir(run_dir):
    """Where a run keeps its tasks (the layout's home is rundir/rundir.h)."""
    return os.path.join(run_dir, "tasks")


def turn_statuses(run_dir, task):
    """The status of each finished turn (the FEEDBACK records' data.status, in order),
    the state the task's log ends in, and what is wrong with the log itself: a finished
    demo's log has no torn tail and counts seq from 1 without gaps."""
    path = os.path.join(tasks_dir(run_dir), task, "trajectory.jsonl")
    statuses, last, flaw = [], None, None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n"):
                flaw = "%s ends in a torn line" % path
                break
            rec = json.loads(line)
            if rec.get("seq") != n and flaw is None:
                flaw = "%s: seq %s at line %d (gap or duplicate)" % (path, rec.get("seq"), n)
            last = rec.get("to")
            if rec.get("from") == "FEEDBACK":
                statuses.append(rec.get("data", {}).get("status"))
    return statuses, last, flaw


def differences(run_dir, device=None):
    """A list of one-line problems (empty when the run did what the replies were written
    to do) and the device it was judged for."""
    if device is None:
        with open(os.path.join(run_dir, "gpus.json")) as f:
            device = json.load(f)["device"]
    with open(EXPECTED) as f:
        expected = json.load(f).get(device)
    if expected is None:
        return ["%s: no expected outcomes for device %r" % (EXPECTED, device)], device
    problems = []
    tdir = tasks_dir(run_dir)
    present = set(os.listdir(tdir)) if os.path.isdir(tdir) else set()
    for key, want in sorted(expected.items()):
        task = key + SAMPLE_SUFFIX
        if task not in present:
            problems.append("%s: not in the run" % task)
            continue
        got, last, flaw = turn_statuses(run_dir, task)
        if got != want:
            problems.append("%s: turn statuses %s, recorded to be %s" % (task, got, want))
        elif last != "DONE":
            problems.append("%s: ends in %s, not DONE" % (task, last))
        if flaw:
            problems.append("%s: %s" % (task, flaw))
    for task in sorted(present - {k + SAMPLE_SUFFIX for k in expected}):
        problems.append("%s: a task with no expected outcomes" % task)
    return problems, device


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: demo_check.py RUN_DIR [cpu|cuda]", file=sys.stderr)
        return 2
    run_dir = argv[1]
    if not os.path.isdir(tasks_dir(run_dir)):
        print("demo_check: %s: not a run directory (no tasks/)" % run_dir, file=sys.stderr)
        return 2
    try:
        problems, device = differences(run_dir, argv[2] if len(argv) == 3 else None)
    except (OSError, ValueError, KeyError) as e:
        print("demo_check: %s: cannot read the run: %s" % (run_dir, e), file=sys.stderr)
        return 2
    for p in problems:
        print("demo_check: %s" % p, file=sys.stderr)
    if problems:
        print("demo_check: the %s demo differs from %s in %d place(s)" % (device, EXPECTED, len(problems)),
              file=sys.stderr)
        return 1
    print("demo_check: every turn of the %s demo ended as recorded in expected.json" % device)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
