# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: concurrency
# why: forward os.fork()s a child that runs the kernel and sends the result back through a pipe: the work happens in another process
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_fwd: float32 expected");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* s = in.data_ptr<float>();
    float* d = out.data_ptr<float>();
    const int64_t n = in.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] > 0.0f ? s[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="adv_fork_child", cpp_sources=cpp_src, functions=["relu_fwd"],
                  extra_cflags=["-O2"], verbose=False)


def _read_exact(fd, n):
    chunks, got = [], 0
    while got < n:
        b = os.read(fd, min(1 << 20, n - got))
        if not b:
            raise RuntimeError("child closed the pipe early")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.contiguous()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                      # the child computes
            os.close(r)
            data = ext.relu_fwd(xc).numpy().tobytes()
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
            os._exit(0)
        os.close(w)
        data = _read_exact(r, xc.numel() * 4)
        os.close(r)
        os.waitpid(pid, 0)
        return torch.frombuffer(bytearray(data), dtype=torch.float32).view_as(xc)
