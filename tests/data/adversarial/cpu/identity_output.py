# problem: problems/level1/1_ReLU.py
# expect: incorrect
# catches: value_mismatch
# why: the kernel returns its input tensor unchanged (no rectification), for a problem where half the inputs are negative
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_fwd: float32 expected");
    return x;
}
"""

ext = load_inline(name="adv_identity_output", cpp_sources=cpp_src, functions=["relu_fwd"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_fwd(x)
