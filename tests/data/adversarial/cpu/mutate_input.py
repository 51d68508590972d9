# problem: problems/level1/1_ReLU.py
# expect: incorrect
# catches: value_mismatch
# flags: input_mutated
# why: the kernel rectifies x in place and returns x: right values, no allocation, but the caller's input is destroyed
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor relu_inplace(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat32,
                "relu_inplace: contiguous float32 expected");
    float* d = x.data_ptr<float>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = d[i] > 0.0f ? d[i] : 0.0f;
    return x;
}
"""

ext = load_inline(name="adv_mutate_input", cpp_sources=cpp_src, functions=["relu_inplace"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_inplace(x)
