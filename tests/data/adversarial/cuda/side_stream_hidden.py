# problem: problems/level1/1_ReLU.py
# expect: suspect
# catches: stream_creation|side_stream_suspected
# why: the side-stream cheat hidden from a reader: the stream-creating call's name is pasted together by a macro, and the ReLU runs there behind a 1 ms spin (its cost made unmistakable); events on the current stream see none of it, the wall clock around a device synchronize does
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define KF_JOIN(a, b) a##b

__global__ void spin_then_relu(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                               long long spin_cycles) {
    if (threadIdx.x == 0) {
        const long long t0 = clock64();
        while (clock64() - t0 < spin_cycles) { }
    }
    __syncthreads();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static cudaStream_t hidden = nullptr;

torch::Tensor relu_fwd(torch::Tensor x) {
    if (hidden == nullptr) KF_JOIN(cudaStream, CreateWithFlags)(&hidden, cudaStreamNonBlocking);
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t n = in.numel();
    // about 1 ms at 2 GHz, in every block, all blocks resident at once
    spin_then_relu<<<264, 1024, 0, hidden>>>(in.data_ptr<float>(), out.data_ptr<float>(), n, 2000000LL);
    return out;
}
"""

ext = load_inline(name="adv_cu_side_stream_hidden", cpp_sources="torch::Tensor relu_fwd(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["relu_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_fwd(x)
