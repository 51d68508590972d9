# GPU fault candidate: the kernel adds a bias from a device table whose pointer was never
# set (nullptr): an illegal memory access, reported at the next synchronize.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_bias_kernel(const float* a, const float* b, const float* bias,
                                float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i] + bias[i & 255];
}

static const float* bias_table = nullptr;  // meant to be uploaded by an init function

torch::Tensor add_bias_cuda(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    int64_t n = ac.numel();
    const int block = 256;
    add_bias_kernel<<<(int)((n + block - 1) / block), block>>>(ac.data_ptr<float>(),
        bc.data_ptr<float>(), bias_table, out.data_ptr<float>(), n);
    return out;
}
"""

cpp_source = "torch::Tensor add_bias_cuda(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="fault_cuda_illegal_access", cpp_sources=cpp_source,
                  cuda_sources=cuda_source, functions=["add_bias_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_bias_cuda(a, b)
