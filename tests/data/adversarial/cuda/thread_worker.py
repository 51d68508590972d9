# problem: problems/level1/1_ReLU.py
# expect: rejected
# catches: concurrency
# why: forward hands the two halves of the tensor to Python threads that launch the kernel and joins them: work off the calling thread
import threading

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "relu_fwd: CUDA float32");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t n = in.numel();
    relu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(in.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(name="adv_cu_thread_worker", cpp_sources="torch::Tensor relu_fwd(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["relu_fwd"], extra_cuda_cflags=["-O3"],
                  verbose=False)


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
