# problem: problems/level1/5_Matmul.py
# expect: incorrect
# catches: value_mismatch
# why: KernelBench's result-reuse test, our own version (the allocator hole behind the Sakana report): returns torch::empty of the output's shape, never written, hoping the caching allocator hands back freed memory that still holds the reference's output; kforge keeps the reference output alive while the candidate runs
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void noop_kernel(float* c) { }

torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B) {
    auto C = torch::empty({A.size(0), B.size(1)}, A.options());
    noop_kernel<<<1, 1>>>(C.data_ptr<float>());
    return C;
}
"""

ext = load_inline(name="adv_cu_result_reuse", cpp_sources="torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=cuda_src, functions=["matmul_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return ext.matmul_fwd(A, B)
