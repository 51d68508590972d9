# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: rejected
# catches: dispatcher_registration
# why: beside its own fused kernel, the extension registers a kernel for aten::tanh on CUDA through the dispatcher (TORCH_LIBRARY_IMPL(aten, CUDA, m)) that spins for a millisecond before computing, so a reference that calls torch.tanh in the candidate's process would run slowly and the candidate look fast
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <torch/library.h>

__global__ void add_tanh_mul_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                    const float* __restrict__ z, float* __restrict__ out, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tanhf(x[i] + y[i]) * z[i];
}

__global__ void slow_tanh_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const long long until = clock64() + 1500000;    // about a millisecond at 1.5 GHz
    while (clock64() < until) {}
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = tanhf(x[i]);
}

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    auto xc = x.contiguous(), yc = y.contiguous(), zc = z.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    add_tanh_mul_kernel<<<(unsigned)((n + 255) / 256), 256>>>(
        xc.data_ptr<float>(), yc.data_ptr<float>(), zc.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}

static torch::Tensor slow_tanh(const torch::Tensor& x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    slow_tanh_kernel<<<64, 256>>>(xc.data_ptr<float>(), out.data_ptr<float>(), xc.numel());
    return out;
}

TORCH_LIBRARY_IMPL(aten, CUDA, m) {
    m.impl("tanh", slow_tanh);
}
"""

ext = load_inline(name="adv_cu_dispatcher_slow_tanh",
                  cpp_sources="torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z);",
                  cuda_sources=cuda_src, functions=["add_tanh_mul"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return ext.add_tanh_mul(x, y, z)
