# CPU candidate that checks its own process's allocator (kforge_runner.py, fix_allocator):
# a 4 MiB block, touched, freed and asked for again, must come back from the heap with
# its pages still there, not as a fresh mapping whose every page faults on first touch.
# Its forward is an honest add, off by one wherever that does not hold, so the verdict
# says which: correct with the runner's policy, incorrect under glibc's own (a first
# free of a mapped block raises its threshold, and the next block grows the heap).
import resource

import torch
import torch.nn as nn

BLOCK_FLOATS = 1 << 20      # 4 MiB: over glibc's default 128 KiB mapping threshold
FAULTS_ALLOWED = 64         # of 1024 pages


def faults_on_reuse():
    a = torch.empty(BLOCK_FLOATS)
    a.fill_(1.0)
    del a
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    b = torch.empty(BLOCK_FLOATS)
    b.fill_(2.0)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    del b
    return faults


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.off = 0.0 if faults_on_reuse() <= FAULTS_ALLOWED else 1.0

    def forward(self, a, b):
        return torch.add(a, b) + self.off
