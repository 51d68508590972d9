# Fault candidate: the kernel polls for a "tiles ready" flag that nothing ever sets,
# backing off between looks, so it never returns (holding the GIL). It sleeps rather
# than spins: what is under test is that kforge ends a runner stuck in C++, which no
# Python signal handler can reach, and a spin only burned a core of the test machine
# until the deadline (64 s of CPU of the suite's 1,100).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <atomic>
#include <chrono>
#include <thread>

static std::atomic<int> tiles_ready{0};  // meant to be set by a producer thread

torch::Tensor add_tiled(torch::Tensor a, torch::Tensor b) {
    while (tiles_ready.load(std::memory_order_acquire) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
