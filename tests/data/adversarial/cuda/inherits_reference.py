# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: inherits_reference
# why: ModelNew subclasses a copy of the reference Model and keeps its torch.relu forward; the CUDA kernel it builds is decoration
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "relu_fwd: CUDA float32");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t n = in.numel();
    relu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(in.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(name="adv_cu_inherits_reference", cpp_sources="torch::Tensor relu_fwd(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["relu_fwd"], extra_cuda_cflags=["-O3"],
                  verbose=False)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


class ModelNew(Model):
    def __init__(self):
        super().__init__()
        self.kernel = ext.relu_fwd
