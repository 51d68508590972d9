# Candidate: reaches for the reference module through sys.modules to shrink its inputs.
import sys

import torch.nn as nn

_ref = sys.modules.get("kforge_reference")
if _ref is not None:
    _ref.batch_size = 1
    _ref.dim = 2


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if tuple(a.shape) != (16, 1024):
            raise RuntimeError("the reference's globals were rewritten: %s" % (tuple(a.shape),))
        return a + b
