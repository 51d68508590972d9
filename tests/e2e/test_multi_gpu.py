#!/usr/bin/env python3
"""GPU, two or more devices: the pool across real GPUs, then a GPU that goes bad.

Run 1, the pool: eight tasks x two turns on every GPU (gpus.devices: all), each reply the
same correct CUDA kernel (one build, shared through the cache), so the run is a stream of
executions. From the trajectories and result files it checks that
  (a) every GPU was used, and each EXECUTE record names the device its lease gave;
  (b) per GPU, leases never overlap: timing never shares a device with another run
      (the baseline, measured inside the first lease of each problem, included);
  (c) each runner saw exactly one GPU, the one leased (CUDA_VISIBLE_DEVICES): its
      torch device UUID is the UUID nvidia-smi gives that index, and the result records
      the GPU model;
  (d) every task finished DONE with correct turns, and pool.json ends with every slot
      given back, nothing waiting, nothing quarantined.

Run 2, a sick GPU: a process outside kforge holds all of GPU 1's memory, so no new CUDA
context fits there. Whatever runs on GPU 1 fails; the worker probes it in fresh
processes, the probes fail twice, GPU 1 is quarantined (run.json, pool.json, status) and
the execution that found it runs again on another GPU (rerun_after_quarantine), so no
task spends a turn or fails for the GPU's fault: every task ends DONE with ok turns, all
on the healthy GPUs."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = cuda_torch_python()
listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
uuids = {}
for line in listing.splitlines():
    m = re.match(r"GPU (\d+):.*\(UUID: (GPU-[0-9a-fA-F-]+)\)", line)
    if m:
        uuids[int(m.group(1))] = m.group(2).lower()
if len(uuids) < 2:
    print("SKIP: needs two GPUs, nvidia-smi lists %d" % len(uuids))
    sys.exit(SKIP)
NGPU = len(uuids)
NTASKS, TURNS = 4 * NGPU, 2

work = scratch("e2e-multi-gpu")
problems = copy_problems(os.path.join(work, "problems"), ["level1/2_LeakyReLU.py"])
replay = os.path.join(work, "replay", "cuda", "L1_2_LeakyReLU")
os.makedirs(replay)
for turn in range(1, TURNS + 1):
    shutil.copy(os.path.join(HOME, "configs", "demo_responses", "cuda", "L1_2_LeakyReLU", "3.md"),
                os.path.join(replay, "%d.md" % turn))


def run_config(name, tasks, turns):
    return write_config(os.path.join(work, name + ".yaml"), """
name: %s
problems: {dir: %s, levels: [1], samples: %d}
llm: {provider: replay, replay_dir: %s}
refinement: {turns: %d, feedback: [G, E]}
eval: {device: cuda, correctness_trials: 3, perf_trials: 50, warmup: 2, timeout_s: 300}
gpus: {devices: all}
runner: {python: %s}
workers: %d
""" % (name, problems, tasks, os.path.join(work, "replay"), turns, py, tasks))


def execute_records(run_dir, task):
    recs = records(run_dir, task)
    check(recs[-1]["to"] == "DONE", "%s ends in %s (%s)" % (task, recs[-1]["to"], recs[-1]["data"]))
    check_artifacts(run_dir, task, recs)
    return [r for r in recs if r["from"] == "EXECUTE" and r["event"] != "start"]


# ------------------------------------------------------------------ run 1: the pool
run1 = os.path.join(work, "run1")
t0 = time.time()
kforge("run", run_config("pool", NTASKS, TURNS), "--run-dir", run1, timeout=1500)
wall1 = time.time() - t0
per_device = {d: [] for d in uuids}
for s in range(NTASKS):
    task = "L1_2_LeakyReLU_s%d" % s
    ex = execute_records(run1, task)
    check(len(ex) == TURNS, "%s: %d EXECUTE records" % (task, len(ex)))
    for r in ex:
        d, lease = r["data"]["device"], r["data"]["lease"]
        check(d in uuids, "%s seq %d: device %r" % (task, r["seq"], d))
        check(r["data"]["status"] == "ok" and r["data"]["correct"], "%s seq %d: %s" % (task, r["seq"], r["data"]))
        per_device[d].append((lease["acquired_ms"], lease["released_ms"], task, r["turn"]))
        with open(os.path.join(run1, "tasks", task, "turns", str(r["turn"]), "result.json")) as f:
            env = json.load(f)["env"]
        # (c) the runner saw one GPU, the leased one
        check(env.get("gpu_count") == 1, "%s turn %d: the runner saw %r GPUs" % (task, r["turn"], env.get("gpu_count")))
        check(env.get("device_name"), "%s turn %d: no GPU model in the result" % (task, r["turn"]))
        check(str(env.get("device_uuid", "")).lower() == uuids[d],
              "%s turn %d: leased GPU %d (%s) but the runner ran on %s" % (task, r["turn"], d, uuids[d],
                                                                         env.get("device_uuid")))
# (a) every GPU used; (b) no overlap on a device
for d, ivs in per_device.items():
    check(ivs, "GPU %d was never leased (%s)" % (d, {k: len(v) for k, v in per_device.items()}))
    ivs.sort()
    for a, b in zip(ivs, ivs[1:]):
        check(a[1] <= b[0], "GPU %d leased to %s turn %d until %d and to %s turn %d from %d"
              % (d, a[2], a[3], a[1], b[2], b[3], b[0]))
pool = json.load(open(os.path.join(run1, "pool.json")))
check(pool["exec"]["total"] == NGPU, "pool.json exec total %d" % pool["exec"]["total"])
check(pool["exec"]["used"] == 0 and pool["exec"]["waiting"] == 0 and pool["exec"]["quarantined"] == 0,
      "pool.json exec at the end: %s" % {k: pool["exec"][k] for k in ("used", "waiting", "quarantined")})
check(sorted(s["device"] for s in pool["exec"]["slots"]) == sorted(uuids), "pool.json devices %s" %
      [s["device"] for s in pool["exec"]["slots"]])
busy1 = {d: sum(b - a for a, b, _, _ in ivs) / 1000.0 for d, ivs in per_device.items()}
print("run 1: %d tasks x %d turns on %d GPUs in %.0f s; executions per GPU %s; busy s per GPU %s"
      % (NTASKS, TURNS, NGPU, wall1, {d: len(v) for d, v in per_device.items()},
         {d: round(v, 1) for d, v in busy1.items()}), flush=True)

# ------------------------------------------------------------- run 2: a sick GPU
SICK = 1
HOG = r"""
import sys, torch
torch.cuda.set_device(0)
held, chunk = [], 1 << 30
while chunk >= (1 << 20):
    try:
        held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
    except RuntimeError:
        chunk //= 2
print("held %d MiB, free %d MiB" % (sum(t.numel() for t in held) >> 20,
                                      torch.cuda.mem_get_info()[0] >> 20), flush=True)
sys.stdin.read()
"""
hog = subprocess.Popen([py, "-c", HOG], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                       env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(SICK)))
try:
    line = hog.stdout.readline()
    check(line.startswith("held"), "the memory hog did not start: %r" % line)
    print("hog on GPU %d: %s" % (SICK, line.strip()), flush=True)
    run2 = os.path.join(work, "run2")
    NT2 = 2 * NGPU
    p = kforge("run", run_config("sick", NT2, 1), "--run-dir", run2, timeout=1500)
    status = kforge("status", run2, "--json").stdout
finally:
    hog.stdin.close()
    hog.wait(30)
runj = json.load(open(os.path.join(run2, "run.json")))
q = runj.get("quarantined") or []
check(any(e.get("device") == SICK for e in q), "run.json names no quarantine of GPU %d: %s" % (SICK, q))
check(all(e.get("device") == SICK for e in q), "a healthy GPU was quarantined: %s" % q)
check(all(e.get("reason") for e in q), "a quarantine without a reason: %s" % q)
pool = json.load(open(os.path.join(run2, "pool.json")))
check(pool["exec"]["quarantined"] == 1, "pool.json quarantined %d" % pool["exec"]["quarantined"])
check(str(SICK) in status and "quarantin" in status, "status --json does not show the quarantine")
reruns = 0
for s in range(NT2):
    task = "L1_2_LeakyReLU_s%d" % s
    ex = execute_records(run2, task)
    check(len(ex) == 1, "%s: %d EXECUTE records" % (task, len(ex)))
    r = ex[0]
    check(r["data"]["status"] == "ok" and r["data"]["correct"], "%s: %s" % (task, r["data"]))
    check(r["data"]["device"] != SICK, "%s: its result came from the sick GPU" % task)
    reruns += "rerun_after_quarantine" in r["data"]
check(reruns >= 1, "no execution was run again after the quarantine")
print("run 2: GPU %d quarantined (%s); %d execution(s) run again elsewhere; all %d tasks ok"
      % (SICK, q[0].get("reason"), reruns, NT2))
print("ok")
