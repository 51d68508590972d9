import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    # One program per row, the whole row in registers when it fits in BLOCK: one read
    # and one write per element.
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=inside, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    e = tl.exp(shifted)
    tl.store(out_ptr + row * cols + offsets, e / tl.sum(e, axis=0), mask=inside)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        row_softmax_kernel[(rows,)](x, out, cols, BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return out
