# Candidate: not even Python (the module fails to load: a compile_error, no C++ involved).
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b)
        return a + b
