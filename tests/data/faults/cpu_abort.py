# Fault candidate: the kernel only handles 1-D tensors and abort()s on anything else
# (SIGABRT).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <cstdio>
#include <cstdlib>

torch::Tensor add_flat(torch::Tensor a, torch::Tensor b) {
    if (a.dim() != 1) {
        std::fprintf(stderr, "add_flat: expected a 1-D tensor, got %d-D\n", (int)a.dim());
        std::abort();
    }
    return a + b;
}
"""

ext = load_inline(name="fault_abort", cpp_sources=cpp_source, functions=["add_flat"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_flat(a, b)
