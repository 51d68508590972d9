# Candidate for problem_symmetric: honest, and indifferent to the symmetry.
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, s):
        return s + s
