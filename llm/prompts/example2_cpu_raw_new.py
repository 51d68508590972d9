import torch
import torch.nn as nn
from kforge import load_cpp

bias_relu_cpp_source = r"""
#include <cstdint>

// One pass over x: the add and the clamp happen while the row is in registers.
extern "C" void bias_relu_forward(const float* __restrict__ x, const float* __restrict__ bias,
                                  float* __restrict__ out, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x + r * cols;
        float* dst = out + r * cols;
        for (int64_t c = 0; c < cols; ++c) {
            const float v = row[c] + bias[c];
            dst[c] = v > 0.0f ? v : 0.0f;
        }
    }
}
"""

bias_relu_ops = load_cpp(bias_relu_cpp_source, name="example_bias_relu_cpu",
                         extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        bias_relu_ops.bias_relu_forward(x, self.bias.detach().contiguous(), out, x.size(0), x.size(1))
        return out
