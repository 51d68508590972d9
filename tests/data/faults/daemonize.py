# Fault candidate: forward() starts a "monitor" daemon on its first call, the classic
# way (fork, setsid, fork again, stdio to /dev/null): it leaves the runner's process
# group and session, so killing the group does not reach it. The daemon writes its pid
# to monitor.pid in the working directory and sleeps forever. The result is correct.
import os
import time

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
torch::Tensor add_mon(torch::Tensor a, torch::Tensor b) { return a + b; }
"""

_ext = None


def ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="fault_daemonize", cpp_sources=cpp_source,
                           functions=["add_mon"], verbose=False)
    return _ext


def start_monitor():
    pid = os.fork()
    if pid > 0:
        os.waitpid(pid, 0)  # the first child exits at once
        return
    try:
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1024)
        with open("monitor.pid", "w") as f:
            f.write("%d\n" % os.getpid())
        while True:
            time.sleep(1)
    finally:
        os._exit(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.monitor_started = False

    def forward(self, a, b):
        if not self.monitor_started:
            self.monitor_started = True
            start_monitor()
        if a.numel() >= (1 << 24):
            return ext().add_mon(a, b)
        return a + b
