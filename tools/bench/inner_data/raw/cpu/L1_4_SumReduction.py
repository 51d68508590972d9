# Raw build format version of configs/demo_responses/cpu/L1_4_SumReduction/3.md: for each
# outer slice, whole contiguous rows of `inner` values are accumulated into a zeroed output
# slice (packed adds), outer slices split across threads the way at::parallel_for splits
# them (grain 1). The outer/reduce/inner split and the keepdim output shape are computed in
# forward.
import torch
import torch.nn as nn
from kforge import load_cpp

sum_cpp_source = r"""
#include <algorithm>
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

// dst must hold outer * inner zeros.
extern "C" void sum_keepdim(const float* src, float* dst, int64_t outer, int64_t reduce,
                            int64_t inner, int nthreads) {
    parallel_for(0, outer, 1, nthreads, [&](int64_t o_begin, int64_t o_end) {
        for (int64_t o = o_begin; o < o_end; ++o) {
            float* __restrict__ acc = dst + o * inner;
            const float* slab = src + o * reduce * inner;
            for (int64_t r = 0; r < reduce; ++r) {
                const float* __restrict__ row = slab + r * inner;
                for (int64_t i = 0; i < inner; ++i) {
                    acc[i] += row[i];
                }
            }
        }
    });
}
"""

sum_ext = load_cpp(sum_cpp_source, name="kf_raw_sum_reduction_cpu_t3",
                   extra_cflags=["-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input = x.contiguous()
        ndim = input.dim()
        dim = self.dim + ndim if self.dim < 0 else self.dim
        if not 0 <= dim < ndim:
            raise RuntimeError("sum_keepdim: dim out of range")
        outer = 1
        for d in range(dim):
            outer *= input.size(d)
        reduce = input.size(dim)
        inner = 1
        for d in range(dim + 1, ndim):
            inner *= input.size(d)
        out_sizes = list(input.shape)
        out_sizes[dim] = 1
        output = torch.zeros(out_sizes, dtype=input.dtype, device=input.device)
        sum_ext.sum_keepdim(input, output, outer, reduce, inner, torch.get_num_threads())
        return output
