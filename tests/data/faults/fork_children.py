# Fault candidate: forward() forks "prefetch workers" on its first call and never waits
# for them; they sleep forever and would outlive the evaluation. Each writes its pid
# to prefetch-<pid>.pid in the working directory. The result itself is correct.
import os
import time

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
torch::Tensor add_pf(torch::Tensor a, torch::Tensor b) { return a + b; }
"""

_ext = None


def ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="fault_fork_children", cpp_sources=cpp_source,
                           functions=["add_pf"], verbose=False)
    return _ext


def prefetch_worker():
    with open("prefetch-%d.pid" % os.getpid(), "w") as f:
        f.write("%d\n" % os.getpid())
    while True:
        time.sleep(1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.workers = []

    def forward(self, a, b):
        if not self.workers:
            for _ in range(2):
                pid = os.fork()
                if pid == 0:
                    try:
                        prefetch_worker()
                    finally:
                        os._exit(0)
                self.workers.append(pid)
        if a.numel() >= (1 << 24):
            return ext().add_pf(a, b)
        return a + b
