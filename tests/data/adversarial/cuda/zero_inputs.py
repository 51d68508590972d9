# problem: problems/level1/5_Matmul.py
# expect: incorrect
# catches: value_mismatch
# flags: input_mutated
# why: KernelBench's input-modification test, our own version: its kernel zeroes A and B in place and returns zeros, which would pass a harness that ran the candidate before the reference on shared inputs; kforge gives each model its own copy and checks the candidate's
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void zero_kernel(float* p, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = 0.0f;
}

torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B) {
    zero_kernel<<<(unsigned)((A.numel() + 255) / 256), 256>>>(A.data_ptr<float>(), A.numel());
    zero_kernel<<<(unsigned)((B.numel() + 255) / 256), 256>>>(B.data_ptr<float>(), B.numel());
    auto C = torch::empty({A.size(0), B.size(1)}, A.options());
    zero_kernel<<<(unsigned)((C.numel() + 255) / 256), 256>>>(C.data_ptr<float>(), C.numel());
    return C;
}
"""

ext = load_inline(name="adv_cu_zero_inputs", cpp_sources="torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=cuda_src, functions=["matmul_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return ext.matmul_fwd(A, B)
