# Raw build format version of configs/demo_responses/cuda/L1_2_LeakyReLU/3.md: a grid-stride
# loop (at most 8 blocks per SM) with the branch-free body fmaxf(v, 0) + slope * fminf(v, 0),
# exact for any slope; the slope is passed as a double and converted to float once.
import torch
import torch.nn as nn
from kforge import load_cuda

leaky_relu_cuda_source = r"""
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

__global__ void leaky_relu_kernel(const float* __restrict__ x, float* __restrict__ y,
                                  float slope, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        y[i] = fmaxf(v, 0.0f) + slope * fminf(v, 0.0f);
    }
}

extern "C" void leaky_relu_forward(const float* src, float* dst, double negative_slope,
                                   int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, (int64_t)sms * 8);
    leaky_relu_kernel<<<blocks, threads, 0, stream>>>(src, dst,
                                                      static_cast<float>(negative_slope), n);
}
"""

leaky_relu_ext = load_cuda(leaky_relu_cuda_source, name="kf_raw_leaky_relu_cuda_t3")


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input = x.contiguous()
        output = torch.empty_like(input)
        leaky_relu_ext.leaky_relu_forward(input, output, float(self.negative_slope),
                                          input.numel())
        return output
