# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: suspect
# catches: timers_disagree|side_stream_suspected
# config: eval.static_checks=false
# why: work outside the timed window: with the static checks off, each call launches its kernel on the current stream and then a 2 ms spin on a stream of its own that the CUDA events never see; every synchronize waits for it, so the judge's clock over each of its blocks exceeds what its events account for by far more than the reference's blocks do
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void add_tanh_mul_kernel(const float* x, const float* y, const float* z, float* o, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = tanhf(x[i] + y[i]) * z[i];
}

__global__ void spin_kernel(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}

static cudaStream_t side = nullptr;

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    auto xc = x.contiguous(), yc = y.contiguous(), zc = z.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    add_tanh_mul_kernel<<<(unsigned)((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), yc.data_ptr<float>(), zc.data_ptr<float>(), out.data_ptr<float>(), n);
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    spin_kernel<<<1, 1, 0, side>>>((long long)clock_khz * 2);   // about 2 ms
    return out;
}
"""

ext = load_inline(name="adv_cu_side_stream_tail",
                  cpp_sources="torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z);",
                  cuda_sources=cuda_src, functions=["add_tanh_mul"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return ext.add_tanh_mul(x, y, z)
