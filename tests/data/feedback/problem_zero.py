# Test problem whose output is identically zero (min(x, 0) of non-negative inputs, then
# clamp): any kernel returning zeros passes, so the runner flags it as degenerate.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(torch.min(x, torch.zeros_like(x)), 0.0, 1.0)


def get_inputs():
    return [torch.rand(8, 128)]


def get_init_inputs():
    return []
