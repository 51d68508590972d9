#!/usr/bin/env python3
"""report over several samples and several runs, and kforge subset, on hand-built run
directories with known records:

- fast_p@k and fast_1@k by turn of a run with three samples a problem equal the unbiased
  estimator worked by hand; a run with one sample has none (its report is unchanged);
- `report A B` puts the runs side by side on their common problems: the values are the
  single-run reports' over those problems, the differences are from the first run, a
  large difference is beyond the runs' noise and a zero one is not; a problem whose
  content hash differs between the runs is one warning line;
- `kforge subset` on runs whose problems fall in four planted groups of identical
  results (two of them told apart only by whether their turns compiled) picks one problem
  of each group, reproduces the full set exactly (deviation
  0), beats random subsets, and writes a problems.subset file with a comment header;
- bad input gets one line and a nonzero exit.
"""
import json
import os
import sys
from math import comb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from kfe2e import *  # noqa: E402,F401

work = scratch("report-compare")


def ok(speedup):
    return {"outcome": {"verdict": "correct", "reasons": [], "status": "ok", "compiled": True,
                        "correct": True, "speedup": speedup, "runtime_ms": 2.0 / speedup,
                        "ref_runtime_ms": 2.0}}


def bad():
    return {"outcome": {"verdict": "incorrect", "reasons": ["value_mismatch"],
                        "status": "value_mismatch", "compiled": True, "correct": False}}


def make_run(path, name, problems, turns, sha=None):
    """problems: {key: [turns of sample 0, turns of sample 1, ...]}; tasks.json then says
    each task's problem key, sample and (sha: {key: hash}) content hash."""
    tasks = []
    for key, samples in problems.items():
        for s, t in enumerate(samples):
            tasks.append({"id": "%s_s%d" % (key, s), "level": 1, "turns": t})
    fake_run(path, name, tasks, turns)
    manifest = json.load(open(os.path.join(path, "tasks.json")))
    for m in manifest:
        key, s = m["id"].rsplit("_s", 1)
        m["problem_key"], m["sample"] = key, int(s)
        m["problem_sha256"] = (sha or {}).get(key, "0" * 64)
    with open(os.path.join(path, "tasks.json"), "w") as f:
        json.dump(manifest, f)
    return path


def close(got, want, what):
    check(abs(got - want) < 1e-9, "%s: got %r, want %r" % (what, got, want))


def at_k(n, c, k):
    return 1 - comb(n - c, k) / comb(n, k)


# ---- fast_p@k by hand: problem X samples (best by turn 1, 2): 2.0 | none | none, 1.2;
# problem Y: 0.5 | none | none
runk = make_run(os.path.join(work, "samples"), "samples", {
    "L1_1_X": [[ok(2.0), ok(2.0)], [bad(), bad()], [bad(), ok(1.2)]],
    "L1_2_Y": [[ok(0.5), bad()], [bad(), bad()], [bad(), bad()]],
}, turns=2)
rep = json.loads(kforge("report", runk, "--json").stdout)
ak = rep.get("at_k")
check(ak is not None and ak["samples"] == 3 and ak["problems"] == 2 and ak["k"] == [1, 2, 3],
      "at_k header: %r" % ak)
# fast_0: X 2 of 3, Y 1 of 3; fast_1: X 2 (2.0, 1.2), Y 0; fast_1.5: X 1; fast_2: none
want = {"0": (2, 1), "1": (2, 0), "1.5": (1, 0), "2": (0, 0), "0.5": (2, 0)}
for p, (cx, cy) in want.items():
    for k in (1, 2, 3):
        close(ak["fast_p_at_k"][p][k - 1], (at_k(3, cx, k) + at_k(3, cy, k)) / 2,
              "fast_%s@%d" % (p, k))
close(ak["fast_p_at_k"]["0"][1], (1 + 2 / 3) / 2, "fast_0@2 by hand")
close(ak["fast_p_at_k"]["1"][0], 1 / 3, "fast_1@1 by hand")
# by turn: turn 1 X has one fast_1 sample, turn 2 two
for t, cx in ((1, 1), (2, 2)):
    for k in (1, 2, 3):
        close(ak["fast_1_at_k_by_turn"][t - 1][k - 1], at_k(3, cx, k) / 2, "fast_1@%d turn %d" % (k, t))
# fast_p@1 is the plain rate over tasks
close(ak["fast_p_at_k"]["1"][0], rep["overall"]["fast_p"]["1"], "fast_1@1 = fast_1")
text = kforge("report", runk).stdout
check("fast_p@k over 2 problems, k of 3 samples each" in text and "fast_1@k by turn" in text,
      "the text report lacks fast_p@k:\n" + text)

# ---- two runs side by side
N = 20
base = {"L1_%d_P%d" % (i + 1, i + 1): [[ok(1.5) if i < 2 else bad()]] for i in range(N)}
better = {"L1_%d_P%d" % (i + 1, i + 1): [[ok(1.5) if i < 18 else bad()]] for i in range(N)}
better["L1_99_Extra"] = [[ok(3.0)]]
sha_a = {k: "a" * 64 for k in base}
sha_b = dict(sha_a)
sha_b["L1_3_P3"] = "b" * 64
run_a = make_run(os.path.join(work, "a"), "ga", base, turns=1, sha=sha_a)
run_b = make_run(os.path.join(work, "b"), "gea", better, turns=1, sha=sha_b)
one = kforge("report", run_a, "--json")
check("at_k" not in json.loads(one.stdout), "a one-sample run's report grew at_k")
p = kforge("report", run_a, run_b, "--json")
cmp = json.loads(p.stdout)
check(cmp["common_problems"] == N and cmp["left_out"] == ["L1_99_Extra"],
      "common %r, left out %r" % (cmp["common_problems"], cmp["left_out"]))
warn = [l for l in p.stderr.splitlines() if "different content" in l]
check(len(warn) == 1 and "L1_3_P3" in warn[0] and cmp["content_differs"] == ["L1_3_P3"],
      "content warnings: %r" % p.stderr)
rows = {r["metric"]: r for r in cmp["comparison"]}
check(list(rows) == ["fast_0", "fast_0.5", "fast_1", "fast_1.5", "fast_2", "fast_1@turn1"],
      "metrics %r" % list(rows))
close(rows["fast_0"]["values"][0], 2 / N, "A fast_0")
close(rows["fast_0"]["values"][1], 18 / N, "B fast_0 on the common problems")
close(rows["fast_0"]["vs_first"][0]["diff"], 16 / N, "B - A fast_0")
check(rows["fast_0"]["vs_first"][0]["beyond_noise"], "16 of 20 more is noise?")
close(rows["fast_2"]["vs_first"][0]["diff"], 0, "B - A fast_2")
check(not rows["fast_2"]["vs_first"][0]["beyond_noise"], "no difference is beyond noise")
lo, hi = rows["fast_0"]["vs_first"][0]["interval"]
check(0 < lo <= 16 / N <= hi <= 1, "interval %r" % [lo, hi])
# the values are each run's own report over the common problems
b_alone = json.loads(kforge("report", run_b, "--json").stdout)
check(abs(b_alone["overall"]["fast_0"] - 19 / 21) < 1e-9, "B alone counts its extra problem")
check(cmp["runs"][1]["report"]["overall"]["tasks"] == N, "B's report in the comparison: %r tasks"
      % cmp["runs"][1]["report"]["overall"]["tasks"])
text = kforge("report", run_a, run_b).stdout
check("2 runs on their 20 common problems" in text and "beyond the runs' own noise" in text
      and "ga (G+E)" in text, "text comparison:\n" + text)
fast0 = [l for l in text.splitlines() if l.startswith("fast_0 ")]
check(fast0 and fast0[0].rstrip().endswith("*"), "fast_0 not marked beyond noise: %r" % fast0)
fast2 = [l for l in text.splitlines() if l.startswith("fast_2 ")]
check(fast2 and not fast2[0].rstrip().endswith("*"), "fast_2 marked: %r" % fast2)

# ---- kforge subset: four planted groups of four identical problems each, in two runs;
# groups 0 and 3 differ only in whether their turns compiled
def nc():
    return {"outcome": {"verdict": "incorrect", "reasons": ["compile_error"], "status": "compile_error",
                        "compiled": False, "correct": False}, "compiled": False}


groups = [[nc(), nc()], [ok(0.5), ok(1.5)], [ok(3.0), ok(3.0)], [bad(), bad()]]
other = [[nc(), ok(0.8)], [ok(0.5), ok(1.5)], [ok(1.2), ok(3.0)], [bad(), ok(0.8)]]
# in blocks, group 3 last: were it not told apart, a tie would go to a lower index
keys = ["L1_%d_G%d" % (i + 1, i // 4) for i in range(16)]
run_s1 = make_run(os.path.join(work, "s1"), "s1", {k: [groups[i // 4]] for i, k in enumerate(keys)}, turns=2)
run_s2 = make_run(os.path.join(work, "s2"), "s2", {k: [other[i // 4]] for i, k in enumerate(keys)}, turns=2)
out = os.path.join(work, "subset.txt")
p = kforge("subset", run_s1, run_s2, "--size", "4", "--out", out)
chosen = [l.strip() for l in open(out) if l.strip() and not l.startswith("#")]
check(sorted(k[-1] for k in chosen) == ["0", "1", "2", "3"], "medoids %r: not one per planted group" % chosen)
# 2 runs x 1 sample x 2 turns x (compiled, correct, ln speedup)
check("over 12 standardized results each from 2 run(s)" in p.stdout, p.stdout)
header = [l for l in open(out) if l.startswith("#")]
check(header and "k-medoids" in header[0] and any(run_s1 in l for l in header), "header %r" % header)
check("mean absolute deviation: subset 0.0%" in p.stdout, "planted subset deviates:\n" + p.stdout)
check("the subset beats" in p.stdout and "50 random subsets of 4" in p.stdout, p.stdout)
beats = int(p.stdout.split("the subset beats ")[1].split()[0])
ties = int(p.stdout.split(" and ties ")[1].split()[0])
# a random 4 of 16 holds one problem of each group, and ties at 0, with chance 256/1820
check(beats + ties == 50 and beats >= 25, "the medoids beat only %d of 50 random subsets "
      "(%d ties)" % (beats, ties))
for metric in ("A fast_0", "A fast_1", "A fast_1@turn1", "B fast_1@turn2"):
    check(any(l.startswith(metric + " ") for l in p.stdout.splitlines()), "no row %s" % metric)
# the same seed, the same output
check(kforge("subset", run_s1, run_s2, "--size", "4", "--out", out).stdout == p.stdout,
      "subset is not deterministic")


# ---- bad input: one line, nonzero
def refused(args, rc, words):
    p = kforge(*args, check_rc=False)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == rc and lines and words in lines[0], "kforge %s: rc %d, stderr %r (want rc %d, %r)"
          % (" ".join(args), p.returncode, p.stderr, rc, words))


refused(["subset", run_s1, "--out", out], 2, "--size")
refused(["subset", run_s1, "--size", "3"], 2, "--out")
refused(["subset", run_s1, "--size", "0", "--out", out], 2, "--size wants")
refused(["subset", run_s1, "--size", "17", "--out", out], 1, "16 problems in common")
refused(["subset", run_s1, os.path.join(work, "missing"), "--size", "2", "--out", out], 1,
        "not a kforge run directory")
refused(["report", run_a, os.path.join(work, "missing")], 1, "not a kforge run directory")
print("ok: fast_p@k and fast_1@k by turn by hand; two runs compared on their common problems with "
      "noise verdicts and a content warning; planted groups recovered by subset")
