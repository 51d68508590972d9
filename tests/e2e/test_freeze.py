#!/usr/bin/env python3
"""While the judge times the reference, the candidate's whole PID namespace is stopped,
not only its runner (kforge_runner.py, Runner.freeze and NS_INIT): a process the
candidate started, spinning beside it, makes no progress in any of the judge's frozen
windows, so it cannot take the reference's time.

`kforge eval` on the CPU of tests/data/e2e/freeze/cand_spinner.py (static checks off: it
forks) against the bundled ReLU, its scratch kept (KFORGE_KEEP=1). The spinner logs each
stretch of 1 ms or more in which it did not run (in its working directory); the judge keeps its frozen windows in
details.judge.frozen (CLOCK_MONOTONIC, as the spinner's). Each window must lie inside one
of the spinner's gaps (up to the few milliseconds a signal takes at its end). Skips (77)
where runners get no PID namespace of their own (the judge then says so)."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-freeze")
cand = os.path.join(HOME, "tests", "data", "e2e", "freeze", "cand_spinner.py")
problem = os.path.join(HOME, "problems", "level1", "1_ReLU.py")
p = kforge("eval", "--problem", problem, "--kernel", cand, "--device", "cpu", "--json",
           "--set", "eval.static_checks=false", "--set", "runner.python=" + py,
           env={"TMPDIR": work, "KFORGE_KEEP": "1"}, check_rc=False)
try:
    res = json.loads(p.stdout)["result"]
except (ValueError, KeyError):
    fail("kforge eval printed no result (exit %d): %s" % (p.returncode, p.stderr[-3000:]))
judge = res.get("details", {}).get("judge") or {}
print("verdict %s, status %s; freeze: %s" % (res.get("verdict"), res.get("status"), judge.get("freeze")))
if "every process of its namespace" not in (judge.get("freeze") or ""):
    print("SKIP: runners have no PID namespace of their own here: %s" % judge.get("freeze"))
    sys.exit(SKIP)
check(not judge.get("freeze_namespace"), "the namespace's freeze failed: %s" % judge.get("freeze_namespace"))
windows = [w for w in judge.get("frozen") or [] if w[1] is not None]
check(len(windows) >= 3, "the judge kept %d frozen windows: %s" % (len(windows), judge.get("frozen")))

gaps = []
for log in glob.glob(os.path.join(work, "kforge-eval-*", "**", "spinner_gaps.log"), recursive=True):
    with open(log, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "gap":
                gaps.append((float(parts[1]), float(parts[2])))
check(gaps, "the spinner logged no gap (its log not found under %s)" % work)

# The init stops the namespace in its signal handler before the judge's window opens
# (FREEZE_SETTLE_S) and resumes it once the window has closed; a millisecond of slack for
# the clock's rounding.
SLACK_S = 0.001
inside = [w for w in windows if any(g0 <= w[0] and g1 >= w[1] - SLACK_S for g0, g1 in gaps)]
print("%d of %d frozen windows inside a gap of the spinner (%d gaps logged)"
      % (len(inside), len(windows), len(gaps)))
missed = [w for w in windows if w not in inside]
check(len(inside) >= 0.9 * len(windows),
      "the spinner ran in frozen windows: %s" % missed[:5])
print("ok: the candidate's own process stood still while the reference was timed")
