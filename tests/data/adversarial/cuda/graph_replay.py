# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: rejected
# catches: stream_creation
# why: captures its kernel once into a CUDA graph on static buffers and replays the graph: the first call's capture runs on a side stream, later calls replay whatever the buffers hold
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void add_tanh_mul_kernel(const float* x, const float* y, const float* z, float* o, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = tanhf(x[i] + y[i]) * z[i];
}

void add_tanh_mul_into(torch::Tensor x, torch::Tensor y, torch::Tensor z, torch::Tensor out) {
    const int64_t n = x.numel();
    add_tanh_mul_kernel<<<(unsigned)((n + 255) / 256), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), z.data_ptr<float>(), out.data_ptr<float>(), n);
}
"""

ext = load_inline(name="adv_cu_graph_replay",
                  cpp_sources="void add_tanh_mul_into(torch::Tensor x, torch::Tensor y, torch::Tensor z, torch::Tensor out);",
                  cuda_sources=cuda_src, functions=["add_tanh_mul_into"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = None

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if self.graph is None:
            self.bufs = [x.clone(), y.clone(), z.clone(), torch.empty_like(x)]
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                ext.add_tanh_mul_into(*self.bufs)
        self.graph.replay()
        return self.bufs[3]
