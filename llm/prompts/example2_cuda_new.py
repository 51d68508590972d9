import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

bias_relu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// One read and one write per element: the add and the clamp are fused.
__global__ void bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                 float* __restrict__ out, int64_t n, int64_t cols) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i] + bias[i % cols];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor bias_relu_forward(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && bias.is_cuda(), "bias_relu_forward: expected CUDA tensors");
    TORCH_CHECK(x.dim() == 2 && bias.dim() == 1 && x.size(1) == bias.size(0),
                "bias_relu_forward: expected x [rows, features] and bias [features]");
    TORCH_CHECK(x.scalar_type() == torch::kFloat && bias.scalar_type() == torch::kFloat,
                "bias_relu_forward: expected float32 tensors");
    torch::Tensor xc = x.contiguous();
    torch::Tensor bc = bias.contiguous();
    torch::Tensor out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) {
        return out;
    }
    const int threads = 256;
    const int64_t wanted = (n + threads - 1) / threads;
    const int blocks = (int)(wanted < 8192 ? wanted : 8192);
    bias_relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), n, xc.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

bias_relu_cpp_declaration = "torch::Tensor bias_relu_forward(torch::Tensor x, torch::Tensor bias);"

bias_relu_extension = load_inline(
    name="example_bias_relu_cuda",
    cpp_sources=bias_relu_cpp_declaration,
    cuda_sources=bias_relu_cuda_source,
    functions=["bias_relu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return bias_relu_extension.bias_relu_forward(x, self.bias)
