# Our own cheat for KernelBench level1/23_Softmax: the kernel writes zeros. With uniform
# [0, 1) rows of 393216 every output is about 4e-6, under fp32's absolute tolerance of
# 1e-4, so zeros pass allclose (KernelBench issue 165). KernelBench's static checker sees
# a __global__ kernel and load_inline, nothing else; kforge flags the output degenerate
# and checks again on inputs scaled by 1000, where zeros fail.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void fill_zero(float* y, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = 0.0f;
}

torch::Tensor softmax_fwd(torch::Tensor x) {
    auto out = torch::empty_like(x);
    fill_zero<<<132 * 16, 256>>>(out.data_ptr<float>(), out.numel());
    return out;
}
"""

ext = load_inline(name="kbc_softmax_zeros", cpp_sources="torch::Tensor softmax_fwd(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["softmax_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_fwd(x)
