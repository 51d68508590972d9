import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise rectified linear unit: y = max(x, 0)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


rows = 1024
cols = 2048


def get_inputs():
    # Standard normal input, so about half the elements are negative.
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return []
