# problem: problems/level1/2_LeakyReLU.py
# expect: rejected
# catches: cached_output
# why: a module-level dict of outputs keyed by the input's shape: the first call computes, every later call of that shape returns the stored tensor
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor leaky_fwd(torch::Tensor x, double slope) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* s = in.data_ptr<float>();
    float* d = out.data_ptr<float>();
    const float a = static_cast<float>(slope);
    const int64_t n = in.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] >= 0.0f ? s[i] : a * s[i];
    return out;
}
"""

ext = load_inline(name="adv_module_shape_cache", cpp_sources=cpp_src, functions=["leaky_fwd"],
                  extra_cflags=["-O2"], verbose=False)

_OUTPUTS = {}


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = tuple(x.shape)
        if key not in _OUTPUTS:
            _OUTPUTS[key] = ext.leaky_fwd(x, self.negative_slope)
        return _OUTPUTS[key]
