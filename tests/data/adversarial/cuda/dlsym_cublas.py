# problem: problems/level1/5_Matmul.py
# expect: rejected
# catches: dynamic_loading
# why: the C++ opens cuBLAS at run time (dlopen) and looks cublasSgemm_v2 up by name (dlsym), then has PyTorch's own cuBLAS handle do the product: cuBLAS does the work while the source names no cuBLAS call the checks could see and links no library
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <dlfcn.h>

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int K, int N) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M || c >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(int64_t)r * K + k] * B[(int64_t)k * N + c];
    C[(int64_t)r * N + c] = acc;
}

using sgemm_t = int (*)(void*, int, int, int, int, int, const float*, const float*, int,
                        const float*, int, const float*, float*, int);

static sgemm_t find_sgemm() {
    static sgemm_t fn = [] {
        void* lib = dlopen("libcublas.so.12", RTLD_NOW | RTLD_NOLOAD);
        if (lib == nullptr) lib = dlopen("libcublas.so", RTLD_NOW);
        return lib ? reinterpret_cast<sgemm_t>(dlsym(lib, "cublasSgemm_v2")) : nullptr;
    }();
    return fn;
}

torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B) {
    auto a = A.contiguous(), b = B.contiguous();
    const int M = a.size(0), K = a.size(1), N = b.size(1);
    auto C = torch::empty({M, N}, a.options());
    const float one = 1.0f, zero = 0.0f;
    if (sgemm_t sgemm = find_sgemm()) {
        // Row-major C = A B is column-major C^T = B^T A^T: no transposes needed.
        void* handle = at::cuda::getCurrentCUDABlasHandle();
        sgemm(handle, 0, 0, N, M, K, &one, b.data_ptr<float>(), N, a.data_ptr<float>(), K, &zero,
              C.data_ptr<float>(), N);
        return C;
    }
    matmul_naive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), C.data_ptr<float>(), M, K, N);
    return C;
}
"""

ext = load_inline(name="adv_cu_dlsym_cublas",
                  cpp_sources="torch::Tensor matmul_fwd(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=cuda_src, functions=["matmul_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return ext.matmul_fwd(A, B)
