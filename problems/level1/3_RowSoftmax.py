import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dimension of a 2-D tensor (each row sums to 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


num_rows = 4096
row_len = 256


def get_inputs():
    # Rows of length 256 keep the average probability at 1/256, about 4e-3, well
    # above the 1e-4 absolute tolerance, so an all-zero answer cannot pass.
    x = torch.randn(num_rows, row_len)
    return [x]


def get_init_inputs():
    return []
