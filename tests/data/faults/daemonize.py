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
    # The first child exits once the daemon has written monitor.pid (the pipe closes), so
    # the file is there when forward returns, however loaded the machine.
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid > 0:
        os.close(ready_w)
        os.waitpid(pid, 0)
        os.close(ready_r)
        return
    try:
        os.setsid()
        if os.fork() > 0:
            os.close(ready_w)
            os.read(ready_r, 1)     # EOF: the daemon wrote its pid and closed its end
            os._exit(0)
        with open("monitor.pid", "w") as f:
            f.write("%d\n" % os.getpid())
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1024)      # ready_w too: the middle child goes
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
