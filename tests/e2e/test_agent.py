#!/usr/bin/env python3
"""llm.provider agent in a whole run: a scripted agent (tests/data/agent/scripted_agent.py)
works two turns of the bundled ReLU on the CPU with llm.agent.max_tool_calls 2.

Turn 1: it asks `kforge-tool eval` about a kernel the static checks reject, then about a
correct C++ ReLU, and a third time (refused: over the limit), and leaves the correct one
in final.py, which the turn judges as any reply's kernel. The run is killed right after
the reply is persisted (its worker held at the crash point after-response-persisted,
then supervisor and worker SIGKILLed) and resumed: the agent must not run again for
turn 1. Turn 2: it exits 3 without a final
kernel, a turn without code. Then: the two tool_call records (nodes of the turn, their
kernel and result kept with their hashes), the answers the agent printed, the
transcript kept and shown by tail and the HTML report (the viewer serves the same page),
and the agent confined: the run directory beyond its workspace out of its reach."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-agent")
TASK = "L1_1_ReLU_s0"
agent = os.path.join(HOME, "tests", "data", "agent", "scripted_agent.py")
# Where the confined agent may write besides its workspace: the temporary directory.
starts = os.path.join(tempfile.mkdtemp(prefix="kforge-agent-starts-"), "starts.txt")
problems = os.path.join(work, "problems")
copy_problems(problems, ["level1/1_ReLU.py"])
config = write_config(os.path.join(work, "agent.yaml"), """
name: agent_run
problems: {dir: %s, levels: [1], samples: 1}
llm: {provider: agent, command: [python3, "%s", "%s"], model: scripted,
      agent: {max_tool_calls: 2, timeout_s: 900}}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3}
runner: {python: %s}
workers: 1
""" % (problems, agent, starts, py))
run_dir = os.path.join(work, "run")
marker = os.path.join(work, "crashed")
# The worker holds right after turn 1's reply is persisted, and the whole run is killed
# there (SIGKILL: supervisor and worker), then resumed.
env = dict(os.environ, KFORGE_CRASHPOINT="after-response-persisted", KFORGE_CRASHONCE=marker,
           KFORGE_CRASHTASK=TASK, KFORGE_CRASHDELAY_MS="600000")
sup = subprocess.Popen([BIN, "run", config, "--run-dir", run_dir], env=env,
                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "run.err"), "w"),
                       start_new_session=True)
deadline = time.time() + 1200
while not (os.path.exists(marker) and open(marker).read().endswith("\n")):
    check(sup.poll() is None, "the run ended before turn 1's reply was persisted")
    check(time.time() < deadline, "timed out waiting for turn 1's reply")
    time.sleep(0.1)
worker = int(open(marker).read())
os.killpg(sup.pid, signal.SIGKILL)
try:
    os.kill(worker, signal.SIGKILL)
except ProcessLookupError:
    pass
sup.wait()
while os.path.exists("/proc/%d" % worker) and open("/proc/%d/stat" % worker).read().split(") ")[-1][0] not in "ZX":
    time.sleep(0.05)
check(open(starts).read() == "turn 1\n", "the agent's runs before the kill: %r" % open(starts).read())
kforge("resume", run_dir, timeout=1200)
check(open(starts).read() == "turn 1\nturn 2\n",
      "the agent's runs: %r (a resumed turn must reuse its reply)" % open(starts).read())

recs = records(run_dir, TASK)
check_artifacts(run_dir, TASK, recs)
calls = [r for r in recs if r["event"] == "tool_call"]
check([(r["turn"], r["from"], r["to"]) for r in calls] == [(1, "GENERATE", "GENERATE")] * 2,
      "tool_call records %r" % calls)
check([r["data"]["call"] for r in calls] == [1, 2] and
      all(r["data"]["parent"] == 1 for r in calls), "nodes %r" % [r["data"] for r in calls])
check([r["data"]["verdict"] for r in calls] == ["rejected", "correct"],
      "tool call verdicts %r" % [r["data"] for r in calls])
check(calls[1]["data"]["speedup"] > 0 and calls[1]["data"]["compiled"], "call 2 %r" % calls[1])
for r in calls:
    for key in ("kernel", "result"):
        a = r["data"]["artifacts"][key]
        with open(os.path.join(run_dir, "tasks", TASK, a["path"]), "rb") as f:
            check(hashlib.sha256(f.read()).hexdigest() == a["sha256"], "%s of %s" % (key, r))
check("agent_relu" in open(os.path.join(run_dir, "tasks", TASK, "turns", "1", "tool_calls", "2",
                                        "kernel.py")).read(), "call 2's kernel kept")

gen = [r for r in recs if r["from"] == "GENERATE" and r["event"] in ("ok", "no_code")]
check([(r["turn"], r["event"]) for r in gen] == [(1, "ok"), (2, "no_code")],
      "GENERATE ends %r" % gen)
check(gen[0]["data"].get("reused_response") is True,
      "turn 1 after the restart reuses the persisted reply: %r" % gen[0]["data"])
meta = json.load(open(os.path.join(run_dir, "tasks", TASK, "turns", "1", "response.json")))
check(meta.get("provider") == "agent", "response.json %r" % meta)
ex = [r for r in recs if r["from"] == "EXECUTE"]
check(len(ex) == 1 and ex[0]["turn"] == 1 and ex[0]["event"] == "correct",
      "turn 1's final kernel judged correct: %r" % ex)
kernel = open(os.path.join(run_dir, "tasks", TASK, "turns", "1", "kernel.py")).read()
check("agent_relu" in kernel, "turn 1's kernel is the agent's final.py")

t1 = os.path.join(run_dir, "tasks", TASK, "turns", "1")
t2 = os.path.join(run_dir, "tasks", TASK, "turns", "2")
out1 = open(os.path.join(t1, "agent_stdout.txt")).read()
check('tool wrong.py: exit 0' in out1 and '"verdict": "rejected"' in out1, "stdout %r" % out1)
check('tool right.py: exit 1' in out1 and "max_tool_calls" in out1, "the refused call %r" % out1)
check("third call refused" in open(os.path.join(t1, "agent_stderr.txt")).read(), "stderr 1")
# The agent runs in the runners' sandbox (where the host has it: runner.sandbox strict,
# the default, refuses one without): the run's records are not its to read or write.
if "sandbox: strict" in open(os.path.join(run_dir, "supervisor.log")).read():
    check("confined: write refused" in out1 and "confined: read refused" in out1,
          "the agent reached the run directory: %r" % out1)
check("giving up" in open(os.path.join(t2, "agent_stderr.txt")).read(), "stderr 2")
# The turn-2 reply says why it has no code; its GENERATE record how the agent ended.
no_code = [r for r in recs if r["turn"] == 2 and r["event"] == "no_code"][0]
check(no_code["data"]["agent"]["end"] == "exited with status 3" and
      no_code["data"]["agent"]["final"] is False, "turn 2 record %r" % no_code["data"])
check("exited with status 3" in open(os.path.join(t2, "response.md")).read(), "turn 2 reply")
st = json.loads(kforge("status", run_dir, "--json").stdout)
check(st["run"]["status"] == "finished", "run status %r" % st["run"])

tail = kforge("tail", run_dir, TASK).stdout
check("tool call 1" in tail and "tool call 2" in tail and "rejected" in tail,
      "tail lacks the tool calls:\n%s" % tail)
check("agent_stdout.txt" in tail and "exited with status 3" in tail,
      "tail lacks the transcript or the agent's end:\n%s" % tail)
html = os.path.join(work, "report.html")
kforge("report", run_dir, "--html", html)
page = open(html).read()
check("third call refused" in page and "giving up" in page,
      "the HTML report lacks the agent's transcript")
check("Tool call 2: kernel" in page and "Agent tool calls" in page,
      "the HTML report lacks the tool calls")

# An agent that leaves no final.py, then one killed at llm.agent.timeout_s: turns without
# code that say so, the run goes on to its end.
config = write_config(os.path.join(work, "idle.yaml"), open(config).read().replace(
    '"%s"]' % starts, '"%s", idle]' % starts).replace("timeout_s: 900", "timeout_s: 2")
    .replace("name: agent_run", "name: agent_idle"))
run_dir = os.path.join(work, "run-idle")
kforge("run", config, "--run-dir", run_dir, timeout=600)
recs = records(run_dir, TASK)
gen = [r for r in recs if r["from"] == "GENERATE" and r["event"] != "start"]
check([r["event"] for r in gen] == ["no_code", "no_code"], "idle agent's turns %r" % gen)
check(gen[0]["data"]["agent"] == {"end": "exited with status 0", "final": False, "tool_calls": 0},
      "turn 1 of the idle agent %r" % gen[0]["data"])
check(gen[1]["data"]["agent"]["end"].startswith("ran past llm.agent.timeout_s (2 s)"),
      "turn 2 of the idle agent %r" % gen[1]["data"])
check("no final kernel in final.py" in open(os.path.join(run_dir, "tasks", TASK, "turns", "1",
                                                         "response.md")).read(), "turn 1 reply")
check("sleeping past the deadline" in open(os.path.join(run_dir, "tasks", TASK, "turns", "2",
                                                        "agent_stdout.txt")).read(),
      "the killed agent's transcript is kept")
shutil.rmtree(os.path.dirname(starts), ignore_errors=True)
print("ok: agent turns, tool calls, limit, transcript, confinement and resume")
