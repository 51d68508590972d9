# problem: problems/level1/1_ReLU.py
# expect: incorrect
# catches: value_mismatch
# why: KernelBench's allocator-reuse hole: the kernel returns torch::empty_like, never written, hoping its memory is the reference's freed output (kforge keeps the reference output alive while the candidate runs)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_fwd: float32 expected");
    return torch::empty_like(x);
}
"""

ext = load_inline(name="adv_uninit_after_reference", cpp_sources=cpp_src,
                  functions=["relu_fwd"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_fwd(x)
