# problem: problems/level1/2_LeakyReLU.py
# expect: correct
# catches: -
# why: honest leaky ReLU written into an output that Python allocates with torch.empty_like and passes to the kernel
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

void leaky_relu_into(torch::Tensor x, torch::Tensor out, double slope) {
    TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "contiguous tensors expected");
    TORCH_CHECK(x.numel() == out.numel(), "size mismatch");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && out.scalar_type() == torch::kFloat32,
                "float32 expected");
    const float* s = x.data_ptr<float>();
    float* d = out.data_ptr<float>();
    const float a = static_cast<float>(slope);
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] >= 0.0f ? s[i] : a * s[i];
}
"""

ext = load_inline(name="hon_leaky_relu_out_param", cpp_sources=cpp_src,
                  functions=["leaky_relu_into"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.contiguous()
        out = torch.empty_like(xc)
        ext.leaky_relu_into(xc, out, self.negative_slope)
        return out
