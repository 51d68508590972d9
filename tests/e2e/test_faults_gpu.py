#!/usr/bin/env python3
"""GPU: the CUDA half of the fault matrix (issue 4), one `kforge run` on the GPUs with one
task per fault and two turns each (faultmatrix.py). Turn 1 faults: an illegal memory
access (a null device pointer), an out-of-bounds write far past the output, a kernel that
never terminates, device out-of-memory. Turn 2 is a correct CUDA kernel. Each fault must
end as a classified result whose feedback reaches the model in turn 2, the GPU must pass
its health probe after a fault (not be quarantined), nothing may survive, no slot may
leak. Skips (77) without a GPU. KFORGE_FAULTS_ONLY=Name,... runs a subset."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import check, cuda_torch_python, records  # noqa: E402
from faultmatrix import FaultRun  # noqa: E402

MATRIX = [
    ("IllegalAccess", "cuda_illegal_access.py", "cuda_error", [], ["illegal memory access"]),
    ("OobWrite", "cuda_oob_write.py", "cuda_error", [], ["illegal memory access"]),
    ("KernelHang", "cuda_hang.py", "timeout", [], ["Your kernel execution timed out"]),
    # torch's allocator reports "CUDA out of memory" (runtime_error); a raw CUDA call
    # would say "CUDA error: out of memory" (cuda_error). Either way it is flagged.
    ("DeviceOom", "cuda_oom.py", ("runtime_error", "cuda_error"), ["out_of_memory"],
     ["out of memory"]),
]

py = cuda_torch_python()
# As in test_faults: the runtime's handling is under test, not the static gate.
fr = FaultRun("e2e-faults-gpu", MATRIX, "cuda_good_add.py", """
eval: {device: cuda, correctness_trials: 2, perf_trials: 5, warmup: 1, timeout_s: 90,
       compile_timeout_s: 1200, static_checks: false}
runner: {python: %s}
""" % py, timeout=1700)
fr.check_tasks()

# After a CUDA error or a hang the GPU is probed before its next lease; it must pass.
for task, (name, _cand, status, _f, _t) in fr.tasks.items():
    ex = [r for r in records(fr.run_dir, task) if r["from"] == "EXECUTE" and r["turn"] == 1][0]
    if status in ("cuda_error", "timeout"):
        check(ex["data"].get("health_probe") in ("ok", "failed_once"),
              "%s: the GPU was not probed back to health after the fault: %s" % (task, ex["data"]))
names = [v[0] for v in fr.tasks.values()]
if "KernelHang" in names:
    r = fr.result("KernelHang")["runner"]
    check(r["end"] == "timeout", "KernelHang: runner end %s" % r)
fr.check_no_survivors()
fr.check_run_intact()
run = json.load(open(os.path.join(fr.run_dir, "run.json")))
check(not run.get("quarantined"), "a GPU was quarantined by a candidate's fault: %s" % run.get("quarantined"))
print("ok: %d CUDA faults classified, fed back and survived in %.0f s" % (len(fr.tasks), fr.wall))
