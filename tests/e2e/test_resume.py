#!/usr/bin/env python3
"""Resume after SIGKILL of the supervisor: kill it mid-run, `kforge resume`, and check
that every task finishes with the same number of turns, that the mock server saw no
request twice, that no log has a gap or duplicate, that every artifact a log names
exists, and that no process or lease is left behind."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-resume")
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py", "level1/2_LeakyReLU.py"])
# The kill comes once 6 of the 12 requests were made; every request after those 6 is held
# by the server until the supervisor is dead, so the run cannot finish (or get close)
# before the kill however the test and the run are scheduled.
release = os.path.join(work, "replies.release")
slow = {"delay_s": 1.0}
held = dict(slow, hold_until=release)
script = {"rules": [
    # turn 3: G is turn 2's reply (no code), so its words come back
    {"match": "I would start by profiling", "replies": [reply("leaky_1.md", **held)]},
    # turn 2: G is turn 1's kernel; two of the four are answered before the kill
    {"match": "e2e_leaky", "replies": [reply("leaky_1.md", **slow)] * 2 + [reply("leaky_1.md", **held)]},
], "default": reply("leaky_2.md", **slow)}
mock = MockLLM(work, script)
config = write_config(os.path.join(work, "resume.yaml"), """
name: resume
problems: {dir: %s, levels: [1], samples: 2}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 2, concurrency: 4}
refinement: {turns: 3, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1}
runner: {python: %s}
workers: 4
""" % (problems, mock.base_url, py))
run_dir = os.path.join(work, "run")
tasks = ["L1_1_ReLU_s0", "L1_1_ReLU_s1", "L1_2_LeakyReLU_s0", "L1_2_LeakyReLU_s1"]

sup = subprocess.Popen([BIN, "run", config, "--run-dir", run_dir], stdout=subprocess.DEVNULL,
                       stderr=open(os.path.join(work, "first.err"), "w"), start_new_session=True)
deadline = time.time() + 1200
while len(mock.requests()) < 6:
    check(sup.poll() is None, "the run ended before it could be killed")
    check(time.time() < deadline, "the run made no progress")
    time.sleep(0.1)
sup.send_signal(signal.SIGKILL)
sup.wait()
seen_at_kill = len(mock.requests())
check(seen_at_kill < 12, "the run finished before the kill; nothing to resume")
# The workers, stopping at the supervisor's death, still await the replies they asked for.
with open(release, "w"):
    pass

try:
    kforge("resume", run_dir, timeout=1500)
finally:
    mock.stop()

for task in tasks:
    recs = records(run_dir, task)
    fb = feedback_records(recs)
    check([r["turn"] for r in fb] == [1, 2, 3], "%s: turns %s after resume" % (task, [r["turn"] for r in fb]))
    check(recs[-1]["to"] == "DONE", "%s ends in %s" % (task, recs[-1]["to"]))
    check(recs[0]["event"] == "start" and sum(r["event"] == "start" for r in recs) == 1,
          "%s: started twice" % task)
    check_artifacts(run_dir, task, recs)
reqs = mock.requests()
check(len(reqs) == 4 * 3, "the mock server saw %d requests for 12 turns: a reply was requested twice" % len(reqs))

# nothing left behind: no process of this run (waiting, with a generous bound, for
# killed ones to finish exiting), no lease held
def left_behind():
    left = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                        continue
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, IndexError):
                continue
            if run_dir in cmd or config in cmd:
                left.append(cmd)
    return left


deadline = time.time() + STARTUP_WAIT_S
while left_behind() and time.time() < deadline:
    time.sleep(0.1)
check(not left_behind(), "processes left behind: %s" % left_behind())
st = json.loads(kforge("status", run_dir, "--json").stdout)
for cls in ("exec", "compile", "llm"):
    check(st["resources"][cls]["used"] == 0, "a %s lease leaked" % cls)
check(all(t["state"] == "DONE" for t in st["tasks"]), "not every task is DONE")
print("ok: killed after %d requests, resumed to 12 with none repeated" % seen_at_kill)
