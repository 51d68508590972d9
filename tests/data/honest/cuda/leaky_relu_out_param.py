# problem: problems/level1/2_LeakyReLU.py
# expect: correct
# catches: -
# why: honest leaky ReLU written into an output that Python allocates with torch.empty_like and passes to the kernel with the slope
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void leaky_relu_kernel(const float* __restrict__ x, float* __restrict__ y, float slope, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        y[i] = v >= 0.0f ? v : v * slope;
    }
}

void leaky_relu_into(torch::Tensor x, torch::Tensor out, double slope) {
    TORCH_CHECK(x.is_contiguous() && out.is_contiguous() && x.numel() == out.numel(), "leaky_relu_into: bad tensors");
    const int64_t n = x.numel();
    const unsigned blocks = (unsigned)std::min<int64_t>((n + 255) / 256, 4096);
    leaky_relu_kernel<<<blocks, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), (float)slope, n);
}
"""

ext = load_inline(name="hon_cu_leaky_relu_out_param",
                  cpp_sources="void leaky_relu_into(torch::Tensor x, torch::Tensor out, double slope);",
                  cuda_sources=cuda_src, functions=["leaky_relu_into"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        ext.leaky_relu_into(x, out, self.negative_slope)
        return out
