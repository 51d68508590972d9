#!/usr/bin/env python3
"""Problem sets, content hashes, comparisons and subsets on real CPU runs (the replay
provider with the demo's recorded replies, one turn, real builds and executions):

- problems.subset (a file with a comment and a blank line) and problems.exclude select
  the tasks; tasks.json records each problem file's SHA-256 as it was at the run's start;
- with two samples a problem the report has fast_p@k;
- `kforge report A B` compares the runs on their common problems, leaves out the one
  only A has, and warns, once, about the problem whose file was edited for B;
- `kforge subset A B --size 1` writes a file that a third run takes as problems.subset."""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-compare-cpu")
keys = ["level1/1_ReLU.py", "level1/2_LeakyReLU.py", "level2/2_Add_Mul_Tanh.py"]
problems_a = copy_problems(os.path.join(work, "problems_a"), keys)
problems_b = copy_problems(os.path.join(work, "problems_b"), keys)
with open(os.path.join(problems_b, "level1", "1_ReLU.py"), "a") as f:
    f.write("# edited for run B: the same key, other content\n")
subset = os.path.join(work, "three.txt")
with open(subset, "w") as f:
    f.write("# the three problems\n\nL1_1_ReLU\nL1_2_LeakyReLU   # a trailing comment\n"
            "L2_2_Add_Mul_Tanh\n")


def config(name, problems, extra):
    return write_config(os.path.join(work, name + ".yaml"), """
name: %s
problems: {dir: %s, levels: [1, 2], %s}
llm: {provider: replay, replay_dir: %s}
refinement: {turns: 1, %s}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1, timeout_s: 600,
       compile_timeout_s: 3600}
runner: {python: %s}
workers: 2
""" % (name, problems, extra[0], os.path.join(HOME, "configs", "demo_responses"), extra[1], py))


def run(name, problems, extra):
    d = os.path.join(work, name)
    kforge("run", config(name, problems, extra), "--run-dir", d, "--quiet", timeout=3000)
    return d


def manifest(d):
    return json.load(open(os.path.join(d, "tasks.json")))


run_a = run("a", problems_a, ("subset: %s, samples: 2" % subset, "feedback: [G]"))
run_b = run("b", problems_b, ("subset: %s, exclude: [L2_2_Add_Mul_Tanh]" % subset,
                              "feedback: [G, E]"))

# ---- selection and hashes
ids_a = [t["id"] for t in manifest(run_a)]
check(ids_a == ["L1_1_ReLU_s0", "L1_1_ReLU_s1", "L1_2_LeakyReLU_s0", "L1_2_LeakyReLU_s1",
                "L2_2_Add_Mul_Tanh_s0", "L2_2_Add_Mul_Tanh_s1"], "run A tasks %r" % ids_a)
ids_b = [t["id"] for t in manifest(run_b)]
check(ids_b == ["L1_1_ReLU_s0", "L1_2_LeakyReLU_s0"], "run B tasks %r (exclude)" % ids_b)
for d in (run_a, run_b):
    for t in manifest(d):
        want = hashlib.sha256(open(t["problem_path"], "rb").read()).hexdigest()
        check(t.get("problem_sha256") == want, "%s %s: hash %r, file %s" % (d, t["id"], t.get("problem_sha256"), want))
ha = {t["problem_key"]: t["problem_sha256"] for t in manifest(run_a)}
hb = {t["problem_key"]: t["problem_sha256"] for t in manifest(run_b)}
check(ha["L1_1_ReLU"] != hb["L1_1_ReLU"] and ha["L1_2_LeakyReLU"] == hb["L1_2_LeakyReLU"],
      "hashes: %r %r" % (ha, hb))

# ---- fast_p@k of A: ReLU's reply is correct, LeakyReLU's a mismatch, the third no code
rep_a = json.loads(kforge("report", run_a, "--json").stdout)
ak = rep_a.get("at_k")
check(ak is not None and ak["samples"] == 2 and ak["problems"] == 3, "A at_k %r" % ak)
check(all(abs(v - 1 / 3) < 1e-9 for v in ak["fast_p_at_k"]["0"]),
      "fast_0@k of A: %r (one of three problems correct in every sample)" % ak["fast_p_at_k"]["0"])
check("at_k" not in json.loads(kforge("report", run_b, "--json").stdout), "B has one sample")

# ---- A against B on their common problems
p = kforge("report", run_a, run_b, "--json")
cmp = json.loads(p.stdout)
check(cmp["common_problems"] == 2 and cmp["left_out"] == ["L2_2_Add_Mul_Tanh"],
      "common %r, left out %r" % (cmp["common_problems"], cmp["left_out"]))
warn = [l for l in p.stderr.splitlines() if "different content" in l]
check(len(warn) == 1 and "L1_1_ReLU" in warn[0], "content warnings %r" % p.stderr)
rows = {r["metric"]: r for r in cmp["comparison"]}
check(abs(rows["fast_0"]["values"][0] - 0.5) < 1e-9 and abs(rows["fast_0"]["values"][1] - 0.5) < 1e-9,
      "fast_0 on the common problems: %r" % rows["fast_0"]["values"])
check(not rows["fast_0"]["vs_first"][0]["beyond_noise"], "the same replies differ beyond noise")
check([r["label"] for r in cmp["runs"]] == ["a (G)", "b (G+E)"], "labels %r" % [r["label"] for r in cmp["runs"]])
text = kforge("report", run_a, run_b).stdout
check("2 runs on their 2 common problems" in text, text)

# ---- a subset of one, taken by a third run
out = os.path.join(work, "one.txt")
p = kforge("subset", run_a, run_b, "--size", "1", "--out", out)
check("different content" in p.stderr and "mean absolute deviation" in p.stdout, p.stdout + p.stderr)
chosen = [l.strip() for l in open(out) if l.strip() and not l.startswith("#")]
check(len(chosen) == 1 and chosen[0] in ("L1_1_ReLU", "L1_2_LeakyReLU"), "subset %r" % chosen)
run_c = run("c", problems_a, ("subset: %s" % out, "feedback: [G]"))
check([t["problem_key"] for t in manifest(run_c)] == chosen, "run C tasks %r" % manifest(run_c))
print("ok: subset and exclude select, hashes recorded, fast_p@k, A vs B with a content "
      "warning, a subset file a run takes")
