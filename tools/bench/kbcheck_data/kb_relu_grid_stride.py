# Our own candidate for KernelBench level1/19_ReLU (4096 x 393216, uniform [0, 1) input):
# a grid-stride ReLU reading and writing float4, with a scalar tail.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void relu4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        const float4 v = x[i];
        y[i] = make_float4(fmaxf(v.x, 0.0f), fmaxf(v.y, 0.0f), fmaxf(v.z, 0.0f), fmaxf(v.w, 0.0f));
    }
}

__global__ void relu_tail(const float* x, float* y, int64_t from, int64_t n) {
    const int64_t i = from + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor relu_fwd(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t n = in.numel(), n4 = n / 4;
    if (n4 > 0)
        relu4<<<132 * 16, 256>>>(reinterpret_cast<const float4*>(in.data_ptr<float>()),
                                 reinterpret_cast<float4*>(out.data_ptr<float>()), n4);
    if (n > n4 * 4) relu_tail<<<1, 4>>>(in.data_ptr<float>(), out.data_ptr<float>(), n4 * 4, n);
    return out;
}
"""

ext = load_inline(name="kbc_relu_grid_stride", cpp_sources="torch::Tensor relu_fwd(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["relu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_fwd(x)
