# problem: problems/level1/2_LeakyReLU.py
# expect: rejected
# catches: concurrency
# why: forward computes the first quarter of the output and hands the other three quarters to ATen's inter-op thread pool (at::launch), returning before that task runs: the timer stops with most of the work still to do, and no std::thread, std::async or pthread appears in the source
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

static void leaky_span(const float* x, float* y, int64_t begin, int64_t end, float slope) {
    for (int64_t i = begin; i < end; ++i)
        y[i] = x[i] >= 0.0f ? x[i] : slope * x[i];
}

torch::Tensor leaky_forward(torch::Tensor x, double slope) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t n = in.numel(), quarter = n / 4;
    const float s = static_cast<float>(slope);
    leaky_span(in.data_ptr<float>(), out.data_ptr<float>(), 0, quarter, s);
    at::launch([in, out, quarter, n, s]() {
        leaky_span(in.data_ptr<float>(), out.data_ptr<float>(), quarter, n, s);
    });
    return out;
}
"""

ext = load_inline(name="adv_aten_launch", cpp_sources=cpp_src, functions=["leaky_forward"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.leaky_forward(x, self.negative_slope)
