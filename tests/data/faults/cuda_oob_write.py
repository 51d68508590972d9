# GPU fault candidate: the kernel takes the row stride in the wrong unit, so from row 1 on
# it writes gigabytes past the end of its output (an out-of-bounds write far enough to
# fault: an illegal memory access).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_rows_kernel(const float* a, const float* b, float* out, int64_t rows,
                                int64_t cols, int64_t row_stride) {
    int64_t r = blockIdx.x, c = threadIdx.x;
    for (; c < cols; c += blockDim.x)
        out[r * row_stride + c] = a[r * cols + c] + b[r * cols + c];
}

torch::Tensor add_rows_cuda(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    const int64_t rows = ac.size(0), cols = ac.size(1);
    const int64_t row_stride = cols << 24;  // meant: out.stride(0)
    add_rows_kernel<<<(int)rows, 256>>>(ac.data_ptr<float>(), bc.data_ptr<float>(),
        out.data_ptr<float>(), rows, cols, row_stride);
    return out;
}
"""

cpp_source = "torch::Tensor add_rows_cuda(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="fault_cuda_oob_write", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_rows_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_rows_cuda(a, b)
