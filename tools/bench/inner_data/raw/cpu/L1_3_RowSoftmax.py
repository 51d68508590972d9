# Raw build format version of configs/demo_responses/cpu/L1_3_RowSoftmax/3.md: one exp per
# element (exp(x - max) written to the output during the sum pass, then the row scaled by
# 1 / sum in place), rows split across threads the way at::parallel_for splits them
# (grain 16). The original built with -O2; so does this one.
import torch
import torch.nn as nn
from kforge import load_cpp

softmax_cpp_source = r"""
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

extern "C" void row_softmax(const float* src, float* dst, int64_t rows, int64_t cols,
                            int nthreads) {
    parallel_for(0, rows, 16, nthreads, [&](int64_t r_begin, int64_t r_end) {
        for (int64_t r = r_begin; r < r_end; ++r) {
            const float* row = src + r * cols;
            float* out = dst + r * cols;

            float row_max = row[0];
            for (int64_t j = 1; j < cols; ++j) {
                row_max = std::max(row_max, row[j]);
            }

            float sum = 0.0f;
            for (int64_t j = 0; j < cols; ++j) {
                const float e = std::exp(row[j] - row_max);
                out[j] = e;
                sum += e;
            }

            const float inv_sum = 1.0f / sum;
            for (int64_t j = 0; j < cols; ++j) {
                out[j] *= inv_sum;
            }
        }
    });
}
"""

softmax_ext = load_cpp(softmax_cpp_source, name="kf_raw_row_softmax_cpu_t3",
                       extra_cflags=["-O2", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            raise RuntimeError("row_softmax: expected a 2-D tensor")
        input = x.contiguous()
        output = torch.empty_like(input)
        softmax_ext.row_softmax(input, output, input.size(0), input.size(1),
                                torch.get_num_threads())
        return output
