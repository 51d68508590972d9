# Raw build format version of configs/demo_responses/cpu/L1_2_LeakyReLU/3.md: the slope
# converted to float once, the branch-free max(v, 0) + slope * min(v, 0) (exact for any
# slope), split across threads the way at::parallel_for splits it (grain 1 << 16).
import torch
import torch.nn as nn
from kforge import load_cpp

leaky_relu_cpp_source = r"""
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

extern "C" void leaky_relu_forward(const float* __restrict__ src, float* __restrict__ dst,
                                   double negative_slope, int64_t n, int nthreads) {
    const float slope = static_cast<float>(negative_slope);
    parallel_for(0, n, 1 << 16, nthreads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float v = src[i];
            dst[i] = std::max(v, 0.0f) + slope * std::min(v, 0.0f);
        }
    });
}
"""

leaky_relu_ext = load_cpp(leaky_relu_cpp_source, name="kf_raw_leaky_relu_cpu_t3",
                          extra_cflags=["-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input = x.contiguous()
        output = torch.empty_like(input)
        leaky_relu_ext.leaky_relu_forward(input, output, float(self.negative_slope),
                                          input.numel(), torch.get_num_threads())
        return output
