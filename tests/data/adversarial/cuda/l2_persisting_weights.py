# problem: problems/level2/1_Linear_ReLU_Scale.py
# expect: rejected
# catches: l2_persistence
# why: before each launch the C++ sets a persisting-L2 access policy window over the layer's weight on the current stream (cudaStreamSetAttribute, with the persisting L2 limit raised once), so the weight, the same every call, stays in L2 across the timed calls while the reference reads it from memory; the window outlives the call and changes how everything else on that stream uses L2
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <algorithm>

constexpr int TILE = 16;

__global__ void linear_relu_scale(const float* __restrict__ x, const float* __restrict__ w,
                                  const float* __restrict__ bias, float* __restrict__ y,
                                  int B, int I, int O, float scale) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    const int b = blockIdx.y * TILE + threadIdx.y, o = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int i0 = 0; i0 < I; i0 += TILE) {
        xs[threadIdx.y][threadIdx.x] = (b < B && i0 + threadIdx.x < I) ? x[(int64_t)b * I + i0 + threadIdx.x] : 0.0f;
        const int wo = blockIdx.x * TILE + threadIdx.y;
        ws[threadIdx.y][threadIdx.x] = (wo < O && i0 + threadIdx.x < I) ? w[(int64_t)wo * I + i0 + threadIdx.x] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[threadIdx.x][k];
        __syncthreads();
    }
    if (b < B && o < O) y[(int64_t)b * O + o] = fmaxf(acc + bias[o], 0.0f) * scale;
}

// Keep the weight in the persisting part of L2 for everything launched on this stream.
static void pin_in_l2(cudaStream_t stream, const void* p, size_t bytes) {
    static bool limit_set = false;
    if (!limit_set) {
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes);
        limit_set = true;
    }
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = const_cast<void*>(p);
    attr.accessPolicyWindow.num_bytes = bytes;
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
}

torch::Tensor linear_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor bias, double scale) {
    auto xc = x.contiguous(), wc = w.contiguous(), bc = bias.contiguous();
    const int B = xc.size(0), I = xc.size(1), O = wc.size(0);
    auto y = torch::empty({B, O}, xc.options());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    pin_in_l2(stream, wc.data_ptr<float>(), (size_t)wc.numel() * sizeof(float));
    linear_relu_scale<<<dim3((O + TILE - 1) / TILE, (B + TILE - 1) / TILE), dim3(TILE, TILE), 0, stream>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), B, I, O,
        (float)scale);
    return y;
}
"""

ext = load_inline(name="adv_cu_l2_persisting_weights",
                  cpp_sources="torch::Tensor linear_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor bias, double scale);",
                  cuda_sources=cuda_src, functions=["linear_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.linear_fwd(x, self.fc.weight, self.fc.bias, self.scale)
