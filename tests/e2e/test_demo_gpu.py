#!/usr/bin/env python3
"""GPU: the demo config on CUDA — every task finishes its three turns, the recorded
failing turns fail the way they were written to, at least one kernel is correct and
timed against a reference measured on this GPU, and the GPU was named in gpus.json. The
run goes to $KFORGE_DEMO_GPU_RUN when set (tools/device/gpu-checks.sh sets it), else to a
scratch directory."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = cuda_torch_python()
# tools/device/gpu-checks.sh names the run directory, to report on it afterwards (ctest
# gives each test its own KFORGE_TEST_TMP, where the script could not find it).
run_dir = os.environ.get("KFORGE_DEMO_GPU_RUN") or os.path.join(scratch("e2e-demo-gpu"), "run")
os.makedirs(os.path.dirname(run_dir), exist_ok=True)
kforge("run", os.path.join(HOME, "configs", "demo.yaml"), "--run-dir", run_dir,
       "--set", "eval.device=cuda", "--set", "runner.python=" + py, timeout=3000)
gpus = json.load(open(os.path.join(run_dir, "gpus.json")))
check(gpus["device"] == "cuda" and gpus["devices"] and gpus["devices"][0]["name"] != "cuda",
      "gpus.json does not name the GPU: %s" % gpus)
st = json.loads(kforge("status", run_dir, "--json").stdout)
check(all(t["state"] == "DONE" for t in st["tasks"]), "not every demo task is DONE: %s" % st["tasks"])
rep = json.loads(kforge("report", run_dir, "--json").stdout)
check(rep["device"] == "cuda", "the report is not for cuda")
check(rep["overall"]["fast_0"] > 0, "no correct CUDA kernel in the demo")
# Each recorded turn fails or succeeds the way it was written to (the checker demo.sh uses).
verdict = demo_check(run_dir, "cuda")
check(verdict.returncode == 0, "the CUDA demo differs from expected.json:\n" + verdict.stderr)
print("ok: demo on %s: %s" % (gpus["devices"][0]["name"], json.dumps(rep["overall"])))
