# kforge soak candidate: ext_segv (C++ extension that writes through a null pointer;
# expected status crashed)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The same source in cand_ext_ok.py and cand_ext_segv.py, and the same text in every task:
# kforge's build cache (keyed by the kernel's text) compiles each of the two files once
# per run (~30-60 s each on 2 cores), and every later turn that gets it is a cache hit.
soak_source = r"""
#include <torch/extension.h>

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.sizes() == b.sizes(), "soak: operand sizes differ");
    auto x = a.contiguous(), y = b.contiguous();
    auto out = torch::empty_like(x);
    const float *px = x.data_ptr<float>(), *py = y.data_ptr<float>();
    float *po = out.data_ptr<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
        po[i] = px[i] + py[i];
    return out;
}

torch::Tensor crash(torch::Tensor a) {
    volatile float *nowhere = nullptr;
    *nowhere = a.numel();
    return a;
}
"""

ext = load_inline(name="kforge_soak_ext", cpp_sources=soak_source, functions=["add", "crash"],
                  extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.crash(a)
