#!/usr/bin/env python3
"""The demo config on the CPU, as tools/demo.sh runs it where there is no GPU: every task
finishes its three turns, every turn ends with the status its recorded reply was written
to get (configs/demo_responses/expected.json, judged by tools/demo_check.py, the checker
demo.sh uses), and the checker names a task whose turn differs.

The demo replays its raw-format replies (eval.format raw: 23 C++ builds of about a
second through one compile slot; the whole run about 15 s on an idle 2-core box, the
time limits leave room for a machine shared with other work)."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-demo-cpu")
run_dir = os.path.join(work, "run")
# The demo's own deadlines (a 15-minute build, a 2-minute execution) are for a machine
# doing the demo; one shared with other work can take longer for the same build (a
# 35 s build took 15 minutes at load 19), and no turn may end as a timeout for that.
kforge("run", os.path.join(HOME, "configs", "demo.yaml"), "--run-dir", run_dir,
       "--set", "eval.device=cpu", "--set", "runner.python=" + py,
       "--set", "eval.compile_timeout_s=4000", "--set", "eval.timeout_s=1200", timeout=5200)

gpus = json.load(open(os.path.join(run_dir, "gpus.json")))
check(gpus["device"] == "cpu", "gpus.json is not for cpu: %s" % gpus)
st = json.loads(kforge("status", run_dir, "--json").stdout)
check(len(st["tasks"]) == 8 and all(t["state"] == "DONE" for t in st["tasks"]),
      "not every one of the 8 demo tasks is DONE: %s" % st["tasks"])
rep = json.loads(kforge("report", run_dir, "--json").stdout)
check(rep["device"] == "cpu", "the report is not for cpu")
check(rep["overall"]["fast_0"] > 0, "no correct C++ kernel in the demo")

verdict = demo_check(run_dir, "cpu")
check(verdict.returncode == 0, "the CPU demo differs from expected.json:\n" + verdict.stderr)
# The raw build format, as configs/demo.yaml says: the kernels came through load_cpp.
kernel = open(os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "3", "kernel.py")).read()
check("from kforge import load_cpp" in kernel and "load_inline" not in kernel,
      "the demo's ReLU turn 3 is not a raw-format kernel")

# The checker fails, naming the task, when one turn ends otherwise than recorded: the
# same trajectories with ReLU's last turn turned into a mismatch.
forged = os.path.join(work, "forged")
os.makedirs(forged)
shutil.copy(os.path.join(run_dir, "gpus.json"), os.path.join(forged, "gpus.json"))
for task in os.listdir(os.path.join(run_dir, "tasks")):
    os.makedirs(os.path.join(forged, "tasks", task))
    shutil.copy(os.path.join(run_dir, "tasks", task, "trajectory.jsonl"),
                os.path.join(forged, "tasks", task, "trajectory.jsonl"))
relu_log = os.path.join(forged, "tasks", "L1_1_ReLU_s0", "trajectory.jsonl")
recs = [json.loads(line) for line in open(relu_log)]
last_feedback = [r for r in recs if r["from"] == "FEEDBACK"][-1]
check(last_feedback["data"]["status"] == "ok", "ReLU's last turn is not ok: %s" % last_feedback["data"])
last_feedback["data"]["status"] = "value_mismatch"
with open(relu_log, "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in recs))
verdict = demo_check(forged, "cpu")
check(verdict.returncode == 1, "demo_check exited %d for a changed turn" % verdict.returncode)
named = [line for line in verdict.stderr.splitlines() if "_s0:" in line]
check(len(named) == 1 and "L1_1_ReLU_s0" in named[0],
      "demo_check should name exactly L1_1_ReLU_s0:\n" + verdict.stderr)

print("ok: demo on cpu, every turn as recorded: %s" % json.dumps(rep["overall"]))
