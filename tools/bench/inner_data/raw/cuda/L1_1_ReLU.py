# Raw build format version of configs/demo_responses/cuda/L1_1_ReLU/3.md: bandwidth-bound,
# so when both buffers are 16-byte aligned each thread loads and stores a float4 in a
# grid-stride loop (at most 8 blocks per SM), and a scalar kernel handles the last n % 4
# elements; unaligned buffers take the scalar kernel for everything. Plain CUDA with an
# extern "C" launcher on torch's current stream; contiguity and allocation are in forward.
import torch
import torch.nn as nn
from kforge import load_cuda

relu_cuda_source = r"""
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

__global__ void relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                 int64_t n_vec) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_vec; i += stride) {
        float4 v = x[i];
        v.x = fmaxf(v.x, 0.0f);
        v.y = fmaxf(v.y, 0.0f);
        v.z = fmaxf(v.z, 0.0f);
        v.w = fmaxf(v.w, 0.0f);
        y[i] = v;
    }
}

__global__ void relu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y,
                                   int64_t begin, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = begin + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = fmaxf(x[i], 0.0f);
    }
}

extern "C" void relu_forward(const float* src, float* dst, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int threads = 256;
    const int64_t max_blocks = (int64_t)sms * 8;

    const bool aligned = (reinterpret_cast<uintptr_t>(src) % 16 == 0) &&
                         (reinterpret_cast<uintptr_t>(dst) % 16 == 0);
    int64_t done = 0;
    if (aligned) {
        const int64_t n_vec = n / 4;
        if (n_vec > 0) {
            const int blocks = (int)std::min<int64_t>((n_vec + threads - 1) / threads, max_blocks);
            relu_vec4_kernel<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(src),
                                                             reinterpret_cast<float4*>(dst), n_vec);
        }
        done = n_vec * 4;
    }
    if (done < n) {
        const int blocks = (int)std::min<int64_t>((n - done + threads - 1) / threads, max_blocks);
        relu_scalar_kernel<<<blocks, threads, 0, stream>>>(src, dst, done, n);
    }
}
"""

relu_ext = load_cuda(relu_cuda_source, name="kf_raw_relu_cuda_t3")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input = x.contiguous()
        output = torch.empty_like(input)
        relu_ext.relu_forward(input, output, input.numel())
        return output
