# GPU candidate: a CUDA elementwise add through load_inline (as in KernelBench's one-shot
# example). The same extension also has a kernel that writes far out of bounds, used by
# cand_cuda_oob.py; both files carry identical sources so one build serves both.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i];
}

__global__ void oob_kernel(float* out) {
    out[(int64_t)1 << 40] = 1.0f;
}

torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    int64_t n = ac.numel();
    const int block = 256;
    const int grid = (int)((n + block - 1) / block);
    add_kernel<<<grid, block>>>(ac.data_ptr<float>(), bc.data_ptr<float>(),
                                out.data_ptr<float>(), n);
    return out;
}

torch::Tensor oob_cuda(torch::Tensor a) {
    auto out = torch::empty_like(a);
    oob_kernel<<<1, 1>>>(out.data_ptr<float>());
    cudaError_t err = cudaDeviceSynchronize();
    TORCH_CHECK(err == cudaSuccess, "CUDA error: ", cudaGetErrorString(err));
    return out;
}
"""

cpp_source = r"""
torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);
torch::Tensor oob_cuda(torch::Tensor a);
"""

ext = load_inline(name="kforge_test_cuda_ext", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_cuda", "oob_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_cuda(a, b)
