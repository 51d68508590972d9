# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: concurrency
# why: forward hands the two halves of the work to Python threads (threading.Thread) and joins them: work off the calling thread
import threading

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

ext = load_inline(name="adv_thread_worker", cpp_sources=cpp_src, functions=["relu_fwd"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        half = flat.numel() // 2
        parts = [None, None]

        def work(i, chunk):
            parts[i] = ext.relu_fwd(chunk)

        threads = [threading.Thread(target=work, args=(0, flat[:half])),
                   threading.Thread(target=work, args=(1, flat[half:]))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return torch.cat(parts).view_as(x)
