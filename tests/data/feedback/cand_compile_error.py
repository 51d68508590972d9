# Candidate: C++ that does not compile.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    return a + b + undeclared_identifier_xyz;
}
"""

ext = load_inline(name="kforge_test_bad", cpp_sources=src, functions=["add"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add(a, b)
