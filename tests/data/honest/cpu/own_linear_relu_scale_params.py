# problem: problems/level2/1_Linear_ReLU_Scale.py
# expect: correct
# catches: -
# why: honest fused GEMM+bias+ReLU+scale; allocates its output with torch.empty, uses .contiguous() and .view(), and reads self.fc.weight/self.fc.bias without calling self.fc
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <algorithm>

// out (batch x out_f) is allocated by the caller; w is (out_f x in_f) row-major.
void linear_relu_scale_into(torch::Tensor x, torch::Tensor w, torch::Tensor b,
                            double scale, torch::Tensor out) {
    TORCH_CHECK(x.is_contiguous() && w.is_contiguous() && b.is_contiguous() &&
                out.is_contiguous(), "contiguous tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 expected");
    const int64_t batch = x.size(0), in_f = x.size(1), out_f = w.size(0);
    TORCH_CHECK(w.size(1) == in_f && b.numel() == out_f, "shape mismatch");
    TORCH_CHECK(out.numel() == batch * out_f, "output size mismatch");
    const float* px = x.data_ptr<float>();
    const float* pw = w.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const float s = static_cast<float>(scale);
    for (int64_t i = 0; i < batch; ++i) {
        const float* xr = px + i * in_f;
        for (int64_t o = 0; o < out_f; ++o) {
            const float* wr = pw + o * in_f;
            float acc = 0.0f;
            for (int64_t k = 0; k < in_f; ++k) acc += xr[k] * wr[k];
            po[i * out_f + o] = std::max(acc + pb[o], 0.0f) * s;
        }
    }
}
"""

ext = load_inline(name="hon_linear_relu_scale_params", cpp_sources=cpp_src,
                  functions=["linear_relu_scale_into"], extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)   # parameters only: never called
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.contiguous().view(-1, x.shape[-1])
        w = self.fc.weight.contiguous()
        b = self.fc.bias.contiguous()
        out = torch.empty(x2.shape[0], w.shape[0], dtype=x.dtype, device=x.device)
        ext.linear_relu_scale_into(x2, w, b, self.scale, out)
        return out.view(*x.shape[:-1], w.shape[0])
