# Our own candidate for KernelBench level1/23_Softmax (4096 rows of 393216): one block
# per row, a max pass and a sum pass (block reductions through warp shuffles and shared
# memory), then the write pass.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cfloat>

constexpr int THREADS = 1024;

__device__ float block_reduce(float v, bool is_max) {
    __shared__ float partial[32];
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_down_sync(0xffffffff, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x >> 5) ? partial[lane] : (is_max ? -FLT_MAX : 0.0f);
        for (int off = 16; off > 0; off >>= 1) {
            const float o = __shfl_down_sync(0xffffffff, v, off);
            v = is_max ? fmaxf(v, o) : v + o;
        }
        if (lane == 0) partial[0] = v;
    }
    __syncthreads();
    v = partial[0];
    __syncthreads();
    return v;
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
    const float* xr = x + (int64_t)blockIdx.x * cols;
    float* yr = y + (int64_t)blockIdx.x * cols;
    float m = -FLT_MAX;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
    s = block_reduce(s, false);
    const float inv = 1.0f / s;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
}

torch::Tensor softmax_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "softmax_fwd: 2-D CUDA float32");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    softmax_rows<<<(unsigned)in.size(0), THREADS>>>(in.data_ptr<float>(), out.data_ptr<float>(), in.size(1));
    return out;
}"""

ext = load_inline(name="kbc_softmax_rows", cpp_sources="torch::Tensor softmax_fwd(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["softmax_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_fwd(x)
