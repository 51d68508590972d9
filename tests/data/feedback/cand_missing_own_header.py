"""A candidate whose own C++ includes a header that does not exist (pybind11/ is in its
path, as in a mistaken include). Its build really fails with "No such file or directory",
but the environment is fine: a compile_error, the model's to fix."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <pybind11/kforge_no_such_header.h>
torch::Tensor add_fwd(torch::Tensor a, torch::Tensor b) { return a + b; }
"""

ext = load_inline(name="kforge_test_missing_own_header", cpp_sources=cpp_source,
                  functions=["add_fwd"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add_fwd(a, b)
