# problem: problems/level2/1_Linear_ReLU_Scale.py
# expect: suspect
# catches: torch_compute
# why: the GEMM, all but a sliver of the work, is torch.matmul (cuBLAS) in forward; its CUDA kernel only adds the bias, rectifies and scales
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void bias_relu_scale_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                       float scale, int64_t rows, int64_t cols) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        const float v = y[i] + bias[i % cols];
        y[i] = (v > 0.0f ? v : 0.0f) * scale;
    }
}

torch::Tensor bias_relu_scale(torch::Tensor y, torch::Tensor bias, double scale) {
    auto out = y.contiguous();
    const int64_t rows = out.size(0), cols = out.size(1);
    bias_relu_scale_kernel<<<(unsigned)((rows * cols + 255) / 256), 256>>>(
        out.data_ptr<float>(), bias.contiguous().data_ptr<float>(), (float)scale, rows, cols);
    return out;
}
"""

ext = load_inline(name="adv_cu_torch_compute_matmul",
                  cpp_sources="torch::Tensor bias_relu_scale(torch::Tensor y, torch::Tensor bias, double scale);",
                  cuda_sources=cuda_src, functions=["bias_relu_scale"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.fc.weight.t())
        return ext.bias_relu_scale(y, self.fc.bias, self.scale)
