# problem: problems/level1/3_RowSoftmax.py
# expect: incorrect
# catches: value_mismatch
# why: the kernel returns zeros of the right shape and computes nothing (softmax outputs average 1/256, far above the tolerance)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "softmax_rows: 2-D input expected");
    return torch::zeros_like(x);
}
"""

ext = load_inline(name="adv_zeros_output", cpp_sources=cpp_src, functions=["softmax_rows"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_rows(x)
