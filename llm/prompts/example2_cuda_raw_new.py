import torch
import torch.nn as nn
from kforge import load_cuda

bias_relu_cuda_source = r"""
#include <cstdint>

// One read and one write per element: the add and the clamp are fused.
__global__ void bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                 float* __restrict__ out, int64_t n, int64_t cols) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i] + bias[i % cols];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

extern "C" void bias_relu_forward(const float* x, const float* bias, float* out, int64_t rows,
                                  int64_t cols, cudaStream_t stream) {
    const int64_t n = rows * cols;
    if (n == 0) {
        return;
    }
    const int threads = 256;
    const int64_t wanted = (n + threads - 1) / threads;
    const int blocks = (int)(wanted < 8192 ? wanted : 8192);
    bias_relu_kernel<<<blocks, threads, 0, stream>>>(x, bias, out, n, cols);
}
"""

bias_relu_ops = load_cuda(bias_relu_cuda_source, name="example_bias_relu_cuda", extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        bias_relu_ops.bias_relu_forward(x, self.bias.detach().contiguous(), out, x.size(0), x.size(1))
        return out
