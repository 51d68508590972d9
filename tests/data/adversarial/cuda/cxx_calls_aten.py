# problem: problems/level1/3_RowSoftmax.py
# expect: suspect
# catches: torch_compute
# why: the CUDA source holds a __global__ kernel, but the host function it binds calls at::softmax: PyTorch's own operator does the work from inside the extension, the kernel only copies
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

torch::Tensor row_softmax(torch::Tensor x) {
    auto s = at::softmax(x.contiguous(), 1);
    auto out = torch::empty_like(s);
    const int64_t n = s.numel();
    copy_kernel<<<(unsigned)((n + 255) / 256), 256>>>(s.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(name="adv_cu_cxx_calls_aten", cpp_sources="torch::Tensor row_softmax(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["row_softmax"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.row_softmax(x)
