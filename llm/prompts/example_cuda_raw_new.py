import torch
import torch.nn as nn
from kforge import load_cuda

add_cuda_source = r"""
#include <cstdint>

// Grid-stride loop: any grid size covers any n.
__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = a[i] + b[i];
    }
}

extern "C" void add_forward(const float* a, const float* b, float* out, int64_t n,
                            cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    const int threads = 256;
    const int64_t wanted = (n + threads - 1) / threads;
    const int blocks = (int)(wanted < 4096 ? wanted : 4096);
    add_kernel<<<blocks, threads, 0, stream>>>(a, b, out, n);
}
"""

add_ops = load_cuda(add_cuda_source, name="example_add_cuda", extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        add_ops.add_forward(a, b, out, a.numel())
        return out
