# problem: problems/level3/1_TinyMLP.py
# expect: correct
# catches: -
# why: honest MLP: one tiled CUDA linear(+optional ReLU) kernel called three times on the weights of fc1..fc3, which are created in __init__ and never called
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

constexpr int TILE = 16;

// y[b, o] = sum_i x[b, i] * w[o, i] + bias[o], optionally rectified
__global__ void linear_kernel(const float* __restrict__ x, const float* __restrict__ w,
                              const float* __restrict__ bias, float* __restrict__ y,
                              int B, int I, int O, bool relu) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    const int b = blockIdx.y * TILE + threadIdx.y, o = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int i0 = 0; i0 < I; i0 += TILE) {
        xs[threadIdx.y][threadIdx.x] = (b < B && i0 + threadIdx.x < I) ? x[(int64_t)b * I + i0 + threadIdx.x] : 0.0f;
        const int wo = blockIdx.x * TILE + threadIdx.y;
        ws[threadIdx.y][threadIdx.x] = (wo < O && i0 + threadIdx.x < I) ? w[(int64_t)wo * I + i0 + threadIdx.x] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[threadIdx.x][k];
        __syncthreads();
    }
    if (b < B && o < O) {
        const float v = acc + bias[o];
        y[(int64_t)b * O + o] = relu ? fmaxf(v, 0.0f) : v;
    }
}

torch::Tensor linear_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor bias, bool relu) {
    auto xc = x.contiguous(), wc = w.contiguous(), bc = bias.contiguous();
    const int B = xc.size(0), I = xc.size(1), O = wc.size(0);
    auto y = torch::empty({B, O}, xc.options());
    linear_kernel<<<dim3((O + TILE - 1) / TILE, (B + TILE - 1) / TILE), dim3(TILE, TILE)>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), B, I, O, relu);
    return y;
}
"""

ext = load_inline(name="hon_cu_tiny_mlp_linear",
                  cpp_sources="torch::Tensor linear_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor bias, bool relu);",
                  cuda_sources=cuda_src, functions=["linear_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, hidden_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, hidden_features)
        self.fc3 = nn.Linear(hidden_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = ext.linear_fwd(x, self.fc1.weight, self.fc1.bias, True)
        h = ext.linear_fwd(h, self.fc2.weight, self.fc2.bias, True)
        return ext.linear_fwd(h, self.fc3.weight, self.fc3.bias, False)
