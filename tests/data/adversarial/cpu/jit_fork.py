# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: concurrency
# why: forward starts its own C++ kernel through torch.jit.fork, which runs it on PyTorch's inter-op pool, and returns the output tensor before the kernel has filled it: the timer stops with the work still to do (no threading import, no thread in the C++)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

void relu_into(torch::Tensor x, torch::Tensor out) {
    auto in = x.contiguous();
    const float* px = in.data_ptr<float>();
    float* py = out.data_ptr<float>();
    const int64_t n = in.numel();
    for (int64_t i = 0; i < n; ++i) py[i] = px[i] > 0.0f ? px[i] : 0.0f;
}
"""

ext = load_inline(name="adv_jit_fork", cpp_sources=cpp_src, functions=["relu_into"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        torch.jit.fork(ext.relu_into, x, out)
        return out
