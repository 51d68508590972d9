# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: no_custom_kernel
# why: on a CUDA evaluation, builds only a C++ extension (no __global__ kernel): forward copies the input to the host, rectifies it there with a CPU loop and copies it back
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
torch::Tensor relu_host(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* s = in.data_ptr<float>();
    float* d = out.data_ptr<float>();
    for (int64_t i = 0; i < in.numel(); ++i) d[i] = s[i] > 0.0f ? s[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="adv_cu_host_only", cpp_sources=cpp_src, functions=["relu_host"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_host(x.cpu()).to(x.device)
