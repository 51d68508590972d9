#!/usr/bin/env python3
"""A worker that dies abnormally is restarted and resumes from its log: with the
crash point after-response-persisted every turn's worker dies right after saving the
model's reply and before logging it; the restarted worker must reuse the saved reply
(no second request) and finish every turn. A worker that dies without progress is
given up on after a bounded number of restarts, and the task is FAILED with a reason."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-restart")
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py", "level1/2_LeakyReLU.py"])
mock = MockLLM(work, {"default": reply("leaky_1.md")})
config = write_config(os.path.join(work, "restart.yaml"), """
name: restart
problems: {dir: %s, levels: [1]}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu}
runner: {python: %s}
workers: 2
""" % (problems, mock.base_url, py))
run_dir = os.path.join(work, "run")
kforge("run", config, "--run-dir", run_dir, env={"KFORGE_CRASHPOINT": "after-response-persisted"})
for task in ("L1_1_ReLU_s0", "L1_2_LeakyReLU_s0"):
    recs = records(run_dir, task)
    check([r["turn"] for r in feedback_records(recs)] == [1, 2], "%s did not finish both turns" % task)
    gen = [r for r in recs if r["from"] == "GENERATE" and r["event"] != "start"]
    check(all(r["data"].get("reused_response") for r in gen), "%s: a restarted worker asked again" % task)
check(len(mock.requests()) == 4, "the mock saw %d requests, want 4" % len(mock.requests()))
log = open(os.path.join(run_dir, "supervisor.log")).read()
check("restarting" in log, "the supervisor log does not mention the restarts")


# A worker that dies at the same point every time (no progress) is given up on.
mock2 = MockLLM(scratch("e2e-restart-mock2"), {"default": reply("leaky_2.md", fresh=True)})
config2 = write_config(os.path.join(work, "restart2.yaml"), open(config).read().replace(
    "name: restart", "name: restart2").replace(mock.base_url, mock2.base_url))
run2 = os.path.join(work, "run2")
kforge("run", config2, "--run-dir", run2, "--set", "problems.ids=2",
       env={"KFORGE_CRASHPOINT": "precompile-before-runner"})
mock.stop()
mock2.stop()
recs = records(run2, "L1_2_LeakyReLU_s0")
check(recs[-1]["to"] == "FAILED", "a task whose worker always dies should be FAILED")
check("died 3 times" in recs[-1]["data"].get("reason", ""), "FAILED without the reason: %s" % recs[-1]["data"])
# ... and the reason reaches the user: status (text and JSON), report (text and JSON), log.
text = kforge("status", run2).stdout
check("FAILED" in text and "worker died 3 times, last exited with status 99" in text,
      "status does not say why the task failed:\n" + text)
st = [t for t in json.loads(kforge("status", run2, "--json").stdout)["tasks"] if t["id"] == "L1_2_LeakyReLU_s0"]
check(st and st[0]["state"] == "FAILED" and "died 3 times" in st[0]["fail_reason"], "status --json: %s" % st)
text = kforge("report", run2).stdout
check("failed tasks:" in text and "L1_2_LeakyReLU_s0: worker died 3 times" in text,
      "report does not say why the task failed:\n" + text)
rep = json.loads(kforge("report", run2, "--json").stdout)
check([f["id"] for f in rep["failed"]] == ["L1_2_LeakyReLU_s0"] and "died 3 times" in rep["failed"][0]["reason"],
      "report --json failed: %s" % rep.get("failed"))
check(open(os.path.join(run2, "supervisor.log")).read().count("giving up: worker died 3 times") == 1,
      "the supervisor log should say once that it gave up")
check(len(mock2.requests()) == 1, "the given-up task asked the model %d times" % len(mock2.requests()))

# A reply over llm.max_response_bytes spends the turn (it was paid for) and the model is
# told why; the task goes on.
mock3 = MockLLM(scratch("e2e-restart-mock3"), {"rules": [{"replies": [
    {"content": "x", "repeat_bytes": 20000}, reply("leaky_1.md")]}]})
run3 = os.path.join(work, "run3")
kforge("run", config2, "--run-dir", run3, "--set", "problems.ids=2", "--set",
       "llm.max_response_bytes=4096", "--set", "llm.base_url=" + mock3.base_url)
mock3.stop()
recs = records(run3, "L1_2_LeakyReLU_s0")
check(recs[-1]["to"] == "DONE", "an oversized reply ended the task: %s" % recs[-1])
fb = feedback_records(recs)
check([r["data"]["status"] for r in fb] == ["no_code", "no_code"], "statuses %s" % [r["data"]["status"] for r in fb])
told = open(os.path.join(run3, "tasks", "L1_2_LeakyReLU_s0", "turns", "1", "feedback.md")).read()
check("longer than the 4096 bytes" in told, "the model is not told its reply was too long: %r" % told)
check(len(mock3.requests()) == 2, "an oversized reply was requested again")
print("ok: restarted workers reused every saved reply; a dying worker was given up on; an oversized reply spent its turn")
