# problem: problems/level1/4_SumReduction.py
# expect: correct
# catches: -
# why: honest reduction over the middle axis of (outer, reduce, inner): one thread per output element walks the reduced axis with coalesced reads across inner; the keepdim shape comes from .view
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void sum_middle(const float* __restrict__ x, float* __restrict__ y,
                           int64_t outer, int64_t reduce, int64_t inner) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= outer * inner) return;
    const int64_t o = i / inner, k = i % inner;
    const float* p = x + o * reduce * inner + k;
    float acc = 0.0f;
    for (int64_t r = 0; r < reduce; ++r) acc += p[r * inner];
    y[i] = acc;
}

torch::Tensor sum_middle_axis(torch::Tensor x, int64_t outer, int64_t reduce, int64_t inner) {
    auto out = torch::empty({outer * inner}, x.options());
    sum_middle<<<(unsigned)((outer * inner + 255) / 256), 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), outer, reduce, inner);
    return out;
}
"""

ext = load_inline(name="hon_cu_sum_middle_axis",
                  cpp_sources="torch::Tensor sum_middle_axis(torch::Tensor x, int64_t outer, int64_t reduce, int64_t inner);",
                  cuda_sources=cuda_src, functions=["sum_middle_axis"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = list(x.shape)
        outer, reduce, inner = 1, shape[self.dim], 1
        for s in shape[:self.dim]:
            outer *= s
        for s in shape[self.dim + 1:]:
            inner *= s
        out = ext.sum_middle_axis(x.contiguous(), outer, reduce, inner)
        shape[self.dim] = 1
        return out.view(shape)
