# Raw build format version of configs/demo_responses/cpu/L2_1_Linear_ReLU_Scale/3.md: the
# product runs over the transposed weight, so the inner loop is the contiguous update
# acc[:] += x[b, k] * Wt[k, :]; the accumulator row starts at the bias, and ReLU and the
# scale are applied when it is written out. Batch rows are split across threads the way
# at::parallel_for splits them (grain 8). The transposed weight is rebuilt by torch on each
# call (weight.t().contiguous()), as in the original.
import torch
import torch.nn as nn
from kforge import load_cpp

fused_cpp_source = r"""
#include <algorithm>
#include <cstdint>
#include <vector>
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

extern "C" void linear_relu_scale(const float* px, const float* pwt, const float* pb,
                                  float* po, int64_t batch, int64_t in_f, int64_t out_f,
                                  double scale, int nthreads) {
    const float s = static_cast<float>(scale);
    parallel_for(0, batch, 8, nthreads, [&](int64_t b_begin, int64_t b_end) {
        std::vector<float> acc(out_f);
        float* __restrict__ a = acc.data();
        for (int64_t b = b_begin; b < b_end; ++b) {
            for (int64_t o = 0; o < out_f; ++o) a[o] = pb[o];
            const float* x_row = px + b * in_f;
            for (int64_t k = 0; k < in_f; ++k) {
                const float xv = x_row[k];
                const float* __restrict__ w_row = pwt + k * out_f;
                for (int64_t o = 0; o < out_f; ++o) {
                    a[o] += xv * w_row[o];
                }
            }
            float* __restrict__ o_row = po + b * out_f;
            for (int64_t o = 0; o < out_f; ++o) {
                o_row[o] = std::max(a[o], 0.0f) * s;
            }
        }
    });
}
"""

fused_ext = load_cpp(fused_cpp_source, name="kf_raw_linear_relu_scale_cpu_t3",
                     extra_cflags=["-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.fc.weight, self.fc.bias
        if x.dim() != 2 or weight.dim() != 2:
            raise RuntimeError("expected 2-D x and weight")
        if x.size(1) != weight.size(1):
            raise RuntimeError("in_features mismatch")
        if bias.numel() != weight.size(0):
            raise RuntimeError("bias size mismatch")
        xc = x.contiguous()
        wt = weight.t().contiguous()          # (in_features, out_features)
        bc = bias.contiguous()
        batch, in_f, out_f = xc.size(0), xc.size(1), wt.size(1)
        out = xc.new_empty((batch, out_f))
        fused_ext.linear_relu_scale(xc, wt, bc, out, batch, in_f, out_f, float(self.scale),
                                    torch.get_num_threads())
        return out
