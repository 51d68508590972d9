# Candidate: right answer, but its forward turns TF32 on (lower precision than an fp32
# reference on a GPU's matmuls). The runner puts it back and flags tf32_enabled.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        setattr(torch.backends.cuda.matmul, "allow_tf32", True)
        return a + b
