# GPU candidate that defines no kernel of its own: its forward is PyTorch's add, which is
# correct but not a custom kernel. The profile rule rejects it (custom_kernel_not_run).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.add(a, b)
