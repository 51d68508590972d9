import torch
import torch.nn as nn


class Model(nn.Module):
    """Plain matrix product C = A @ B with A of shape (M, K) and B of shape (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 256
K = 384
N = 256


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N) - 0.25
    return [A, B]


def get_init_inputs():
    return []
