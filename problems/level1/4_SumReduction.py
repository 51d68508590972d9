import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension of a 3-D tensor, keeping that dimension with size 1."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


outer = 64
reduce_len = 512
inner = 64
reduce_dim = 1


def get_inputs():
    # Uniform [0, 1) input: every sum is positive, around reduce_len / 2.
    x = torch.rand(outer, reduce_len, inner)
    return [x]


def get_init_inputs():
    return [reduce_dim]
