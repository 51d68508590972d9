# Raw build format version of configs/demo_responses/cpu/L3_1_TinyMLP/3.md. The hidden
# layers accumulate x[b, k] * Wt[k, :] over a transposed weight (contiguous, vectorising
# inner loop), with ReLU after both; the last layer is computed as out^T = W3 . h2^T, one
# row per output feature. Like the original (turn 3 of a trajectory that never becomes
# correct) it returns out^T, shape (out_features, batch): a shape mismatch, kept on purpose.
# Batch rows (grain 4) and output features (grain 8) are split across threads the way
# at::parallel_for splits them; the transposes are done by torch, as in the original.
import torch
import torch.nn as nn
from kforge import load_cpp

mlp_cpp_source = r"""
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

// out[b, :] = act(bias + sum_k in[b, k] * wt[k, :]) with wt = W^T of shape (in_f, out_f)
static void dense_t(const float* in, const float* wt, const float* bias, float* out,
                    int64_t batch, int64_t in_f, int64_t out_f, bool relu, int nthreads) {
    parallel_for(0, batch, 4, nthreads, [&](int64_t b_begin, int64_t b_end) {
        for (int64_t b = b_begin; b < b_end; ++b) {
            float* __restrict__ acc = out + b * out_f;
            for (int64_t o = 0; o < out_f; ++o) acc[o] = bias[o];
            for (int64_t k = 0; k < in_f; ++k) {
                const float v = in[b * in_f + k];
                const float* __restrict__ w_row = wt + k * out_f;
                for (int64_t o = 0; o < out_f; ++o) acc[o] += v * w_row[o];
            }
            if (relu) {
                for (int64_t o = 0; o < out_f; ++o) acc[o] = std::max(acc[o], 0.0f);
            }
        }
    });
}

// h1, h2: (batch, hidden_f) scratch; pot: out^T, (out_f, batch).
extern "C" void mlp_forward(const float* x, const float* w1t, const float* b1,
                            const float* w2t, const float* b2,
                            const float* pw, const float* pb,
                            float* h1, float* h2, float* pot,
                            int64_t batch, int64_t in_f, int64_t hidden_f, int64_t out_f,
                            int nthreads) {
    dense_t(x, w1t, b1, h1, batch, in_f, hidden_f, true, nthreads);
    dense_t(h1, w2t, b2, h2, batch, hidden_f, hidden_f, true, nthreads);

    // Last layer as out^T = W3 . h2^T: row o of out_t holds output feature o for every sample.
    const float* ph = h2;
    parallel_for(0, out_f, 8, nthreads, [&](int64_t o_begin, int64_t o_end) {
        for (int64_t o = o_begin; o < o_end; ++o) {
            const float* w_row = pw + o * hidden_f;
            for (int64_t b = 0; b < batch; ++b) {
                const float* h_row = ph + b * hidden_f;
                float acc = pb[o];
                for (int64_t k = 0; k < hidden_f; ++k) acc += w_row[k] * h_row[k];
                pot[o * batch + b] = acc;
            }
        }
    });
}
"""

mlp_ext = load_cpp(mlp_cpp_source, name="kf_raw_tiny_mlp_cpu_t3",
                   extra_cflags=["-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, in_features: int, hidden_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, hidden_features)
        self.fc3 = nn.Linear(hidden_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            raise RuntimeError("mlp_forward: expected a 2-D input")
        w1, w2, w3 = self.fc1.weight, self.fc2.weight, self.fc3.weight
        xc = x.contiguous()
        w1t = w1.t().contiguous()
        w2t = w2.t().contiguous()
        w3c = w3.contiguous()
        b1 = self.fc1.bias.contiguous()
        b2 = self.fc2.bias.contiguous()
        b3 = self.fc3.bias.contiguous()
        batch, in_f = xc.size(0), xc.size(1)
        hidden_f, out_f = w1.size(0), w3.size(0)

        h1 = xc.new_empty((batch, hidden_f))
        h2 = xc.new_empty((batch, hidden_f))
        out_t = xc.new_empty((out_f, batch))
        mlp_ext.mlp_forward(xc, w1t, b1, w2t, b2, w3c, b3, h1, h2, out_t,
                            batch, in_f, hidden_f, out_f, torch.get_num_threads())
        return out_t
