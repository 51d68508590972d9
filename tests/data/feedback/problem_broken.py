# Test problem: the reference itself fails (its forward raises), whatever the candidate:
# an evaluation against it is the environment's error (env_error), in `kforge eval` as in
# a run's turn, never the candidate's.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        raise RuntimeError("this reference is broken on purpose")


def get_inputs():
    return [torch.rand(4, 8), torch.rand(4, 8)]


def get_init_inputs():
    return []
