import torch
import torch.nn as nn
from kforge import load_cpp

add_cpp_source = r"""
#include <cstdint>

// Threads take chunks of 32768 elements; the inner loop vectorises.
extern "C" void add_forward(const float* __restrict__ a, const float* __restrict__ b,
                            float* __restrict__ out, int64_t n) {
    #pragma omp parallel for schedule(static, 32768)
    for (int64_t i = 0; i < n; ++i) {
        out[i] = a[i] + b[i];
    }
}
"""

add_ops = load_cpp(add_cpp_source, name="example_add_cpu", extra_cflags=["-O3", "-fopenmp"],
                   extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        add_ops.add_forward(a, b, out, a.numel())
        return out
