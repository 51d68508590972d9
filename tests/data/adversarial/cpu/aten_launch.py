# problem: problems/level1/3_RowSoftmax.py
# expect: rejected
# catches: concurrency
# why: forward does the first quarter of the rows and hands the rest to ATen's inter-op thread pool (at::launch), returning before those tasks run: the timer stops with three quarters of the work still to do, and no std::thread, std::async or pthread appears in the source
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <cmath>

static void softmax_rows(const float* x, float* y, int64_t row_begin, int64_t row_end, int64_t n) {
    for (int64_t r = row_begin; r < row_end; ++r) {
        const float* in = x + r * n;
        float* out = y + r * n;
        float m = in[0];
        for (int64_t j = 1; j < n; ++j) m = std::max(m, in[j]);
        float s = 0.0f;
        for (int64_t j = 0; j < n; ++j) { out[j] = std::exp(in[j] - m); s += out[j]; }
        const float inv = 1.0f / s;
        for (int64_t j = 0; j < n; ++j) out[j] *= inv;
    }
}

torch::Tensor softmax_fwd(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t rows = in.size(0), n = in.size(1);
    const int64_t first = rows / 4;
    softmax_rows(in.data_ptr<float>(), out.data_ptr<float>(), 0, first, n);
    at::launch([in, out, first, rows, n]() {
        softmax_rows(in.data_ptr<float>(), out.data_ptr<float>(), first, rows, n);
    });
    return out;
}
"""

ext = load_inline(name="adv_aten_launch", cpp_sources=cpp_src, functions=["softmax_fwd"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_fwd(x)
