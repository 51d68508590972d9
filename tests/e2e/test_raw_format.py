#!/usr/bin/env python3
"""test_raw_format: eval.format raw end to end on the CPU, against the real mock server.

- the prompt the server receives is the raw format's: kforge's load_cpp, an extern "C"
  launcher, no load_inline and no torch header in the example
- a reply in KernelBench's load_inline format is rejected before any build (the static
  check names load_cpp); a raw reply builds, runs and is correct, in the run and through
  `kforge eval --set eval.format=raw`, whose precompile is then a cache hit
- eval works with the least trial counts the config allows (perf_trials 1: a speedup with
  no 95% interval), with no runner error
- the task's DONE line gives its best speedup, its turn, and faster or slower than the
  reference
- `kforge eval --kernel REPLY.md` takes a reply's code as the run took it (the run's
  response.md, and the same after a decoy block: cache hits of the run's build); a reply
  without code is one line, exit 2
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kfe2e import (HOME, MockLLM, check, copy_problems, feedback_records, kforge,  # noqa: E402
                   records, reply, scratch, torch_python, write_config)

py = torch_python()
work = scratch("raw-format")
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py"])
raw = reply("relu_raw.md")
# A build no earlier test made (the cache is shared by runs).
raw["content"] = raw["content"].replace("#include <cstdint>", "#include <cstdint>\n// raw %d %f"
                                        % (os.getpid(), time.time()), 1)
script = {"rules": [{"match": "Elementwise rectified linear unit",
                     "replies": [reply("relu_3.md"), raw]}],
          "default": {"status": 500, "content": "unexpected prompt"}}
mock = MockLLM(work, script)
config = write_config(os.path.join(work, "raw.yaml"), """
name: raw
problems: {dir: %s, levels: [1], samples: 1}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: KFORGE_E2E_KEY,
      retries: 1, timeout_s: 60}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, format: raw, correctness_trials: 2, perf_trials: 5, warmup: 1}
runner: {python: %s}
workers: 1
""" % (problems, mock.base_url, py))
run_dir = os.path.join(work, "run")
try:
    run = kforge("run", config, "--run-dir", run_dir, env={"KFORGE_E2E_KEY": "sk-e2e"}, timeout=900)
    prompts = [r["body"]["messages"][-1]["content"] for r in mock.requests()]
finally:
    mock.stop()

check(len(prompts) == 2, "two requests, got %d" % len(prompts))
first = prompts[0] if prompts else ""
check("from kforge import load_cpp" in first and 'extern "C" void add_forward(' in first,
      "the raw format's example is not in the prompt")
check("load_inline" not in first and "#include <torch/extension.h>" not in first,
      "the raw format's prompt shows load_inline or torch's header")

recs = records(run_dir, "L1_1_ReLU_s0")
got = [(r["turn"], r["from"], r["event"], r["to"]) for r in recs]
want = [(1, "GENERATE", "start", "GENERATE"),
        (1, "GENERATE", "ok", "PRECOMPILE"), (1, "PRECOMPILE", "rejected", "FEEDBACK"),
        (1, "FEEDBACK", "next_turn", "GENERATE"),
        (2, "GENERATE", "ok", "PRECOMPILE"), (2, "PRECOMPILE", "ok", "EXECUTE"),
        (2, "EXECUTE", "correct", "FEEDBACK"), (2, "FEEDBACK", "budget_spent", "DONE")]
check(got == want, "transitions:\n got  %s\n want %s" % (got, want))
rejected = [r for r in recs if r["event"] == "rejected"]
check(rejected and "load_cpp" in rejected[0]["data"].get("reason", ""),
      "the rejection does not name load_cpp: %s" % (rejected[0]["data"] if rejected else None))
check(len(prompts) == 2 and "load_cpp" in prompts[1],
      "turn 2's prompt does not tell the model why turn 1 was rejected")

kernel = os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "2", "kernel.py")
check(os.path.exists(kernel), "no kernel.py for turn 2 at %s" % kernel)
p = kforge("eval", "--problem", os.path.join(problems, "level1", "1_ReLU.py"), "--kernel", kernel,
           "--device", "cpu", "--json", "--set", "eval.format=raw", "--set", "eval.perf_trials=5",
           "--set", "eval.warmup=1", timeout=600, check_rc=False)
check(p.returncode == 0, "kforge eval exited %d: %s" % (p.returncode, p.stderr[-2000:]))
e = json.loads(p.stdout) if p.returncode == 0 else {}
check(e.get("status") == "ok" and e.get("correct"), "eval of the raw kernel: %s" % e.get("status"))
check(e.get("steps", {}).get("precompile", {}).get("cache_hit") is True,
      "eval built the run's raw kernel again: %s" % e.get("steps"))

# Every trial count the config reference allows works, down to its least: a speedup
# without a 95% interval (one timed call) is a result, not a runner error.
for sets in (["eval.perf_trials=1"], ["eval.perf_trials=2"], ["eval.correctness_trials=1"],
             ["eval.perf_trials=1", "eval.correctness_trials=1", "eval.warmup=0"],
             ["eval.perf_trials=1", "eval.timing_preset=kernelbench"]):
    args = [a for kv in sets for a in ("--set", kv)]
    p = kforge("eval", "--problem", os.path.join(problems, "level1", "1_ReLU.py"), "--kernel", kernel,
               "--device", "cpu", "--json", "--set", "eval.format=raw", *args, timeout=600, check_rc=False)
    e = json.loads(p.stdout) if p.stdout.startswith("{") else {}
    # a speedup above 10x against a reference timed once on a loaded machine: timing only
    timing_only = p.returncode == 6 and [r.get("rule") for r in e.get("reasons", [])] == ["excessive_speedup"]
    check((p.returncode == 0 or timing_only) and e.get("status") == "ok" and e.get("correct") and
          e.get("speedup", 0) > 0 and not {"runner_error", "judge_failed"} & set(e.get("flags", [])),
          "eval with %s: exit %d, %s %s %s" % (sets, p.returncode, e.get("status"), e.get("flags"),
                                               p.stdout[-1500:] + p.stderr[-1500:]))
    if "eval.perf_trials=1" in sets and "eval.timing_preset=kernelbench" not in sets:
        check(e["speedup_ci95"] is None, "one timed call has no interval: %r" % e["speedup_ci95"])

# The task's last log line says what it found: its best correct speedup, at which turn,
# and whether that is faster or slower than the reference (never just "found").
best = feedback_records(recs)[-1]["data"]["best_speedup"]
than = "faster than" if round(best, 2) > 1 else "slower than" if round(best, 2) < 1 else "as fast as"
done = [l for l in run.stderr.splitlines() if "[task L1_1_ReLU_s0] DONE" in l]
check(len(done) == 1 and done[0].endswith("DONE after 2 turns: best %.2fx at turn 2 (correct, %s the reference)"
                                          % (best, than)),
      "the task's DONE line, best %r: %s" % (best, done))

# eval of a model's reply (.md) takes its code as the run took it: the run's own
# response.md of turn 2, and the same reply after prose and a block that is not python,
# build exactly the run's kernel.py (a cache hit); a reply without code is one line, exit 2.
response = os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "2", "response.md")
decoy = os.path.join(work, "reply.md")
with open(decoy, "w") as f:
    f.write("Here is the kernel.\n\n```cpp\nint not_the_kernel;\n```\n\n" + open(response).read())
for md in (response, decoy):
    p = kforge("eval", "--problem", os.path.join(problems, "level1", "1_ReLU.py"), "--kernel", md,
               "--device", "cpu", "--json", "--set", "eval.format=raw", "--set", "eval.perf_trials=5",
               "--set", "eval.warmup=1", timeout=600, check_rc=False)
    e = json.loads(p.stdout) if p.returncode == 0 else {}
    check(p.returncode == 0 and e.get("status") == "ok" and e.get("correct"),
          "eval of the reply %s: exit %d, %s %s" % (md, p.returncode, e.get("status"), p.stderr[-2000:]))
    check(e.get("steps", {}).get("precompile", {}).get("cache_hit") is True,
          "eval of the reply %s built other code than the run's kernel.py: %s" % (md, e.get("steps")))
no_code = os.path.join(work, "no_code.md")
with open(no_code, "w") as f:
    f.write("I cannot write this kernel.\n")
p = kforge("eval", "--problem", os.path.join(problems, "level1", "1_ReLU.py"), "--kernel", no_code,
           "--device", "cpu", check_rc=False)
check(p.returncode == 2 and p.stderr == "kforge: %s: the reply has no fenced ```python code block (a run's turn "
      "would have no kernel)\n" % no_code and p.stdout == "", "eval of a reply without code: %d %r" % (p.returncode, p.stderr))
print("ok: raw prompt, load_inline rejected, raw kernel correct in the run and in eval, its reply too")
