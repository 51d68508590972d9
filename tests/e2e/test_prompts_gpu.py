#!/usr/bin/env python3
"""GPU: what the prompts show works on a GPU. Every bundled CUDA example answer
(llm/prompts/example*_cuda*_new.py, load_inline and raw) is judged correct by `kforge
eval` against its example problem; where Triton imports, so is every Triton example
(eval.backend triton, static checks included). Then a one-turn run with
refinement.hardware: gpus.json has each GPU's facts from the probe (its name as
nvidia-smi says it, SMs, memory, a bandwidth and its source) and the prompt sent shows
them. Skips (77) without a GPU."""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = cuda_torch_python()
work = scratch("e2e-prompts-gpu")
prompts = os.path.join(HOME, "llm", "prompts")
has_triton = subprocess.run([py, "-c", "import triton"], capture_output=True).returncode == 0


def evaluate(answer, *sets):
    stem = os.path.basename(answer).split("_cuda")[0]
    problem = os.path.join(prompts, stem + "_cuda.py")
    args = ["eval", "--problem", problem, "--kernel", answer, "--device", "cuda", "--json",
            "--set", "runner.python=" + py]
    for s in sets:
        args += ["--set", s]
    p = kforge(*args, check_rc=False, timeout=1800)
    out = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    res = out.get("result") or {}
    det = res.get("details") or {}
    check(out.get("verdict") == "correct", "%s %s: verdict %s, reasons %s, status %s, flags %s, "
          "exception %s, traceback %s, exit %d: %s" % (
              os.path.basename(answer), " ".join(sets), out.get("verdict"), out.get("reasons"),
              res.get("status"), res.get("flags"), det.get("exception"),
              str(det.get("traceback"))[-1200:], p.returncode, p.stderr[-800:]))


answers = sorted(glob.glob(os.path.join(prompts, "example*_cuda*_new.py")))
check(len(answers) == 9, "the CUDA example answers: %s" % answers)
for answer in answers:
    if answer.endswith("_triton_new.py"):
        if has_triton:
            evaluate(answer, "eval.backend=triton")
        else:
            print("triton does not import in %s: %s not evaluated" % (py, os.path.basename(answer)))
    elif answer.endswith("_raw_new.py"):
        evaluate(answer, "eval.format=raw")
    else:
        evaluate(answer)

# ---- the hardware block from the GPU
names = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
                       capture_output=True, text=True).stdout.splitlines()
first_name = names[0].split(",", 1)[1].strip()
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py"])
mock = MockLLM(work, {"rules": [], "default": {"content": "No code this time."}})
config = write_config(os.path.join(work, "hw.yaml"), """
name: gpu-hw
problems: {dir: %s, levels: [1], ids: "1"}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1, timeout_s: 60}
refinement: {turns: 1, prompt: few_shot, examples: 2, hardware: true}
eval: {device: cuda}
gpus: {devices: [0]}
runner: {python: %s}
""" % (problems, mock.base_url, py))
run_dir = os.path.join(work, "run")
try:
    kforge("run", config, "--run-dir", run_dir, timeout=1800)
finally:
    mock.stop()
with open(os.path.join(run_dir, "gpus.json")) as f:
    facts = json.load(f)["devices"][0].get("hardware", {})
check(facts.get("gpu") is True and facts.get("name") == first_name, "GPU 0's facts: %s (nvidia-smi: %s)" % (facts, first_name))
check(facts.get("units", 0) > 0 and facts.get("memory_bytes", 0) > 0 and facts.get("smem_per_block", 0) > 0,
      "SMs, memory, shared memory: %s" % facts)
check(facts.get("arch", "").startswith("compute capability "), "architecture: %s" % facts.get("arch"))
if facts.get("bandwidth_gbps"):
    check(facts.get("bandwidth_source"), "a bandwidth without its source: %s" % facts)
else:
    print("no bandwidth for %s (no clock and bus width from torch, not in the table)" % first_name)
with open(os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "1", "prompt.md")) as f:
    prompt = f.read()
for line in ("- GPU: %s\n" % first_name, "- Streaming multiprocessors (SMs): %d\n" % facts.get("units", 0),
             "- Architecture: %s\n" % facts.get("arch")):
    check(line in prompt, "the prompt lacks %r" % line)
check(prompt.count("Example 1 of 2.") == 1 and prompt.count("Example 2 of 2.") == 1, "two examples in the prompt")
print("ok: prompts on the GPU (%d example answers, triton %s), hardware block for %s" % (
    len(answers), "evaluated" if has_triton else "not installed", first_name))
