#!/usr/bin/env python3
"""refinement.strategy on the CPU (docs/search.md): chain, best_of_n, beam, tree and evolve
runs of one problem, answered by tools/bench/search_data/model.py (llm.provider command:
the demo's recorded replies and variations of them), each checked against the strategy's
rule over the nodes the log records: every turn names its parent, its prompt shows its
parent's kernel and feedback (the first prompt for a child of the problem), the request
log holds one request per node and no node twice; budgets stop a search (requests,
tokens, execution seconds, a priced cost) and a cost budget without prices is refused; a
node whose kernel crashes its runner is a crashed node of a search that goes on. Then a
beam run of two tasks is
killed (SIGKILL to the supervisor) in the middle of a round and resumed: no request is
made twice and every node is there, each with the parent the rule gives."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-search")
problems = copy_problems(os.path.join(work, "problems"),
                         ["level1/1_ReLU.py", "level1/2_LeakyReLU.py"])
MODEL = os.path.join(HOME, "tools", "bench", "search_data", "model.py")
RESPONSES = os.path.join(HOME, "configs", "demo_responses", "raw", "cpu")


def config(name, refinement, ids="2", log=None, extra=(), workers=1):
    cmd = [py, MODEL, "--responses", RESPONSES, "--log", log or os.path.join(work, name + ".log")]
    cmd += list(extra)
    return write_config(os.path.join(work, name + ".yaml"), """
name: %s
problems: {dir: %s, levels: [1], ids: "%s"}
llm: {provider: command, command: %s}
refinement: %s
eval: {device: cpu, format: raw, correctness_trials: 1, perf_trials: 2, warmup: 0}
runner: {python: %s}
workers: %d
""" % (name, problems, ids, json.dumps(cmd), refinement, py, workers))


def requests(log):
    with open(log) as f:
        return [tuple(line.split()[:2]) for line in f if line.strip()]


def node_of(rec):
    """The node as the worker ranks it (fsm/search.c): correct, built, code, nothing."""
    d = rec["data"]
    if d.get("correct") and d.get("verdict", "correct") == "correct":
        return (3, d.get("speedup") or 0.0)
    if d.get("compiled"):
        return (2, -1.0)
    return (1 if d.get("status") != "no_code" else 0, -1.0)


def ranked(nodes, ids):
    """ids best first: rank, speedup, then the newer."""
    return sorted(ids, key=lambda i: (nodes[i][0], nodes[i][1], i), reverse=True)


def expected_parent(strategy, nodes, n, width, keep):
    """The parent of node n + 1 after nodes 1..n, for the deterministic strategies."""
    if strategy == "chain":
        return n
    if strategy == "best_of_n":
        if n < width:
            return 0
        return ranked(nodes, range(1, width + 1))[0] if n == width else n
    if strategy == "beam":
        kept, start = [0], 1
        while True:
            size = len(kept) * width
            if n + 1 < start + size:
                return kept[(n + 1 - start) // width]
            kept = ranked(nodes, range(start, start + size))[:keep]
            start += size
    if strategy == "tree":  # explore 0: always the best node so far
        return ranked(nodes, range(1, n + 1))[0] if n > 0 else 0
    raise ValueError(strategy)


def check_task(run_dir, task, strategy, width=2, keep=2, turns=None):
    recs = records(run_dir, task)
    check(recs[-1]["to"] == "DONE", "%s %s ends in %s" % (strategy, task, recs[-1]["to"]))
    check_artifacts(run_dir, task, recs)
    fb = feedback_records(recs)
    check([r["turn"] for r in fb] == list(range(1, len(fb) + 1)),
          "%s %s: turns %s" % (strategy, task, [r["turn"] for r in fb]))
    if turns is not None:
        check(len(fb) == turns, "%s %s: %d nodes, wanted %d" % (strategy, task, len(fb), turns))
    nodes = {r["turn"]: node_of(r) for r in fb}
    for r in fb:
        k, parent = r["turn"], r["data"]["parent"]
        gen = [g for g in recs if g["from"] == "GENERATE" and g["turn"] == k and g["event"] in ("ok", "no_code")]
        check(gen and gen[-1]["data"]["parent"] == parent, "%s %s turn %d: GENERATE names another parent" % (strategy, task, k))
        prev = [p for p in fb if p["turn"] == k - 1]
        if prev:
            check(prev[0]["data"].get("next_parent") == parent,
                  "%s %s turn %d: chosen parent %s, recorded %s" % (strategy, task, k, prev[0]["data"].get("next_parent"), parent))
        if strategy != "evolve":
            want = expected_parent(strategy, nodes, k - 1, width, keep)
            check(parent == want, "%s %s turn %d: parent %d, the rule gives %d" % (strategy, task, k, parent, want))
        prompt = open(os.path.join(run_dir, "tasks", task, "turns", str(k), "prompt.md")).read()
        if parent == 0:
            check("Here is your latest generation" not in prompt, "%s %s turn %d: a child of the problem got a refinement prompt" % (strategy, task, k))
        else:
            shown = os.path.join(run_dir, "tasks", task, "turns", str(parent), "kernel.py")
            if os.path.exists(shown):
                check(open(shown).read().strip() in prompt, "%s %s turn %d: the prompt lacks parent %d's kernel" % (strategy, task, k, parent))
            feedback = open(os.path.join(run_dir, "tasks", task, "turns", str(parent), "feedback.md")).read().strip()
            check(feedback[:200] in prompt, "%s %s turn %d: the prompt lacks parent %d's feedback" % (strategy, task, k, parent))
        p2 = r["data"].get("parent2")
        if p2:
            check(strategy == "evolve" and nodes[p2][0] == 3 and nodes[parent][0] == 3,
                  "%s %s turn %d: second parent %d of a non-pool node" % (strategy, task, k, p2))
            shown = open(os.path.join(run_dir, "tasks", task, "turns", str(p2), "kernel.py")).read().strip()
            check(shown in prompt, "%s %s turn %d: the prompt lacks parent2 %d's kernel" % (strategy, task, k, p2))
    return fb


# --- every strategy on one task
runs = {
    "chain": "{turns: 3, strategy: chain, feedback: [G, E]}",
    "best_of_n": "{turns: 4, strategy: best_of_n, width: 2, feedback: [G, E]}",
    "beam": "{turns: 8, strategy: beam, width: 2, keep: 1, feedback: [G, E], budget: {requests: 5}}",
    "tree": "{turns: 4, strategy: tree, explore: 0, feedback: [G, E]}",
    "evolve": "{turns: 5, strategy: evolve, width: 2, keep: 2, explore: 0, feedback: [G, E]}",
}
reports = []
for strategy, refinement in runs.items():
    run_dir = os.path.join(work, strategy)
    # evolve on ReLU, whose every recorded reply is correct: a pool of two, two parents
    task = "L1_1_ReLU_s0" if strategy == "evolve" else "L1_2_LeakyReLU_s0"
    kforge("run", config(strategy, refinement, ids=task.split("_")[1]), "--run-dir", run_dir,
           "--quiet", timeout=1500)
    keep = 1 if strategy == "beam" else 2
    turns = {"beam": 5}.get(strategy, int(refinement.split("turns: ")[1].split(",")[0]))
    fb = check_task(run_dir, task, strategy, keep=keep, turns=turns)
    if strategy == "evolve":
        check(any(r["data"].get("parent2") for r in fb), "evolve: no node with two parents: %s"
              % [(r["data"]["parent"], r["data"].get("parent2")) for r in fb])
    reqs = requests(os.path.join(work, strategy + ".log"))
    check(len(reqs) == len(fb) and len(set(reqs)) == len(reqs),
          "%s: %d requests for %d nodes: %s" % (strategy, len(reqs), len(fb), reqs))
    check(fb[-1]["data"]["spent"]["requests"] == len(fb), "%s: spent %s" % (strategy, fb[-1]["data"]["spent"]))
    if strategy == "beam":
        check(fb[-1]["data"].get("budget") == "requests", "beam: stopped by %s" % fb[-1]["data"])
    rep = json.loads(kforge("report", run_dir, "--json").stdout)
    check(rep["search"]["strategy"] == strategy, "report: search %s" % rep["search"])
    check(rep["by_spend"]["requests"]["max"] == len(fb), "report: by_spend %s" % rep["by_spend"]["requests"])
    reports.append(run_dir)

# best_of_n: two children of the problem, then the best of them refined
fb = feedback_records(records(os.path.join(work, "best_of_n"), "L1_2_LeakyReLU_s0"))
check([r["data"]["parent"] for r in fb][:2] == [0, 0], "best_of_n: the first two are not from the problem")
# the report compares two strategies on the same problem, and plots spend
cmp = json.loads(kforge("report", reports[0], reports[2], "--json").stdout)
check(len(cmp["runs"]) == 2, "report A B: %s" % list(cmp))
svg = os.path.join(work, "svg")
kforge("report", reports[0], reports[2], "--svg", svg)
check(os.path.exists(os.path.join(svg, "fast1_by_requests.svg")), "no fast1_by_requests.svg")

# a token budget stops a tree at its first node; a cost budget needs prices
run_dir = os.path.join(work, "tokens")
kforge("run", config("tokens", "{turns: 4, strategy: tree, budget: {tokens: 1}}"), "--run-dir", run_dir, "--quiet", timeout=1500)
fb = feedback_records(records(run_dir, "L1_2_LeakyReLU_s0"))
check(len(fb) == 1 and fb[0]["data"].get("budget") == "tokens", "tokens budget: %s" % [r["data"] for r in fb])
p = kforge("config", config("cost", "{turns: 2, budget: {cost_usd: 1}}"), check_rc=False)
check(p.returncode == 2 and "refinement.budget.cost_usd" in p.stderr and "price" in p.stderr,
      "a cost budget without prices: %d %r" % (p.returncode, p.stderr))
# an execution-seconds budget stops a tree after its first executed node, a cost budget
# (priced at a dollar a token, so the first request passes it) after its first request
run_dir = os.path.join(work, "gpu_s")
kforge("run", config("gpu_s", "{turns: 4, strategy: tree, budget: {gpu_s: 0.001}}"), "--run-dir",
       run_dir, "--quiet", timeout=1500)
fb = feedback_records(records(run_dir, "L1_2_LeakyReLU_s0"))
check(len(fb) == 1 and fb[0]["data"].get("budget") == "gpu_s" and
      fb[0]["data"]["spent"]["gpu_s"] > 0.001, "gpu_s budget: %s" % [r["data"] for r in fb])
priced = config("priced", "{turns: 4, strategy: tree, budget: {cost_usd: 0.5}}")
text = open(priced).read()
check("llm: {provider: command, " in text, "the config's llm line changed: %s" % text)
open(priced, "w").write(text.replace("llm: {provider: command, ", "llm: {provider: command, "
                                     "price_input_per_mtok: 1000000, price_output_per_mtok: 1000000, "))
run_dir = os.path.join(work, "priced")
kforge("run", priced, "--run-dir", run_dir, "--quiet", timeout=1500)
fb = feedback_records(records(run_dir, "L1_2_LeakyReLU_s0"))
check(len(fb) == 1 and fb[0]["data"].get("budget") == "cost_usd" and
      fb[0]["data"]["spent"]["cost_usd"] > 0.5, "cost budget: %s" % [r["data"] for r in fb])

# --- a node whose kernel crashes its runner is a node with that result, nothing more:
# ReLU's replies with steps 1 and 2 writing far past their output (a segfault), step 3 as
# recorded; a tree of three nodes records each, crashed or not, and goes on
crashing = os.path.join(work, "crash_responses", "L1_1_ReLU")
os.makedirs(crashing)
for k in (1, 2, 3):
    text = open(os.path.join(RESPONSES, "L1_1_ReLU", "%d.md" % k)).read()
    if k < 3:
        check("dst[i] = v > 0.0f ? v : 0.0f;" in text, "ReLU's reply %d changed" % k)
        text = text.replace("dst[i] = v > 0.0f ? v : 0.0f;",
                            "dst[i + ((int64_t)1 << 40)] = v > 0.0f ? v : 0.0f;")
    open(os.path.join(crashing, "%d.md" % k), "w").write(text)
run_dir = os.path.join(work, "crash")
kforge("run", config("crash", "{turns: 3, strategy: tree, explore: 0, feedback: [G, E]}", ids="1",
                     extra=("--responses", os.path.dirname(crashing))),
       "--run-dir", run_dir, "--quiet", timeout=1500)
fb = feedback_records(records(run_dir, "L1_1_ReLU_s0"))
statuses = [r["data"].get("status") for r in fb]
check(len(fb) == 3 and "crashed" in statuses and
      json.loads(kforge("status", run_dir, "--json").stdout)["tasks"][0]["state"] == "DONE",
      "crashing nodes: %s" % [(r["data"].get("parent"), r["data"].get("status")) for r in fb])
check(len(requests(os.path.join(work, "crash.log"))) == 3, "crash: not one request per node")

# --- kill in the middle of a beam round, resume
log = os.path.join(work, "kill.log")
release = os.path.join(work, "kill.release")
# Round 0 is 2 nodes a task, round 1 four: the 6th request of the 12 is in round 1 of one
# task at least, and every request after the first 5 is held until the supervisor is dead.
cfg = config("kill", "{turns: 6, strategy: beam, width: 2, keep: 2, feedback: [G, E]}", ids="1-2",
             log=log, extra=["--hold-after", "5", "--release", release], workers=2)
run_dir = os.path.join(work, "kill")
sup = subprocess.Popen([BIN, "run", cfg, "--run-dir", run_dir, "--quiet"], stdout=subprocess.DEVNULL,
                       stderr=open(os.path.join(work, "kill.err"), "w"), start_new_session=True)
deadline = time.time() + 1200
while not os.path.exists(log) or len(requests(log)) < 6:
    check(sup.poll() is None, "the run ended before it could be killed")
    check(time.time() < deadline, "the run made no progress")
    time.sleep(0.1)
sup.send_signal(signal.SIGKILL)
sup.wait()
with open(release, "w"):
    pass
at_kill = len(requests(log))
check(at_kill < 12, "the run finished before the kill")
kforge("resume", run_dir, "--quiet", timeout=1500)
total = 0
for task in ["L1_1_ReLU_s0", "L1_2_LeakyReLU_s0"]:
    total += len(check_task(run_dir, task, "beam", width=2, keep=2, turns=6))
reqs = requests(log)
check(len(reqs) == total == 12 and len(set(reqs)) == len(reqs),
      "after the kill at %d requests: %d requests for %d nodes (%s)" % (at_kill, len(reqs), total, reqs))
print("OK: chain, best_of_n, beam, tree, evolve; budgets; killed at %d requests of 12, resumed "
      "with none repeated" % at_kill)
