# Fault candidate: forward() hands the work to a helper thread it forgot to start, then
# waits in a Python loop for a result that never comes. The extension would be built on
# first use by that thread; it is never reached.
import threading
import time

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
torch::Tensor add_async(torch::Tensor a, torch::Tensor b) { return a + b; }
"""

_ext = None


def ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="fault_py_hang", cpp_sources=cpp_source,
                           functions=["add_async"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.result = None
        self.args = None
        self.worker = threading.Thread(target=self.compute, daemon=True)

    def compute(self):
        self.result = ext().add_async(*self.args)

    def forward(self, a, b):
        self.args = (a, b)
        # meant: self.worker.start()
        while self.result is None:
            time.sleep(0.01)
        out, self.result = self.result, None
        return out
