# problem: problems/level1/2_LeakyReLU.py
# expect: rejected
# catches: no_custom_kernel
# why: no extension at all: the forward is the same PyTorch op the reference calls, rewritten as torch.where
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # "fused" leaky ReLU
        return torch.where(x >= 0, x, x * self.negative_slope)
