import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

add_cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu(), "add_forward: expected CPU tensors");
    TORCH_CHECK(a.sizes() == b.sizes(), "add_forward: shapes differ");
    TORCH_CHECK(a.scalar_type() == torch::kFloat && b.scalar_type() == torch::kFloat,
                "add_forward: expected float32 tensors");
    torch::Tensor ac = a.contiguous();
    torch::Tensor bc = b.contiguous();
    torch::Tensor out = torch::empty_like(ac);
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    // Threads take chunks of at least 32768 elements; the inner loop vectorises.
    at::parallel_for(0, ac.numel(), 32768, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            po[i] = pa[i] + pb[i];
        }
    });
    return out;
}
"""

add_extension = load_inline(
    name="example_add_cpu",
    cpp_sources=add_cpp_source,
    functions=["add_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ops = add_extension

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.ops.add_forward(a, b)
