# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: rejected
# catches: stream_creation
# why: forward launches its fused kernel (which takes torch's current stream) inside `with torch.cuda.stream(side)` on a stream of its own, and returns without waiting for it
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void add_tanh_mul_kernel(const float* x, const float* y, const float* z, float* o, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = tanhf(x[i] + y[i]) * z[i];
}

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    auto out = torch::empty_like(x);
    const int64_t n = x.numel();
    auto stream = c10::cuda::getCurrentCUDAStream();
    add_tanh_mul_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), z.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(name="adv_cu_side_stream_torch",
                  cpp_sources="torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z);",
                  cuda_sources=cuda_src, functions=["add_tanh_mul"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        x, y, z = x.contiguous(), y.contiguous(), z.contiguous()
        with torch.cuda.stream(self.side):
            out = ext.add_tanh_mul(x, y, z)
        return out
