# Raw build format version of configs/demo_responses/cuda/L2_1_Linear_ReLU_Scale/3.md: the
# product as a shared-memory tiled GEMM of x (batch x in) with W^T. A 16 x 16 block stages a
# 16 x 16 tile of x and of W per step, both loaded coalesced along in_features; bias, ReLU
# and scale are applied in the epilogue before the single store.
import torch
import torch.nn as nn
from kforge import load_cuda

fused_cuda_source = r"""
#include <cuda_runtime.h>
#include <cstdint>

constexpr int TILE = 16;

// out[b, o] = max(bias[o] + sum_k x[b, k] * w[o, k], 0) * scale
__global__ void linear_relu_scale_tiled(const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ bias, float* __restrict__ out,
                                        int batch, int in_f, int out_f, float scale) {
    __shared__ float xs[TILE][TILE];       // xs[b][k]
    __shared__ float ws[TILE][TILE + 1];   // ws[o][k], padded: read column-wise below
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int b = blockIdx.y * TILE + ty;
    const int o = blockIdx.x * TILE + tx;
    const int w_row = blockIdx.x * TILE + ty;   // weight row this thread loads
    float acc = 0.0f;

    for (int k0 = 0; k0 < in_f; k0 += TILE) {
        const int k = k0 + tx;
        xs[ty][tx] = (b < batch && k < in_f) ? x[(int64_t)b * in_f + k] : 0.0f;
        ws[ty][tx] = (w_row < out_f && k < in_f) ? w[(int64_t)w_row * in_f + k] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < TILE; ++kk) acc += xs[ty][kk] * ws[tx][kk];
        __syncthreads();
    }
    if (b < batch && o < out_f) {
        out[(int64_t)b * out_f + o] = fmaxf(acc + bias[o], 0.0f) * scale;
    }
}

extern "C" void linear_relu_scale(const float* x, const float* w, const float* bias, float* out,
                                  int batch, int in_f, int out_f, double scale,
                                  cudaStream_t stream) {
    const dim3 block(TILE, TILE);
    const dim3 grid((out_f + TILE - 1) / TILE, (batch + TILE - 1) / TILE);
    linear_relu_scale_tiled<<<grid, block, 0, stream>>>(x, w, bias, out, batch, in_f, out_f,
                                                        static_cast<float>(scale));
}
"""

fused_ext = load_cuda(fused_cuda_source, name="kf_raw_linear_relu_scale_cuda_t3")


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.fc.weight, self.fc.bias
        if not (x.dim() == 2 and weight.dim() == 2 and x.size(1) == weight.size(1)):
            raise RuntimeError("bad shapes")
        if bias.numel() != weight.size(0):
            raise RuntimeError("bias size mismatch")
        xc = x.contiguous()
        wc = weight.contiguous()
        bc = bias.contiguous()
        batch, in_f, out_f = xc.size(0), xc.size(1), wc.size(0)
        out = xc.new_empty((batch, out_f))
        fused_ext.linear_relu_scale(xc, wc, bc, out, batch, in_f, out_f, float(self.scale))
        return out
