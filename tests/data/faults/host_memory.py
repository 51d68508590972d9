# Fault candidate: forward() keeps a "workspace" tensor per output row in a cache whose
# key changes on every call, and the row loop runs over elements instead of rows: it
# allocates host memory until it is stopped. Bounded at 8 GiB, so that a kforge that
# fails to stop it fails this test instead of taking the machine down.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
torch::Tensor add_ws(torch::Tensor a, torch::Tensor b, torch::Tensor ws) { return a + b; }
"""

_ext = None


def ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="fault_host_memory", cpp_sources=cpp_source,
                           functions=["add_ws"], verbose=False)
    return _ext


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.workspaces = {}

    def forward(self, a, b):
        ws = []
        for i in range(min(a.numel(), 2048)):  # meant: a.size(0)
            ws.append(torch.ones(1 << 20))  # 4 MiB, touched
        self.workspaces[len(self.workspaces)] = ws
        return ext().add_ws(a, b, ws[0])
