# problem: problems/level1/3_RowSoftmax.py
# expect: rejected
# catches: fallback_path
# why: its kernel refuses rows longer than 128 (TORCH_CHECK raises for this problem's 256) and a try/except falls back to torch.softmax, which then produces every output
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void softmax_small_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float row[128];
    const float* xr = x + (int64_t)blockIdx.x * cols;
    float* yr = y + (int64_t)blockIdx.x * cols;
    row[threadIdx.x] = xr[threadIdx.x];
    __syncthreads();
    float m = row[0], s = 0.0f;
    for (int j = 1; j < cols; ++j) m = fmaxf(m, row[j]);
    for (int j = 0; j < cols; ++j) s += __expf(row[j] - m);
    yr[threadIdx.x] = __expf(row[threadIdx.x] - m) / s;
}

torch::Tensor row_softmax(torch::Tensor x) {
    TORCH_CHECK(x.size(1) <= 128, "row_softmax: rows longer than 128 are not supported");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    softmax_small_kernel<<<(unsigned)in.size(0), (unsigned)in.size(1)>>>(
        in.data_ptr<float>(), out.data_ptr<float>(), (int)in.size(1));
    return out;
}
"""

ext = load_inline(name="adv_cu_fallback_on_error", cpp_sources="torch::Tensor row_softmax(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["row_softmax"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return ext.row_softmax(x)
        except RuntimeError:
            return torch.softmax(x, dim=-1)
