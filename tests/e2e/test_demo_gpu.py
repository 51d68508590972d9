#!/usr/bin/env python3
"""GPU: the demo config on CUDA — every task finishes its three turns, the recorded
failing turns fail the way they were written to, at least one kernel is correct and
timed against a reference measured on this GPU, and the GPU was named in gpus.json. The
run goes to $KFORGE_DEMO_GPU_RUN when set (tools/device/gpu-checks.sh sets it), else to a
scratch directory."""
import json
import os
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
# P on a GPU comes from CUPTI where the injection library was built beside this kforge
# (kprof/libkforge_kprof.so): ReLU's first turn is correct, so its profile names its
# own kernel with its launch configuration, the next prompt shows the CUPTI table (with
# the reference's kernels for comparison), and no honest demo turn is judged otherwise
# for its profile.
kprof = os.path.join(os.path.dirname(BIN), "kprof", "libkforge_kprof.so")
relu = os.path.join(run_dir, "tasks", "L1_1_ReLU_s0")
prof = json.load(open(os.path.join(relu, "turns", "1", "profile.json")))["profile"]
if os.path.exists(kprof):
    check(prof.get("source") == "cupti" and prof.get("status", "ok") == "ok",
          "ReLU turn 1's profile is not CUPTI's: %s" % json.dumps(prof)[:2000])
    top = (prof.get("kernels") or [{}])[0]
    check("relu_kernel" in (top.get("short") or top.get("name") or "") and
          len(top.get("grid") or []) == 3 and len(top.get("block") or []) == 3,
          "ReLU turn 1's top kernel is not its relu_kernel with a launch configuration: %s" % top)
    prompt = open(os.path.join(relu, "turns", "2", "prompt.md")).read()
    check("Profile (CUPTI," in prompt and "relu_kernel" in prompt and
          "The reference model (PyTorch) for comparison" in prompt,
          "ReLU turn 2's prompt has no CUPTI profile table with the reference's kernels")
    check(os.path.exists(os.path.join(relu, "reference_profile.json")),
          "no reference profile kept for the ReLU task")
    # Where counters are read, the selftest kept the counter availability image and the
    # candidates' metrics runs read it instead of asking the device (about 0.6 s each).
    if prof.get("metrics_status") == "ok":
        check(prof.get("counter_availability") == "cached",
              "ReLU turn 1's metrics run did not read the kept counter availability "
              "image: %s" % prof.get("counter_availability"))
    for t in st["tasks"]:
        for rec in records(run_dir, t["id"]):
            if rec["from"] == "FEEDBACK":
                check(rec["data"].get("verdict") in ("correct", "incorrect", None),
                      "%s turn %d judged %s (%s) though every demo kernel is honest" % (
                          t["id"], rec["turn"], rec["data"].get("verdict"),
                          rec["data"].get("reasons")))
else:
    print("note: %s not built: the demo's P is torch.profiler's" % kprof)
    check(prof.get("source") == "torch.profiler" and "not built" in prof.get("note", ""),
          "without the library the profile is not torch.profiler's with a note: %s" % prof)
# An execute's runner, forked while its precompile built, started CUDA's driver before its
# step held the GPU (feedback/warm.c, warm_cuda_ahead; kforge_runner.py, cuda_ahead), except
# where runners apply Landlock: it binds only the thread that applies it, so the driver's
# threads would be free of it, and no runner starts it ahead (run.json's sandbox says
# which). A turn's first execute comes after the reference's baseline, which takes that
# runner.
landlock = bool(json.load(open(os.path.join(run_dir, "run.json"))).get("sandbox", {})
                .get("landlock_abi"))
aheads = []
executes = 0
for t in st["tasks"]:
    for rec in records(run_dir, t["id"]):
        if rec["from"] != "EXECUTE":
            continue
        executes += 1
        path = os.path.join(run_dir, "tasks", t["id"], "turns", str(rec["turn"]), "result.json")
        details = json.load(open(path)).get("details", {}) if os.path.exists(path) else {}
        if "cuda_ahead" in details:
            aheads.append((t["id"], rec["turn"], details["cuda_ahead"]))
if landlock:
    check(executes and not aheads,
          "runners under Landlock started CUDA ahead (none should): %s" % aheads)
    print("ok: %d executes under Landlock, none started CUDA ahead" % executes)
else:
    check(aheads and all(a[2].get("done") == "driver" for a in aheads),
          "the executes' runners did not start CUDA ahead (driver expected): %s" % aheads)
    print("ok: %d executes started CUDA ahead (driver), median %.3f s" % (
        len(aheads), sorted(a[2]["s"] for a in aheads)[len(aheads) // 2]))
print("ok: demo on %s: %s" % (gpus["devices"][0]["name"], json.dumps(rep["overall"])))
