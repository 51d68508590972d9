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
where runners get no PID namespace of their own (the judge then says so).

Run as root and, where the test is root and the host lets one reach the tree, as an
ordinary user it creates (runuser): there the namespace is made in a user namespace of
the runner's own, and the judge, outside it, must still stop it."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
cand = os.path.join(HOME, "tests", "data", "e2e", "freeze", "cand_spinner.py")
problem = os.path.join(HOME, "problems", "level1", "1_ReLU.py")
# The init stops the namespace in its signal handler before the judge's window opens
# (FREEZE_SETTLE_S) and resumes it once the window has closed; a millisecond of slack for
# the clock's rounding.
SLACK_S = 0.001


def attempt(label, user):
    """kforge eval of the spinner as user (None: as this process); True where it ran in a
    namespace of its own and every check held, False where runners get none here."""
    uid, gid, prefix = as_user(user)
    work = scratch("e2e-freeze-" + label)
    env = {"TMPDIR": work, "KFORGE_KEEP": "1"}
    if user is not None:    # the suite's cache is root's: the user's own
        env["KFORGE_CACHE_DIR"] = os.path.join(work, "cache")
        chown_tree(work, uid, gid)
    p = kforge("eval", "--problem", problem, "--kernel", cand, "--device", "cpu", "--json",
               "--set", "eval.static_checks=false", "--set", "runner.python=" + py,
               env=env, check_rc=False, prefix=prefix)
    try:
        res = json.loads(p.stdout)["result"]
    except (ValueError, KeyError):
        fail("%s: kforge eval printed no result (exit %d): %s" % (label, p.returncode, p.stderr[-3000:]))
    judge = res.get("details", {}).get("judge") or {}
    print("%s: verdict %s, status %s; freeze: %s" % (label, res.get("verdict"), res.get("status"),
                                                     judge.get("freeze")))
    if "every process of its namespace" not in (judge.get("freeze") or ""):
        print("%s: runners have no PID namespace of their own here: %s" % (label, judge.get("freeze")))
        return False
    check(not judge.get("freeze_namespace"), "%s: the namespace's freeze failed: %s" % (
        label, judge.get("freeze_namespace")))
    windows = [w for w in judge.get("frozen") or [] if w[1] is not None]
    check(len(windows) >= 3, "%s: the judge kept %d frozen windows: %s" % (label, len(windows),
                                                                         judge.get("frozen")))
    gaps = []
    for log in glob.glob(os.path.join(work, "kforge-eval-*", "**", "spinner_gaps.log"), recursive=True):
        with open(log, errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "gap":
                    gaps.append((float(parts[1]), float(parts[2])))
    check(gaps, "%s: the spinner logged no gap (its log not found under %s)" % (label, work))
    inside = [w for w in windows if any(g0 <= w[0] and g1 >= w[1] - SLACK_S for g0, g1 in gaps)]
    print("%s: %d of %d frozen windows inside a gap of the spinner (%d gaps logged)"
          % (label, len(inside), len(windows), len(gaps)))
    missed = [w for w in windows if w not in inside]
    check(len(inside) >= 0.9 * len(windows), "%s: the spinner ran in frozen windows: %s" % (label, missed[:5]))
    print("ok: %s: the candidate's own process stood still while the reference was timed" % label)
    return True


ran = [attempt("root" if os.geteuid() == 0 else "user", None)]
if os.geteuid() == 0:
    user = ordinary_user(py)
    if user is not None:
        ran.append(attempt("user", user))
if not any(ran):
    print("SKIP: runners have no PID namespace of their own here")
    sys.exit(SKIP)
