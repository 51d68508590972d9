# CPU candidate that checks its own process's allocator (kforge_runner.py, fix_allocator):
# a 4 MiB block, its first, must come from the heap ([heap] in /proc/self/maps), as every
# block up to 32 MiB does under the runner's policy, and not be a mapping of its own, as
# glibc makes every block over 128 KiB until a free raises that threshold. Its forward is
# an honest add, off by one where that does not hold, so the verdict says which.
import torch
import torch.nn as nn

BLOCK_FLOATS = 1 << 20      # 4 MiB


def in_heap(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            if line.rstrip().endswith("[heap]"):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if lo <= addr < hi:
                    return True
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        block = torch.empty(BLOCK_FLOATS)
        self.off = 0.0 if in_heap(block.data_ptr()) else 1.0
        del block

    def forward(self, a, b):
        return torch.add(a, b) + self.off
