# Candidate for problem_small.py that computes it (in PyTorch: the judge, not the build,
# is under test here).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 1e-5
