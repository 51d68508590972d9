#!/usr/bin/env python3
"""test_adversarial: cheating and honest CPU candidates, judged by `kforge eval` and by a
run, which must agree with each other and with what each file says it should get.

The honest set is tests/data/honest/cpu/ and the CPU demo's correct turns (read from
configs/demo_responses/, where expected.json says ok). Every candidate file begins with
comment lines

    # problem: problems/level1/1_ReLU.py      the bundled problem it answers
    # expect: rejected                        correct | incorrect | rejected | suspect
    # catches: inherits_reference             a rule its reasons must name, or -; a|b:
                                              either (a static rule or the runtime flag
                                              that would catch it if the static one did not)
    # why: ...                                one line: what it does
    # flags: input_mutated                    (optional) runtime flags it must raise

- `kforge doctor` (its selftest makes the precompiled headers that builds use), then the
  problems' reference timings are measured, one at a time (`kforge baseline`),
  so the speedups below do not rest on a reference timed beside a build;
- each file alone: `kforge eval --problem P --kernel K --device cpu --json` (two at a
  time): its `verdict` is the header's `expect`, its exit status is the verdict's, and
  unless `catches` is -, one of its `reasons` (objects with `rule` and `message`) has
  that rule;
- all of them again through one `kforge run` of one turn: a problem directory with a
  copy of each file's problem under a name of its own (one task per candidate) and the
  `replay` provider serving the file as that task's reply; each task's turn-1
  result.json must carry the verdict that eval gave, and the `catches` rule (a turn
  that never executed, rejected by the static checks or not built, has no result.json:
  its compile.json, else its FEEDBACK record, holds the verdict). The FEEDBACK record's
  verdict must be the same.

excessive_speedup (a speedup above 10x over the reference by the means and by the
medians, both timed in one runner) is a measurement: an honest kernel against a slow BLAS (the
demo's CPU matmul against Debian's torch) can earn it, and on a shared 2-core machine
its interval comes and goes with the load: a suspect verdict whose only reason is
excessive_speedup counts as correct, for the expectation and for the agreement of run and
eval (the table marks it with ~).

A table (candidate, expect, eval verdict, run verdict, reasons) ends the output; each
eval's JSON is kept under the scratch directory (evals/).
"""
import concurrent.futures
import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kfe2e import (HOME, check, kforge, records, scratch, torch_python,  # noqa: E402
                   write_config)

T0 = time.time()
py = torch_python()
work = scratch("adversarial")
DATA = os.path.join(HOME, "tests", "data")
FOLDERS = [os.path.join("adversarial", "cpu"), os.path.join("honest", "cpu")]
VERDICTS = ("correct", "incorrect", "rejected", "suspect")
# kforge eval's exit status for each verdict (an incorrect one: wrong output, not built,
# or failed when run).
EXIT = {"correct": (0,), "incorrect": (1, 3, 4), "rejected": (3,), "suspect": (6,)}
PERF_TRIALS, WARMUP = 10, 1
# Two evals at a time, and two executions at a time in the run: the same CPU threads per
# execution in both (they are part of a baseline's cache key), so both use one baseline.
SETS = ["--set", "eval.perf_trials=%d" % PERF_TRIALS, "--set", "eval.warmup=%d" % WARMUP,
        "--set", "runner.python=%s" % py, "--set", "runner.cpu_exec_slots=2"]
failures = []


def problem_fail(name, msg):
    failures.append("%s: %s" % (name, msg))
    print("FAIL %s: %s" % (name, msg), flush=True)


# ------------------------------------------------------------------ the candidates

def header(path):
    h = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"#\s*([a-z_]+):\s*(.*?)\s*$", line)
            if not m:
                break
            h[m.group(1)] = m.group(2)
    return h


def demo_honest(dest):
    """The CPU demo's correct turns (configs/demo_responses/expected.json: status ok), as
    honest candidates with a header, written into dest: the demo keeps its one copy."""
    responses = os.path.join(HOME, "configs", "demo_responses")
    with open(os.path.join(responses, "expected.json")) as f:
        expected = json.load(f)["cpu"]
    os.makedirs(dest, exist_ok=True)
    for key, statuses in sorted(expected.items()):
        m = re.match(r"L(\d+)_(\d+)_(\w+)$", key)
        for turn, status in enumerate(statuses, 1):
            if status != "ok":
                continue
            md = os.path.join(responses, "cpu", key, "%d.md" % turn)
            code = re.search(r"```python\n(.*?)```", open(md).read(), re.S).group(1)
            with open(os.path.join(dest, "demo_%s_t%d.py" % (key, turn)), "w") as f:
                f.write("# problem: problems/level%s/%s_%s.py\n# expect: correct\n# catches: -\n"
                        "# why: the CPU demo's turn %d for %s, correct by expected.json\n%s"
                        % (m.group(1), m.group(2), m.group(3), turn, key, code))


demo_dir = os.path.join(work, "honest-demo")
demo_honest(demo_dir)
cands = []
for folder in FOLDERS + [demo_dir]:
    d = os.path.join(DATA, folder)
    check(os.path.isdir(d), "no folder %s" % d)
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".py"):
            continue
        path = os.path.join(d, fn)
        h = header(path)
        name = "%s/%s" % ("honest" if folder == demo_dir else folder.split(os.sep)[0], fn[:-3])
        for key in ("problem", "expect", "catches", "why"):
            check(h.get(key), "%s: no '# %s:' line in its header" % (path, key))
        check(h["expect"] in VERDICTS, "%s: expect %r is not one of %s" % (path, h["expect"],
                                                                          VERDICTS))
        problem = os.path.join(HOME, h["problem"])
        check(os.path.isfile(problem), "%s: its problem %s does not exist" % (path, problem))
        m = re.match(r".*/level(\d+)/(\d+)_(\w+)\.py$", problem)
        check(m is not None, "%s: %s is not a levelN/ID_Name.py problem" % (path, problem))
        cands.append({"name": name, "path": path, "problem": problem, "level": int(m.group(1)),
                      "expect": h["expect"], "catches": h["catches"],
                      "flags": h.get("flags", "").split()})
check(len([c for c in cands if c["name"].startswith("adversarial/")]) >= 22,
      "fewer than 22 adversarial candidates")
check(len([c for c in cands if c["name"].startswith("honest/")]) >= 10,
      "fewer than 10 honest candidates")
print("%d candidates (%d adversarial, %d honest)" % (
    len(cands), sum(c["name"].startswith("adversarial/") for c in cands),
    sum(c["name"].startswith("honest/") for c in cands)), flush=True)


def rules(res):
    rs = res.get("reasons")
    if not isinstance(rs, list):
        return None
    return [r.get("rule") for r in rs if isinstance(r, dict)]


def timing_only(res):
    """A suspect verdict whose only reason is the speedup measurement."""
    return res.get("verdict") == "suspect" and set(rules(res) or []) == {"excessive_speedup"}


def effective(res):
    """The verdict, with a suspect one that rests on the speedup alone taken as correct."""
    return "correct" if timing_only(res) else res.get("verdict")


def shown(res):
    v = res.get("verdict")
    return "-" if v is None else ("%s~" % v if timing_only(res) else v)


def judge(c, res, where):
    """Checks one result (eval's or the run's) against c's header; returns its verdict."""
    v = res.get("verdict")
    if v not in VERDICTS:
        problem_fail(c["name"], "%s: no verdict (status %s, flags %s)"
                     % (where, res.get("status"), res.get("flags")))
        return v
    rs = rules(res)
    if rs is None or any(not isinstance(r.get("message"), str)
                         for r in res.get("reasons") if isinstance(r, dict)):
        problem_fail(c["name"], "%s: reasons is not a list of {rule, message}: %r"
                     % (where, res.get("reasons")))
        rs = rs or []
    want = c["expect"]
    # A cheat expected suspect for its speedup is judged by the verdict as given.
    if effective(res) != want and v != want:
        problem_fail(c["name"], "%s: verdict %s, expected %s (status %s, flags %s, reasons %s)"
                     % (where, v, want, res.get("status"), res.get("flags"), rs))
    elif c["catches"] != "-" and not set(c["catches"].split("|")) & set(rs):
        problem_fail(c["name"], "%s: verdict %s as expected, but no reason names %s: %s"
                     % (where, v, " or ".join(c["catches"].split("|")), rs))
    for f in c["flags"]:
        if f not in (res.get("flags") or []):
            problem_fail(c["name"], "%s: flag %s not raised: %s" % (where, f, res.get("flags")))
    return v


# ------------------------------------------------------------------ the baselines

base_cfg = write_config(os.path.join(work, "baseline.yaml"), """
name: adversarial-baseline
problems: {dir: %s, levels: [1, 2, 3]}
llm: {provider: replay, replay_dir: %s}
eval: {device: cpu, perf_trials: %d, warmup: %d}
runner: {python: %s, cpu_exec_slots: 2}
""" % (os.path.join(HOME, "problems"), work, PERF_TRIALS, WARMUP, py))
t = time.time()
# The doctor's selftest makes the precompiled headers that candidates' builds use (once
# per cache: the evals below come before any run, whose start would make them).
kforge("doctor", base_cfg, "--device", "cpu", timeout=900)
p = kforge("baseline", base_cfg, timeout=900)
print("baselines (%.0f s):\n%s" % (time.time() - t, p.stdout.strip()), flush=True)

# ------------------------------------------------------------------ kforge eval

def evaluate(c):
    t0 = time.time()
    p = kforge("eval", "--problem", c["problem"], "--kernel", c["path"], "--device", "cpu",
               "--json", *SETS, timeout=1200, check_rc=False)
    try:
        res = json.loads(p.stdout)
    except ValueError:
        res = None
    return c, p, res, time.time() - t0


t = time.time()
os.makedirs(os.path.join(work, "evals", "adversarial"))
os.makedirs(os.path.join(work, "evals", "honest"))
with concurrent.futures.ThreadPoolExecutor(2) as ex:
    for c, p, res, wall in ex.map(evaluate, cands):
        c["eval"] = res or {}
        c["eval_rc"] = p.returncode
        with open(os.path.join(work, "evals", c["name"] + ".json"), "w") as f:
            f.write(p.stdout)
        if res is None:
            problem_fail(c["name"], "eval printed no JSON (exit %d): %s"
                         % (p.returncode, (p.stderr or p.stdout)[-1500:]))
            continue
        v = judge(c, res, "eval")
        if v in EXIT and p.returncode not in EXIT[v]:
            problem_fail(c["name"], "eval exited %d for verdict %s (expected %s)"
                         % (p.returncode, v, "/".join(map(str, EXIT[v]))))
        print("eval %-45s %-9s exit %d  %5.1f s  status %s flags %s reasons %s" % (
            c["name"], res.get("verdict"), p.returncode, wall, res.get("status"),
            res.get("flags"), rules(res)), flush=True)
print("evals: %.0f s" % (time.time() - t), flush=True)

# ------------------------------------------------------------------ one kforge run

# A problem of its own for each candidate (a copy of its problem under a new id, the same
# content, so the same cached baseline), and the candidate as that task's one reply.
problems = os.path.join(work, "problems")
replay = os.path.join(work, "replay")
next_id = {}
for c in cands:
    lvl = c["level"]
    next_id[lvl] = next_id.get(lvl, 0) + 1
    stem = "%d_%s_%s" % (next_id[lvl], c["name"].split("/")[0][:3], c["name"].split("/")[1])
    os.makedirs(os.path.join(problems, "level%d" % lvl), exist_ok=True)
    shutil.copy(c["problem"], os.path.join(problems, "level%d" % lvl, stem + ".py"))
    c["task"] = "L%d_%s_s0" % (lvl, stem)
    rdir = os.path.join(replay, "cpu", c["task"])
    os.makedirs(rdir)
    with open(c["path"]) as f:
        code = f.read()
    with open(os.path.join(rdir, "1.md"), "w") as f:
        f.write("Here is my kernel.\n\n```python\n%s```\n" % (code if code.endswith("\n")
                                                               else code + "\n"))
config = write_config(os.path.join(work, "run.yaml"), """
name: adversarial
problems: {dir: %s, levels: [1, 2, 3]}
llm: {provider: replay, replay_dir: %s}
refinement: {turns: 1}
eval: {device: cpu, perf_trials: %d, warmup: %d}
runner: {python: %s, cpu_exec_slots: 2}
workers: 2
""" % (problems, replay, PERF_TRIALS, WARMUP, py))
run_dir = os.path.join(work, "run")
t = time.time()
p = kforge("run", config, "--run-dir", run_dir, "--quiet", timeout=1800, check_rc=False)
print("run: exit %d, %.0f s" % (p.returncode, time.time() - t), flush=True)
check(p.returncode == 0, "kforge run exited %d:\n%s" % (p.returncode, p.stderr[-4000:]))


def run_result(c):
    """The judged result of c's turn 1 in the run, and where it was found: result.json for
    a turn that executed; for one that stopped before (rejected by the static checks, or
    its build failed) compile.json when it carries the verdict, else the verdict and rule
    names of the turn's FEEDBACK record. None, with a failure, when there is none. The
    FEEDBACK record's verdict must be the file's."""
    tdir = os.path.join(run_dir, "tasks", c["task"], "turns", "1")
    recs = records(run_dir, c["task"])
    fb = [r for r in recs if r["turn"] == 1 and r["from"] == "FEEDBACK"]
    executed = any(r["turn"] == 1 and r["from"] == "EXECUTE" for r in recs)
    res, src = None, None
    for name in ("result.json", "compile.json"):
        path = os.path.join(tdir, name)
        if os.path.exists(path):
            with open(path) as f:
                doc = json.load(f)
            if name == "result.json" or "verdict" in doc:
                res, src = doc, name
                break
    if executed and src != "result.json":
        problem_fail(c["name"], "run: turn 1 executed but has no result.json (it has %s)"
                     % sorted(os.listdir(tdir)))
        return None, None
    if not fb:
        problem_fail(c["name"], "run: turn 1 has no FEEDBACK record")
        return res, src
    data = fb[-1]["data"]
    if res is None:
        if "verdict" not in data:
            problem_fail(c["name"], "run: no verdict for turn 1 anywhere (it has %s)"
                         % sorted(os.listdir(tdir)))
            return None, None
        res = {"verdict": data["verdict"], "status": data.get("status"),
               "reasons": [{"rule": r, "message": ""} for r in data.get("reasons") or []]}
        src = "trajectory"
    elif data.get("verdict") != res.get("verdict"):
        problem_fail(c["name"], "run: %s says %s, its FEEDBACK record %s"
                     % (src, res.get("verdict"), data.get("verdict")))
    return res, src


for c in cands:
    tdir = os.path.join(run_dir, "tasks", c["task"], "turns", "1")
    res, c["run_src"] = run_result(c)
    c["run"] = res or {}
    if res is None:
        continue
    judge(c, res, "run (%s)" % c["run_src"])
    ev = c["eval"].get("verdict")
    if effective(res) != effective(c["eval"]):
        problem_fail(c["name"], "run and eval disagree: run %s (status %s, reasons %s), eval %s "
                     "(status %s, reasons %s)" % (res.get("verdict"), res.get("status"),
                                                   rules(res), ev, c["eval"].get("status"),
                                                   rules(c["eval"])))
    kpath = os.path.join(tdir, "kernel.py")
    if os.path.exists(kpath):
        with open(kpath) as f, open(c["path"]) as g:
            if f.read() != g.read():
                print("note: %s: the run's kernel.py differs from the file" % c["name"])

# ------------------------------------------------------------------ the table

print("\n%-40s %-9s %-10s %-10s %-12s %s" % ("candidate", "expect", "eval", "run", "run from",
                                           "reasons (eval)"))
for c in cands:
    print("%-40s %-9s %-10s %-10s %-12s %s" % (
        c["name"], c["expect"], shown(c["eval"]), shown(c["run"]), c.get("run_src") or "-",
        ", ".join(sorted(set(r for r in (rules(c["eval"]) or []) if r)))))
print("(~: suspect for excessive_speedup alone, a timing judgement taken as correct)")
print("wall time: %.0f s" % (time.time() - T0))
if failures:
    print("\n%d failure(s):\n  %s" % (len(failures), "\n  ".join(failures)))
    sys.exit(1)
print("ok: %d candidates, eval and run agree, every verdict as expected" % len(cands))
