# Test problem: elementwise add whose inputs do not repeat from their seed (an offset drawn
# from the operating system's randomness, which no seed reaches): the judge's inputs and
# ones made again elsewhere differ, so they must be sent (eval.inputs: device).
import random

import torch
import torch.nn as nn

batch_size = 16
dim = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


def get_inputs():
    offset = random.SystemRandom().uniform(1.0, 2.0)
    return [torch.rand(batch_size, dim) + offset, torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
