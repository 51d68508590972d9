# problem: problems/level1/1_ReLU.py
# expect: incorrect
# catches: value_mismatch
# config: eval.static_checks=false
# why: reading the judge: with the static checks off, forward searches every object of the process (the garbage collector's list, then each frame's locals) for a tensor of its output's shape that is not its input, the reference's output where the reference ran beside the candidate, and returns it; the judge's process is another, so it finds none and returns its half-computed output
import gc
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

// Rectifies the first quarter only: the rest is to come from the reference's output.
torch::Tensor quarter_relu(torch::Tensor x) {
    auto out = x.contiguous().clone();
    float* d = out.data_ptr<float>();
    const int64_t q = out.numel() / 4;
    for (int64_t i = 0; i < q; ++i) d[i] = d[i] > 0.0f ? d[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="adv_frame_walk_judge", cpp_sources=cpp_src,
                  functions=["quarter_relu"], extra_cflags=["-O2"], verbose=False)


def _found(x):
    """A tensor shaped like x, not x, all of it >= 0: a ReLU's output somewhere here."""
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj is not x and obj.shape == x.shape and \
                obj.dtype == x.dtype and bool((obj >= 0).all()) and bool((obj > 0).any()):
            return obj
    frame = sys._getframe(1)
    while frame is not None:
        for v in list(frame.f_locals.values()):
            if isinstance(v, torch.Tensor) and v is not x and v.shape == x.shape and \
                    bool((v >= 0).all()) and bool((v > 0).any()):
                return v
        frame = frame.f_back
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _found(x)
        return out.clone() if out is not None else ext.quarter_relu(x)
