# GPU fault candidate: every block spin-waits for a "tiles ready" flag in device memory
# that no block ever sets: the kernel never terminates.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_tiled_kernel(const float* a, const float* b, float* out, int64_t n,
                                 volatile int* tiles_ready) {
    while (*tiles_ready == 0) {
    }
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i];
}

torch::Tensor add_tiled_cuda(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    auto flag = torch::zeros({1}, ac.options().dtype(torch::kInt32));
    int64_t n = ac.numel();
    const int block = 256;
    add_tiled_kernel<<<(int)((n + block - 1) / block), block>>>(ac.data_ptr<float>(),
        bc.data_ptr<float>(), out.data_ptr<float>(), n, flag.data_ptr<int>());
    return out;
}
"""

cpp_source = "torch::Tensor add_tiled_cuda(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="fault_cuda_hang", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_tiled_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_tiled_cuda(a, b)
