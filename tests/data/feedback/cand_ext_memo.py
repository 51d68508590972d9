# Candidate: cand_ext_add.py's extension (the same load_inline call, so the same build),
# and after the load it says which torch.utils.cpp_extension it got and whether setuptools
# (which the real one imports) is loaded: the runner's load memo seen from the inside
# (feedback_fastbuild.py).
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext_source = r"""
#include <torch/extension.h>

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.sizes() == b.sizes(), "size mismatch");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    const float *pa = ac.data_ptr<float>();
    const float *pb = bc.data_ptr<float>();
    float *po = out.data_ptr<float>();
    for (int64_t i = 0, n = ac.numel(); i < n; ++i)
        po[i] = pa[i] + pb[i];
    return out;
}

torch::Tensor crash(torch::Tensor a) {
    volatile int *p = nullptr;
    *p = 1;
    return a;
}

torch::Tensor spin(torch::Tensor a) {
    volatile unsigned long n = 0;
    for (;;)
        n = n + 1;
    return a;
}
"""

ext = load_inline(name="kforge_test_ext", cpp_sources=ext_source,
                  functions=["add", "crash", "spin"], extra_cflags=["-O2"], verbose=False)


print("memo-probe cpp_extension=%s setuptools=%s" % (
    type(sys.modules["torch.utils.cpp_extension"]).__name__, "setuptools" in sys.modules))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add(a, b)
