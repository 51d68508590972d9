# Raw build format version of configs/demo_responses/cpu/L1_1_ReLU/3.md: the same
# branch-free std::max over blocks of 8 floats with a scalar tail, split across threads
# the way at::parallel_for splits it (OpenMP, grain 1 << 16). Plain C++ with an
# extern "C" entry point; contiguity and allocation are done in forward.
import torch
import torch.nn as nn
from kforge import load_cpp

relu_cpp_source = r"""
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

static inline void relu_block(const float* __restrict__ src, float* __restrict__ dst,
                              int64_t begin, int64_t end) {
    int64_t i = begin;
    for (; i + 8 <= end; i += 8) {
        for (int k = 0; k < 8; ++k) {
            dst[i + k] = std::max(src[i + k], 0.0f);
        }
    }
    for (; i < end; ++i) {
        dst[i] = std::max(src[i], 0.0f);
    }
}

extern "C" void relu_forward(const float* src, float* dst, int64_t n, int nthreads) {
    parallel_for(0, n, 1 << 16, nthreads, [&](int64_t begin, int64_t end) {
        relu_block(src, dst, begin, end);
    });
}
"""

relu_ext = load_cpp(relu_cpp_source, name="kf_raw_relu_cpu_t3",
                    extra_cflags=["-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input = x.contiguous()
        output = torch.empty_like(input)
        relu_ext.relu_forward(input, output, input.numel(), torch.get_num_threads())
        return output
