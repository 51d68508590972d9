#!/usr/bin/env python3
"""What status, tail and stage_times.py say about a run that was interrupted, retried,
restarted and resumed; and what resume asks for.

One real run (two samples of ReLU, two turns, one compile slot, the mock LLM server on
loopback): the first model request fails (llm.retries 0: one `transient` step, retried);
the first worker that saves a reply dies once right after (KFORGE_CRASHONCE: one worker
restart); both turn-2 requests hang until the whole run is SIGKILLed (supervisor and
workers, as a crash of the machine would). Then:

- `kforge status` says the run is interrupted (run.json says running, no supervisor) and
  that `kforge resume DIR` continues it, in text and JSON;
- `kforge resume` without the API-key variable is refused while tasks are unfinished,
  and with it the run finishes; once finished, a resume needs no key and asks nothing;
- `kforge tail` (and `tail -f`) shows the retry with its failed attempts, the worker
  restart and the resume as lines, in time order with the transitions;
- the per-stage wait and hold of `kforge status --json` ("stages") equal what the lease
  records of the trajectories give, on this run and on a hand-built one with known
  numbers, and tools/stage_times.py prints those numbers.
"""
import json
import math
import re
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-views")
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py"])
KEY = "KFORGE_VIEWS_TEST_KEY"
TURN1_KERNEL = "e2e_relu_t3"    # in relu_3.md, so in every turn-2 prompt (G)
# fresh: built here (the compile slot's waits and holds are what is checked), and the same
# code in every turn, so that turn 2 finds turn 1's build
good = reply("relu_3.md", fresh=True)
hang = dict(good, delay_s=3600)
script = {"rules": [
    # turn 2 (its prompt holds turn 1's kernel): both hang until the kill, then answer
    {"match": TURN1_KERNEL, "replies": [hang, hang, good]},
    # turn 1: the very first request fails, every later one answers
    {"replies": [{"status": 500, "content": "upstream exploded"}, good]},
]}
mock = MockLLM(work, script)
config = write_config(os.path.join(work, "views.yaml"), """
name: views
problems: {dir: %s, levels: [1], samples: 2}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: %s, retries: 0}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1}
runner: {python: %s, compile_slots: 1, cpu_exec_slots: 1}
workers: 2
""" % (problems, mock.base_url, KEY, py))
run_dir = os.path.join(work, "run")
tasks = ["L1_1_ReLU_s0", "L1_1_ReLU_s1"]
env_key = {KEY: "sk-views"}
env_no_key = {k: v for k, v in os.environ.items() if k != KEY}


def turn2_requests():
    return [r for r in mock.requests() if r["rule"] == 0]


# ---- the run, killed whole while both tasks wait for their turn-2 reply
e = dict(os.environ, KFORGE_CRASHPOINT="after-response-persisted",
         KFORGE_CRASHONCE=os.path.join(work, "crash-once"), **env_key)
sup = subprocess.Popen([BIN, "run", config, "--run-dir", run_dir], stdout=subprocess.DEVNULL,
                       stderr=open(os.path.join(work, "first.err"), "w"), env=e, start_new_session=True)
deadline = time.time() + 1500
while len(turn2_requests()) < 2:
    check(sup.poll() is None, "the run ended before both turn-2 requests: %s"
          % open(os.path.join(work, "first.err")).read()[-3000:])
    check(time.time() < deadline, "the run did not reach turn 2")
    time.sleep(0.2)
os.killpg(sup.pid, signal.SIGKILL)
sup.wait()
check(json.load(open(os.path.join(run_dir, "run.json")))["status"] == "running",
      "run.json should still say running after the kill")

# ---- status of an interrupted run
text = kforge("status", run_dir).stdout
check("run views: interrupted" in text, "status does not say interrupted:\n" + text)
check("no supervisor is alive" in text and "'kforge resume %s' continues them" % run_dir in text,
      "status does not say that resume continues the run:\n" + text)
st = json.loads(kforge("status", run_dir, "--json").stdout)["run"]
check(st["state"] == "interrupted" and not st["supervisor_alive"] and
      st["resume_command"] == "kforge resume " + run_dir, "status --json run: %s" % st)

# ---- resume: refused without the key while tasks need the model, then finishes
before = len(mock.requests())
p = subprocess.run([BIN, "resume", run_dir], capture_output=True, text=True, env=env_no_key, timeout=120)
check(p.returncode == 1 and KEY in p.stderr, "resume without the key: rc %d, %r" % (p.returncode, p.stderr))
check(len(mock.requests()) == before, "a refused resume asked the model")

res = subprocess.Popen([BIN, "resume", run_dir], stdout=subprocess.DEVNULL,
                       stderr=open(os.path.join(work, "resume.err"), "w"),
                       env=dict(os.environ, **env_key))
# tail -f from a moment the resumed supervisor is up (or already done): it follows to
# the end either way.
while res.poll() is None and not json.loads(kforge("status", run_dir, "--json").stdout)["run"]["supervisor_alive"]:
    time.sleep(0.1)
follow = subprocess.Popen([BIN, "tail", run_dir, "-f"], stdout=subprocess.PIPE, text=True)
check(res.wait(timeout=1500) == 0, "resume failed: %s" % open(os.path.join(work, "resume.err")).read()[-3000:])
# The run's end kept what status reads of each log (its status cache), the logs as they
# ended: the first status after a run reads none (the status calls above kept them as
# they were then).
with open(os.path.join(run_dir, "status.cache")) as f:
    cached = [json.loads(line) for line in f.read().splitlines()[1:]]
for t, entry in zip(tasks, cached):
    st_ = os.stat(os.path.join(run_dir, "tasks", t, "trajectory.jsonl"))
    check(entry.get("id") == t and entry.get("log") == [st_.st_dev, st_.st_ino, st_.st_size,
                                                        st_.st_mtime_ns // 10**9,
                                                        st_.st_mtime_ns % 10**9],
          "the run's end did not keep %s's log as it ended: %s" % (t, entry))
check(len(cached) == len(tasks), "the status cache has %d entries for %d tasks" % (len(cached), len(tasks)))
followed, _ = follow.communicate(timeout=120)
check(follow.returncode == 0, "tail -f exited %d" % follow.returncode)
for t in tasks:
    recs = records(run_dir, t)
    check(recs[-1]["to"] == "DONE" and [r["turn"] for r in feedback_records(recs)] == [1, 2],
          "%s did not finish both turns" % t)
check(len(mock.requests()) == 2 + 2 + 2 + 1, "requests: %d, want 7 (1 failed, 2 turn 1, 2 hung, 2 after resume)"
      % len(mock.requests()))

# ---- a finished run resumes without the key, and asks nothing
before = len(mock.requests())
p = subprocess.run([BIN, "resume", run_dir], capture_output=True, text=True, env=env_no_key, timeout=300)
check(p.returncode == 0, "resume of a finished run without the key: rc %d, %r" % (p.returncode, p.stderr))
check(len(mock.requests()) == before, "resuming a finished run asked the model")
check(json.load(open(os.path.join(run_dir, "run.json")))["status"] == "finished", "run.json not finished")
text = kforge("status", run_dir).stdout
check("run views: finished" in text and "kforge resume" not in text, "status of a finished run:\n" + text)
mock.stop()

# ---- tail: retries, restarts and resumes among the transitions, in time order
allrecs = {t: records(run_dir, t) for t in tasks}
sup_log = open(os.path.join(run_dir, "supervisor.log")).read().splitlines()
starts = [l.split(" ", 1)[0] for l in sup_log if " [sup] run views in " in l]
restarts = [l for l in sup_log if "restarting it (death" in l]
# the run, the resume that finished it, the resume of the finished run; the refused
# resume stopped before it started anything
check(len(starts) == 3, "supervisor starts in the log: %d, want 3" % len(starts))
check(len(restarts) == 1, "worker restarts in the log: %s" % restarts)
restarted = restarts[0].split("warning: ", 1)[1].split(":", 1)[0]
check(restarted in tasks, "restart of %r" % restarted)

out = kforge("tail", run_dir).stdout
lines = out.splitlines()
nrec = sum(len(r) for r in allrecs.values())
check(len(lines) == nrec + 1 + (len(starts) - 1), "tail: %d lines for %d records, a restart and %d resumes:\n%s"
      % (len(lines), nrec, len(starts) - 1, out))
transient = [l for l in lines if "--transient-->" in l]
check(len(transient) == 1 and "retry after 1 failed attempt" in transient[0] and "upstream exploded" in transient[0],
      "tail shows no retry: %s" % transient)
rl = [i for i, l in enumerate(lines) if " restart: " in l]
check(len(rl) == 1 and restarted in lines[rl[0]] and "exited with status 99" in lines[rl[0]] and
      "death 1 of 3" in lines[rl[0]], "tail shows no restart:\n" + out)
resumed = [i for i, l in enumerate(lines) if " resumed: " in l]
check(len(resumed) == len(starts) - 1, "tail shows %d resumes, want %d:\n%s" % (len(resumed), len(starts) - 1, out))


def records_before(ts):
    return (sum(r["ts"] < ts for rs in allrecs.values() for r in rs),
            sum(r["ts"] <= ts for rs in allrecs.values() for r in rs))


for i, ts in zip(resumed, starts[1:]):
    lo, hi = records_before(ts)
    n = sum(1 for l in lines[:i] if "-->" in l)
    check(lo <= n <= hi, "the resume at %s follows %d transitions, want %d..%d:\n%s" % (ts, n, lo, hi, out))
restart_ts = restarts[0].split(" ", 1)[0]
lo, hi = records_before(restart_ts)
n = sum(1 for l in lines[:rl[0]] if "-->" in l)
check(lo <= n <= hi, "the restart at %s follows %d transitions, want %d..%d" % (restart_ts, n, lo, hi))
# -f sorts what each polling round brings; across rounds it prints as things arrive
# (it ended with the resume that finished the run, before the last resume started)
check(sorted(followed.splitlines()) == sorted(l for l in lines if "resumed: supervisor start 3 " not in l),
      "tail -f printed other lines than tail:\n%s\n---\n%s" % (followed, out))
other = [t for t in tasks if t != restarted][0]
mine = kforge("tail", run_dir, restarted).stdout
theirs = kforge("tail", run_dir, other).stdout
check(" restart: " in mine and " restart: " not in theirs, "a task's tail shows another's restart")
check(mine.count(" resumed: ") == theirs.count(" resumed: ") == len(starts) - 1, "a task's tail lacks the resumes")

# ---- stage times: status --json equals the lease records
def expected_stages(recs_by_task):
    exp = {}
    for recs in recs_by_task.values():
        for r in recs:
            if r["event"] == "start" or r["from"] not in ("GENERATE", "PRECOMPILE", "EXECUTE", "PROFILE"):
                continue
            if "runner_start_ms" in r["data"]:
                s = exp.setdefault("runner start", {"steps": 0, "wait": [], "hold": None})
                s["steps"] += 1
                s["wait"].append(r["data"]["runner_start_ms"])
            s = exp.setdefault(r["from"], {"steps": 0, "wait": [], "hold": []})
            s["steps"] += 1
            lease = r["data"].get("lease")
            if lease:
                s["wait"].append(lease["wait_ms"])
                s["hold"].append(lease["released_ms"] - lease["acquired_ms"])
    return exp


def stats(v):
    if not v:
        return None
    v = sorted(v)
    return {"median": float(statistics.median(v)), "p90": v[math.ceil(0.9 * len(v)) - 1],
            "max": v[-1], "total": sum(v)}


def check_stages(rdir, exp):
    got = json.loads(kforge("status", rdir, "--json").stdout)["stages"]
    check(sorted(got) == sorted(exp), "stages %s, want %s" % (sorted(got), sorted(exp)))
    for stage, e in exp.items():
        g = got[stage]
        want = {"steps": e["steps"], "held_slot": len(e["wait"]), "no_slot": e["steps"] - len(e["wait"]),
                "wait_ms": stats(e["wait"]), "hold_ms": stats(e["hold"])}
        if e["hold"] is None:   # runner start: waited for, in no slot
            want.update(held_slot=0, no_slot=e["steps"], hold_ms=None)
        check(g == want, "%s: status says %s, the lease records %s" % (stage, g, want))
    return got


exp = expected_stages(allrecs)
check(exp["PRECOMPILE"]["steps"] == 4 and exp["EXECUTE"]["steps"] == 4, "steps: %s" %
      {k: v["steps"] for k, v in exp.items()})
# turn 2 writes turn 1's code again: a cache hit before asking for the compile slot
check(exp["PRECOMPILE"]["steps"] - len(exp["PRECOMPILE"]["wait"]) >= 2, "no cache hit without a slot")
# Each worker's first PRECOMPILE starts its runner (its fork server imports torch) before
# asking for a slot: that time is a row of its own (presence, not duration).
check(exp.get("runner start", {}).get("steps", 0) >= 1 and max(exp["runner start"]["wait"]) > 0,
      "no PRECOMPILE record says how long its runner's start took: %s" % exp.get("runner start"))
got = check_stages(run_dir, exp)
text = kforge("status", run_dir).stdout
check("stage times: waiting for a slot, then holding it" in text and "PRECOMPILE" in text.split("stage times")[1],
      "status text lacks the stage times:\n" + text)
check(re.search(r"\n  runner start +%d +0 +%d " % (got["runner start"]["steps"], got["runner start"]["steps"]),
                text.split("stage times")[1]), "status text lacks the runner start row:\n" + text)
p = subprocess.run([sys.executable, os.path.join(HOME, "tools", "stage_times.py"), run_dir],
                   capture_output=True, text=True, env=dict(os.environ, KFORGE_BIN=BIN), timeout=120)
check(p.returncode == 0, "stage_times.py: %s" % p.stderr)
row = [l for l in p.stdout.splitlines() if l.split()[:1] == ["PRECOMPILE"] and "ms" in l and "n=" not in l]
g = got["PRECOMPILE"]
want = ["%.1f" % x for x in (g["wait_ms"]["median"], g["wait_ms"]["p90"], g["hold_ms"]["median"], g["hold_ms"]["p90"])]
check(len(row) == 1 and [w for w in row[0].split() if w != "ms"][4:] == want,
      "stage_times.py PRECOMPILE row %s, want %s\n%s" % (row, want, p.stdout))
row = [l for l in p.stdout.splitlines() if l.split()[:2] == ["runner", "start"]]
want = ["%.1f" % x for x in (got["runner start"]["wait_ms"]["median"], got["runner start"]["wait_ms"]["p90"])]
check(len(row) == 1 and [w for w in row[0].split() if w != "ms"][5:] == want + ["-", "-"],
      "stage_times.py runner start row %s, want %s\n%s" % (row, want, p.stdout))

# ---- the same on a hand-built run directory with known numbers
fake = os.path.join(work, "fake-run")
os.makedirs(fake)
for f in ("config.yaml", "run.json", "tasks.json", "gpus.json"):
    if os.path.exists(os.path.join(run_dir, f)):
        shutil.copy(os.path.join(run_dir, f), fake)


def rec(seq, task, turn, frm, event, to, data):
    return json.dumps({"seq": seq, "ts": "2026-01-01T00:00:%02d.000Z" % seq, "task": task, "turn": turn,
                       "from": frm, "event": event, "to": to, "data": data}) + "\n"


def lease(cls, wait, acquired, held):
    return {"lease": {"class": cls, "slot": 0, "wait_ms": wait, "acquired_ms": acquired,
                      "released_ms": acquired + held}}


# PRECOMPILE waits 10, 20, 30, 40 (median 25.0, p90 40), holds 500, 100, 300, 200, and one
# cache hit; EXECUTE waits 100, 0, 50 (median 50, p90 100), holds 1000, 3000, 2000.
plan = {"L1_1_ReLU_s0": [("PRECOMPILE", "ok", "EXECUTE", lease("compile", 10, 1000, 500)),
                         ("EXECUTE", "incorrect", "FEEDBACK", lease("exec", 100, 5000, 1000)),
                         ("PRECOMPILE", "compile_error", "FEEDBACK", lease("compile", 20, 9000, 100)),
                         ("PRECOMPILE", "ok", "EXECUTE", {"cache_hit": True})],
        "L1_1_ReLU_s1": [("PRECOMPILE", "ok", "EXECUTE", lease("compile", 30, 2000, 300)),
                         ("EXECUTE", "correct", "FEEDBACK", lease("exec", 0, 7000, 3000)),
                         ("PRECOMPILE", "ok", "EXECUTE", lease("compile", 40, 3000, 200)),
                         ("EXECUTE", "correct", "FEEDBACK", lease("exec", 50, 8000, 2000))]}
fake_recs = {}
for task, steps in plan.items():
    d = os.path.join(fake, "tasks", task)
    os.makedirs(d)
    lines_ = [rec(1, task, 1, "GENERATE", "start", "GENERATE", {})]
    for i, (frm, ev, to, data) in enumerate(steps, 2):
        lines_.append(rec(i, task, 1, frm, ev, to, data))
    with open(os.path.join(d, "trajectory.jsonl"), "w") as f:
        f.writelines(lines_)
    fake_recs[task] = [json.loads(l) for l in lines_]
got = check_stages(fake, expected_stages(fake_recs))
check(got["PRECOMPILE"] == {"steps": 5, "held_slot": 4, "no_slot": 1,
                            "wait_ms": {"median": 25.0, "p90": 40, "max": 40, "total": 100},
                            "hold_ms": {"median": 250.0, "p90": 500, "max": 500, "total": 1100}},
      "hand-built PRECOMPILE: %s" % got["PRECOMPILE"])
check(got["EXECUTE"]["wait_ms"] == {"median": 50.0, "p90": 100, "max": 100, "total": 150} and
      got["EXECUTE"]["hold_ms"]["median"] == 2000.0, "hand-built EXECUTE: %s" % got["EXECUTE"])
check("GENERATE" not in got, "a start record is not a GENERATE step")
print("ok: status says interrupted and resume; resume needs the key only with work left; tail shows "
      "the retry, the restart and %d resumes in order; stage times equal the lease records" % (len(starts) - 1))
