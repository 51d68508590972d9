#!/usr/bin/env python3
"""test_eval_cache: `kforge eval` and the cache that runs share (feedback/cache.c).

- two evals of one new candidate started at once: both correct, one build directory
  (the runner's build lock and the seal lock serialise them)
- a third eval of the same files: the precompile and the baseline are cache hits, no
  build and no reference timing
- the same candidate with one byte changed: a build of its own, its runners forked from
  a fork server (a cached one's lone execute too)
- `kforge eval --profile` (P in the feedback): the cached build is profiled as a run's
  PROFILE step does (torch.profiler on the CPU), the JSON carries the profile and its
  wall time, the text the P table; without it there is no profile step
- `kforge baseline CONFIG` times a problem once (a second call finds it cached), and eval
  then takes the reference's timings from the cache; a missing config exits 2; neither
  leaves its scratch directory behind
- a config's cache.dir is the cache, before $KFORGE_CACHE_DIR
"""
import concurrent.futures
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kfe2e import HOME, check, kforge, reply_code, scratch, torch_python  # noqa: E402

torch_python()
work = scratch("eval_cache")
problem = os.path.join(HOME, "problems", "level1", "2_LeakyReLU.py")
code = reply_code("leaky_2")
# A candidate no earlier test built: a comment unique to this run of the test.
stamp = "// eval_cache %d %f\n" % (os.getpid(), time.time())
code = code.replace("#include <torch/extension.h>", "#include <torch/extension.h>\n" + stamp, 1)
check(stamp in code, "the reply has no torch/extension.h include to mark")
kernel = os.path.join(work, "kernel.py")
with open(kernel, "w") as f:
    f.write(code)
SETS = ["--set", "eval.perf_trials=5", "--set", "eval.warmup=1"]


def evaluate(path):
    p = kforge("eval", "--problem", problem, "--kernel", path, "--device", "cpu", "--json",
               *SETS, timeout=1200, check_rc=False)
    check(p.returncode == 0, "kforge eval exited %d: %s" % (p.returncode, p.stderr[-3000:]))
    return json.loads(p.stdout)


with concurrent.futures.ThreadPoolExecutor(2) as ex:
    a, b = list(ex.map(evaluate, [kernel, kernel]))
for r in (a, b):
    check(r["status"] == "ok" and r["correct"], "a concurrent eval: %s" % r["status"])

print("concurrent: precompile %s / %s" % (a["steps"]["precompile"], b["steps"]["precompile"]))

c = evaluate(kernel)
check(c["correct"], "the third eval is not correct")
check(c["steps"]["precompile"] == {"wall_s": 0.0, "cache_hit": True},
      "the third eval built again: %s" % c["steps"]["precompile"])
check(c["steps"]["baseline"]["cache_hit"] is True and c["steps"]["baseline"]["wall_s"] == 0.0,
      "the third eval timed the reference again: %s" % c["steps"]["baseline"])

# The speedup's statistic: the medians' ratio on the CPU by default (eval.speedup auto), the
# means' where eval.speedup says so, on the same cached build and baseline.
pair = c["result"]["timing"]["pair"]
check(pair["statistic"] == "median" and c["speedup"] == pair["median_speedup"],
      "eval.speedup auto on the CPU: speedup %s, pair %s" % (c["speedup"], pair))
p = kforge("eval", "--problem", problem, "--kernel", kernel, "--device", "cpu", "--json", *SETS,
           "--set", "eval.speedup=mean", timeout=600)
m = json.loads(p.stdout)
pair = m["result"]["timing"]["pair"]
check(pair["statistic"] == "mean" and m["speedup"] == pair["mean_speedup"] and
      m["result"]["speedup"] == pair["mean_speedup"],
      "eval.speedup mean: speedup %s, pair %s" % (m["speedup"], pair))

other = os.path.join(work, "kernel2.py")
with open(other, "w") as f:
    f.write(code.replace(stamp, stamp.replace("eval_cache", "eval_cache changed")))
d = evaluate(other)
check(d["correct"] and d["steps"]["precompile"]["cache_hit"] is False,
      "a changed candidate reused another's build: %s" % d["steps"]["precompile"])
check(d["steps"]["baseline"]["cache_hit"] is True,
      "the same problem's baseline was measured again: %s" % d["steps"]["baseline"])
# A build and an execute: their runners are forked from one fork server that imported
# torch once, as a worker's are (feedback/warm.c), and a cache hit's lone execute too: the
# server outlives each eval for the next (test_eval_server has the rest of that story).
starts = (d["result"]["details"].get("start"), c["result"]["details"].get("start"))
check(starts == ("forked", "forked"),
      "the execute of a built eval started %s, of a cached one %s (expected forked twice)"
      % starts)
print("ok: concurrent builds safe, cache hits for the same files, a miss for changed code")

check("profile" not in c and "profile" not in c["steps"], "an eval without --profile profiled")
p = kforge("eval", "--problem", problem, "--kernel", kernel, "--device", "cpu", "--json",
           "--profile", *SETS, timeout=600, check_rc=False)
check(p.returncode == 0, "kforge eval --profile exited %d: %s" % (p.returncode, p.stderr[-3000:]))
e = json.loads(p.stdout)
prof = e.get("profile") or {}
check(e["verdict"] == "correct" and prof.get("source") == "torch.profiler" and
      prof.get("kernels") and e["steps"]["profile"]["wall_s"] > 0,
      "kforge eval --profile: verdict %s, profile %s, steps %s"
      % (e["verdict"], json.dumps(prof)[:500], e["steps"]))
p = kforge("eval", "--problem", problem, "--kernel", kernel, "--device", "cpu", "--profile",
           *SETS, timeout=600, check_rc=False)
check(p.returncode == 0 and "Profile (torch.profiler" in p.stdout,
      "kforge eval --profile printed no P table: %s" % p.stdout[-2000:])
print("ok: eval --profile profiles as a run's PROFILE step does")

# kforge baseline: a problem timed ahead is not timed again by eval (a copy of the problem
# with a comment of its own: content no earlier test timed).
pdir = os.path.join(work, "problems", "level1")
os.makedirs(pdir)
mine = os.path.join(pdir, "2_LeakyReLU.py")
with open(problem) as f, open(mine, "w") as g:
    g.write(f.read() + "\n# eval_cache %s\n" % stamp.strip())
cfg = os.path.join(work, "baseline.yaml")
with open(cfg, "w") as f:
    f.write("name: bl\nproblems: {dir: %s, levels: [1]}\n"
            "llm: {provider: replay, replay_dir: %s}\n"
            "eval: {device: cpu, perf_trials: 5, warmup: 1}\n" % (os.path.dirname(pdir), work))
# Their scratch directories go with them (a TMPDIR of the test's own, to look in after).
tmpd = os.path.join(work, "tmp")
os.makedirs(tmpd)
TMP = {"TMPDIR": tmpd}
p = kforge("baseline", cfg, timeout=600, env=TMP)
check("L1_2_LeakyReLU" in p.stdout and "measured" in p.stdout,
      "kforge baseline did not time the problem: %s" % p.stdout)
p = kforge("baseline", cfg, timeout=600, env=TMP)
check("cached" in p.stdout and "measured" not in p.stdout,
      "kforge baseline timed it again: %s" % p.stdout)
p = kforge("eval", "--problem", mine, "--kernel", kernel, "--device", "cpu", "--json", *SETS,
           timeout=600, env=TMP)
e = json.loads(p.stdout)
check(os.listdir(tmpd) == [], "kforge baseline or eval left scratch behind in TMPDIR: %s" %
      os.listdir(tmpd))
check(e["correct"] and e["steps"]["baseline"]["cache_hit"] is True,
      "eval timed a problem that kforge baseline had timed: %s" % e["steps"])
p = kforge("baseline", os.path.join(work, "nonexistent.yaml"), check_rc=False)
check(p.returncode == 2 and "nonexistent.yaml" in p.stderr,
      "kforge baseline of a missing config: exit %d, %r" % (p.returncode, p.stderr))
print("ok: kforge baseline fills the cache that eval then uses")

# cache.dir: the config names the cache (a shared filesystem's, for a Slurm run's shards),
# before $KFORGE_CACHE_DIR: the reference timed goes there and nowhere else.
shared = os.path.join(work, "shared-cache")
cfg2 = os.path.join(work, "baseline-shared.yaml")
with open(cfg, "r") as f, open(cfg2, "w") as g:
    g.write(f.read() + "cache: {dir: %s}\n" % shared)
# $KFORGE_CACHE_DIR of this check alone (the suite's is written by other tests meanwhile).
other = os.path.join(work, "env-cache")
p = kforge("baseline", cfg2, timeout=600, env=dict(TMP, KFORGE_CACHE_DIR=other))
check("L1_2_LeakyReLU" in p.stdout and "measured" in p.stdout,
      "kforge baseline with cache.dir found it cached: %s" % p.stdout)
check([n for n in os.listdir(os.path.join(shared, "baselines")) if n.endswith(".json")],
      "cache.dir %s holds no baseline" % shared)
check(not os.path.isdir(os.path.join(other, "baselines")) or
      not os.listdir(os.path.join(other, "baselines")),
      "kforge baseline with cache.dir wrote into $KFORGE_CACHE_DIR too")
print("ok: cache.dir names the cache")
