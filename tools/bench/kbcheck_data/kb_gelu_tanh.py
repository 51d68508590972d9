# Our own candidate for KernelBench level1/88_MinGPTNewGelu (8192 x 8192): the tanh
# approximation of GELU, elementwise, grid-stride.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void gelu_tanh(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const float k = 0.7978845608028654f;   // sqrt(2 / pi)
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
    }
}

torch::Tensor gelu_fwd(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    gelu_tanh<<<132 * 16, 256>>>(in.data_ptr<float>(), out.data_ptr<float>(), in.numel());
    return out;
}
"""

ext = load_inline(name="kbc_gelu_tanh", cpp_sources="torch::Tensor gelu_fwd(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["gelu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.gelu_fwd(x)
