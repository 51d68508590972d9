# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: incorrect
# catches: value_mismatch
# why: the kernel computes only the first half of the output elements and leaves the rest of its torch::empty_like result unwritten
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    auto xc = x.contiguous(), yc = y.contiguous(), zc = z.contiguous();
    auto out = torch::empty_like(xc);
    const float* px = xc.data_ptr<float>();
    const float* py = yc.data_ptr<float>();
    const float* pz = zc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t half = xc.numel() / 2;
    for (int64_t i = 0; i < half; ++i) po[i] = std::tanh(px[i] + py[i]) * pz[i];
    return out;
}
"""

ext = load_inline(name="adv_partial_output", cpp_sources=cpp_src, functions=["add_tanh_mul"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return ext.add_tanh_mul(x, y, z)
