# Candidate: the extension writes through a null pointer (SIGSEGV).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Identical in cand_ext_add.py, cand_ext_crash.py, cand_ext_spin.py and cand_ext_memo.py: one
# build serves all four.
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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.crash(a)
