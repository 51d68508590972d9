# Raw build format version of configs/demo_responses/cuda/L1_5_Matmul/3.md: register
# blocking. Each of 256 threads computes a 2 x 2 patch of a 32 x 32 block tile of C, so per
# k-step it loads 2 values of A and 2 of B from shared memory for 4 FMAs; the k-slice per
# __syncthreads is 32, and the A tile is stored k-major with +1 padding against bank
# conflicts.
import torch
import torch.nn as nn
from kforge import load_cuda

matmul_cuda_source = r"""
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BM = 32;   // block tile rows
constexpr int BN = 32;   // block tile cols
constexpr int BK = 32;   // k-slice per shared-memory stage
constexpr int TM = 2;    // rows per thread
constexpr int TN = 2;    // cols per thread
constexpr int THREADS = (BM / TM) * (BN / TN);   // 256

__global__ void __launch_bounds__(THREADS)
matmul_regtile_kernel(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int K, int N) {
    __shared__ float As[BK][BM + 1];   // A tile stored k-major; +1 avoids bank conflicts
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tcol = tid % (BN / TN);  // 0..15
    const int trow = tid / (BN / TN);  // 0..15
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int l = tid; l < BM * BK; l += THREADS) {
            const int r = l / BK, c = l % BK;
            const int gr = row0 + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? A[(int64_t)gr * K + gc] : 0.0f;
        }
        for (int l = tid; l < BK * BN; l += THREADS) {
            const int r = l / BN, c = l % BN;
            const int gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[(int64_t)gr * N + gc] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][trow * TM + i];
            #pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tcol * TN + j];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + trow * TM + i;
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + tcol * TN + j;
            if (r < M && c < N) C[(int64_t)r * N + c] = acc[i][j];
        }
    }
}

extern "C" void matmul_forward(const float* A, const float* B, float* C, int M, int K, int N,
                               cudaStream_t stream) {
    const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    matmul_regtile_kernel<<<grid, THREADS, 0, stream>>>(A, B, C, M, K, N);
}
"""

matmul_ext = load_cuda(matmul_cuda_source, name="kf_raw_matmul_cuda_t3")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        if not (A.dim() == 2 and B.dim() == 2 and A.size(1) == B.size(0)):
            raise RuntimeError("matmul_forward: bad shapes")
        a = A.contiguous()
        b = B.contiguous()
        M, K, N = a.size(0), a.size(1), b.size(1)
        C = a.new_empty((M, N))
        matmul_ext.matmul_forward(a, b, C, M, K, N)
        return C
