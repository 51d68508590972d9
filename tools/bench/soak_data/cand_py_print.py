# kforge soak candidate: py_print (prints 8 MiB to stdout and 8 MiB to stderr on import,
# then is correct; expected status ok, its output truncated by kforge)
import torch
import torch.nn as nn
# Plain torch, no extension is built: imported only because kforge's static check wants
# a custom-operator toolchain in the code. Python-only candidates cost ~3 s a turn on CPU.
from torch.utils.cpp_extension import load_inline  # noqa: F401

import sys

_line = "soak: a candidate that talks too much " + "." * 985 + "\n"	# 1 KiB
for _ in range(8 * 1024):
    sys.stdout.write(_line)
    sys.stderr.write(_line)
sys.stdout.flush()
sys.stderr.flush()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b
