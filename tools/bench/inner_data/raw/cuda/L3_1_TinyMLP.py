# Raw build format version of configs/demo_responses/cuda/L3_1_TinyMLP/3.md: one
# shared-memory tiled kernel (16 x 16 tiles of both operands, loads coalesced along the
# reduction dimension) for all three layers, ReLU after fc1 and fc2. The last layer is
# written as out^T = W3 . h2^T, shape (out_features, batch), so consecutive threads write
# consecutive samples of one output feature. Like the original (turn 3 of a trajectory
# that never becomes correct) it returns out^T itself: a shape mismatch, kept on purpose.
import torch
import torch.nn as nn
from kforge import load_cuda

mlp_cuda_source = r"""
#include <cuda_runtime.h>
#include <cstdint>

constexpr int TILE = 16;

// C[r, c] = act(bias[bias_on_rows ? r : c] + sum_k P[r, k] * Q[c, k])
// P is (R, K), Q is (Cn, K), both row-major; C is (R, Cn).
__global__ void dense_tiled(const float* __restrict__ P, const float* __restrict__ Q,
                            const float* __restrict__ bias, float* __restrict__ C,
                            int R, int Cn, int K, bool bias_on_rows, bool relu) {
    __shared__ float ps[TILE][TILE];
    __shared__ float qs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r = blockIdx.y * TILE + ty;
    const int c = blockIdx.x * TILE + tx;
    const int q_row = blockIdx.x * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int k = k0 + tx;
        ps[ty][tx] = (r < R && k < K) ? P[(int64_t)r * K + k] : 0.0f;
        qs[ty][tx] = (q_row < Cn && k < K) ? Q[(int64_t)q_row * K + k] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < TILE; ++kk) acc += ps[ty][kk] * qs[tx][kk];
        __syncthreads();
    }
    if (r < R && c < Cn) {
        float v = acc + bias[bias_on_rows ? r : c];
        C[(int64_t)r * Cn + c] = relu ? fmaxf(v, 0.0f) : v;
    }
}

// P is (R, K), Q is (Cn, K), C is (R, Cn).
static void launch(const float* P, const float* Q, const float* bias, float* C,
                   int R, int K, int Cn, bool bias_on_rows, bool relu, cudaStream_t stream) {
    const dim3 block(TILE, TILE);
    const dim3 grid((Cn + TILE - 1) / TILE, (R + TILE - 1) / TILE);
    dense_tiled<<<grid, block, 0, stream>>>(P, Q, bias, C, R, Cn, K, bias_on_rows, relu);
}

// Sizes as the tensors give them: x (batch, in_f), w1 (hidden_f, .), w2 (w2_rows, .),
// w3 (out_f, w3_cols); h1, h2 (batch, hidden_f) scratch; out_t (out_f, batch).
extern "C" void mlp_forward(const float* x,
                            const float* w1, const float* b1,
                            const float* w2, const float* b2,
                            const float* w3, const float* b3,
                            float* h1, float* h2, float* out_t,
                            int batch, int in_f, int hidden_f, int w2_rows,
                            int out_f, int w3_cols, cudaStream_t stream) {
    launch(x, w1, b1, h1, batch, in_f, hidden_f, /*bias_on_rows=*/false, /*relu=*/true, stream);
    launch(h1, w2, b2, h2, batch, hidden_f, w2_rows, /*bias_on_rows=*/false, /*relu=*/true, stream);

    // Last layer as out^T = W3 . h2^T: rows are output features, columns are samples.
    launch(w3, h2, b3, out_t, out_f, w3_cols, batch, /*bias_on_rows=*/true, /*relu=*/false, stream);
}
"""

mlp_ext = load_cuda(mlp_cuda_source, name="kf_raw_tiny_mlp_cuda_t3")


class ModelNew(nn.Module):
    def __init__(self, in_features: int, hidden_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, hidden_features)
        self.fc3 = nn.Linear(hidden_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            raise RuntimeError("mlp_forward: expected a 2-D input")
        xc = x.contiguous()
        w1, b1 = self.fc1.weight.contiguous(), self.fc1.bias.contiguous()
        w2, b2 = self.fc2.weight.contiguous(), self.fc2.bias.contiguous()
        w3, b3 = self.fc3.weight.contiguous(), self.fc3.bias.contiguous()
        batch = xc.size(0)
        hidden_f = w1.size(0)
        out_f = w3.size(0)

        h1 = xc.new_empty((batch, hidden_f))
        h2 = xc.new_empty((batch, hidden_f))
        # Last layer as out^T = W3 . h2^T: rows are output features, columns are samples.
        out_t = xc.new_empty((out_f, batch))
        mlp_ext.mlp_forward(xc, w1, b1, w2, b2, w3, b3, h1, h2, out_t,
                            batch, xc.size(1), hidden_f, w2.size(0), out_f, w3.size(1))
        return out_t
