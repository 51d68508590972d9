#!/usr/bin/env python3
"""An endpoint that refuses the credentials (401) pauses generation for the whole run.

Run 1 (every request 401): six tasks, six workers, two LLM slots. At most one request
per slot reaches the server (those in flight when the first 401 came back); the workers
waiting for a slot, and those not yet asking, stop without asking. The run says so once,
on stderr and in supervisor.log, naming the endpoint, the status and what to do; no task
is FAILED or spends a turn; the supervisor exits 75; `kforge status` shows the pause.

Run 2 (work in flight): task A is answered at once with a real kernel and the others get
401 after 2 s, so A is compiling and executing when the pause comes: that work finishes,
then A stops at its next GENERATE.

Both are then resumed with the key fixed against a server that answers properly on the
same port: every task finishes, every turn's prompt is sent exactly once (A's answered
turn 1 is not asked again), and no log has a gap or a duplicate."""
import calendar
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-llm-auth")
RELU = open(os.path.join(HOME, "problems", "level1", "1_ReLU.py")).read()
NAMES = ["Ahead", "B", "C", "D", "E", "F"]
TASKS = ["L1_%d_Auth%s_s0" % (i, n) for i, n in enumerate(NAMES, 1)]
AHEAD = TASKS[0]
REFUSED = {"status": 401, "content": "Incorrect API key provided"}
problems = os.path.join(work, "problems")
os.makedirs(os.path.join(problems, "level1"))
for i, n in enumerate(NAMES, 1):
    with open(os.path.join(problems, "level1", "%d_Auth%s.py" % (i, n)), "w") as f:
        f.write("# auth-pause-task-%s\n%s" % (n, RELU))


def iso_s(ts):
    """Seconds since the epoch of a trajectory timestamp ("2026-11-22T01:02:03.456Z")."""
    return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + ts[19:-1])


def sender(req):
    return re.search(r"auth-pause-task-\w+", req["body"]["messages"][-1]["content"]).group(0)


def run_until_paused(name, script, slots, release=None, release_when=None):
    """Runs until the pause. release_when(run_dir): once true, the file release is
    created (the script's replies with hold_until=release are held until then)."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    mock = MockLLM(d, script)
    config = write_config(os.path.join(d, "auth.yaml"), """
name: %s
problems: {dir: %s, levels: [1], samples: 1}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: KFORGE_AUTH_KEY,
      retries: 3, concurrency: %d, timeout_s: 60}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1}
runner: {python: %s}
workers: 6
""" % (name, problems, mock.base_url, slots, py))
    run_dir = os.path.join(d, "run")
    env = dict(os.environ, KFORGE_AUTH_KEY="sk-revoked", KFORGE_LLM_BACKOFF_SCALE="0.01")
    out, err = os.path.join(d, "run.out"), os.path.join(d, "run.err")
    try:
        sup = subprocess.Popen([BIN, "run", config, "--run-dir", run_dir], env=env,
                               stdout=open(out, "w"), stderr=open(err, "w"))
        try:
            if release_when is not None:
                deadline = time.time() + 1200
                while not release_when(run_dir):
                    check(sup.poll() is None, "%s: the run ended before the replies were released" % name)
                    check(time.time() < deadline, "%s: the condition to release the replies never came" % name)
                    time.sleep(0.05)
                with open(release, "w"):
                    pass
            sup.wait(1200)
        finally:
            if sup.poll() is None:
                sup.kill()
                sup.wait()
    finally:
        mock.stop()
    p = subprocess.CompletedProcess(sup.args, sup.returncode, open(out).read(), open(err).read())
    return d, run_dir, mock, p


def check_paused(name, run_dir, mock, p, slots):
    """The exit status, the one message, the request bound, no task failed, status."""
    err = p.stderr
    check(p.returncode == 75, "%s: a paused run exits 75, got %d\nstderr:\n%s" % (name, p.returncode, err[-4000:]))
    announce = [l for l in err.splitlines() if "paused for the whole run" in l]
    check(len(announce) == 1, "%s: the pause is announced %d times:\n%s" % (name, len(announce), err[-4000:]))
    for want in (mock.base_url, "HTTP 401", "Incorrect API key provided", "KFORGE_AUTH_KEY",
                 "kforge resume %s" % run_dir):
        check(want in announce[0], "%s: the announcement lacks %r: %s" % (name, want, announce[0]))
    check(sum("HTTP 401" in l for l in err.splitlines()) == 1, "%s: the 401 is reported more than once:\n%s" % (name, err[-4000:]))
    log = open(os.path.join(run_dir, "supervisor.log")).read().splitlines()
    check(sum("paused for the whole run" in l for l in log) == 1, "%s: supervisor.log does not say it once" % name)
    for bad in ("restarting it", "giving up", "killed by signal", "gave up", "retry"):
        check(bad not in err, "%s: %r on stderr:\n%s" % (name, bad, err[-4000:]))
    refused = [r for r in mock.requests() if r["rule"] == "default"]
    check(1 <= len(refused) <= slots, "%s: %d requests refused for %d LLM slots" % (name, len(refused), slots))
    who = [sender(r) for r in refused]
    check(len(set(who)) == len(who), "%s: a task asked again after a 401: %s" % (name, who))
    for task in TASKS:
        path = os.path.join(run_dir, "tasks", task, "trajectory.jsonl")
        recs = records(run_dir, task) if os.path.exists(path) else []
        check(all(r["to"] != "FAILED" and r["event"] not in ("fatal", "transient") for r in recs),
              "%s: %s failed or burnt a retry: %s" % (name, task, recs[-1:]))
    st = json.loads(kforge("status", run_dir, "--json").stdout)
    check(st["run"]["status"] == "paused", "%s: run.json status %s" % (name, st["run"]["status"]))
    for key in ("stop_reason", "llm_paused"):
        check("HTTP 401" in (st["run"].get(key) or "") and mock.base_url in st["run"][key],
              "%s: status %s lacks the reason: %s" % (name, key, st["run"].get(key)))
    check(all(t["state"] != "FAILED" for t in st["tasks"]), "%s: status shows a FAILED task" % name)
    check("HTTP 401" in ((st["resources"].get("llm_paused") or {}).get("reason") or ""), "%s: pool.json lacks the pause" % name)
    check(st["resources"]["llm"]["used"] == 0, "%s: an LLM slot is still held" % name)
    text = kforge("status", run_dir).stdout
    check("LLM generation paused" in text and "kforge resume" in text, "%s: status text lacks the pause:\n%s" % (name, text))
    return refused


def resume_fixed(name, d, run_dir, port, answered):
    """Resume with the key fixed against a working server on the same port; answered
    holds the (task, turn) whose reply run 1 already saved."""
    fixed = os.path.join(d, "fixed")
    os.makedirs(fixed)
    cheap = ("```python\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
             "        return x.relu()  # cheap_candidate_marker\n```\n")
    good = MockLLM(fixed, {"rules": [
        # turn 2: G is turn 1's code, so the cheap reply's marker or A's kernel name is there
        {"match": "cheap_candidate_marker", "replies": [{"content": "No code this time."}]},
        {"match": "e2e_relu_t3", "replies": [{"content": "No code this time."}]},
    ], "default": {"content": cheap}}, port=port)
    try:
        r = kforge("resume", run_dir, timeout=600,
                   env={"KFORGE_AUTH_KEY": "sk-fixed", "KFORGE_LLM_BACKOFF_SCALE": "0.01"})
    finally:
        good.stop()
    check("paused" not in r.stderr, "%s: the resumed run still talks of a pause:\n%s" % (name, r.stderr[-3000:]))
    reqs = good.requests()
    check(all(q["headers"].get("Authorization") == "Bearer sk-fixed" for q in reqs), "%s: resume did not use the new key" % name)
    want = 2 * len(TASKS) - len(answered)
    check(len(reqs) == want, "%s: resume sent %d requests, want %d" % (name, len(reqs), want))
    sent = [q["body"]["messages"][-1]["content"] for q in reqs]
    check(len(set(sent)) == len(sent), "%s: a prompt was sent twice after resume" % name)
    for task in TASKS:
        recs = records(run_dir, task)
        check(recs[-1]["to"] == "DONE", "%s: %s ends in %s" % (name, task, recs[-1]["to"]))
        turns = [r["turn"] for r in feedback_records(recs)]
        check(turns == [1, 2], "%s: %s turns %s" % (name, task, turns))
        check(sum(r["event"] == "start" for r in recs) == 1, "%s: %s started twice" % (name, task))
        check_artifacts(run_dir, task, recs)
        for turn in (1, 2):
            prompt = open(os.path.join(run_dir, "tasks", task, "turns", str(turn), "prompt.md")).read()
            n = sent.count(prompt)
            check(n == (0 if (task, turn) in answered else 1),
                  "%s: %s turn %d was sent %d times after resume" % (name, task, turn, n))
    st = json.loads(kforge("status", run_dir, "--json").stdout)
    check(st["run"]["status"] == "finished" and st["run"].get("llm_paused") is None,
          "%s: after resume: %s" % (name, st["run"]))
    return len(reqs)


# ---------------------------------------------------- run 1: every request refused
d, run_dir, mock, p = run_until_paused("all401", {"default": dict(REFUSED, delay_s=0.5)}, slots=2)
refused = check_paused("all401", run_dir, mock, p, slots=2)
for task in TASKS:
    path = os.path.join(run_dir, "tasks", task, "trajectory.jsonl")
    recs = records(run_dir, task) if os.path.exists(path) else []
    check([r["event"] for r in recs] in ([], ["start"]), "all401: %s logged %s" % (task, [r["event"] for r in recs]))
n1 = resume_fixed("all401", d, run_dir, mock.port, answered=set())
print("run 1: %d refused request(s) for 2 slots; resume sent %d" % (len(refused), n1))

# ---------------------------------------- run 2: A's compile and execution in flight
# The others' 401s are held until A has its reply and is compiling (its log says it
# entered PRECOMPILE), then come 0.5 s later: A's compile and execution are in flight when
# the pause comes, whatever the order in which the machine runs the workers. A's kernel is
# fresh (kfe2e.reply): a build found in the cache that runs share would take no time, and
# A would be asking for its next turn before the pause.
def a_compiling(run_dir):
    path = os.path.join(run_dir, "tasks", AHEAD, "trajectory.jsonl")
    if not os.path.exists(path):
        return False
    with open(path) as f:
        return any(json.loads(line).get("to") == "PRECOMPILE" for line in f if line.endswith("\n"))


release = os.path.join(work, "ahead", "refusals.release")
REFUSAL_DELAY_S = 0.5
d, run_dir, mock, p = run_until_paused("ahead", {
    "rules": [{"match": "auth-pause-task-Ahead", "replies": [reply("relu_3.md", fresh=True)]}],
    "default": dict(REFUSED, delay_s=REFUSAL_DELAY_S, hold_until=release)}, slots=6,
    release=release, release_when=a_compiling)
released_at = os.path.getmtime(release)
refused = check_paused("ahead", run_dir, mock, p, slots=6)
check(len(mock.requests()) == len(refused) + 1, "ahead: %d requests" % len(mock.requests()))
recs = records(run_dir, AHEAD)
steps = [(r["turn"], r["from"], r["event"]) for r in recs]
check(steps == [(1, "GENERATE", "start"), (1, "GENERATE", "ok"), (1, "PRECOMPILE", "ok"),
                (1, "EXECUTE", "correct"), (1, "FEEDBACK", "next_turn")], "ahead: A logged %s" % steps)
paused_at = released_at + REFUSAL_DELAY_S      # no 401 came back before the release and its delay_s
check(iso_s(recs[3]["ts"]) > paused_at, "ahead: A's execution did not go on after the pause")
for task in TASKS[1:]:
    path = os.path.join(run_dir, "tasks", task, "trajectory.jsonl")
    recs = records(run_dir, task) if os.path.exists(path) else []
    check([r["event"] for r in recs] in ([], ["start"]), "ahead: %s logged %s" % (task, [r["event"] for r in recs]))
n2 = resume_fixed("ahead", d, run_dir, mock.port, answered={(AHEAD, 1)})
print("ok: run 2: %d refused request(s), A finished its turn after the pause; resume sent %d" % (len(refused), n2))
