# Candidate: defines the wrong class name.
import torch.nn as nn


class ModelOptimized(nn.Module):
    def forward(self, a, b):
        return a + b
