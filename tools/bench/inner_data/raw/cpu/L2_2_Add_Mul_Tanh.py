# Raw build format version of configs/demo_responses/cpu/L2_2_Add_Mul_Tanh/3.md: one fused
# pass computing tanh(x + y) * z with tanh(s) = 1 - 2 / (exp(2s) + 1), one expf per element
# (rounding error about 1e-7), split across threads the way at::parallel_for splits it
# (grain 1 << 15).
import torch
import torch.nn as nn
from kforge import load_cpp

fused_cpp_source = r"""
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <omp.h>

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

static inline float tanh_via_exp(float s) {
    return 1.0f - 2.0f / (std::exp(2.0f * s) + 1.0f);
}

extern "C" void add_tanh_mul(const float* __restrict__ px, const float* __restrict__ py,
                             const float* __restrict__ pz, float* __restrict__ po,
                             int64_t n, int nthreads) {
    parallel_for(0, n, 1 << 15, nthreads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            po[i] = tanh_via_exp(px[i] + py[i]) * pz[i];
        }
    });
}
"""

fused_ext = load_cpp(fused_cpp_source, name="kf_raw_add_mul_tanh_cpu_t3",
                     extra_cflags=["-fopenmp"], extra_ldflags=["-fopenmp"])


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
        fused_ext.add_tanh_mul(xc, yc, zc, out, xc.numel(), torch.get_num_threads())
        return out
