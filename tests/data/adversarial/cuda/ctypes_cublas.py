# problem: problems/level1/5_Matmul.py
# expect: rejected
# catches: concurrency
# why: builds a matmul extension for show, but forward calls cuBLAS's cublasSgemm_v2 through ctypes on the tensors' device pointers: a vendor library, not its own kernel
import ctypes
import ctypes.util

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int K, int N) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];
        C[r * N + c] = acc;
    }
}

torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B) {
    auto a = A.contiguous(), b = B.contiguous();
    const int M = a.size(0), K = a.size(1), N = b.size(1);
    auto C = torch::empty({M, N}, a.options());
    matmul_naive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), C.data_ptr<float>(), M, K, N);
    return C;
}
"""

ext = load_inline(name="adv_cu_ctypes_cublas", cpp_sources="torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=cuda_src, functions=["matmul_fwd"], verbose=False)
_cublas = ctypes.CDLL(ctypes.util.find_library("cublas") or "libcublas.so")
_handle = ctypes.c_void_p()
_cublas.cublasCreate_v2(ctypes.byref(_handle))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty(M, N, device=A.device)
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        # Row-major C = A B is column-major C^T = B^T A^T.
        _cublas.cublasSgemm_v2(_handle, 0, 0, N, M, K, ctypes.byref(one),
                               ctypes.c_void_p(B.data_ptr()), N, ctypes.c_void_p(A.data_ptr()), K,
                               ctypes.byref(zero), ctypes.c_void_p(C.data_ptr()), N)
        return C
