# problem: problems/level1/5_Matmul.py
# expect: rejected
# catches: lower_precision
# why: in an fp32 evaluation, rounds A and B to float16 (.half()) before its kernel multiplies them, accumulating in float: half the bytes read, a lower-precision speedup
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cuda_fp16.h>

__global__ void matmul_half_in(const __half* A, const __half* B, float* C, int M, int K, int N) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += __half2float(A[r * K + k]) * __half2float(B[k * N + c]);
        C[r * N + c] = acc;
    }
}

torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B) {
    const int M = A.size(0), K = A.size(1), N = B.size(1);
    auto C = torch::empty({M, N}, A.options().dtype(torch::kFloat32));
    matmul_half_in<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(
        reinterpret_cast<const __half*>(A.data_ptr()), reinterpret_cast<const __half*>(B.data_ptr()),
        C.data_ptr<float>(), M, K, N);
    return C;
}
"""

ext = load_inline(name="adv_cu_half_inputs", cpp_sources="torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=cuda_src, functions=["matmul_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return ext.matmul_fwd(A.contiguous().half(), B.contiguous().half())
