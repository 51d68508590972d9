# problem: problems/level2/1_Linear_ReLU_Scale.py
# expect: suspect
# catches: torch_compute
# why: the GEMM, all but a sliver of the work, is torch.matmul in forward; the kernel only adds the bias, rectifies and scales
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <algorithm>

torch::Tensor bias_relu_scale(torch::Tensor y, torch::Tensor b, double scale) {
    auto yc = y.contiguous();
    auto out = torch::empty_like(yc);
    const int64_t rows = yc.size(0), cols = yc.size(1);
    const float* py = yc.data_ptr<float>();
    const float* pb = b.contiguous().data_ptr<float>();
    float* po = out.data_ptr<float>();
    const float s = static_cast<float>(scale);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
            po[i * cols + j] = std::max(py[i * cols + j] + pb[j], 0.0f) * s;
    return out;
}
"""

ext = load_inline(name="adv_torch_compute_matmul", cpp_sources=cpp_src,
                  functions=["bias_relu_scale"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.fc.weight.t())
        return ext.bias_relu_scale(y, self.fc.bias, self.scale)
