# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: tensor_subclass
# why: returns a "lazy" torch.Tensor subclass whose __torch_function__ answers allclose/equal with True and differences with zeros, so an output the kernel never computed compares equal to anything
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

// Allocates the result; the rectification is "deferred" to when it is needed (never).
torch::Tensor relu_alloc(torch::Tensor x) {
    return torch::empty_like(x.contiguous());
}
"""

ext = load_inline(name="adv_tensor_subclass", cpp_sources=cpp_src, functions=["relu_alloc"],
                  extra_cflags=["-O2"], verbose=False)

_AGREE = {"allclose", "equal"}
_NO_DIFFERENCE = {"sub", "__sub__", "__rsub__"}


class LazyReLU(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in _AGREE:
            return True
        if name in _NO_DIFFERENCE:
            a = args[0]
            return torch.zeros(tuple(a.shape), dtype=torch.float64)
        with torch._C.DisableTorchFunction():
            out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and not isinstance(out, LazyReLU) and \
                out.shape == args[0].shape and name in ("double", "float", "to", "detach"):
            return out.as_subclass(LazyReLU)
        return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_alloc(x).as_subclass(LazyReLU)
