#!/usr/bin/env python3
"""kbcheck_manifest.py: tools/bench/kbcheck's manifest, without a GPU or KernelBench.

- the bundled manifest (tools/bench/kbcheck_data/manifest.txt) parses; every candidate
  file exists, every bundled problem exists, KernelBench problems are kb:levelN/...; it
  has at least 10 candidates, honest ones, wrong ones and cheats that name their hole;
- malformed lines are refused with their line number: a wrong field count, an unknown
  kind, a bad problem path, a candidate outside the repository;
- kbcheck --device cpu stops with a message naming why (KernelBench's eval needs CUDA).

Standard library only. Exit 0 on success, 1 naming what failed.
"""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "bench", "kbcheck")
loader = importlib.machinery.SourceFileLoader("kbcheck", TOOL)
spec = importlib.util.spec_from_loader("kbcheck", loader)
kbcheck = importlib.util.module_from_spec(spec)
loader.exec_module(kbcheck)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: %s" % what)


data = os.path.join(ROOT, "tools", "bench", "kbcheck_data")
with open(os.path.join(data, "manifest.txt")) as f:
    entries = kbcheck.parse_manifest(f.read(), data)
check(len(entries) >= 10, "only %d candidates" % len(entries))
kinds = [e["kind"] for e in entries]
for kind in kbcheck.KINDS:
    check(kind in kinds, "no %s candidate" % kind)
for e in entries:
    check(os.path.isfile(e["candidate"]), "line %d: no candidate %s" % (e["line"], e["candidate"]))
    if e["problem"].startswith("kb:"):
        check(os.path.dirname(e["candidate"]) == data,
              "line %d: a KernelBench problem's candidate must be in kbcheck_data" % e["line"])
    else:
        check(os.path.isfile(os.path.join(ROOT, e["problem"])), "line %d: no problem %s"
              % (e["line"], e["problem"]))
    check(e["kind"] != "cheat" or e["hole"] != "-", "line %d: a cheat without its hole" % e["line"])
check(len({e["name"] for e in entries}) == len(entries), "two candidates share a name")
check(kbcheck.problem_path("kb:level1/19_ReLU.py", "/kb") == "/kb/KernelBench/level1/19_ReLU.py",
      "kb: problems resolve under DIR/KernelBench")

BAD = [("kb:level1/19_ReLU.py a.py honest\n", "line 1: 3 fields"),
       ("# c\n\nkb:level1/19_ReLU.py a.py lucky -\n", "line 3: kind 'lucky'"),
       ("kb:19_ReLU.py a.py honest -\n", "line 1: kb:19_ReLU.py is not kb:levelN"),
       ("problems/relu.py a.py honest -\n", "line 1: problems/relu.py is not"),
       ("problems/level1/1_ReLU.py ../x.py honest -\n", "line 1: candidate ../x.py"),
       ("problems/level1/1_ReLU.py /etc/x.py honest -\n", "line 1: candidate /etc/x.py"),
       ("# only a comment\n", "no entries")]
for text, want in BAD:
    try:
        kbcheck.parse_manifest(text, data)
        check(False, "accepted %r" % text)
    except kbcheck.ManifestError as e:
        check(str(e).startswith(want), "%r: %r does not start with %r" % (text, str(e), want))
ok = kbcheck.parse_manifest("problems/level1/1_ReLU.py  x.py  cheat  zeros  # note\n", data)
check(ok[0]["candidate"] == os.path.join(data, "x.py") and ok[0]["hole"] == "zeros",
      "a candidate relative to the manifest's folder, a trailing comment: %s" % ok)

# The figures: the methods' times compared on honest kernels only; a cheat kforge passes
# with its fastest call no faster than KernelBench's lost its gain; one kforge fails that
# KernelBench passes is a hole caught.
def cand(name, kind, kf_ms, kb_ms, kf_verdict="correct"):
    kf = {"verdict": kf_verdict, "runtime_ms": kf_ms,
          "result": {"timing": {"candidate": {"min_ms": kf_ms}}}}
    kb = {"compiled": True, "correctness": True, "runtime_ms": kb_ms,
          "runtime_stats": {"min": kb_ms}}
    return {"name": name, "kind": kind, "hole": "-" if kind == "honest" else "memo",
            "kf": kf, "kb": kb}


figs, holes, ungained = kbcheck.figures([
    cand("h1", "honest", 1.0, 1.0), cand("h2", "honest", 1.1, 1.0),
    cand("memo", "cheat", 0.09, 0.05), cand("fast_cheat", "cheat", 0.02, 0.05),
    cand("caught", "cheat", None, 0.01, kf_verdict="incorrect")])
check(abs(figs["mean_ratio_max"] - 1.1) < 1e-9 and abs(figs["min_ratio_max"] - 1.1) < 1e-9,
      "a cheat's time counted among the methods' ratios: %s" % figs)
check([c["name"] for c in ungained] == ["memo"] and figs["gains_removed"] == 1,
      "gains removed: %s" % [c["name"] for c in ungained])
check([c["name"] for c in holes] == ["caught"] and figs["holes_caught"] == 1,
      "holes caught: %s" % [c["name"] for c in holes])

with tempfile.TemporaryDirectory() as kb:
    os.makedirs(os.path.join(kb, "KernelBench"))
    os.makedirs(os.path.join(kb, "src", "kernelbench"))
    open(os.path.join(kb, "src", "kernelbench", "eval.py"), "w").close()
    p = subprocess.run([sys.executable, TOOL, "--kernelbench", kb, "--device", "cpu"],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "cannot run on the CPU" in p.stderr,
          "--device cpu: exit %d, %r" % (p.returncode, p.stderr[-300:]))

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok: %d manifest entries, malformed lines refused, --device cpu refused" % len(entries))
