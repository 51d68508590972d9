# Candidate (turn 2 of every CPU fault task): a correct C++ elementwise add.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
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
"""

ext = load_inline(name="fault_good_add", cpp_sources=cpp_source, functions=["add"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add(a, b)
