# GPU fault candidate: the extension keeps a 1 GiB scratch buffer per tile in a static
# cache and never frees it, and there are thousands of tiles: device out of memory.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <vector>

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i];
}

static std::vector<torch::Tensor> scratch_cache;

torch::Tensor add_scratch_cuda(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    int64_t n = ac.numel();
    for (int64_t tile = 0; tile < n; ++tile)  // meant: one buffer, reused by every tile
        scratch_cache.push_back(torch::empty({(int64_t)1 << 28}, ac.options()));
    auto out = torch::empty_like(ac);
    const int block = 256;
    add_kernel<<<(int)((n + block - 1) / block), block>>>(ac.data_ptr<float>(),
        bc.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

cpp_source = "torch::Tensor add_scratch_cuda(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="fault_cuda_oom", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_scratch_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_scratch_cuda(a, b)
