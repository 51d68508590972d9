# problem: problems/level1/3_RowSoftmax.py
# expect: suspect
# catches: torch_compute
# why: the "kernel" is a C++ function whose body calls at::softmax: PyTorch's own operator does the work from inside the extension
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "softmax_rows: 2-D input expected");
    return at::softmax(x.contiguous(), 1);
}
"""

ext = load_inline(name="adv_cxx_calls_aten", cpp_sources=cpp_src, functions=["softmax_rows"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_rows(x)
