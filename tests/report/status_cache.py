#!/usr/bin/env python3
"""status's cache (report/statcache.c) on a hand-built run of 300 tasks (over the 256 from
which status reads the logs in threads): finished, failed and under-way tasks, leases and
tokens, so that every field status shows and every stage row has something to carry.

- status with the cache says exactly what status says without one (text and --json),
  the first time (writing it) and every time after (reading it);
- the cache is what a second status reads: an entry whose value is changed while its log
  stays the same file is what status shows for that task, and only that task;
- an entry holds only for its log as it is: a record appended, a log rewritten to the same
  size with another time, a log removed (the task back to not begun) each make status
  read that log again and say what it says;
- a cache of another kforge build, a torn or garbled cache, or one of another run's size
  is read as none: status is right and writes a good one in its place.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from kfe2e import *  # noqa: E402,F401

work = scratch("report-status-cache")


def outcome(verdict, speedup=None, status=None):
    d = {"verdict": verdict, "reasons": [], "status": status or ("ok" if speedup else
                                                                 "value_mismatch"),
         "compiled": True, "correct": verdict == "correct"}
    if speedup:
        d.update(speedup=speedup, runtime_ms=1.0 / speedup, ref_runtime_ms=1.0)
    return d


def task(i):
    leases = {"GENERATE": (i % 7, 100 + i), "PRECOMPILE": (2 * i % 11, 300 + i),
              "EXECUTE": (i % 5, 50 + 3 * i)}
    turns = []
    for k in range(1 + i % 3):
        v = ("correct", "incorrect", "suspect")[(i + k) % 3]
        turns.append({"outcome": outcome(v, 1.0 + (i * 7 + k) % 13 / 10.0 if v != "incorrect"
                                         else None),
                      "compiled": (i + k) % 4 != 0, "tokens": (100 + i, 20 + k),
                      "leases": leases, "attempts": 1 + (i % 2)})
    t = {"id": "T%03d" % i, "level": 1 + i % 2, "turns": turns}
    if i % 17 == 0:         # under way: its last turn has only GENERATE
        t["turns"] = turns[:1] + [{"outcome": None, "tokens": (5, 1),
                                   "leases": {"GENERATE": (1, 2)}}]
    if i % 23 == 0:
        t["fail"] = "the model's replies were refused 3 times"
    return t


run = os.path.join(work, "run")
fake_run(run, "cached", [task(i) for i in range(300)], turns=3)
cache = os.path.join(run, "status.cache")


def status(*args):
    r = subprocess.run([BIN, "status", run] + list(args), capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, "kforge status %s exited %d: %s" % (args, r.returncode, r.stderr))
    return r.stdout


def uncached(*args):
    """What status says reading every log: the cache moved away for the call."""
    aside = cache + ".aside"
    if os.path.exists(cache):
        os.rename(cache, aside)
    try:
        return status(*args)
    finally:
        if os.path.exists(cache):
            os.unlink(cache)
        if os.path.exists(aside):
            os.rename(aside, cache)


def entries():
    with open(cache) as f:
        lines = f.read().split("\n")
    return json.loads(lines[0]), [json.loads(x) for x in lines[1:] if x]


def write_entries(header, rows):
    with open(cache, "w") as f:
        f.write(json.dumps(header) + "\n" + "".join(json.dumps(r) + "\n" for r in rows))


def task_row(text, tid):
    rows = [line for line in text.splitlines() if line.startswith(tid + " ")]
    check(len(rows) == 1, "status has %d rows for %s:\n%s" % (len(rows), tid, text))
    return rows[0]


# No cache yet: status writes one; with it, status says the same, word for word.
check(not os.path.exists(cache), "a fresh run has a status cache")
plain_text, plain_json = status(), status("--json")
check(os.path.exists(cache), "status wrote no %s" % cache)
header, rows = entries()
check(header.get("status_cache") == 1 and header.get("tasks") == 300 and
      len(header.get("build", "")) >= 32, "the cache's header: %s" % header)
check(len(rows) == 300 and [r.get("id") for r in rows] == ["T%03d" % i for i in range(300)],
      "the cache's entries are not the run's 300 tasks in order")
stages = json.loads(plain_json)["stages"]
check(set(stages) >= {"GENERATE", "PRECOMPILE", "EXECUTE"} and
      stages["EXECUTE"]["held_slot"] > 0, "status --json's stages: %s" % stages)
for _ in range(2):
    check(status() == plain_text, "status from its cache says otherwise than from the logs")
    check(status("--json") == plain_json, "status --json from its cache differs")
check(uncached() == plain_text and uncached("--json") == plain_json,
      "status without a cache no longer says what it said")
states = {t["state"] for t in json.loads(plain_json)["tasks"]}
check({"DONE", "FAILED"} <= states and len(states) >= 3, "the run's states: %s" % states)

# The cache is read: an entry changed by hand, its log untouched, is what status shows.
header, rows = entries()
forged = [dict(r) for r in rows]
victim = 42
check(forged[victim]["id"] == "T042", "entry 42 is %s" % forged[victim]["id"])
forged[victim]["v"] = dict(forged[victim]["v"])
forged[victim]["v"]["s"] = list(forged[victim]["v"]["s"])
forged[victim]["v"]["s"][3] = 77.5           # the best speedup
write_entries(header, forged)
text = status()
check("77.50x" in task_row(text, "T042"), "status did not read the cache: %s"
      % task_row(text, "T042"))
check([line for line in text.splitlines() if not line.startswith("T042 ")] ==
      [line for line in plain_text.splitlines() if not line.startswith("T042 ")],
      "a changed entry moved other tasks' rows")

# ... until its log changes: a record appended (a retry the worker logged).
log = os.path.join(run, "tasks", "T042", "trajectory.jsonl")
recs = [json.loads(x) for x in open(log)]
last = recs[-1]
extra = dict(last, seq=last["seq"] + 1, event="transient", to=last["to"],
             data={"reason": "appended after the cache"})
with open(log, "a") as f:
    f.write(json.dumps(extra) + "\n")
text = status()
check("77.50x" not in text, "a task whose log grew kept its cached row")
check(text == uncached(), "after a log grew, status from the cache differs from the logs")

# A log rewritten to the same size, another time: read again.
write_entries(header, forged)       # the forged entry back, for the old log
with open(log) as f:
    body = f.read()
check("77.50x" not in status(), "the forged entry held for a log that had grown")
header, rows = entries()            # this status's entries, the grown log's
forged = [dict(r) for r in rows]
forged[victim]["v"] = dict(forged[victim]["v"], s=list(forged[victim]["v"]["s"]))
forged[victim]["v"]["s"][3] = 77.5
write_entries(header, forged)
check("77.50x" in status(), "the re-forged entry was not read")
st = os.stat(log)
with open(log, "w") as f:
    f.write(body)
os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
check(os.stat(log).st_size == st.st_size, "the rewritten log changed size")
text = status()
check("77.50x" not in text and text == uncached(),
      "a log of the same size and another time kept its cached row")

# A log removed: the task has not begun, as status says without a cache.
t7 = os.path.join(run, "tasks", "T007", "trajectory.jsonl")
shutil.move(t7, t7 + ".gone")
status()
text = status()
check(text == uncached() and "GENERATE" in task_row(text, "T007").split()[1],
      "a task whose log was removed: %s" % task_row(text, "T007"))
shutil.move(t7 + ".gone", t7)
plain_text = uncached()
check(status() == plain_text and status() == plain_text, "the log back: status differs")

# Another build's cache, a garbled one, a torn one, another run's: none is read.
header, rows = entries()
forged = [dict(r) for r in rows]
forged[victim]["v"] = dict(forged[victim]["v"], s=list(forged[victim]["v"]["s"]))
forged[victim]["v"]["s"][3] = 77.5
bad = {
    "another build": json.dumps(dict(header, build="0" * 40)) + "\n" +
                     "".join(json.dumps(r) + "\n" for r in forged),
    "another run's size": json.dumps(dict(header, tasks=299)) + "\n" +
                          "".join(json.dumps(r) + "\n" for r in forged[:299]),
    "garbled": "\x00\xff not json at all\n" * 50,
    "torn": (json.dumps(header) + "\n" + "".join(json.dumps(r) + "\n" for r in forged))[:5000],
    "entries of the wrong shape": json.dumps(header) + "\n" + "".join(
        json.dumps(dict(r, v={"s": [1, 2], "ls": 3})) + "\n" for r in forged),
}
check(bad["torn"].find('"T042"') == -1, "the torn cache keeps entry 42: make it shorter")
for name, body in bad.items():
    with open(cache, "w", errors="surrogateescape") as f:
        f.write(body)
    text = status()
    if name == "torn":      # the entries before the tear still hold; 42 is past it
        check(text == plain_text, "a torn cache: status differs")
    else:
        check(text == plain_text, "a cache of %s: status differs from the logs" % name)
    h, rs = entries()
    check(h.get("build") == header["build"] and len(rs) == 300,
          "after a cache of %s, status wrote no good one: %s" % (name, h))
    check(status() == plain_text, "the cache written after %s is wrong" % name)

print("ok: status's cache agrees with the logs and follows them")
