# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: correct
# catches: -
# why: honest fused tanh(x + y) * z, four elements per thread through float4 loads, launched explicitly on torch's current stream (getCurrentCUDAStream is the evaluator's own stream, not a side one)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void add_tanh_mul4(const float4* __restrict__ x, const float4* __restrict__ y,
                              const float4* __restrict__ z, float4* __restrict__ o, int64_t n4) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        const float4 a = x[i], b = y[i], c = z[i];
        o[i] = make_float4(tanhf(a.x + b.x) * c.x, tanhf(a.y + b.y) * c.y,
                           tanhf(a.z + b.z) * c.z, tanhf(a.w + b.w) * c.w);
    }
}

__global__ void add_tanh_mul_tail(const float* x, const float* y, const float* z, float* o, int64_t from, int64_t n) {
    const int64_t i = from + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = tanhf(x[i] + y[i]) * z[i];
}

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    auto xc = x.contiguous(), yc = y.contiguous(), zc = z.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel(), n4 = n / 4;
    auto stream = c10::cuda::getCurrentCUDAStream();
    if (n4 > 0)
        add_tanh_mul4<<<(unsigned)((n4 + 255) / 256), 256, 0, stream>>>(
            reinterpret_cast<const float4*>(xc.data_ptr<float>()), reinterpret_cast<const float4*>(yc.data_ptr<float>()),
            reinterpret_cast<const float4*>(zc.data_ptr<float>()), reinterpret_cast<float4*>(out.data_ptr<float>()), n4);
    if (n > n4 * 4)
        add_tanh_mul_tail<<<1, 256, 0, stream>>>(xc.data_ptr<float>(), yc.data_ptr<float>(), zc.data_ptr<float>(),
                                                out.data_ptr<float>(), n4 * 4, n);
    return out;
}
"""

ext = load_inline(name="hon_cu_current_stream_float4",
                  cpp_sources="torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z);",
                  cuda_sources=cuda_src, functions=["add_tanh_mul"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return ext.add_tanh_mul(x, y, z)
