# problem: problems/level1/2_LeakyReLU.py
# expect: rejected
# catches: no_custom_kernel
# why: no extension at all: forward is the reference's PyTorch op written as torch.where, which runs as PyTorch's own CUDA kernels
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(x >= 0, x, x * self.negative_slope)
