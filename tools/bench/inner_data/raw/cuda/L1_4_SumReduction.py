# Raw build format version of configs/demo_responses/cuda/L1_4_SumReduction/3.md: the reduced
# dimension is split as well as the outputs. A 32 x 8 block covers 32 consecutive `i`
# (coalesced loads) times 8 slices of the `reduce` range; each thread sums its slice and
# the 8 partials per output are combined in shared memory. The outer/reduce/inner split and
# the keepdim output shape are computed in forward.
import torch
import torch.nn as nn
from kforge import load_cuda

sum_cuda_source = r"""
#include <cuda_runtime.h>
#include <cstdint>

constexpr int TILE_I = 32;   // outputs per block along inner (one warp, coalesced)
constexpr int SPLIT_R = 8;   // slices of the reduced dimension per block

__global__ void sum_dim_split_kernel(const float* __restrict__ x, float* __restrict__ y,
                                     int64_t outer, int64_t reduce, int64_t inner) {
    __shared__ float partial[SPLIT_R][TILE_I];
    const int tx = threadIdx.x;               // 0..TILE_I-1
    const int ty = threadIdx.y;               // 0..SPLIT_R-1
    const int64_t o = blockIdx.y;
    const int64_t i = (int64_t)blockIdx.x * TILE_I + tx;

    float acc = 0.0f;
    if (i < inner) {
        const float* base = x + o * reduce * inner + i;
        for (int64_t r = ty; r < reduce; r += SPLIT_R) acc += base[r * inner];
    }
    partial[ty][tx] = acc;
    __syncthreads();

    if (ty == 0 && i < inner) {
        float total = 0.0f;
        #pragma unroll
        for (int s = 0; s < SPLIT_R; ++s) total += partial[s][tx];
        y[o * inner + i] = total;
    }
}

extern "C" void sum_keepdim(const float* src, float* dst, int64_t outer, int64_t reduce,
                            int64_t inner, cudaStream_t stream) {
    const dim3 block(TILE_I, SPLIT_R);
    const dim3 grid((unsigned int)((inner + TILE_I - 1) / TILE_I), (unsigned int)outer);
    sum_dim_split_kernel<<<grid, block, 0, stream>>>(src, dst, outer, reduce, inner);
}
"""

sum_ext = load_cuda(sum_cuda_source, name="kf_raw_sum_reduction_cuda_t3")


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input = x.contiguous()
        ndim = input.dim()
        dim = self.dim + ndim if self.dim < 0 else self.dim
        if not 0 <= dim < ndim:
            raise RuntimeError("sum_keepdim: dim out of range")
        outer = 1
        for d in range(dim):
            outer *= input.size(d)
        inner = 1
        for d in range(dim + 1, ndim):
            inner *= input.size(d)
        reduce = input.size(dim)
        if outer > 65535:
            raise RuntimeError("sum_keepdim: outer extent exceeds gridDim.y")
        out_sizes = list(input.shape)
        out_sizes[dim] = 1
        output = torch.empty(out_sizes, dtype=input.dtype, device=input.device)
        if output.numel() == 0:
            return output
        sum_ext.sum_keepdim(input, output, outer, reduce, inner)
        return output
