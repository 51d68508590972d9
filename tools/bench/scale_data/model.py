#!/usr/bin/env python3
"""The scale bench's model (llm.provider command): answers at once, by a hash of the task
and turn, with one of a few kinds of reply, so that a 10,000-task run spends its time in
kforge rather than in a model or in builds:

  prose          no code block (the turn is spent, nothing built)
  rejected       a ModelNew without a custom kernel (kforge's static check refuses it)
  compile_error  a load_inline extension with a C++ error (built once, then a cached
                 compile_error for every task that gets it)
  wrong          an extension adding 0.5 too: value_mismatch (built once, then run)
  correct        an extension that adds: correct (built once, then run)

The weights are per mille in KFORGE_SCALE_MIX ("prose=600,rejected=250,..."), else the
defaults below. Standard library only; stdin is the request JSON, stdout the reply."""
import hashlib
import json
import os
import sys

DEFAULT_MIX = {"prose": 600, "rejected": 250, "compile_error": 110, "wrong": 20, "correct": 20}

PROSE = "I would start by profiling the reference before writing a kernel.\n"

REJECTED = '''```python
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.add(a, b)
```
'''

COMPILE_ERROR = '''```python
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    return a + b   // the missing semicolon is the point
}
"""

ext = load_inline(name="scale_bad_add", cpp_sources=source, functions=["add"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add(a, b)
```
'''

ADD_KERNEL = '''```python
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    auto x = a.contiguous();
    auto y = b.contiguous();
    auto out = torch::empty_like(x);
    const float* px = x.data_ptr<float>();
    const float* py = y.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i)
        po[i] = px[i] + py[i]OFFSET;
    return out;
}
"""

ext = load_inline(name="NAME", cpp_sources=source, functions=["add"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add(a, b)
```
'''

# Each built once (the same text every time), then a cached build that runs.
WRONG = ADD_KERNEL.replace("OFFSET", " + 0.5f").replace("NAME", "scale_add_wrong")
CORRECT = ADD_KERNEL.replace("OFFSET", "").replace("NAME", "scale_add_ok")

REPLIES = {"prose": PROSE, "rejected": REJECTED, "compile_error": COMPILE_ERROR,
           "wrong": WRONG, "correct": CORRECT}


def mix():
    text = os.environ.get("KFORGE_SCALE_MIX")
    if not text:
        return DEFAULT_MIX
    out = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        out[k.strip()] = int(v)
    return out


def main():
    req = json.load(sys.stdin)
    h = int(hashlib.sha256(("%s/%s" % (req.get("task"), req.get("turn"))).encode()).hexdigest()[:8], 16)
    weights = mix()
    total = sum(weights.values())
    point = h % total
    for kind, w in weights.items():
        if point < w:
            break
        point -= w
    json.dump({"content": REPLIES[kind], "usage": {"prompt_tokens": 100, "completion_tokens": 50}},
              sys.stdout)


main()
