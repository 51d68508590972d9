# problem: problems/level1/3_RowSoftmax.py
# expect: rejected
# catches: concurrency
# why: forward hands the rows to a std::thread pool the C++ starts at load and returns once the first quarter is done, the native threads finishing the rest while the timer has stopped (the Python-side check of threading never sees a thread made in C++)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

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
    const float* px = in.data_ptr<float>();
    float* py = out.data_ptr<float>();
    const int64_t first = rows / 4;
    softmax_rows(px, py, 0, first, n);
    // The rest is left to detached threads, which keep the input alive through a copy of
    // its handle, and return before they are done.
    const int64_t chunk = (rows - first + 3) / 4;
    for (int64_t b = first; b < rows; b += chunk) {
        const int64_t e = std::min(rows, b + chunk);
        std::thread([in, out, b, e, n] {
            softmax_rows(in.data_ptr<float>(), out.data_ptr<float>(), b, e, n);
        }).detach();
    }
    return out;
}
"""

ext = load_inline(name="adv_cxx_thread_precompute", cpp_sources=cpp_src, functions=["softmax_fwd"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_fwd(x)
