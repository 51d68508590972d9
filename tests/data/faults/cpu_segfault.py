# Fault candidate: the kernel reads a bias table through a pointer that was never set
# (a null dereference: SIGSEGV).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
const float *bias_table = nullptr;  // set by an init function that is never called

torch::Tensor add_bias(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    const float *pa = ac.data_ptr<float>();
    const float *pb = bc.data_ptr<float>();
    float *po = out.data_ptr<float>();
    for (int64_t i = 0, n = ac.numel(); i < n; ++i)
        po[i] = pa[i] + pb[i] + bias_table[i & 255];
    return out;
}
"""

ext = load_inline(name="fault_segfault", cpp_sources=cpp_source, functions=["add_bias"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_bias(a, b)
