"""adversarial.py: the driver of the adversarial suites (test_adversarial on the CPU,
test_adversarial_gpu on CUDA): cheating and honest candidates, judged by `kforge eval` and
by a run, which must agree with each other and with what each file says it should get.

A suite is tests/data/adversarial/<device>/ (the cheats), tests/data/honest/<device>/ and
the device's demo turns that are correct (read from configs/demo_responses/, where
expected.json says ok). Every candidate file begins with comment lines (a demo turn is
written as the demo's run extracts it, with its header kept beside it: demo_honest)

    # problem: problems/level1/1_ReLU.py      the problem it answers (a path under the
                                              repository, .../levelN/ID_Name.py)
    # expect: rejected                        correct | incorrect | rejected | suspect
    # catches: inherits_reference             a rule its reasons must name, or -; a|b:
                                              either (a static rule or the runtime flag
                                              that would catch it if the static one did not)
    # why: ...                                one line: what it does
    # flags: input_mutated                    (optional) runtime flags it must raise
    # config: eval.static_checks=false        (optional) --set KEY=VALUE, comma-separated,
                                              for its eval; such a file is judged by
                                              eval alone (the run has one config), so
                                              that a runtime defence is seen where the
                                              static checks would have stopped it first
    # speedup_below: 2                        (optional) its eval's speedup (the low end
                                              of its 95% interval) must be under this: a
                                              cheat whose gain the evaluation takes away
                                              by construction

- `kforge doctor` (its selftest makes the precompiled headers that builds use), then the
  problems' reference timings are measured, one at a time (`kforge baseline`, once per
  problems folder the candidates use), so the speedups below do not rest on a reference
  timed beside a build;
- each file alone: `kforge eval --problem P --kernel K --device D --json`: its `verdict`
  is the header's `expect`, its exit status is the verdict's, and unless `catches` is -,
  one of its `reasons` (objects with `rule` and `message`) has that rule;
- all of them again through one `kforge run` of one turn: a problem directory with a
  copy of each file's problem under a name of its own (one task per candidate) and the
  `replay` provider serving the file as that task's reply; each task's turn-1
  result.json must carry the verdict that eval gave, and the `catches` rule (a turn
  that never executed, rejected by the static checks or not built, has no result.json:
  its compile.json, else its FEEDBACK record, holds the verdict). The FEEDBACK record's
  verdict must be the same.

On the CPU the evals come first, two at a time, then the run. On CUDA the run comes
first: its builds run in parallel in the run's compile slots while its executions take
the GPU one at a time, and they fill the shared build cache, so that the evals after it,
one at a time (two executions on one GPU would time each other), find every build made.

excessive_speedup (a speedup above 10x over the reference by the means and by the
medians, both timed in one runner) is a measurement: an honest kernel against a slow BLAS (the
demo's CPU matmul against Debian's torch) can earn it, and on a shared 2-core machine
its interval comes and goes with the load: a suspect verdict whose only reason is
excessive_speedup counts as correct, for the expectation and for the agreement of run and
eval (the table marks it with ~).

A table (candidate, expect, eval verdict, run verdict, reasons) ends the output; each
eval's JSON is kept under the scratch directory (evals/).

collect() and header() need only the standard library (tests/feedback/adversarial_static.py uses
them without torch).
"""
import concurrent.futures
import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kfe2e import HOME, check, kforge, records, scratch, write_config  # noqa: E402

DATA = os.path.join(HOME, "tests", "data")
VERDICTS = ("correct", "incorrect", "rejected", "suspect")
# kforge eval's exit status for each verdict (an incorrect one: wrong output, not built,
# or failed when run).
EXIT = {"correct": (0,), "incorrect": (1, 3, 4), "rejected": (3,), "suspect": (6,)}


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


def demo_honest(device, dest):
    """The device's demo turns that are correct (configs/demo_responses/expected.json:
    status ok), in KernelBench's format (configs/demo_responses/<device>/: the suite
    judges load_inline candidates), as honest candidates written into dest (the demo
    keeps its one copy): a list of (path, header). Each file is the turn's code exactly as
    a run extracts it (its kernel.py), the header kept beside it rather than in it, so
    that its build cache key is the reply's code alone."""
    responses = os.path.join(HOME, "configs", "demo_responses")
    with open(os.path.join(responses, "expected.json")) as f:
        expected = json.load(f)[device]
    os.makedirs(dest, exist_ok=True)
    out = []
    for key, statuses in sorted(expected.items()):
        m = re.match(r"L(\d+)_(\d+)_(\w+)$", key)
        for turn, status in enumerate(statuses, 1):
            if status != "ok":
                continue
            md = os.path.join(responses, device, key, "%d.md" % turn)
            code = re.search(r"```python\n(.*?)```", open(md).read(), re.S).group(1)
            path = os.path.join(dest, "demo_%s_t%d.py" % (key, turn))
            with open(path, "w") as f:
                f.write(code)
            out.append((path, {"problem": "problems/level%s/%s_%s.py" % m.groups(),
                               "expect": "correct", "catches": "-",
                               "why": "the %s demo's turn %d for %s, correct by expected.json"
                                      % (device, turn, key)}))
    return out


def collect(device, demo_dir, min_adversarial, min_honest):
    """Every candidate of the device's suite, its header checked: a list of dicts (name,
    path, problem, level, expect, catches, flags). The demo's honest turns are written
    into demo_dir first, their headers beside them (demo_honest)."""
    files = []
    for folder in (os.path.join(DATA, "adversarial", device), os.path.join(DATA, "honest", device)):
        check(os.path.isdir(folder), "no folder %s" % folder)
        files += [(os.path.join(folder, fn), header(os.path.join(folder, fn)))
                  for fn in sorted(os.listdir(folder)) if fn.endswith(".py")]
    files += demo_honest(device, demo_dir)
    cands = []
    for path, h in files:
        fn = os.path.basename(path)
        kind = "honest" if os.path.dirname(path) == demo_dir else \
            os.path.basename(os.path.dirname(os.path.dirname(path)))
        for key in ("problem", "expect", "catches", "why"):
            check(h.get(key), "%s: no '# %s:' line in its header" % (path, key))
        check(h["expect"] in VERDICTS, "%s: expect %r is not one of %s" % (
            path, h["expect"], VERDICTS))
        problem = os.path.join(HOME, h["problem"])
        check(os.path.isfile(problem), "%s: its problem %s does not exist" % (path, problem))
        m = re.match(r".*/level(\d+)/(\d+)_(\w+)\.py$", problem)
        check(m is not None, "%s: %s is not a levelN/ID_Name.py problem" % (path, problem))
        sets = [kv.strip() for kv in h.get("config", "").split(",") if kv.strip()]
        check(all("=" in kv for kv in sets), "%s: config %r is not KEY=VALUE, ..." % (path, sets))
        cands.append({"name": "%s/%s" % (kind, fn[:-3]), "path": path, "problem": problem,
                      "level": int(m.group(1)), "expect": h["expect"],
                      "catches": h["catches"], "flags": h.get("flags", "").split(),
                      "sets": sets, "speedup_below": float(h["speedup_below"])
                      if h.get("speedup_below") else None})
    n_adv = sum(c["name"].startswith("adversarial/") for c in cands)
    n_honest = sum(c["name"].startswith("honest/") for c in cands)
    check(n_adv >= min_adversarial, "fewer than %d adversarial candidates" % min_adversarial)
    check(n_honest >= min_honest, "fewer than %d honest candidates" % min_honest)
    print("%d candidates (%d adversarial, %d honest)" % (len(cands), n_adv, n_honest), flush=True)
    return cands


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


# ------------------------------------------------------------------ one suite

class Suite:
    """One device's suite. perf_trials, warmup: the timing of every eval and of the run;
    eval_parallel: evals at once; run_first: the run before the evals (CUDA: its compile
    slots build in parallel and fill the cache the evals then hit); runner: extra
    runner.* settings (key: value) for evals and the run; workers: the run's."""

    def __init__(self, device, py, min_adversarial, min_honest, perf_trials, warmup,
                 eval_parallel, run_first, runner, workers, eval_timeout=1200,
                 run_timeout=1800):
        self.t0 = time.time()
        self.device, self.py = device, py
        self.perf_trials, self.warmup = perf_trials, warmup
        self.eval_parallel, self.run_first = eval_parallel, run_first
        self.runner = dict(runner, python=py)
        self.workers = workers
        self.eval_timeout, self.run_timeout = eval_timeout, run_timeout
        self.failures = []
        self.work = scratch("adversarial-%s" % device)
        self.cands = collect(device, os.path.join(self.work, "honest-demo"), min_adversarial,
                             min_honest)
        self.sets = ["--set", "eval.perf_trials=%d" % perf_trials,
                     "--set", "eval.warmup=%d" % warmup]
        for k, v in sorted(self.runner.items()):
            self.sets += ["--set", "runner.%s=%s" % (k, v)]

    def fail(self, name, msg):
        self.failures.append("%s: %s" % (name, msg))
        print("FAIL %s: %s" % (name, msg), flush=True)

    def runner_yaml(self):
        return "{%s}" % ", ".join("%s: %s" % kv for kv in sorted(self.runner.items()))

    def judge(self, c, res, where):
        """Checks one result (eval's or the run's) against c's header; returns its verdict."""
        v = res.get("verdict")
        if v not in VERDICTS:
            self.fail(c["name"], "%s: no verdict (status %s, flags %s)"
                      % (where, res.get("status"), res.get("flags")))
            return v
        rs = rules(res)
        if rs is None or any(not isinstance(r.get("message"), str)
                             for r in res.get("reasons") if isinstance(r, dict)):
            self.fail(c["name"], "%s: reasons is not a list of {rule, message}: %r"
                      % (where, res.get("reasons")))
            rs = rs or []
        want = c["expect"]
        # A cheat expected suspect for its speedup is judged by the verdict as given.
        if effective(res) != want and v != want:
            self.fail(c["name"], "%s: verdict %s, expected %s (status %s, flags %s, reasons %s)"
                      % (where, v, want, res.get("status"), res.get("flags"), rs))
        elif c["catches"] != "-" and not set(c["catches"].split("|")) & set(rs):
            self.fail(c["name"], "%s: verdict %s as expected, but no reason names %s: %s"
                      % (where, v, " or ".join(c["catches"].split("|")), rs))
        for f in c["flags"]:
            if f not in (res.get("flags") or []):
                self.fail(c["name"], "%s: flag %s not raised: %s" % (where, f, res.get("flags")))
        # speedup_below: the cheat is not shown to gain: the speedup's 95% interval reaches
        # under the bound (the point alone, where there is no interval). On a machine
        # loaded past its cores (the suite beside a 16-worker bench) a naive kernel's
        # 0.08x once measured 1.02x with passes of 0.37, 1.04 and 0.68 and an interval of
        # 0.75-1.39: noise, not a gain, and no cheat that works reaches under its bound.
        below = c.get("speedup_below")
        sp = res.get("speedup")
        ci = res.get("speedup_ci95")
        low = ci[0] if isinstance(ci, list) and ci and isinstance(ci[0], (int, float)) else sp
        if below is not None and where == "eval" and not (isinstance(low, (int, float)) and low < below):
            self.fail(c["name"], "%s: speedup %s (95%% interval %s), expected under %g"
                      % (where, sp, ci, below))
        return v

    # -------------------------------------------------------------- the baselines

    def baselines(self):
        """The doctor, then the reference timings of every problems folder the candidates
        use (bundled problems/, and test problems under tests/data)."""
        roots = sorted({os.path.dirname(os.path.dirname(c["problem"])) for c in self.cands})
        t = time.time()
        for i, root in enumerate(roots):
            levels = sorted(int(d[5:]) for d in os.listdir(root) if re.match(r"level\d+$", d))
            cfg = write_config(os.path.join(self.work, "baseline%d.yaml" % i), """
name: adversarial-baseline
problems: {dir: %s, levels: %s}
llm: {provider: replay, replay_dir: %s}
eval: {device: %s, perf_trials: %d, warmup: %d}
runner: %s
""" % (root, levels, self.work, self.device, self.perf_trials, self.warmup,
       self.runner_yaml()))
            if i == 0:
                # The doctor's selftest makes the precompiled headers that candidates'
                # builds use (once per cache).
                kforge("doctor", cfg, "--device", self.device, timeout=900)
            p = kforge("baseline", cfg, timeout=1800)
            print("baselines of %s (%.0f s):\n%s" % (root, time.time() - t, p.stdout.strip()),
                  flush=True)

    # -------------------------------------------------------------- kforge eval

    def evaluate(self, c):
        t0 = time.time()
        sets = self.sets + [a for kv in c["sets"] for a in ("--set", kv)]
        p = kforge("eval", "--problem", c["problem"], "--kernel", c["path"], "--device",
                   self.device, "--json", *sets, timeout=self.eval_timeout, check_rc=False)
        try:
            res = json.loads(p.stdout)
        except ValueError:
            res = None
        return c, p, res, time.time() - t0

    def evals(self):
        t = time.time()
        os.makedirs(os.path.join(self.work, "evals", "adversarial"))
        os.makedirs(os.path.join(self.work, "evals", "honest"))
        with concurrent.futures.ThreadPoolExecutor(self.eval_parallel) as ex:
            for c, p, res, wall in ex.map(self.evaluate, self.cands):
                c["eval"] = res or {}
                c["eval_rc"] = p.returncode
                with open(os.path.join(self.work, "evals", c["name"] + ".json"), "w") as f:
                    f.write(p.stdout)
                if res is None:
                    self.fail(c["name"], "eval printed no JSON (exit %d): %s"
                              % (p.returncode, (p.stderr or p.stdout)[-1500:]))
                    continue
                v = self.judge(c, res, "eval")
                if v in EXIT and p.returncode not in EXIT[v]:
                    self.fail(c["name"], "eval exited %d for verdict %s (expected %s)"
                              % (p.returncode, v, "/".join(map(str, EXIT[v]))))
                hit = ((res.get("steps") or {}).get("precompile") or {}).get("cache_hit")
                print("eval %-45s %-9s exit %d  %5.1f s  build hit %s  status %s flags %s "
                      "reasons %s" % (c["name"], res.get("verdict"), p.returncode, wall, hit,
                                      res.get("status"), res.get("flags"), rules(res)),
                      flush=True)
        print("evals: %.0f s" % (time.time() - t), flush=True)

    # -------------------------------------------------------------- one kforge run

    def run(self):
        """A problem of its own for each candidate (a copy of its problem under a new id,
        the same content, so the same cached baseline), and the candidate as that task's
        one reply."""
        problems = os.path.join(self.work, "problems")
        replay = os.path.join(self.work, "replay")
        next_id = {}
        for c in self.in_run():
            lvl = c["level"]
            next_id[lvl] = next_id.get(lvl, 0) + 1
            stem = "%d_%s_%s" % (next_id[lvl], c["name"].split("/")[0][:3],
                                 c["name"].split("/")[1])
            os.makedirs(os.path.join(problems, "level%d" % lvl), exist_ok=True)
            shutil.copy(c["problem"], os.path.join(problems, "level%d" % lvl, stem + ".py"))
            c["task"] = "L%d_%s_s0" % (lvl, stem)
            rdir = os.path.join(replay, self.device, c["task"])
            os.makedirs(rdir)
            with open(c["path"]) as f:
                code = f.read()
            with open(os.path.join(rdir, "1.md"), "w") as f:
                f.write("Here is my kernel.\n\n```python\n%s```\n"
                        % (code if code.endswith("\n") else code + "\n"))
        config = write_config(os.path.join(self.work, "run.yaml"), """
name: adversarial
problems: {dir: %s, levels: [1, 2, 3]}
llm: {provider: replay, replay_dir: %s}
refinement: {turns: 1}
eval: {device: %s, perf_trials: %d, warmup: %d}
runner: %s
workers: %d
""" % (problems, replay, self.device, self.perf_trials, self.warmup, self.runner_yaml(),
       self.workers))
        self.run_dir = os.path.join(self.work, "run")
        t = time.time()
        p = kforge("run", config, "--run-dir", self.run_dir, "--quiet", timeout=self.run_timeout,
                   check_rc=False)
        print("run: exit %d, %.0f s" % (p.returncode, time.time() - t), flush=True)
        check(p.returncode == 0, "kforge run exited %d:\n%s" % (p.returncode, p.stderr[-4000:]))

    def run_result(self, c):
        """The judged result of c's turn 1 in the run, and where it was found: result.json
        for a turn that executed; for one that stopped before (rejected by the static
        checks, or its build failed) compile.json when it carries the verdict, else the
        verdict and rule names of the turn's FEEDBACK record. None, with a failure, when
        there is none. The FEEDBACK record's verdict must be the file's."""
        tdir = os.path.join(self.run_dir, "tasks", c["task"], "turns", "1")
        recs = records(self.run_dir, c["task"])
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
            self.fail(c["name"], "run: turn 1 executed but has no result.json (it has %s)"
                      % sorted(os.listdir(tdir)))
            return None, None
        if not fb:
            self.fail(c["name"], "run: turn 1 has no FEEDBACK record")
            return res, src
        data = fb[-1]["data"]
        if res is None:
            if "verdict" not in data:
                self.fail(c["name"], "run: no verdict for turn 1 anywhere (it has %s)"
                          % sorted(os.listdir(tdir)))
                return None, None
            res = {"verdict": data["verdict"], "status": data.get("status"),
                   "reasons": [{"rule": r, "message": ""} for r in data.get("reasons") or []]}
            src = "trajectory"
        elif data.get("verdict") != res.get("verdict"):
            self.fail(c["name"], "run: %s says %s, its FEEDBACK record %s"
                      % (src, res.get("verdict"), data.get("verdict")))
        return res, src

    def in_run(self):
        """The candidates the one run judges: those with no config of their own."""
        return [c for c in self.cands if not c["sets"]]

    def judge_run(self):
        for c in self.in_run():
            tdir = os.path.join(self.run_dir, "tasks", c["task"], "turns", "1")
            res, c["run_src"] = self.run_result(c)
            c["run"] = res or {}
            if res is None:
                continue
            self.judge(c, res, "run (%s)" % c["run_src"])
            kpath = os.path.join(tdir, "kernel.py")
            if os.path.exists(kpath):
                with open(kpath) as f, open(c["path"]) as g:
                    if f.read() != g.read():
                        print("note: %s: the run's kernel.py differs from the file" % c["name"])

    def agree(self):
        for c in self.cands:
            res, ev = c.get("run") or {}, c.get("eval") or {}
            if not res or not ev:
                continue
            if effective(res) != effective(ev):
                self.fail(c["name"], "run and eval disagree: run %s (status %s, reasons %s), "
                          "eval %s (status %s, reasons %s)"
                          % (res.get("verdict"), res.get("status"), rules(res),
                             ev.get("verdict"), ev.get("status"), rules(ev)))

    # -------------------------------------------------------------- all of it

    def main(self):
        self.baselines()
        if self.run_first:
            self.run()
            self.judge_run()
            self.evals()
        else:
            self.evals()
            self.run()
            self.judge_run()
        self.agree()
        print("\n%-40s %-9s %-10s %-10s %-12s %s" % ("candidate", "expect", "eval", "run",
                                                   "run from", "reasons (eval)"))
        for c in self.cands:
            print("%-40s %-9s %-10s %-10s %-12s %s" % (
                c["name"], c["expect"], shown(c.get("eval") or {}), shown(c.get("run") or {}),
                c.get("run_src") or "-",
                ", ".join(sorted(set(r for r in (rules(c.get("eval") or {}) or []) if r)))))
        print("(~: suspect for excessive_speedup alone, a timing judgement taken as correct)")
        print("wall time: %.0f s" % (time.time() - self.t0))
        if self.failures:
            print("\n%d failure(s):\n  %s" % (len(self.failures), "\n  ".join(self.failures)))
            sys.exit(1)
        print("ok: %d %s candidates, eval and run agree, every verdict as expected"
              % (len(self.cands), self.device))
