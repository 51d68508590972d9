# GPU candidate: correct values, computed on a side stream behind a ~2 ms GPU spin.
# CUDA events on the current stream see almost nothing of it; the wall clock does.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, a, b):
        with torch.cuda.stream(self.side):
            torch.cuda._sleep(4_000_000)
            out = a + b
        return out
