import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

softmax_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

// Each row in two passes instead of three: the maximum and the sum of exponentials
// are kept together, the sum rescaled whenever the maximum grows.
torch::Tensor row_softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat,
                "row_softmax_forward: expected a float32 matrix");
    torch::Tensor xc = x.contiguous();
    torch::Tensor out = torch::empty_like(xc);
    const int64_t cols = xc.size(1);
    const float* px = xc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, xc.size(0), 8, [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r) {
            const float* row = px + r * cols;
            float* dst = po + r * cols;
            float top = -INFINITY;
            float total = 0.0f;
            for (int64_t c = 0; c < cols; ++c) {
                if (row[c] > top) {
                    total *= std::exp(top - row[c]);
                    top = row[c];
                }
                total += std::exp(row[c] - top);
            }
            const float scale = 1.0f / total;
            for (int64_t c = 0; c < cols; ++c) {
                dst[c] = std::exp(row[c] - top) * scale;
            }
        }
    });
    return out;
}
"""

softmax_extension = load_inline(
    name="example_row_softmax_cpu",
    cpp_sources=softmax_cpp_source,
    functions=["row_softmax_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_extension.row_softmax_forward(x)
