# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: no_model_new
# why: the class is named ModelNw: nothing named ModelNew to evaluate (a kernel that cannot be judged must not count)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_fwd: float32 expected");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* s = in.data_ptr<float>();
    float* d = out.data_ptr<float>();
    const int64_t n = in.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] > 0.0f ? s[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="adv_no_model_new", cpp_sources=cpp_src, functions=["relu_fwd"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNw(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_fwd(x)
