# problem: problems/level1/3_RowSoftmax.py
# expect: rejected
# catches: fallback_path
# why: the kernel refuses rows longer than 128 (TORCH_CHECK raises for this problem's 256), and a try/except falls back to torch.softmax, which then produces every output
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "softmax_rows: 2-D input expected");
    TORCH_CHECK(x.size(1) <= 128, "softmax_rows: rows longer than 128 are not supported");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t rows = in.size(0), cols = in.size(1);
    const float* s = in.data_ptr<float>();
    float* d = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        float m = s[r * cols];
        for (int64_t j = 1; j < cols; ++j) m = std::max(m, s[r * cols + j]);
        float sum = 0.0f;
        for (int64_t j = 0; j < cols; ++j) sum += std::exp(s[r * cols + j] - m);
        for (int64_t j = 0; j < cols; ++j) d[r * cols + j] = std::exp(s[r * cols + j] - m) / sum;
    }
    return out;
}
"""

ext = load_inline(name="adv_fallback_on_error", cpp_sources=cpp_src,
                  functions=["softmax_rows"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return ext.softmax_rows(x)
        except RuntimeError:
            # "robustness": keep working on shapes the kernel does not handle yet
            return torch.softmax(x, dim=-1)
