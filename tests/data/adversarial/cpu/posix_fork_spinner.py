# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: concurrency
# why: at import it forks through posix (os's C module, under its own name) a child that watches its parent and spins on the core whenever the parent is stopped, which is while the judge times the reference: the reference slows, the speedup grows, and nothing imports os, threading or multiprocessing
import posix
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor relu(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* px = in.data_ptr<float>();
    float* py = out.data_ptr<float>();
    for (int64_t i = 0; i < in.numel(); ++i) py[i] = px[i] > 0.0f ? px[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="adv_posix_fork_spinner", cpp_sources=cpp_src, functions=["relu"],
                  extra_cflags=["-O2"], verbose=False)

_parent = posix.getpid()
if posix.fork() == 0:
    while True:
        try:
            fd = posix.open("/proc/%d/stat" % _parent, posix.O_RDONLY)
            state = posix.read(fd, 256).split(b") ")[1][:1]
            posix.close(fd)
        except (OSError, IndexError):
            posix._exit(0)
        n = 0
        while state == b"T" and n < 200000:
            n += 1


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu(x)
