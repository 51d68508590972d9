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


def prefetch_worker(ready_w):
    with open("prefetch-%d.pid" % os.getpid(), "w") as f:
        f.write("%d\n" % os.getpid())
    os.close(ready_w)   # its pid file is there before forward returns, however loaded the machine
    while True:
        time.sleep(1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.workers = []

    def forward(self, a, b):
        if not self.workers:
            for _ in range(2):
                ready_r, ready_w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    try:
                        os.close(ready_r)
                        prefetch_worker(ready_w)
                    finally:
                        os._exit(0)
                os.close(ready_w)
                os.read(ready_r, 1)     # EOF once the worker wrote its pid file
                os.close(ready_r)
                self.workers.append(pid)
        if a.numel() >= (1 << 24):
            return ext().add_pf(a, b)
        return a + b
