# Raw build format version of configs/demo_responses/cpu/L1_5_Matmul/3.md: 4 x 64 tiles of C
# accumulated in a local array (k ascending, so each output's order of additions is the
# naive one), rows of tiles split across threads the way at::parallel_for splits them
# (grain 1), scalar edges for a ragged M or N, built with -march=native as the original.
import torch
import torch.nn as nn
from kforge import load_cpp

matmul_cpp_source = r"""
#include <algorithm>
#include <cstdint>
#include <omp.h>

constexpr int64_t TILE_M = 4;
constexpr int64_t TILE_N = 64;

// at::parallel_for's OpenMP split: a range longer than grain, with more than one thread,
// is cut into one contiguous chunk per thread (at most ceil(n / grain) chunks).
template <typename F>
static void parallel_for(int64_t begin, int64_t end, int64_t grain, int nthreads, const F& f) {
    if (begin >= end) return;
    const int64_t n = end - begin;
    if (n <= grain || n <= 1 || nthreads <= 1 || omp_in_parallel()) {
        f(begin, end);
        return;
    }
    if (omp_get_max_threads() != nthreads) omp_set_num_threads(nthreads);
    #pragma omp parallel
    {
        int64_t nt = omp_get_num_threads();
        if (grain > 0) nt = std::min<int64_t>(nt, (n + grain - 1) / grain);
        const int64_t tid = omp_get_thread_num();
        const int64_t chunk = (n + nt - 1) / nt;
        const int64_t b = begin + tid * chunk;
        if (b < end) f(b, std::min(end, b + chunk));
    }
}

// C[i:i+4, j0:j0+64] = A[i:i+4, :] @ B[:, j0:j0+64]
static void tile_4x64(const float* __restrict__ pa, const float* __restrict__ pb,
                      float* __restrict__ pc, int64_t i, int64_t j0, int64_t K, int64_t N) {
    float acc[TILE_M][TILE_N] = {};
    for (int64_t k = 0; k < K; ++k) {
        const float a0 = pa[(i + 0) * K + k];
        const float a1 = pa[(i + 1) * K + k];
        const float a2 = pa[(i + 2) * K + k];
        const float a3 = pa[(i + 3) * K + k];
        const float* __restrict__ b = pb + k * N + j0;
        for (int64_t j = 0; j < TILE_N; ++j) {
            acc[0][j] += a0 * b[j];
            acc[1][j] += a1 * b[j];
            acc[2][j] += a2 * b[j];
            acc[3][j] += a3 * b[j];
        }
    }
    for (int64_t r = 0; r < TILE_M; ++r) {
        for (int64_t j = 0; j < TILE_N; ++j) {
            pc[(i + r) * N + j0 + j] = acc[r][j];
        }
    }
}

// Any rectangle [i0, i1) x [j0, j1), one output at a time (the ragged edges).
static void edge(const float* pa, const float* pb, float* pc, int64_t i0, int64_t i1,
                 int64_t j0, int64_t j1, int64_t K, int64_t N) {
    for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) acc += pa[i * K + k] * pb[k * N + j];
            pc[i * N + j] = acc;
        }
    }
}

extern "C" void matmul_forward(const float* pa, const float* pb, float* pc,
                               int64_t M, int64_t K, int64_t N, int nthreads) {
    const int64_t m_full = M / TILE_M * TILE_M;
    const int64_t n_full = N / TILE_N * TILE_N;
    parallel_for(0, m_full / TILE_M, 1, nthreads, [&](int64_t t_begin, int64_t t_end) {
        for (int64_t t = t_begin; t < t_end; ++t) {
            for (int64_t j0 = 0; j0 < n_full; j0 += TILE_N) {
                tile_4x64(pa, pb, pc, t * TILE_M, j0, K, N);
            }
        }
    });
    edge(pa, pb, pc, 0, m_full, n_full, N, K, N);
    edge(pa, pb, pc, m_full, M, 0, N, K, N);
}
"""

matmul_ext = load_cpp(matmul_cpp_source, name="kf_raw_matmul_cpu_t3",
                      extra_cflags=["-march=native", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        if A.dim() != 2 or B.dim() != 2:
            raise RuntimeError("matmul_forward: expected 2-D tensors")
        if A.size(1) != B.size(0):
            raise RuntimeError("matmul_forward: inner dimensions differ")
        a = A.contiguous()
        b = B.contiguous()
        M, K, N = a.size(0), a.size(1), b.size(1)
        C = a.new_empty((M, N))
        matmul_ext.matmul_forward(a, b, C, M, K, N, torch.get_num_threads())
        return C
