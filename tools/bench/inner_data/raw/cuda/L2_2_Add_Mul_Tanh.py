# Raw build format version of configs/demo_responses/cuda/L2_2_Add_Mul_Tanh/3.md: fused
# tanh(x + y) * z, four consecutive elements per thread through float4 loads and stores in
# a grid-stride loop sized to the SM count (at most 8 blocks per SM); a scalar kernel covers
# n % 4, and misaligned buffers take the scalar path for everything.
import torch
import torch.nn as nn
from kforge import load_cuda

fused_cuda_source = r"""
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

__device__ __forceinline__ float f(float a, float b, float c) { return tanhf(a + b) * c; }

__global__ void add_tanh_mul_vec4(const float4* __restrict__ x, const float4* __restrict__ y,
                                  const float4* __restrict__ z, float4* __restrict__ out,
                                  int64_t n_vec) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_vec; i += stride) {
        const float4 a = x[i], b = y[i], c = z[i];
        float4 r;
        r.x = f(a.x, b.x, c.x);
        r.y = f(a.y, b.y, c.y);
        r.z = f(a.z, b.z, c.z);
        r.w = f(a.w, b.w, c.w);
        out[i] = r;
    }
}

__global__ void add_tanh_mul_scalar(const float* __restrict__ x, const float* __restrict__ y,
                                    const float* __restrict__ z, float* __restrict__ out,
                                    int64_t begin, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = begin + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = f(x[i], y[i], z[i]);
    }
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

extern "C" void add_tanh_mul(const float* px, const float* py, const float* pz, float* po,
                             int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int threads = 256;
    const int64_t max_blocks = (int64_t)sms * 8;

    int64_t done = 0;
    if (aligned16(px) && aligned16(py) && aligned16(pz) && aligned16(po)) {
        const int64_t n_vec = n / 4;
        if (n_vec > 0) {
            const int blocks = (int)std::min<int64_t>((n_vec + threads - 1) / threads, max_blocks);
            add_tanh_mul_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(px),
                                                              reinterpret_cast<const float4*>(py),
                                                              reinterpret_cast<const float4*>(pz),
                                                              reinterpret_cast<float4*>(po), n_vec);
        }
        done = n_vec * 4;
    }
    if (done < n) {
        const int blocks = (int)std::min<int64_t>((n - done + threads - 1) / threads, max_blocks);
        add_tanh_mul_scalar<<<blocks, threads, 0, stream>>>(px, py, pz, po, done, n);
    }
}
"""

fused_ext = load_cuda(fused_cuda_source, name="kf_raw_add_mul_tanh_cuda_t3")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if x.shape != y.shape or x.shape != z.shape:
            raise RuntimeError("add_tanh_mul: shapes must match")
        xc = x.contiguous()
        yc = y.contiguous()
        zc = z.contiguous()
        out = torch.empty_like(xc)
        fused_ext.add_tanh_mul(xc, yc, zc, out, xc.numel())
        return out
