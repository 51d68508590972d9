import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

bias_relu_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

// One pass over x: the add and the clamp happen while the row is in registers.
torch::Tensor bias_relu_forward(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.dim() == 2 && bias.dim() == 1 && x.size(1) == bias.size(0),
                "bias_relu_forward: expected x [rows, features] and bias [features]");
    TORCH_CHECK(x.scalar_type() == torch::kFloat && bias.scalar_type() == torch::kFloat,
                "bias_relu_forward: expected float32 tensors");
    torch::Tensor xc = x.contiguous();
    torch::Tensor bc = bias.contiguous();
    torch::Tensor out = torch::empty_like(xc);
    const int64_t cols = xc.size(1);
    const float* px = xc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, xc.size(0), 16, [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r) {
            const float* row = px + r * cols;
            float* dst = po + r * cols;
            for (int64_t c = 0; c < cols; ++c) {
                const float v = row[c] + pb[c];
                dst[c] = v > 0.0f ? v : 0.0f;
            }
        }
    });
    return out;
}
"""

bias_relu_extension = load_inline(
    name="example_bias_relu_cpu",
    cpp_sources=bias_relu_cpp_source,
    functions=["bias_relu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return bias_relu_extension.bias_relu_forward(x, self.bias)
