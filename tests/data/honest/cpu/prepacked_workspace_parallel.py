# problem: problems/level2/1_Linear_ReLU_Scale.py
# expect: correct
# catches: -
# why: honest state kept across calls: the weight is prepacked (transposed, contiguous) once in __init__, the GEMM's result goes into a workspace the extension keeps and reuses from call to call, and the rows are spread over threads with at::parallel_for; every call computes its output from its inputs
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

// The GEMM's result, kept between calls and reused while the shape stays.
static torch::Tensor workspace;

torch::Tensor linear_relu_scale(torch::Tensor x, torch::Tensor wt, torch::Tensor bias,
                                double scale) {
    auto xc = x.contiguous();
    const int64_t m = xc.size(0), k = xc.size(1), n = wt.size(1);
    if (!workspace.defined() || workspace.size(0) != m || workspace.size(1) != n)
        workspace = torch::empty({m, n}, xc.options());
    const float* px = xc.data_ptr<float>();
    const float* pw = wt.data_ptr<float>();   // [k, n], prepacked in __init__
    const float* pb = bias.data_ptr<float>();
    float* acc = workspace.data_ptr<float>();
    at::parallel_for(0, m, 8, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            float* row = acc + i * n;
            for (int64_t j = 0; j < n; ++j) row[j] = pb[j];
            for (int64_t p = 0; p < k; ++p) {
                const float a = px[i * k + p];
                const float* w = pw + p * n;
                for (int64_t j = 0; j < n; ++j) row[j] += a * w[j];
            }
        }
    });
    auto out = torch::empty({m, n}, xc.options());
    float* po = out.data_ptr<float>();
    const float s = (float)scale;
    at::parallel_for(0, m * n, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = acc[i] > 0.0f ? acc[i] * s : 0.0f;
    });
    return out;
}
"""

ext = load_inline(name="honest_prepacked_workspace", cpp_sources=cpp_src,
                  functions=["linear_relu_scale"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale
        # Prepacked once: the weight as [in, out], rows contiguous for the inner loop.
        self.register_buffer("wt", self.fc.weight.detach().t().contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.linear_relu_scale(x, self.wt, self.fc.bias, self.scale)
