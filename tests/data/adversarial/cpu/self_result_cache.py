# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: rejected
# catches: cached_output
# why: keeps the last output in self, keyed by a cheap fingerprint of the inputs, and replays it when the same inputs come again (every timed call after the first)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    auto xc = x.contiguous(), yc = y.contiguous(), zc = z.contiguous();
    auto out = torch::empty_like(xc);
    const float* px = xc.data_ptr<float>();
    const float* py = yc.data_ptr<float>();
    const float* pz = zc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) po[i] = std::tanh(px[i] + py[i]) * pz[i];
    return out;
}
"""

ext = load_inline(name="adv_self_result_cache", cpp_sources=cpp_src,
                  functions=["add_tanh_mul"], extra_cflags=["-O2"], verbose=False)


def _fingerprint(*ts):
    return tuple((t.data_ptr(), tuple(t.shape), float(t.view(-1)[0]), float(t.view(-1)[-1]))
                 for t in ts)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._last_key = None
        self._last_out = None

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        key = _fingerprint(x, y, z)
        if key == self._last_key:
            return self._last_out
        out = ext.add_tanh_mul(x, y, z)
        self._last_key, self._last_out = key, out
        return out
