# problem: problems/level2/1_Linear_ReLU_Scale.py
# expect: correct
# catches: -
# why: honest state kept across calls on the GPU: the weight is prepacked (transposed, contiguous) once in __init__, the GEMM's result goes into a workspace the extension keeps and reuses from call to call, and every call computes its output from its inputs on the current stream
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// acc[i, j] = bias[j] + sum_p x[i, p] * wt[p, j]   (wt is [k, n], prepacked)
__global__ void gemm_bias(const float* x, const float* wt, const float* b, float* acc,
                          int m, int k, int n) {
    const int i = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= n) return;
    float s = b[j];
    for (int p = 0; p < k; ++p) s += x[i * k + p] * wt[p * n + j];
    acc[i * n + j] = s;
}

__global__ void relu_scale(const float* acc, float* out, float s, int total) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) out[i] = acc[i] > 0.0f ? acc[i] * s : 0.0f;
}

// The GEMM's result, kept between calls and reused while the shape stays.
static torch::Tensor workspace;

torch::Tensor linear_relu_scale(torch::Tensor x, torch::Tensor wt, torch::Tensor bias, double scale) {
    auto xc = x.contiguous();
    const int m = (int)xc.size(0), k = (int)xc.size(1), n = (int)wt.size(1);
    if (!workspace.defined() || workspace.size(0) != m || workspace.size(1) != n ||
        workspace.device() != xc.device())
        workspace = torch::empty({m, n}, xc.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    dim3 grid((n + 127) / 128, m);
    gemm_bias<<<grid, 128, 0, stream>>>(xc.data_ptr<float>(), wt.data_ptr<float>(),
                                        bias.data_ptr<float>(), workspace.data_ptr<float>(), m, k, n);
    auto out = torch::empty({m, n}, xc.options());
    relu_scale<<<(m * n + 255) / 256, 256, 0, stream>>>(workspace.data_ptr<float>(),
                                                         out.data_ptr<float>(), (float)scale, m * n);
    return out;
}
"""

ext = load_inline(name="honest_cu_prepacked_workspace",
                  cpp_sources="torch::Tensor linear_relu_scale(torch::Tensor x, torch::Tensor wt, "
                              "torch::Tensor bias, double scale);",
                  cuda_sources=cuda_src, functions=["linear_relu_scale"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale
        # Prepacked once: the weight as [in, out], so that threads of a warp read
        # neighbouring columns.
        self.register_buffer("wt", self.fc.weight.detach().t().contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.linear_relu_scale(x, self.wt, self.fc.bias, self.scale)
