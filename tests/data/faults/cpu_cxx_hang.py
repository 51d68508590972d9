# Fault candidate: the kernel spin-waits for a "tiles ready" flag that nothing ever
# sets, so it never returns (holding the GIL).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <atomic>

static std::atomic<int> tiles_ready{0};  // meant to be set by a producer thread

torch::Tensor add_tiled(torch::Tensor a, torch::Tensor b) {
    while (tiles_ready.load(std::memory_order_acquire) == 0) {
    }
    return a + b;
}
"""

ext = load_inline(name="fault_cxx_hang", cpp_sources=cpp_source, functions=["add_tiled"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_tiled(a, b)
