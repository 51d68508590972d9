#!/usr/bin/env python3
"""LLM faults in a whole run, against the real mock server: 429 with and without
Retry-After, 5xx (recovered, and persistent), a stalled reply and a silent server
(llm.timeout_s), malformed JSON, an empty body, a reply without content, an empty
answer, an answer without code, a 50 MB reply, and (a second run) a connection refused
until the server comes up. One task per fault, each on its own copy of a problem whose
marker comment the mock matches, so the n-th request of a task gets its n-th reply.

For each: the turn ends classified (retried and then ok, no_code with the reason in the
next prompt, or FAILED with the reason recorded), nothing crashes, the run finishes,
and the server saw exactly as many requests as the retry policy allows (no runaway
retries): llm.retries=2 gives 3 attempts per call, and the worker makes at most 6 calls
(FSM_GENERATE_RETRIES=5 transients) before it gives the task up.

Replies that succeed carry code that the static check rejects (no custom operator), so
no runner starts: the test is about the LLM path and stays short."""
import calendar
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-llm-faults")
RELU = open(os.path.join(HOME, "problems", "level1", "1_ReLU.py")).read()
ATTEMPTS = 3            # llm.retries: 2
CALLS = 6               # FSM_GENERATE_RETRIES (5) transients, then the task is given up
MAX_BYTES = 4194304     # llm.max_response_bytes default


def marker(name):
    return "llm-fault-scenario-%s" % name


def code_reply(name, turn):
    # ModelNew without a custom operator: PRECOMPILE rejects it without a runner.
    return {"content": "Plan for %s, turn %d.\n```python\nimport torch\nimport torch.nn as nn\n\n\n"
                       "class ModelNew(nn.Module):\n    def forward(self, x):\n"
                       "        return torch.relu(x)  # %s turn %d\n```\n" % (name, turn, name, turn)}


NO_CODE_TEXT = "I would start by vectorising the inner loop; no code yet."

# name -> (replies, expected requests, turn-1 GENERATE attempts and event, turn-1 status)
S = {}
S["retry_after_429"] = ([{"status": 429, "content": "slow down", "headers": {"Retry-After": "1"}},
                         code_reply("retry_after_429", 1), code_reply("retry_after_429", 2)], 3)
S["plain_429"] = ([{"status": 429, "content": "slow down"}, {"status": 429, "content": "slow down"},
                   code_reply("plain_429", 1), code_reply("plain_429", 2)], 4)
# three 5xx spend the client's attempts: one transient turn step, then the next call works
S["recovered_5xx"] = ([{"status": 500}, {"status": 502}, {"status": 503},
                       code_reply("recovered_5xx", 1), code_reply("recovered_5xx", 2)], 5)
S["persistent_500"] = ([{"status": 500, "content": "upstream exploded"}], ATTEMPTS * CALLS)
# stall: headers, then no body (stall rule: half of llm.timeout_s); silent: nothing at all.
# The server would hold each far longer than kforge may wait (MOCK_HOLD_S), so which side
# ended the attempt shows in the gap between requests, whatever the machine's load.
LLM_TIMEOUT_S = 20      # generous: an ordinary reply must never hit it on a loaded machine
STALL_LIMIT_S = LLM_TIMEOUT_S / 2
MOCK_HOLD_S = 500
S["stalled"] = ([{"stall_s": MOCK_HOLD_S}, {"delay_s": MOCK_HOLD_S}, code_reply("stalled", 1),
                 code_reply("stalled", 2)], 4)
S["malformed_json"] = ([{"raw_body": '{"choices": [{"message": {"content": "'},
                        code_reply("malformed_json", 1), code_reply("malformed_json", 2)], 3)
S["empty_body"] = ([{"raw_body": ""}, code_reply("empty_body", 1), code_reply("empty_body", 2)], 3)
S["no_content_key"] = ([{"no_content": True}, code_reply("no_content_key", 1),
                        code_reply("no_content_key", 2)], 3)
S["empty_answer"] = ([{"content": ""}, code_reply("empty_answer", 2)], 2)
S["no_code"] = ([{"content": NO_CODE_TEXT}, code_reply("no_code", 2)], 2)
S["reply_50mb"] = ([{"content": "```python\n", "repeat_bytes": 50 * 1000 * 1000},
                    code_reply("reply_50mb", 2)], 2)
names = list(S)

problems = os.path.join(work, "problems")
os.makedirs(os.path.join(problems, "level1"))
task_of = {}
for i, name in enumerate(names, 1):
    stem = "%d_Fault%s" % (i, "".join(w.capitalize() for w in name.split("_")))
    with open(os.path.join(problems, "level1", stem + ".py"), "w") as f:
        f.write("# %s\n%s" % (marker(name), RELU))
    task_of[name] = "L1_%s_s0" % stem
script = {"rules": [{"match": marker(n), "replies": S[n][0]} for n in names],
          "default": {"status": 400, "content": "no rule for this prompt"}}

CONFIG = """
name: llm_faults
problems: {dir: %s, levels: [1], samples: 1}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: KFORGE_FAULT_KEY,
      retries: 2, concurrency: 4, timeout_s: %d}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu}
runner: {python: %s}
workers: %d
"""
ENV = {"KFORGE_FAULT_KEY": "sk-fault", "KFORGE_LLM_BACKOFF_SCALE": "0.05"}


def turn_file(run_dir, task, turn, name):
    path = os.path.join(run_dir, "tasks", task, "turns", str(turn), name)
    return open(path).read() if os.path.exists(path) else None


def no_crash(err_text, run_dir):
    for bad in ("killed by signal", "restarting it", "giving up", "bug:"):
        check(bad not in err_text, "a worker crashed or was restarted (%r):\n%s" % (bad, err_text[-4000:]))
    st = json.loads(kforge("status", run_dir, "--json").stdout)
    check(st["run"]["status"] == "finished", "run status %s" % st["run"]["status"])
    for cls in ("exec", "compile", "llm"):
        check(st["resources"][cls]["used"] == 0, "a %s lease is still held" % cls)
    return st


# ------------------------------------------------------------------ run 1: one task per fault
mock = MockLLM(work, script)
config = write_config(os.path.join(work, "faults.yaml"),
                      CONFIG % (problems, mock.base_url, LLM_TIMEOUT_S, py, len(names)))
run_dir = os.path.join(work, "run")
t0 = time.time()
try:
    p = kforge("run", config, "--run-dir", run_dir, env=ENV, timeout=600)
finally:
    mock.stop()
elapsed = time.time() - t0
st = no_crash(p.stderr, run_dir)

reqs = mock.requests()
by_rule = {}
for r in reqs:
    by_rule.setdefault(r["rule"], []).append(r)
check("default" not in by_rule, "a prompt matched no scenario: %s" % by_rule.get("default", [{}])[0].get("body"))
for i, name in enumerate(names):
    got, want = len(by_rule.get(i, [])), S[name][1]
    check(got == want, "%s: the server saw %d requests, the retry policy allows %d" % (name, got, want))
check(len(reqs) == sum(S[n][1] for n in names), "total requests %d" % len(reqs))
for r in reqs:
    check(r["headers"].get("Authorization") == "Bearer sk-fault", "request without the key")
    check("slow down" not in json.dumps(r["body"]) and "mock error" not in json.dumps(r["body"]),
          "an endpoint error leaked into a prompt")

G, P, F = "GENERATE", "PRECOMPILE", "FEEDBACK"
for name in names:
    task = task_of[name]
    recs = records(run_dir, task)
    check_artifacts(run_dir, task, recs)
    gen = [r for r in recs if r["from"] == G and r["event"] != "start"]
    if name == "persistent_500":
        check([r["event"] for r in gen] == ["transient"] * (CALLS - 1) + ["fatal"],
              "%s: GENERATE events %s" % (name, [r["event"] for r in gen]))
        last = recs[-1]
        check(last["to"] == "FAILED" and last["turn"] == 1, "%s ends %s" % (name, last))
        check("gave up after %d transient failures" % CALLS in last["data"].get("reason", ""),
              "%s: FAILED without the reason: %s" % (name, last["data"]))
        check("HTTP 500" in last["data"].get("error", "") and "upstream exploded" in last["data"]["error"],
              "%s: the last error is not recorded: %s" % (name, last["data"]))
        check(all(r["data"].get("attempts") == ATTEMPTS for r in gen), "%s: attempts per call" % name)
        check(not feedback_records(recs), "%s: a turn was spent" % name)
        continue
    check(recs[-1]["to"] == "DONE", "%s ends in %s" % (name, recs[-1]["to"]))
    fb = feedback_records(recs)
    check([r["turn"] for r in fb] == [1, 2], "%s: turns %s" % (name, [r["turn"] for r in fb]))
    t1 = [r for r in gen if r["turn"] == 1]
    status1 = fb[0]["data"]["status"]
    if name in ("empty_answer", "no_code", "reply_50mb"):
        check([r["event"] for r in t1] == ["no_code"], "%s: turn 1 GENERATE %s" % (name, [r["event"] for r in t1]))
        check(status1 == "no_code", "%s: turn 1 status %s" % (name, status1))
    else:
        check(status1 == "rejected", "%s: turn 1 status %s" % (name, status1))
        if name == "recovered_5xx":
            check([r["event"] for r in t1] == ["transient", "ok"], "%s: %s" % (name, [r["event"] for r in t1]))
            check("HTTP 503" in t1[0]["data"]["error"] and t1[0]["data"]["attempts"] == ATTEMPTS,
                  "%s: the transient step does not say why: %s" % (name, t1[0]["data"]))
            check(t1[1]["data"]["attempts"] == 1, "%s: second call attempts" % name)
        else:
            want = {"retry_after_429": 2, "plain_429": 3, "stalled": 3}.get(name, 2)
            check([r["event"] for r in t1] == ["ok"], "%s: %s" % (name, [r["event"] for r in t1]))
            check(t1[0]["data"]["attempts"] == want, "%s: %s attempts, want %d" % (name, t1[0]["data"]["attempts"], want))
    # what the next prompt says about it
    p2 = turn_file(run_dir, task, 2, "prompt.md")
    check(p2 is not None and marker(name) in p2, "%s: no turn-2 prompt" % name)
    if name == "no_code":
        check(NO_CODE_TEXT in p2, "no_code: turn 2 does not show the model its own answer (G)")
        check("contained no code" in p2, "no_code: turn 2 does not say there was no code (E)")
    elif name == "empty_answer":
        check("contained no code" in p2, "empty_answer: turn 2 does not say there was no code")
    elif name == "reply_50mb":
        check("longer than the %d bytes allowed" % MAX_BYTES in p2, "reply_50mb: turn 2 does not say why")
        check(turn_file(run_dir, task, 1, "response.md") is None, "reply_50mb: the oversized reply was kept")
        check("xxxxxxxxxx" not in p2, "reply_50mb: the oversized reply reached the next prompt")
    else:
        check("%s turn 1" % name in p2, "%s: turn 2 lacks turn 1's code (G)" % name)
        check("was rejected" in p2, "%s: turn 2 lacks turn 1's result (E)" % name)

LOG_TS_RESOLUTION_S = 0.001  # supervisor.log timestamps are whole milliseconds


def logged_at(line):
    """Seconds since the epoch of a supervisor.log line's timestamp."""
    ts = line.split(" ", 1)[0]
    return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + ts[19:-1])


def retries_logged(name):
    return [l for l in slog if "[task %s]" % task_of[name] in l and "llm: " in l and "; retry " in l]


slog = open(os.path.join(run_dir, "supervisor.log")).read().splitlines()
# Retry-After was honoured (1 s), where the scaled backoff would have been ~50 ms: kforge
# said so, and the retry reached the server at least 1 s after it was said (both ends of
# that interval are causal; the server's own log of the first request may lag).
ra = by_rule[names.index("retry_after_429")]
mine = retries_logged("retry_after_429")
check(len(mine) == 1 and "HTTP 429" in mine[0] and mine[0].endswith("in 1.00 s"),
      "Retry-After: 1: the retry does not wait 1 s:\n%s" % "\n".join(mine))
gap = ra[1]["time"] - logged_at(mine[0])
check(gap >= 1.0 - LOG_TS_RESOLUTION_S, "Retry-After: 1 was not honoured: retried %.3f s after the 429" % gap)
# kforge ended the stalled attempt by the stall rule and the silent one by llm.timeout_s
# (its log names which), not before the limit, and long before the server would have
# ended either. Only causal intervals are measured: from the server's receipt of the
# first request (before its headers, so before the stall clock starts) to kforge's log of
# the stall, and from that log line (before the retry starts) to the log of the timeout.
stl = by_rule[names.index("stalled")]
mine = retries_logged("stalled")
check(len(mine) == 2 and "reply stalled: no data for %.1f s" % STALL_LIMIT_S in mine[0] and
      "timed out after %d s (llm.timeout_s)" % LLM_TIMEOUT_S in mine[1],
      "stalled: the retries do not name the stall rule, then the timeout:\n%s" % "\n".join(mine))
g1 = logged_at(mine[0]) - stl[0]["time"]
g2 = logged_at(mine[1]) - logged_at(mine[0])
check(STALL_LIMIT_S - LOG_TS_RESOLUTION_S <= g1 < MOCK_HOLD_S and
      LLM_TIMEOUT_S - 2 * LOG_TS_RESOLUTION_S <= g2 < MOCK_HOLD_S,
      "stall/timeout took %.2f s, %.2f s (limits %g s, %g s; the server held %d s)"
      % (g1, g2, STALL_LIMIT_S, LLM_TIMEOUT_S, MOCK_HOLD_S))
check(sum(t["state"] == "FAILED" for t in st["tasks"]) == 1, "only persistent_500 may fail")
print("run 1: %d faults, %d requests, %.1f s" % (len(names), len(reqs), elapsed))

# ------------------------------------------------------------ run 2: connection refused
# The server's port is bound but refuses connections; it starts listening (an event, in
# a process already running) once the task has logged a transient step. The worker's
# backoffs (1, 2, 4, 8, 16 s) leave the server half a minute to notice, not a race.
work2 = os.path.join(work, "refused")
os.makedirs(os.path.join(work2, "problems", "level1"))
with open(os.path.join(work2, "problems", "level1", "1_FaultRefused.py"), "w") as f:
    f.write("# %s\n%s" % (marker("refused"), RELU))
mock2 = MockLLM(work2, {"rules": [{"match": marker("refused"), "replies": [
    code_reply("refused", 1), code_reply("refused", 2)]}]}, refusing=True)
config2 = write_config(os.path.join(work2, "refused.yaml"), CONFIG % (
    os.path.join(work2, "problems"), mock2.base_url, LLM_TIMEOUT_S, py, 1))
run2 = os.path.join(work2, "run")
task = "L1_1_FaultRefused_s0"
env = dict(os.environ)
env.update(ENV)
env["KFORGE_LLM_BACKOFF_SCALE"] = "0.5"    # the worker waits 1 s, 2 s, ... 16 s between calls
try:
    sup = subprocess.Popen([BIN, "run", config2, "--run-dir", run2], stdout=subprocess.DEVNULL,
                           stderr=open(os.path.join(work2, "run.err"), "w"), env=env)
    log = os.path.join(run2, "tasks", task, "trajectory.jsonl")
    deadline = time.time() + STARTUP_WAIT_S
    while not (os.path.exists(log) and '"transient"' in open(log).read()):
        check(sup.poll() is None, "the run ended before the server came up")
        check(time.time() < deadline, "no transient step while the port was closed")
        time.sleep(0.05)
    mock2.listen()
    rc = sup.wait(600)
finally:
    mock2.stop()
err2 = open(os.path.join(work2, "run.err")).read()
check(rc == 0, "refused run exited %d:\n%s" % (rc, err2[-4000:]))
no_crash(err2, run2)
recs = records(run2, task)
check(recs[-1]["to"] == "DONE", "refused: ends in %s" % recs[-1]["to"])
check([r["turn"] for r in feedback_records(recs)] == [1, 2], "refused: turns")
trans = [r for r in recs if r["event"] == "transient"]
check(1 <= len(trans) < CALLS, "refused: %d transient steps" % len(trans))
for r in trans:
    check("connection error" in r["data"]["error"] and r["data"]["attempts"] == ATTEMPTS,
          "refused: transient step without the reason: %s" % r["data"])
check(len(mock2.requests()) == 2, "refused: the server saw %d requests for 2 turns" % len(mock2.requests()))
print("ok: %d LLM faults classified with exact request counts; connection refused "
      "recovered after %d transient step(s)" % (len(names) + 1, len(trans)))
