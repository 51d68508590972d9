# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: rejected
# catches: cached_output
# why: keeps the last output in self, keyed by the inputs' data pointers and shapes, and returns it when the same buffers come again (every timed call after the first)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void add_tanh_mul_kernel(const float* x, const float* y, const float* z, float* o, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = tanhf(x[i] + y[i]) * z[i];
}

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    auto xc = x.contiguous(), yc = y.contiguous(), zc = z.contiguous();
    auto out = torch::empty_like(xc);
    add_tanh_mul_kernel<<<(unsigned)((xc.numel() + 255) / 256), 256>>>(
        xc.data_ptr<float>(), yc.data_ptr<float>(), zc.data_ptr<float>(), out.data_ptr<float>(), xc.numel());
    return out;
}
"""

ext = load_inline(name="adv_cu_self_result_cache",
                  cpp_sources="torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z);",
                  cuda_sources=cuda_src, functions=["add_tanh_mul"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._last_key = None
        self._last_out = None

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        key = tuple((t.data_ptr(), tuple(t.shape)) for t in (x, y, z))
        if key == self._last_key:
            return self._last_out
        out = ext.add_tanh_mul(x, y, z)
        self._last_key, self._last_out = key, out
        return out
