# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: exec_eval
# why: finds the harness's reference Model instance among gc.get_objects() (it lives in the same process) and returns its output, passed through a copy kernel so the extension is "used"
import gc

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor copy_fwd(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* s = in.data_ptr<float>();
    float* d = out.data_ptr<float>();
    const int64_t n = in.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return out;
}
"""

ext = load_inline(name="adv_reference_via_gc", cpp_sources=cpp_src, functions=["copy_fwd"],
                  extra_cflags=["-O2"], verbose=False)


def _find_reference(me):
    for obj in gc.get_objects():
        if isinstance(obj, nn.Module) and obj is not me and type(obj).__name__ == "Model":
            return obj
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ref = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._ref is None:
            self._ref = _find_reference(self)
        return ext.copy_fwd(self._ref(x))
