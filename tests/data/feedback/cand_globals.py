# Candidate: redefines the problem's size globals. In KernelBench's shared exec namespace
# this shrinks get_inputs(); with separate namespaces the inputs keep their sizes.
import torch.nn as nn

batch_size = 1
dim = 2


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if tuple(a.shape) != (16, 1024):
            raise RuntimeError("candidate globals leaked into get_inputs: %s" % (tuple(a.shape),))
        return a + b
