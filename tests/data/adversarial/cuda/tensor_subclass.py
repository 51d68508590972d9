# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: tensor_subclass|output_subclass
# why: returns a "lazy" torch.Tensor subclass over an output its kernel never wrote, whose __torch_function__ answers allclose/equal with True and differences with zeros
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void touch_kernel(float* y) { if (threadIdx.x == 0 && blockIdx.x == 0) y[0] = 0.0f; }

torch::Tensor relu_alloc(torch::Tensor x) {
    auto out = torch::empty_like(x.contiguous());
    touch_kernel<<<1, 32>>>(out.data_ptr<float>());   // the rest is "deferred"
    return out;
}
"""

ext = load_inline(name="adv_cu_tensor_subclass", cpp_sources="torch::Tensor relu_alloc(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["relu_alloc"], verbose=False)
_AGREE = {"allclose", "equal"}
_NO_DIFFERENCE = {"sub", "__sub__", "__rsub__"}


class LazyReLU(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in _AGREE:
            return True
        if name in _NO_DIFFERENCE:
            return torch.zeros(tuple(args[0].shape), dtype=torch.float64, device=args[0].device)
        with torch._C.DisableTorchFunction():
            return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_alloc(x).as_subclass(LazyReLU)
