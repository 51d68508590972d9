#!/usr/bin/env python3
"""--detach, status, tail -f, stop and resume: a detached supervisor writes its pid file
and log, `kforge status` sees it running, `kforge tail -f` follows the trajectories live,
`kforge stop` ends it gracefully (run.json says stopped, no task is lost, status says
that resume continues it), and a resume finishes every task with no request repeated."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-detach")
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py", "level1/2_LeakyReLU.py"])
# Replies without code: the loop turns without compiling. After the first 4 the server
# holds every reply until the stop was asked for, so the stop lands mid-run however the
# test and the run are scheduled.
release = os.path.join(work, "replies.release")
mock = MockLLM(work, {"rules": [{"replies": [reply("leaky_1.md", delay_s=0.7)] * 4 +
                                 [reply("leaky_1.md", delay_s=0.7, hold_until=release)]}]})
config = write_config(os.path.join(work, "detach.yaml"), """
name: detach
problems: {dir: %s, levels: [1], samples: 3}
llm: {provider: openai, base_url: "%s", model: mock-model, concurrency: 2}
refinement: {turns: 4}
eval: {device: cpu}
runner: {python: %s}
workers: 6
""" % (problems, mock.base_url, py))
run_dir = os.path.join(work, "run")
p = kforge("run", config, "--run-dir", run_dir, "--detach", timeout=60)
check("background" in p.stdout, "--detach says nothing: %r" % p.stdout)
pid_file = os.path.join(run_dir, "supervisor.pid")
check(os.path.exists(pid_file), "no supervisor.pid")
pid = int(open(pid_file).read())
check(os.path.exists("/proc/%d" % pid), "the detached supervisor is not running")
check(os.getsid(pid) != os.getsid(0), "the detached supervisor kept our session")

tail = subprocess.Popen([BIN, "tail", run_dir, "-f"], stdout=subprocess.PIPE, text=True)
deadline = time.time() + 600
while len(mock.requests()) < 4:
    check(time.time() < deadline, "the detached run made no progress")
    time.sleep(0.1)
st = json.loads(kforge("status", run_dir, "--json").stdout)
check(st["run"]["supervisor_alive"] and st["run"]["supervisor_pid"] == pid, "status does not see the supervisor")
check(st["resources"]["llm"]["total"] == 2, "status shows the wrong LLM slot count")
# A graceful stop awaits the replies in flight: release them once the supervisor has
# taken the stop (its log says so before it signals the workers).
stopper = subprocess.Popen([BIN, "stop", run_dir], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
slog = os.path.join(run_dir, "supervisor.log")
deadline = time.time() + STARTUP_WAIT_S
while "stopping" not in open(slog).read():
    check(stopper.poll() is None, "kforge stop ended before the supervisor took the stop")
    check(time.time() < deadline, "the supervisor never took the stop")
    time.sleep(0.05)
with open(release, "w"):
    pass
out, err = stopper.communicate(timeout=600)
check(stopper.returncode == 0 and "stopped" in out, "stop did not confirm: rc %d %r %r" % (stopper.returncode, out, err))
check(not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z",
      "the supervisor is still alive after stop")
check(json.load(open(os.path.join(run_dir, "run.json")))["status"] == "stopped", "run.json is not 'stopped'")
check(not os.path.exists(pid_file), "stale pid file after a graceful stop")
log = open(os.path.join(run_dir, "supervisor.log")).read()
check("stopping" in log, "the log does not record the stop")
st = json.loads(kforge("status", run_dir, "--json").stdout)
check(not st["run"]["supervisor_alive"], "status still sees a supervisor")
check(any(t["state"] != "DONE" for t in st["tasks"]), "everything finished before the stop")
check(st["run"]["state"] == "stopped" and st["run"]["resume_command"] == "kforge resume " + run_dir,
      "status --json of a stopped run: %s" % st["run"])
text = kforge("status", run_dir).stdout
check("run detach: stopped" in text and "'kforge resume %s' continues" % run_dir in text,
      "status of a stopped run does not say how to continue it:\n" + text)

kforge("resume", run_dir, timeout=600)
out, _ = tail.communicate(timeout=60)
check("--start--> GENERATE" in out and "--no_code--> FEEDBACK" in out, "tail -f printed no transitions")
for t in ["L1_1_ReLU_s%d" % i for i in range(3)] + ["L1_2_LeakyReLU_s%d" % i for i in range(3)]:
    recs = records(run_dir, t)
    check([r["turn"] for r in feedback_records(recs)] == [1, 2, 3, 4], "%s lost or repeated turns" % t)
    check(recs[-1]["to"] == "DONE", "%s did not finish" % t)
check(len(mock.requests()) == 6 * 4, "%d requests for 24 turns" % len(mock.requests()))
mock.stop()
print("ok: detach, status, tail -f, stop, resume")
