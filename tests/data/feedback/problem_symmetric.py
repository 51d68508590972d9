# Test problem: the reference insists on a symmetric input (as a problem whose inputs
# must keep a structure might), so the replay check's changed values make it raise: the
# check is skipped, never blamed on the candidate.
import torch
import torch.nn as nn

n = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, s):
        if not torch.equal(s, s.t()):
            raise ValueError("the input is not symmetric")
        return s * 2


def get_inputs():
    a = torch.rand(n, n)
    return [a + a.t()]


def get_init_inputs():
    return []
