#!/usr/bin/env python3
"""GPU: a candidate that corrupts its CUDA context does not cost the run its GPU. Turn 1's
kernel writes through a wild pointer (an illegal memory access: the context is lost for
good), so the runner reports cuda_error; the worker then probes the GPU in a fresh
process — a fresh context, which works — and keeps it: the EXECUTE record says
health_probe "ok", nothing is quarantined (run.json, pool.json, status), and the task
goes on to turn 2, whose correct kernel runs and is timed on the same GPU."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = cuda_torch_python()

WILD_WRITE = r'''The kernel below writes its result in one pass.

```python
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// wild: an address no allocation can have (below the host's mmap_min_addr as well), passed
// as an argument so the compiler cannot see it. Thread 0's store faults: an illegal
// memory access, which leaves this process's CUDA context unusable.
__global__ void leaky_wild(const float* x, float* y, float slope, int64_t n,
                           unsigned long long wild) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0)
        *reinterpret_cast<volatile float*>(wild) = 1.0f;
    if (i < n)
        y[i] = x[i] >= 0.0f ? x[i] : x[i] * slope;
}

torch::Tensor leaky_forward(torch::Tensor x, double slope) {
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t n = input.numel();
    leaky_wild<<<(unsigned)((n + 255) / 256), 256>>>(input.data_ptr<float>(), out.data_ptr<float>(),
                                                     (float)slope, n, 0x100ULL);
    return out;
}
"""

ext = load_inline(name="kf_health_wild_write", cpp_sources="torch::Tensor leaky_forward(torch::Tensor x, double slope);",
                  cuda_sources=cuda_source, functions=["leaky_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return ext.leaky_forward(x, self.negative_slope)
```
'''

work = scratch("e2e-gpu-health")
problems = copy_problems(os.path.join(work, "problems"), ["level1/2_LeakyReLU.py"])
replay = os.path.join(work, "replay", "cuda", "L1_2_LeakyReLU")
os.makedirs(replay)
with open(os.path.join(replay, "1.md"), "w") as f:
    f.write(WILD_WRITE)
shutil.copy(os.path.join(HOME, "configs", "demo_responses", "cuda", "L1_2_LeakyReLU", "3.md"),
            os.path.join(replay, "2.md"))
config = write_config(os.path.join(work, "health.yaml"), """
name: gpu_health
problems: {dir: %s, levels: [1], samples: 1}
llm: {provider: replay, replay_dir: %s}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cuda, correctness_trials: 3, perf_trials: 20, warmup: 2, timeout_s: 300}
gpus: {devices: [0]}
runner: {python: %s}
workers: 1
""" % (problems, os.path.join(work, "replay"), py))
run_dir = os.path.join(work, "run")
kforge("run", config, "--run-dir", run_dir, timeout=1100)

task = "L1_2_LeakyReLU_s0"
recs = records(run_dir, task)
ex = [r for r in recs if r["from"] == "EXECUTE"]
check(len(ex) == 2, "%d EXECUTE records, want one per turn" % len(ex))
t1, t2 = ex[0]["data"], ex[1]["data"]
check(t1.get("status") == "cuda_error", "turn 1 should end in cuda_error, got %r" % t1.get("status"))
log1 = open(os.path.join(run_dir, "tasks", task, "turns", "1", "result.json")).read()
check("illegal memory access" in log1, "turn 1's result does not report the illegal memory access")
check(t1.get("health_probe") == "ok", "after the fault the GPU should pass its probe: %r (%s)" %
      (t1.get("health_probe"), t1.get("health_probe_error")))
check("health_probe" not in t2, "turn 2 ended cleanly; it needs no probe")
check(t2.get("status") == "ok" and t2.get("correct") is True, "turn 2 should be correct: %s" % t2)
check(t2.get("speedup") is not None and t2["lease"]["slot"] == t1["lease"]["slot"] == 0,
      "turn 2 should run and be timed on the same GPU: %s" % t2)
check(recs[-1]["to"] == "DONE", "the task ends in %s" % recs[-1]["to"])
check([r["data"]["status"] for r in feedback_records(recs)] == ["cuda_error", "ok"],
      "turn statuses %s" % [r["data"]["status"] for r in feedback_records(recs)])

info = json.load(open(os.path.join(run_dir, "run.json")))
check(info["status"] == "finished" and info["quarantined"] == [], "run.json: %s" % info)
pool = json.load(open(os.path.join(run_dir, "pool.json")))
check(pool["exec"]["quarantined"] == 0 and pool["exec"]["used"] == 0, "pool.json exec: %s" % pool["exec"])
st = json.loads(kforge("status", run_dir, "--json").stdout)
check(st["quarantined"] == [], "status lists quarantined GPUs: %s" % st["quarantined"])
check("quarantined" not in open(os.path.join(run_dir, "supervisor.log")).read(), "the log mentions a quarantine")
print("ok: GPU probed after an illegal memory access, found healthy, kept; turn 2 ran at %.2fx" % t2["speedup"])
