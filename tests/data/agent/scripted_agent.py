#!/usr/bin/env python3
"""A scripted agent for llm.provider agent (tests/e2e/test_agent.py): no model, a fixed
plan per turn, so that the test knows every tool call it makes.

Turn 1: reads the request (stdin) and the workspace's problem.py, tries to write beside
its workspace and to read the task's trajectory (printing whether the sandbox let it), asks `kforge-tool eval`
about a kernel the static checks reject (no custom operator), then about a correct C++
ReLU, then a third time (over llm.agent.max_tool_calls = 2: refused), prints what each
call answered, and leaves the correct kernel in final.py. Turn 2: says on stderr that it
gives up and exits 3 without a final kernel. Each start is appended to the file named by
argv[1], so the test can count the agent's runs (a resumed turn must not run it again).
With argv[2] idle: turn 1 exits 0 without a final kernel, turn 2 sleeps past its deadline."""
import json
import os
import subprocess
import sys
import time

WRONG = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''

RIGHT = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor agent_relu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 expected");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* s = xc.data_ptr<float>();
    float* d = out.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] > 0.0f ? s[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="agent_relu_ext", cpp_sources=cpp_src, functions=["agent_relu"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.agent_relu(x)
'''


def tool(path):
    p = subprocess.run(["kforge-tool", "eval", path], capture_output=True, text=True)
    try:
        answer = json.loads(p.stdout)
    except ValueError:
        answer = {"unparsed": p.stdout}
    print("tool %s: exit %d: %s" % (os.path.basename(path), p.returncode,
                                    json.dumps({k: answer.get(k) for k in
                                                ("call", "calls_left", "verdict", "status",
                                                 "error")}, sort_keys=True)), flush=True)
    return p.returncode, answer


def main():
    with open(sys.argv[1], "a") as f:
        f.write("turn %s\n" % os.environ["KFORGE_TURN"])
    request = json.load(sys.stdin)
    assert request["messages"][0]["content"], "the request has the prompt"
    ws = os.environ["KFORGE_WORKSPACE"]
    assert os.getcwd() == os.path.realpath(ws), "the agent starts in its workspace"
    if len(sys.argv) > 2 and sys.argv[2] == "idle":
        # Another plan: turn 1 ends well but leaves no final.py; turn 2 outlives
        # llm.agent.timeout_s.
        if os.environ["KFORGE_TURN"] != "1":
            print("agent: sleeping past the deadline", flush=True)
            time.sleep(600)
        return
    problem = open("problem.py").read()
    print("agent: turn %s of %s; the problem has %d lines" %
          (os.environ["KFORGE_TURN"], os.environ["KFORGE_TASK"], len(problem.splitlines())),
          flush=True)
    if os.environ["KFORGE_TURN"] != "1":
        print("agent: giving up on this turn", file=sys.stderr, flush=True)
        sys.exit(3)
    # Confined (the runners' sandbox, network kept): the run's record is out of reach
    # but through the tool.
    for what, path, mode in (("write", os.path.join(ws, "..", "kernel.py"), "w"),
                             ("read", os.path.join(ws, "..", "..", "..", "trajectory.jsonl"),
                              "r")):
        try:
            open(path, mode).close()
            print("confined: %s allowed" % what, flush=True)
        except OSError as e:
            print("confined: %s refused (%s)" % (what, e.strerror), flush=True)
    with open("wrong.py", "w") as f:
        f.write(WRONG)
    with open("right.py", "w") as f:
        f.write(RIGHT)
    rc, a = tool("wrong.py")
    assert rc == 0 and a["verdict"] == "rejected", a
    rc, a = tool("right.py")
    assert rc == 0 and a["verdict"] == "correct" and a["calls_left"] == 0, a
    rc, a = tool("right.py")
    assert rc == 1 and "error" in a, a
    print("agent: third call refused as expected", file=sys.stderr, flush=True)
    with open("final.py", "w") as f:
        f.write(RIGHT)


main()
