# problem: problems/level1/4_SumReduction.py
# expect: correct
# catches: -
# why: honest reduction: Python views the input as (outer, reduce, inner) with .reshape and the kernel sums the middle axis; the keepdim shape is restored with .view
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor sum_middle(torch::Tensor x3) {
    TORCH_CHECK(x3.dim() == 3 && x3.is_contiguous(), "contiguous 3-D tensor expected");
    TORCH_CHECK(x3.scalar_type() == torch::kFloat32, "float32 expected");
    const int64_t outer = x3.size(0), red = x3.size(1), inner = x3.size(2);
    auto out = torch::zeros({outer, inner}, x3.options());
    const float* s = x3.data_ptr<float>();
    float* d = out.data_ptr<float>();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t r = 0; r < red; ++r) {
            const float* row = s + (o * red + r) * inner;
            float* acc = d + o * inner;
            for (int64_t i = 0; i < inner; ++i) acc[i] += row[i];
        }
    return out;
}
"""

ext = load_inline(name="hon_sum_reshape", cpp_sources=cpp_src, functions=["sum_middle"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.dim % x.dim()
        outer = 1
        for s in x.shape[:d]:
            outer *= s
        inner = 1
        for s in x.shape[d + 1:]:
            inner *= s
        y = ext.sum_middle(x.contiguous().reshape(outer, x.shape[d], inner))
        shape = list(x.shape)
        shape[d] = 1
        return y.view(shape)
