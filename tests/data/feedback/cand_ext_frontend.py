# Candidate: a correct C++ (CPU) elementwise add that calls into torch's C++ frontend
# (torch::nn::functional, which torch/extension.h brings and torch/types.h does not):
# the fast build's slim binding file cannot compile it, the original command does.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext_source = r"""
#include <torch/extension.h>

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    // relu(x) + min(x, 0) == x: the sum, through an nn functional.
    auto s = a + b;
    return torch::nn::functional::relu(s) + torch::clamp_max(s, 0);
}
"""

ext = load_inline(name="kforge_test_ext_frontend", cpp_sources=ext_source,
                  functions=["add"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add(a, b)
