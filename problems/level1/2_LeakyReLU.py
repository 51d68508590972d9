import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Elementwise leaky ReLU with a slope chosen at construction:
    y = x for x >= 0, y = negative_slope * x otherwise."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


rows = 2048
cols = 1024
negative_slope = 0.2


def get_inputs():
    # Scaled normal input: the negative half carries values large enough that the
    # slope matters under an absolute tolerance of 1e-4.
    x = torch.randn(rows, cols) * 3.0
    return [x]


def get_init_inputs():
    return [negative_slope]
