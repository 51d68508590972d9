#!/usr/bin/env python3
"""GPU: the demo config on CUDA — every task finishes its three turns, the recorded
failing turns fail the way they were written to, at least one kernel is correct and
timed against a reference measured on this GPU, and the GPU was named in gpus.json."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = cuda_torch_python()
work = scratch("e2e-demo-gpu")
run_dir = os.path.join(work, "run")
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
