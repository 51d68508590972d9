import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(x_ptr, bias_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    # One read and one write per element: the add and the clamp are fused.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    bias = tl.load(bias_ptr + offsets % cols, mask=inside)
    tl.store(out_ptr + offsets, tl.maximum(x + bias, 0.0), mask=inside)


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 2048),)
        bias_relu_kernel[grid](x, self.bias, out, n, x.size(1), BLOCK=2048)
        return out
