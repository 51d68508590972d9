# Test problem whose output is below fp32's tolerance on its own inputs (a scale of
# 1e-5): zeros would pass allclose there. The runner checks it again on inputs scaled
# up, where zeros fail and an honest kernel does not.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 1e-5


def get_inputs():
    return [torch.randn(8, 128)]


def get_init_inputs():
    return []
