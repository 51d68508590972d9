#!/usr/bin/env python3
"""End-to-end on CPU: `kforge run` over three bundled problems for three turns against
the real mock OpenAI server on loopback, with real compiles and real executions. Checks
every turn's transitions, the artifacts and their hashes, the prompts the server
actually received (problem, G and E from turn 2), status/tail output, and the report's
numbers against a recomputation from the raw results. Then a short run with
refinement.prompt few_shot (3 examples) and refinement.hardware: the probe's CPU facts
in gpus.json, and every prompt sent (prompt.md, and what the server received) with the
hardware block made of those facts and the three examples."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-cpu")
problems = copy_problems(os.path.join(work, "problems"),
                         ["level1/1_ReLU.py", "level1/2_LeakyReLU.py", "level2/2_Add_Mul_Tanh.py"])

# One rule per problem, matched on text of its source; its n-th request is turn n.
script = {"rules": [
    {"match": "Elementwise leaky ReLU",
     "replies": [reply("leaky_1.md"), reply("leaky_2.md"), reply("leaky_3.md")]},
    {"match": "Elementwise rectified linear unit",
     "replies": [reply("relu_1.md"), reply("relu_2.md", status=200), reply("relu_3.md")]},
    {"match": "out = tanh(x + y) * z",
     "replies": [reply("amt_1.md"), reply("amt_2.md"), reply("amt_3.md")]},
], "default": {"status": 500, "content": "unexpected prompt"}}
mock = MockLLM(work, script)
config = write_config(os.path.join(work, "e2e.yaml"), """
name: e2e
problems: {dir: %s, levels: [1, 2], samples: 1}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: KFORGE_E2E_KEY,
      retries: 2, concurrency: 2, timeout_s: 60}
refinement: {turns: 3, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 3, perf_trials: 5, warmup: 1, timeout_s: 300,
       compile_timeout_s: 3600}
runner: {python: %s}
workers: 3
""" % (problems, mock.base_url, py))
run_dir = os.path.join(work, "run")
try:
    kforge("run", config, "--run-dir", run_dir, env={"KFORGE_E2E_KEY": "sk-e2e-secret"}, timeout=1500)
finally:
    mock.stop()

# ---- transitions, turn by turn
G, P, E, F = "GENERATE", "PRECOMPILE", "EXECUTE", "FEEDBACK"
turn_paths = {
    "compile_error": [(G, "ok", P), (P, "compile_error", F)],
    "incorrect": [(G, "ok", P), (P, "ok", E), (E, "incorrect", F)],
    "correct": [(G, "ok", P), (P, "ok", E), (E, "correct", F)],
    "no_code": [(G, "no_code", F)],
}
expected = {
    "L1_1_ReLU_s0": ["compile_error", "incorrect", "correct"],
    "L1_2_LeakyReLU_s0": ["no_code", "correct", "correct"],
    "L2_2_Add_Mul_Tanh_s0": ["correct", "correct", "incorrect"],
}
expected_status = {
    "L1_1_ReLU_s0": ["compile_error", "value_mismatch", "ok"],
    "L1_2_LeakyReLU_s0": ["no_code", "ok", "ok"],
    "L2_2_Add_Mul_Tanh_s0": ["ok", "ok", "runtime_error"],
}
for task, outcomes in expected.items():
    recs = records(run_dir, task)
    want = [(1, G, "start", G)]
    for k, o in enumerate(outcomes, 1):
        want += [(k,) + t for t in turn_paths[o]]
        want.append((k, F, "next_turn" if k < 3 else "budget_spent", G if k < 3 else "DONE"))
    got = [(r["turn"], r["from"], r["event"], r["to"]) for r in recs]
    check(got == want, "%s transitions:\n got  %s\n want %s" % (task, got, want))
    statuses = [r["data"]["status"] for r in feedback_records(recs)]
    check(statuses == expected_status[task], "%s statuses %s, want %s" % (task, statuses, expected_status[task]))
    # A judge that finished with a wrong output (or any verdict) ends first; its
    # candidate's runner then ends by itself, neither killed nor held against the turn.
    flagged = [(r["turn"], r["data"].get("flags")) for r in recs if r["from"] == "EXECUTE" and
               {"judge_failed", "runner_hung_after_result", "runner_died_after_result"} &
               set(r["data"].get("flags") or [])]
    check(not flagged, "%s: turns whose judge or runner ended badly: %s" % (task, flagged))
    check(check_artifacts(run_dir, task, recs) >= 8, "%s: too few artifacts recorded" % task)

# The same kernel text is compiled once for the whole run.
leaky = records(run_dir, "L1_2_LeakyReLU_s0")
pre = [r for r in leaky if r["from"] == P]
check(pre[1]["data"].get("cache_hit") is True, "LeakyReLU turn 3 should reuse turn 2's build")

# ---- what the model was actually sent
reqs = mock.requests()
check(len(reqs) == 9, "the mock server saw %d requests, want 9" % len(reqs))
bodies = [json.dumps(r["body"], sort_keys=True) for r in reqs]
check(len(set(bodies)) == 9, "a request was sent twice")
for r in reqs:
    check(r["headers"].get("Authorization") == "Bearer sk-e2e-secret", "missing bearer key")
    check(r["body"]["model"] == "mock-model", "wrong model name sent")


def prompt_of(task, turn):
    with open(os.path.join(run_dir, "tasks", task, "turns", str(turn), "prompt.md")) as f:
        return f.read()


def sent(text):
    return [r for r in reqs if r["body"]["messages"][-1]["content"] == text]


relu_src = open(os.path.join(problems, "level1", "1_ReLU.py")).read()
for turn in (1, 2, 3):
    p = prompt_of("L1_1_ReLU_s0", turn)
    check(len(sent(p)) == 1, "ReLU turn %d: the saved prompt is not what was sent" % turn)
    check(relu_src.strip() in p, "ReLU turn %d prompt lacks the problem source" % turn)
t2 = prompt_of("L1_1_ReLU_s0", 2)
t1_kernel = open(os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "1", "kernel.py")).read()
t1_feedback = open(os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "1", "feedback.md")).read()
check(t1_kernel.strip() in t2, "turn 2 prompt lacks the previous kernel (G)")
check(t1_feedback.strip() in t2, "turn 2 prompt lacks the compiler feedback (E)")
check("undeclared_name" in t1_feedback, "compile feedback lacks the compiler's error")
t3 = prompt_of("L1_1_ReLU_s0", 3)
t2_feedback = open(os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "2", "feedback.md")).read()
check(t2_feedback.strip() in t3, "turn 3 prompt lacks the mismatch feedback (E)")
check("0.01f * v" in t3, "turn 3 prompt lacks turn 2's kernel (G)")
ok_feedback = open(os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "3", "feedback.md")).read()
check("ms" in ok_feedback, "a correct turn's feedback should give its wall-clock time")
check("sk-e2e-secret" not in open(os.path.join(run_dir, "config.yaml")).read(),
      "the API key leaked into the frozen config")

# ---- status and tail
st = json.loads(kforge("status", run_dir, "--json").stdout)
check(sorted(t["id"] for t in st["tasks"]) == sorted(expected), "status lists other tasks")
for t in st["tasks"]:
    check(t["state"] == "DONE" and t["turn"] == 3, "status: %s is %s turn %s" % (t["id"], t["state"], t["turn"]))
check("exec" in st["resources"], "status --json lacks the resources")
tail = kforge("tail", run_dir, "L1_1_ReLU_s0").stdout
check(tail.count("\n") == len(records(run_dir, "L1_1_ReLU_s0")), "tail prints one line per record")
check("compile_error" in tail and "DONE" in tail, "tail lines lack the outcome")

# ---- the report, recomputed from the raw per-turn results
best = {}
best_at = {}
compiled = {}
best_ci = {}  # the highest lower and upper ends of the counted turns' 95% intervals
for task in expected:
    b, at, comp, lo, hi = -1.0, [], False, -1.0, -1.0
    for k in (1, 2, 3):
        tdir = os.path.join(run_dir, "tasks", task, "turns", str(k))
        cpath = os.path.join(tdir, "compile.json")
        if os.path.exists(cpath) and json.load(open(cpath))["status"] == "ok":
            comp = True
            # Builds and timings of a run on cores of their own (on a machine of two or more);
            # a build found in the cache (made by an earlier run or a test's eval beside
            # this one) says the cores of the run that made it.
            rpath = os.path.join(tdir, "result.json")
            hit = any(r["from"] == P and r["turn"] == k and r["data"].get("cache_hit")
                      for r in records(run_dir, task))
            if (os.cpu_count() or 1) >= 2 and os.path.exists(rpath) and not hit:
                bc = json.load(open(cpath))["details"].get("cpus")
                ec = json.load(open(rpath))["details"].get("cpus")
                check(bc and ec and not set(bc) & set(ec),
                      "%s turn %d: build on cores %s, execution on %s" % (task, k, bc, ec))
        rpath = os.path.join(tdir, "result.json")
        if os.path.exists(rpath):
            res = json.load(open(rpath))
            if res["correct"] and res["verdict"] == "correct":
                # The reference timed beside the candidate, in the same runner.
                # By the pair's statistic: the CPU's is the median (FB_SPEEDUP_STATISTIC).
                stat = "%s_ms" % res["timing"]["pair"]["statistic"]
                check(stat == "median_ms", "%s turn %d: a CPU speedup by %s" % (task, k, stat))
                cand = res["timing"]["candidate"][stat]
                ref = res["timing"]["reference"][stat]
                b = max(b, ref / cand)
                ci = res["speedup_ci95"]
                check(ci and ci[0] <= res["speedup"] <= ci[1] and abs(res["speedup"] - ref / cand) < 1e-9,
                      "%s turn %d: speedup %s, interval %s" % (task, k, res["speedup"], ci))
                lo, hi = max(lo, ci[0]), max(hi, ci[1])
        at.append(b)
    best[task], best_at[task], compiled[task], best_ci[task] = b, at, comp, (lo, hi)

rep = json.loads(kforge("report", run_dir, "--json").stdout)


def approx(a, b):
    return abs(a - b) < 1e-9


def expect_level(L, tasks):
    n = len(tasks)
    check(L["tasks"] == n, "report: %d tasks, want %d" % (L["tasks"], n))
    check(approx(L["compiled"], sum(compiled[t] for t in tasks) / n), "report: compiled rate")
    check(approx(L["fast_0"], sum(best[t] >= 0 for t in tasks) / n), "report: fast_0")
    for p in ("0.5", "1", "1.5", "2"):
        want = sum(best[t] > float(p) for t in tasks) / n
        check(approx(L["fast_p"][p], want), "report: fast_%s is %s, want %s" % (p, L["fast_p"][p], want))
        want_ci = [sum(best_ci[t][e] > float(p) for t in tasks) / n for e in (0, 1)]
        got_ci = L["fast_p_interval"][p]
        check(approx(got_ci[0], want_ci[0]) and approx(got_ci[1], want_ci[1]) and
              got_ci[0] <= L["fast_p"][p] <= got_ci[1],
              "report: fast_%s's interval is %s, want %s" % (p, got_ci, want_ci))
    want_at = [sum(best_at[t][k] > 1.0 for t in tasks) / n for k in range(3)]
    check(len(L["fast_1_at_turn"]) == 3 and all(approx(a, b) for a, b in zip(L["fast_1_at_turn"], want_at)),
          "report: fast_1_at_turn %s, want %s" % (L["fast_1_at_turn"], want_at))


expect_level(rep["overall"], list(expected))
expect_level(rep["levels"]["1"], ["L1_1_ReLU_s0", "L1_2_LeakyReLU_s0"])
expect_level(rep["levels"]["2"], ["L2_2_Add_Mul_Tanh_s0"])
# By hand: every task reached a correct kernel; all three compiled something.
check(rep["overall"]["fast_0"] == 1.0 and rep["overall"]["compiled"] == 1.0, "report: by-hand rates")
check(rep["levels"]["1"]["fast_1_at_turn"][0] == 0.0, "no level-1 task had a correct kernel at turn 1")
text = kforge("report", run_dir).stdout
check("fast_1" in text and "overall" in text, "text report lacks its table")

# ---- few_shot and the hardware block, on a run of its own (replies without code: no builds)
hw_work = os.path.join(work, "hw")
os.makedirs(hw_work)
hw_mock = MockLLM(hw_work, {"rules": [], "default": {"content": "No code this time."}})
hw_config = write_config(os.path.join(hw_work, "hw.yaml"), """
name: e2e-hw
problems: {dir: %s, levels: [1], ids: "1"}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1, timeout_s: 60}
refinement: {turns: 2, feedback: [G, E], prompt: few_shot, examples: 3, hardware: true}
eval: {device: cpu}
runner: {python: %s}
""" % (problems, hw_mock.base_url, py))
hw_run = os.path.join(hw_work, "run")
try:
    kforge("run", hw_config, "--run-dir", hw_run, timeout=900)
    hw_reqs = hw_mock.requests()
finally:
    hw_mock.stop()
with open(os.path.join(hw_run, "gpus.json")) as f:
    facts = json.load(f)["devices"][0].get("hardware", {})
model = ""
with open("/proc/cpuinfo") as f:
    model = next((l.split(":", 1)[1].strip() for l in f if l.lower().startswith("model name")), "")
check(facts.get("gpu") is False and facts.get("arch") and facts.get("units", 0) >= 1 and
      facts.get("memory_bytes", 0) > 0, "gpus.json's CPU facts: %s" % facts)
check(not model or facts.get("name") == model, "the CPU's name %r, /proc/cpuinfo says %r" % (facts.get("name"), model))
lines = ["- CPU: %s\n" % facts["name"], "- Architecture: %s\n" % facts["arch"],
         "- Cores this code may use: %d\n" % facts["units"]]
if facts.get("caches"):
    lines.append("- Caches: %s\n" % facts["caches"])
if facts.get("simd"):
    lines.append("- SIMD extensions: %s\n" % " ".join(facts["simd"]))
check(len(hw_reqs) == 2, "the hardware run made %d requests, want 2" % len(hw_reqs))
for turn in (1, 2):
    with open(os.path.join(hw_run, "tasks", "L1_1_ReLU_s0", "turns", str(turn), "prompt.md")) as f:
        hp = f.read()
    check(any(r["body"]["messages"][-1]["content"] == hp for r in hw_reqs),
          "turn %d: prompt.md is not what the server received" % turn)
    check("The code will run on this hardware" in hp, "turn %d: no hardware block" % turn)
    at = [hp.find(l) for l in lines]
    check(all(a >= 0 for a in at) and at == sorted(at), "turn %d: the block lacks %s" %
          (turn, [l for l, a in zip(lines, at) if a < 0]))
    for k in (1, 2, 3):
        check(hp.count("Example %d of 3." % k) == 1, "turn %d: example %d of 3 shown %d times" % (turn, k, hp.count("Example %d of 3." % k)))
    check(hp.count("class ModelNew(nn.Module)") == 3 and "row_softmax_forward" in hp,
          "turn %d: three example answers" % turn)
    check(hp.find("The code will run on this hardware") < hp.find("Example 1 of 3.") < hp.find(relu_src.strip()),
          "turn %d: statement, hardware, examples, then the problem" % turn)
print("ok: e2e cpu run, %d records checked" % sum(len(records(run_dir, t)) for t in expected))
