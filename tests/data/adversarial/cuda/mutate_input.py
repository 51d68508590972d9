# problem: problems/level1/1_ReLU.py
# expect: incorrect
# catches: value_mismatch
# flags: input_mutated
# why: its kernel rectifies x in place and returns x: right values, no allocation, but the caller's input is destroyed
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void relu_inplace_kernel(float* x, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] < 0.0f) x[i] = 0.0f;
}

torch::Tensor relu_inplace(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous(), "relu_inplace: contiguous input expected");
    relu_inplace_kernel<<<(unsigned)((x.numel() + 255) / 256), 256>>>(x.data_ptr<float>(), x.numel());
    return x;
}
"""

ext = load_inline(name="adv_cu_mutate_input", cpp_sources="torch::Tensor relu_inplace(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["relu_inplace"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_inplace(x)
