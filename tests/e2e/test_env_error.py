#!/usr/bin/env python3
"""An environment failure is not a candidate failure (issue 8, part 2).

A. runner.python is a bare venv (no torch): `kforge run` exits 69 (ORCH_EXIT_ENV) before
   any model request, naming the stage (torch), that Python and the fix; no turn is
   recorded, run.json says why, and the run directory stays. A plain resume stops the same
   way; `kforge resume DIR --set runner.python=<a torch Python>` then finishes every task,
   and the frozen config keeps the new Python.
B. Mid-run: the reference problem raises by itself (while a marker file exists), after
   the candidate compiled. The EXECUTE step is logged as env_error (stage reference), with
   no FEEDBACK record and nothing fed back; the run pauses and exits 69 naming the problem;
   status and report say so and the report's rates leave it out. With the marker gone,
   `kforge resume` redoes that EXECUTE (not the generation: the model is asked once) and
   the task finishes with its turn scored once.

C. The runner fails in its own code before the candidate's runs (a lock it cannot take,
   a bug of kforge's; made here by KFORGE_CRASHPOINT=runner-fault-execute): no turn is
   spent. The EXECUTE is retried twice after a pause (transient records naming the
   runner's error), then the run pauses on an env_error (stage runner) and exits 69;
   resume redoes that EXECUTE and the task finishes with its turn scored once and the
   model asked once.
D. A candidate that writes such a failure as its own result (on the runner's result pipe,
   then exits) gets no retry: the runner said on that pipe, before the candidate's code
   ran, that it was about to run it, so the turn is the candidate's and is spent.
E. The judge fails before it listens (as an H200's judge whose CUDA would not start did;
   made here once by KFORGE_CRASHPOINT=judge-fault): the candidate's runner, waiting for
   it, is stopped, not left to wait minutes; no turn is spent: the EXECUTE is retried
   after a pause (a transient record naming the judge's failure) and the task finishes
   with its turn scored once and the model asked once.

The mock LLM server counts every request."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

ENV_EXIT = 69
py = torch_python()
work = scratch("e2e-env-error")
bare = bare_python(work)

NO_CODE = {"content": "I would start by profiling the reference first.",
           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def config(name, problems, base_url, python, turns=1):
    return write_config(os.path.join(work, name + ".yaml"), """
name: %s
problems: {dir: %s, levels: [1]}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1, concurrency: 2}
refinement: {turns: %d, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1}
runner: {python: %s}
workers: 2
""" % (name, problems, base_url, turns, python))


def relu_scenario(letter, default_reply):
    """A part's own copy of the ReLU problem and a mock model answering default_reply."""
    problems_dir = copy_problems(os.path.join(work, "problems-" + letter), ["level1/1_ReLU.py"])
    os.makedirs(os.path.join(work, "mock-" + letter), exist_ok=True)
    return problems_dir, MockLLM(os.path.join(work, "mock-" + letter), {"default": default_reply})


def run_json(run_dir):
    with open(os.path.join(run_dir, "run.json")) as f:
        return json.load(f)


def trajectory_events(run_dir):
    out = []
    tasks = os.path.join(run_dir, "tasks")
    for task in sorted(os.listdir(tasks)) if os.path.isdir(tasks) else []:
        if os.path.exists(os.path.join(tasks, task, "trajectory.jsonl")):
            out += records(run_dir, task)
    return out


# ------------------------------------------------------------------ A: before any request
problems_a = copy_problems(os.path.join(work, "problems-a"), ["level1/1_ReLU.py", "level1/2_LeakyReLU.py"])
mock = MockLLM(os.path.join(work), {"default": NO_CODE})
try:
    cfg_a = config("env-a", problems_a, mock.base_url, bare)
    run_a = os.path.join(work, "run-a")
    p = kforge("run", cfg_a, "--run-dir", run_a, check_rc=False, timeout=600)
    err = p.stderr
    check(p.returncode == ENV_EXIT, "run with a bare venv: exit %d, want %d\n%s" % (p.returncode, ENV_EXIT, err[-3000:]))
    line = [l for l in err.splitlines() if "environment error" in l]
    check(len(line) == 1, "want one line naming the environment error, got:\n%s" % err[-3000:])
    check("(torch)" in line[0] and bare in line[0] and "fix:" in line[0] and "runner.python" in line[0],
          "the line does not name the stage, the Python and the fix: %s" % line[0])
    check("kforge resume %s" % run_a in line[0], "the line does not say how to continue: %s" % line[0])
    check(mock.requests() == [], "a model request was made: %s" % mock.requests())
    check(trajectory_events(run_a) == [], "a turn was recorded: %s" % trajectory_events(run_a))
    info = run_json(run_a)
    check(info["status"] == "paused" and "torch" in (info.get("stop_reason") or ""), "run.json: %s" % info)
    check(info.get("selftest", {}).get("stage") == "torch", "run.json selftest: %s" % info.get("selftest"))
    st = json.loads(kforge("status", run_a, "--json").stdout)
    check("torch" in (st["run"].get("stop_reason") or ""), "status --json: %s" % st["run"])

    # Still broken: resume stops the same way, before any request.
    p = kforge("resume", run_a, check_rc=False, timeout=600)
    check(p.returncode == ENV_EXIT and "(torch)" in p.stderr, "plain resume: %d\n%s" % (p.returncode, p.stderr[-3000:]))
    check(mock.requests() == [], "resume made a model request")
    # Only the machine's keys may change on resume.
    p = kforge("resume", run_a, "--set", "refinement.turns=2", check_rc=False)
    check(p.returncode == 2 and "runner.python" in p.stderr, "resume --set of an experiment key: %d %s" % (p.returncode, p.stderr))

    # Fixed: every task finishes, one request each.
    p = kforge("resume", run_a, "--set", "runner.python=" + py, timeout=1500)
    for task in ("L1_1_ReLU_s0", "L1_2_LeakyReLU_s0"):
        recs = records(run_a, task)
        check(recs[-1]["to"] == "DONE", "%s ends in %s" % (task, recs[-1]["to"]))
        check(not any(r["event"] == "compile_error" for r in recs), "%s: a compile_error turn" % task)
    check(len(mock.requests()) == 2, "requests after the fix: %d, want 2" % len(mock.requests()))
    with open(os.path.join(run_a, "config.yaml")) as f:
        check(py in f.read(), "the frozen config does not keep the new runner.python")
    info = run_json(run_a)
    check(info["status"] == "finished" and info.get("env_error") is None and info.get("python") == py,
          "run.json after the fix: %s" % info)
finally:
    mock.stop()

# ------------------------------------------------------------------ B: mid-run
problems_b = os.path.join(work, "problems-b")
copy_problems(problems_b, ["level1/1_ReLU.py"])
marker = os.path.join(problems_b, "level1", "BROKEN")
with open(os.path.join(problems_b, "level1", "1_ReLU.py"), "a") as f:
    # Baselines are cached by the problem's content in the cache that runs share: this
    # content is this test process's own, so its reference is timed here (and fails while
    # the marker exists), never found there from an earlier run of this test.
    f.write("\n# test_env_error %d %.6f\n" % (os.getpid(), time.time()))
    f.write('''

import os as _os
_forward = Model.forward


def _broken_forward(self, x):
    # The test's switch: while the marker exists, the reference fails by itself.
    if _os.path.exists(_os.path.join(_os.path.dirname(__file__), "BROKEN")):
        raise RuntimeError("reference broken on purpose by test_env_error")
    return _forward(self, x)


Model.forward = _broken_forward
''')
open(marker, "w").close()
os.makedirs(os.path.join(work, "mock-b"), exist_ok=True)
mock = MockLLM(os.path.join(work, "mock-b"), {"default": reply("relu_3.md")})
try:
    cfg_b = config("env-b", problems_b, mock.base_url, py)
    run_b = os.path.join(work, "run-b")
    task = "L1_1_ReLU_s0"
    p = kforge("run", cfg_b, "--run-dir", run_b, check_rc=False, timeout=1500)
    check(p.returncode == ENV_EXIT, "run with a failing reference: exit %d\n%s" % (p.returncode, p.stderr[-4000:]))
    check("reference" in p.stderr and "1_ReLU.py" in p.stderr and "kforge resume" in p.stderr,
          "the message does not name the problem and the fix:\n%s" % p.stderr[-3000:])
    check(len(mock.requests()) == 1, "requests: %d, want 1" % len(mock.requests()))
    recs = records(run_b, task)
    last = recs[-1]
    check(last["from"] == "EXECUTE" and last["event"] == "env_error" and last["to"] == "EXECUTE",
          "the last record: %s" % last)
    check(last["data"].get("status") == "env_error" and last["data"].get("stage") == "reference"
          and "fix" in last["data"], "env_error data: %s" % last["data"])
    check(not feedback_records(recs), "a FEEDBACK record for an env_error turn")
    check(any(r["from"] == "PRECOMPILE" and r["event"] == "ok" for r in recs), "the candidate did not compile")
    turn = os.path.join(run_b, "tasks", task, "turns", "1")
    check(os.path.exists(os.path.join(turn, "env_error.json")), "no env_error.json")
    check(not os.path.exists(os.path.join(turn, "feedback.md")) and
          not os.path.exists(os.path.join(turn, "result.json")), "the env_error was fed back or scored")
    check_artifacts(run_b, task, recs)
    st = json.loads(kforge("status", run_b, "--json").stdout)
    t = st["tasks"][0]
    check(t["state"] == "EXECUTE" and t["env_error"].startswith("reference:"), "status task: %s" % t)
    check("environment error" in (st["run"].get("stop_reason") or ""), "status run: %s" % st["run"])
    text = kforge("status", run_b).stdout
    check("env_error" in text, "status text does not show the env_error:\n%s" % text)
    rep = json.loads(kforge("report", run_b, "--json").stdout)
    check(rep["env_errors"] == 1 and rep["overall"]["compiled"] == 0.0, "report while paused: %s" % rep)
    check("environment errors: 1" in kforge("report", run_b).stdout, "report text lacks the env_error")

    os.unlink(marker)
    kforge("resume", run_b, timeout=1500)
    recs = records(run_b, task)
    check(recs[-1]["to"] == "DONE", "%s ends in %s after resume" % (task, recs[-1]["to"]))
    fb = feedback_records(recs)
    check([r["turn"] for r in fb] == [1], "turns scored: %s" % [r["turn"] for r in fb])
    check(fb[0]["data"]["status"] == "ok" and fb[0]["data"]["correct"], "the redone turn: %s" % fb[0]["data"])
    i = next(k for k, r in enumerate(recs) if r["event"] == "env_error")
    check(recs[i + 1]["from"] == "EXECUTE", "resume did not re-enter EXECUTE: %s" % recs[i + 1])
    check(len(mock.requests()) == 1, "resume asked the model again: %d requests" % len(mock.requests()))
    rep = json.loads(kforge("report", run_b, "--json").stdout)
    check(rep["env_errors"] == 1 and rep["overall"]["compiled"] == 1.0 and rep["overall"]["fast_0"] == 1.0,
          "report after resume: %s" % rep)
    check(run_json(run_b)["status"] == "finished", "run.json after resume: %s" % run_json(run_b))
finally:
    mock.stop()

# ------------------------------------------------------------------ C: the runner's own failure
problems_c, mock = relu_scenario("c", reply("relu_3.md"))
try:
    cfg_c = config("env-c", problems_c, mock.base_url, py)
    run_c = os.path.join(work, "run-c")
    task = "L1_1_ReLU_s0"
    p = kforge("run", cfg_c, "--run-dir", run_c, check_rc=False, timeout=1500,
               env={"KFORGE_CRASHPOINT": "runner-fault-execute"})
    check(p.returncode == ENV_EXIT and "runner" in p.stderr and "kforge resume" in p.stderr,
          "a runner failing before the candidate: exit %d\n%s" % (p.returncode, p.stderr[-3000:]))
    recs = records(run_c, task)
    ex = [r for r in recs if r["from"] == "EXECUTE"]
    check([r["event"] for r in ex] == ["transient", "transient", "env_error"],
          "EXECUTE's records: %s" % [(r["event"], r["data"].get("status")) for r in ex])
    check(all("runner-fault" in r["data"].get("runner_error", "") for r in ex[:2]),
          "the retries do not name the runner's error: %s" % [r["data"] for r in ex[:2]])
    check(ex[2]["data"].get("stage") == "runner" and "runner-fault" in ex[2]["data"].get("message", ""),
          "the env_error: %s" % ex[2]["data"])
    check(not feedback_records(recs), "a turn was spent on the runner's failure")
    kforge("resume", run_c, timeout=1500)
    recs = records(run_c, task)
    fb = feedback_records(recs)
    check(recs[-1]["to"] == "DONE" and [r["turn"] for r in fb] == [1] and fb[0]["data"]["correct"],
          "after resume: %s" % [(r["from"], r["event"], r["to"]) for r in recs])
    check(len(mock.requests()) == 1, "the model was asked %d times" % len(mock.requests()))
finally:
    mock.stop()

# ------------------------------------------------------------------ D: the same, forged
FORGED = json.dumps({"status": "runtime_error", "mode": "precompile", "compiled": False,
                     "correct": False, "flags": ["runner_error"],
                     "details": {"message": "runner error: forged", "candidate_ran": False}})
FORGER = {"content": "```python\nimport os\nimport torch\nimport torch.nn as nn\n\n"
                     "os.write(3, %r.encode() + b'\\n')\nos._exit(0)\n\n\n"
                     "class ModelNew(nn.Module):\n    def forward(self, x):\n"
                     "        return torch.relu(x)\n```\n" % FORGED,
          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
problems_d, mock = relu_scenario("d", FORGER)
try:
    cfg_d = config("env-d", problems_d, mock.base_url, py)
    with open(cfg_d) as f:
        text = f.read()
    with open(cfg_d, "w") as f:     # what the forger does is what the static checks refuse
        f.write(text.replace("eval: {", "eval: {static_checks: false, "))
    run_d = os.path.join(work, "run-d")
    p = kforge("run", cfg_d, "--run-dir", run_d, check_rc=False, timeout=1500)
    check(p.returncode == 0, "a forged runner failure: exit %d\n%s" % (p.returncode, p.stderr[-3000:]))
    recs = records(run_d, "L1_1_ReLU_s0")
    check(not any(r["event"] in ("transient", "env_error") for r in recs),
          "a forged runner failure was retried: %s" % [(r["from"], r["event"]) for r in recs])
    fb = feedback_records(recs)
    check([r["turn"] for r in fb] == [1] and fb[0]["data"].get("status") == "runtime_error",
          "the forger's turn: %s" % [r["data"] for r in fb])
    with open(os.path.join(run_d, "tasks", "L1_1_ReLU_s0", "turns", "1", "compile.json")) as f:
        check(json.load(f)["details"].get("candidate_ran") is True,
              "the forged result kept candidate_ran false")
finally:
    mock.stop()

# ------------------------------------------------------------------ E: the judge's failure
problems_e, mock = relu_scenario("e", reply("relu_3.md"))
try:
    cfg_e = config("env-e", problems_e, mock.base_url, py)
    run_e = os.path.join(work, "run-e")
    marker = os.path.join(work, "judge-fault.once")
    p = kforge("run", cfg_e, "--run-dir", run_e, check_rc=False, timeout=1500,
               env={"KFORGE_CRASHPOINT": "judge-fault", "KFORGE_CRASHONCE": marker})
    check(p.returncode == 0, "a judge failing once: exit %d\n%s" % (p.returncode, p.stderr[-3000:]))
    check(os.path.exists(marker), "the judge's fault never fired")
    recs = records(run_e, "L1_1_ReLU_s0")
    ex = [r for r in recs if r["from"] == "EXECUTE"]
    check([r["event"] for r in ex][:1] == ["transient"] and
          "judge-fault" in ex[0]["data"].get("runner_error", "") and
          "the judge failed" in ex[0]["data"].get("runner_error", ""),
          "EXECUTE's records: %s" % [(r["event"], r["data"]) for r in ex])
    with open(os.path.join(run_e, "supervisor.log")) as f:
        log = f.read()
    check("its judge has ended: killed" in log,
          "the candidate's runner was not stopped when its judge failed:\n%s" % log[-3000:])
    fb = feedback_records(recs)
    check(recs[-1]["to"] == "DONE" and [r["turn"] for r in fb] == [1] and fb[0]["data"]["correct"]
          and "judge_failed" not in (fb[0]["data"].get("flags") or []),
          "after the retry: %s" % [(r["from"], r["event"], r["to"], r["data"].get("flags")) for r in recs])
    check(len(mock.requests()) == 1, "the model was asked %d times" % len(mock.requests()))
finally:
    mock.stop()

print("ok: test_env_error")
