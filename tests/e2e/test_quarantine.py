#!/usr/bin/env python3
"""GPU quarantine without a GPU: a run whose two "GPUs" torch cannot use. Every runner on
them reports cuda_error, so after each EXECUTE the GPU is probed in a fresh process, fails
twice, and is quarantined by the worker in the shared pool. Checks the supervisor's side:
each quarantine reaches run.json (with its reason) and pool.json, `kforge status` shows it
(text and --json), and once no GPU is left the run stops by itself — status "stopped", a
stop_reason, exit status 1, the waiting task stopped (not FAILED) instead of hanging in
gpool_acquire. Then `kforge resume` starts with a fresh pool (the list is reset) and, with
one GPU quarantined and the other left, the run goes on and finishes.

A run directory for cuda cannot be created on a host without one (kforge run checks
nvidia-smi), so it is made on the cpu and its frozen config and gpus.json are then edited
to name two GPUs: resume reads the devices from gpus.json."""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-quarantine")
problems = copy_problems(os.path.join(work, "problems"), ["level1/2_LeakyReLU.py"])
replay = os.path.join(work, "replay")
os.makedirs(os.path.join(replay, "cpu", "L1_2_LeakyReLU"))
os.makedirs(os.path.join(replay, "cuda", "L1_2_LeakyReLU"))
with open(os.path.join(replay, "cpu", "L1_2_LeakyReLU", "1.md"), "w") as f:
    f.write("No code this time.\n")
# Builds its extension on first use, so the precompile (GPU hidden) passes and the
# execute step is where CUDA is needed.
with open(os.path.join(replay, "cuda", "L1_2_LeakyReLU", "1.md"), "w") as f:
    f.write('''The kernel is built on first use.
```python
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
__global__ void leaky(const float* x, float* y, float s, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] >= 0.0f ? x[i] : s * x[i];
}
"""


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope
        self.ext = load_inline(name="q_leaky", cpp_sources="", cuda_sources=cuda_source)

    def forward(self, x):
        return self.ext.leaky(x, self.negative_slope)
```
''')
config = write_config(os.path.join(work, "q.yaml"), """
name: quarantine
problems: {dir: %s, levels: [1], samples: 3}
llm: {provider: replay, replay_dir: %s}
refinement: {turns: 1, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 1, perf_trials: 2, warmup: 1, timeout_s: 120}
runner: {python: %s}
workers: 3
""" % (problems, replay, py))
run_dir = os.path.join(work, "run")
tasks = ["L1_2_LeakyReLU_s%d" % i for i in range(3)]

# ---- a run directory on the cpu, turned into one for two GPUs torch cannot see
kforge("run", config, "--run-dir", run_dir, timeout=300)
frozen = os.path.join(run_dir, "config.yaml")
text = open(frozen).read()
check(re.search(r"(?m)^  device: cpu$", text), "the frozen config has no eval.device cpu line")
with open(frozen, "w") as f:
    f.write(re.sub(r"(?m)^  device: cpu$", "  device: cuda", text))
with open(os.path.join(run_dir, "gpus.json"), "w") as f:
    json.dump({"device": "cuda", "devices": [{"index": 0, "name": "Unusable GPU"},
                                             {"index": 1, "name": "Unusable GPU"}]}, f)
for t in tasks:
    shutil.rmtree(os.path.join(run_dir, "tasks", t))

# ---- every GPU fails its probes: the run stops by itself
p = kforge("resume", run_dir, timeout=600, check_rc=False)
check(p.returncode == 1, "resume with every GPU quarantined exited %d, want 1\n%s" % (p.returncode, p.stderr[-3000:]))
info = json.load(open(os.path.join(run_dir, "run.json")))
check(info["status"] == "stopped", "run.json status %r, want stopped" % info["status"])
check("every GPU is quarantined" in (info.get("stop_reason") or ""), "stop_reason: %r" % info.get("stop_reason"))
q = info.get("quarantined")
check(isinstance(q, list) and sorted(e["device"] for e in q) == [0, 1], "run.json quarantined: %r" % q)
for e in q:
    check(e["reason"].startswith("failed 2 health probes after a cuda_error; last: cuda_error"),
          "quarantine reason %r" % e["reason"])
pool = json.load(open(os.path.join(run_dir, "pool.json")))
check(pool["exec"]["quarantined"] == 2 and all(s["quarantined"] and s["reason"] for s in pool["exec"]["slots"]),
      "pool.json does not show both GPUs quarantined: %s" % pool["exec"])
for cls in ("exec", "compile", "llm"):
    check(pool[cls]["used"] == 0, "pool.json: %s slots still in use after the run" % cls)

log = open(os.path.join(run_dir, "supervisor.log")).read()
check(log.count("stopping: every GPU is quarantined") == 1, "the halt should be logged once:\n" + log)
check(log.count("GPU 0 is quarantined") == 1 and log.count("GPU 1 is quarantined") == 1,
      "each quarantine should be logged once by the supervisor:\n" + log)

# Two tasks met a GPU each: two failed probes, then quarantine; the third was waiting
# for a GPU and was stopped, to continue on resume.
probed, waiting = [], []
for t in tasks:
    recs = records(run_dir, t)
    ex = [r for r in recs if r["from"] == "EXECUTE"]
    if ex:
        d = ex[-1]["data"]
        check(d.get("health_probe") == "quarantined", "%s: health_probe %r" % (t, d.get("health_probe")))
        check("cuda_error" in d.get("health_probe_error", ""), "%s: no probe error recorded" % t)
        check(d["lease"]["class"] == "exec" and d["lease"]["released_ms"] >= d["lease"]["acquired_ms"],
              "%s: no exec lease recorded: %s" % (t, d.get("lease")))
        probed.append(t)
    else:
        check(recs[-1]["to"] == "EXECUTE", "%s: stopped in %s, want waiting in EXECUTE" % (t, recs[-1]["to"]))
        waiting.append(t)
check(len(probed) == 2 and len(waiting) == 1, "probed %s, waiting %s" % (probed, waiting))
slots = sorted(records(run_dir, t)[-1]["data"]["lease"]["slot"] for t in probed)
check(slots == [0, 1], "the two probed tasks held GPU slots %s" % slots)

st = json.loads(kforge("status", run_dir, "--json").stdout)
check(sorted(e["device"] for e in st["quarantined"]) == [0, 1], "status --json quarantined: %s" % st["quarantined"])
check("every GPU is quarantined" in (st["run"]["stop_reason"] or ""), "status --json stop_reason: %s" % st["run"])
text = kforge("status", run_dir).stdout
for dev in (0, 1):
    check("GPU %d quarantined: failed 2 health probes" % dev in text, "status lacks GPU %d's quarantine:\n%s" % (dev, text))
check("stopped: every GPU is quarantined" in text, "status lacks the stop reason:\n" + text)

# ---- resume: a fresh pool has both GPUs back. The waiting task quarantines one; the
# other is left, so the run finishes.
p = kforge("resume", run_dir, timeout=600, check_rc=False)
check(p.returncode == 0, "second resume exited %d\n%s" % (p.returncode, p.stderr[-3000:]))
info = json.load(open(os.path.join(run_dir, "run.json")))
check(info["status"] == "finished" and info.get("stop_reason") is None, "run.json after resume: %s" % info)
check(len(info["quarantined"]) == 1, "after resume run.json should list only this run's quarantine: %s" % info["quarantined"])
recs = records(run_dir, waiting[0])
check(recs[-1]["to"] in ("DONE", "FAILED"), "%s did not finish after resume" % waiting[0])
check([r for r in recs if r["from"] == "EXECUTE"][-1]["data"].get("health_probe") == "quarantined",
      "%s: its GPU was not quarantined" % waiting[0])
text = kforge("status", run_dir).stdout
check(text.count("quarantined: failed") == 1 and "stopped:" not in text, "status after resume:\n" + text)
print("ok: GPUs that fail two probes are quarantined and reported; with none left the run stops")
