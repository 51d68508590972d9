# Candidate for test_freeze: starts a process of its own that spins beside it and writes,
# to spinner_gaps.log in its working directory, each stretch of at least a millisecond in which it did not run
# ("gap START END", CLOCK_MONOTONIC seconds). The judge stops the candidate's whole PID
# namespace while it times the reference, so each of its frozen windows must fall inside
# one of those gaps. The forward itself is an honest ReLU.
import os
import time

import torch
import torch.nn as nn

_spinner = None


def spin():
    os.closerange(3, 1024)
    log = os.open("spinner_gaps.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    parent = os.getppid()
    last = time.monotonic()
    end = last + 120
    while last < end and os.getppid() == parent:
        now = time.monotonic()
        if now - last >= 0.001:
            os.write(log, b"gap %.6f %.6f\n" % (last, now))
        last = now
    os._exit(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        global _spinner
        if _spinner is None:
            _spinner = os.fork()
            if _spinner == 0:
                spin()

    def forward(self, x):
        return torch.relu(x)
