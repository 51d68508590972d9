import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over very long rows: with uniform [0, 1) inputs every output is below
    2e-6, under fp32's absolute tolerance of 1e-4, so an all-zero answer passes allclose
    on these inputs (the small-output hole of KernelBench issue 165). A test problem of
    the adversarial suite, not a bundled one."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


num_rows = 16
row_len = 1 << 20


def get_inputs():
    return [torch.rand(num_rows, row_len)]


def get_init_inputs():
    return []
