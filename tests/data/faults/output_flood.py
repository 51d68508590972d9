# Fault candidate: forward() dumps a debug trace of about 100 MB (half to stdout, half
# to stderr) on its first call, then computes the right answer. The result is correct;
# the output is the fault.
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
torch::Tensor add_big(torch::Tensor a, torch::Tensor b) { return a + b; }
"""

_ext = None


def ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="fault_output_flood", cpp_sources=cpp_source,
                           functions=["add_big"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.traced = False

    def forward(self, a, b):
        if not self.traced:
            self.traced = True
            line = ("debug: a[0]=%r b[0]=%r " % (float(a.view(-1)[0]), float(b.view(-1)[0]))).ljust(1023, ".") + "\n"
            block = line * 1024  # 1 MiB
            for i in range(100):
                (sys.stdout if i % 2 == 0 else sys.stderr).write(block)
            sys.stdout.flush()
            sys.stderr.flush()
        if a.numel() >= (1 << 24):  # the custom kernel only pays off for large inputs
            return ext().add_big(a, b)
        return a + b
