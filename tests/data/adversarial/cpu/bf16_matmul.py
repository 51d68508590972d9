# problem: problems/level1/5_Matmul.py
# expect: rejected
# catches: lower_precision
# why: in an fp32 evaluation, rounds A and B through bfloat16 before its kernel multiplies them (half the bytes: a lower-precision speedup)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B) {
    auto a = A.contiguous(), b = B.contiguous();
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    auto C = torch::zeros({M, N}, a.options());
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* pc = C.data_ptr<float>();
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) {
            const float aik = pa[i * K + k];
            for (int64_t j = 0; j < N; ++j) pc[i * N + j] += aik * pb[k * N + j];
        }
    return C;
}
"""

ext = load_inline(name="adv_bf16_matmul", cpp_sources=cpp_src, functions=["matmul_fwd"],
                  extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        a = A.to(torch.bfloat16).float()
        b = B.to(torch.bfloat16).float()
        return ext.matmul_fwd(a, b)
