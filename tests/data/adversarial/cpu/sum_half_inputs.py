# problem: problems/level1/4_SumReduction.py
# expect: rejected
# catches: lower_precision
# why: in an fp32 evaluation, converts the input to float16 (.half()) and its kernel sums the halves: half the memory traffic, and the rounding stays inside the tolerance of these large sums
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor sum_mid_half(torch::Tensor xh) {
    TORCH_CHECK(xh.scalar_type() == torch::kHalf, "sum_mid_half: float16 expected");
    auto in = xh.contiguous();
    const int64_t outer = in.size(0), red = in.size(1), inner = in.size(2);
    auto out = torch::zeros({outer, 1, inner}, in.options().dtype(torch::kFloat32));
    const at::Half* s = in.data_ptr<at::Half>();
    float* d = out.data_ptr<float>();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t r = 0; r < red; ++r)
            for (int64_t i = 0; i < inner; ++i)
                d[o * inner + i] += static_cast<float>(s[(o * red + r) * inner + i]);
    return out;
}
"""

ext = load_inline(name="adv_sum_half_inputs", cpp_sources=cpp_src, functions=["sum_mid_half"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.sum_mid_half(x.half())
