# kforge soak candidate: py_ok (correct; expected status ok)
import torch
import torch.nn as nn
# Plain torch, no extension is built: imported only because kforge's static check wants
# a custom-operator toolchain in the code. Python-only candidates cost ~3 s a turn on CPU.
from torch.utils.cpp_extension import load_inline  # noqa: F401


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.add(a, b)
