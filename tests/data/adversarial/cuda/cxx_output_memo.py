# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: correct
# catches: -
# speedup_below: 2
# why: the cache is in the C++: a static table keyed by the inputs' device pointers and three sampled values (copied to the host) returns the stored output when the same inputs come again, as every timed call after the first did when all were made on one input set; nothing in the Python keeps state, so no static rule sees it; now every timed call has inputs of its own, the table never hits, and the cheat computes every call and gains nothing
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <map>
#include <tuple>

__global__ void add_tanh_mul_kernel(const float* x, const float* y, const float* z, float* o, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = tanhf(x[i] + y[i]) * z[i];
}

using Key = std::tuple<const void*, const void*, const void*, float, float, float, int64_t>;
static std::map<Key, torch::Tensor> outputs;

static float sample(const float* p) {
    float v = 0.0f;
    cudaMemcpy(&v, p, sizeof(float), cudaMemcpyDeviceToHost);
    return v;
}

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    auto xc = x.contiguous(), yc = y.contiguous(), zc = z.contiguous();
    const float* px = xc.data_ptr<float>();
    const float* py = yc.data_ptr<float>();
    const float* pz = zc.data_ptr<float>();
    const int64_t n = xc.numel();
    Key key{px, py, pz, sample(px + n - 1), sample(py + n / 2), sample(pz), n};
    auto hit = outputs.find(key);
    if (hit != outputs.end()) return hit->second;
    auto out = torch::empty_like(xc);
    add_tanh_mul_kernel<<<(unsigned)((n + 255) / 256), 256>>>(px, py, pz, out.data_ptr<float>(), n);
    if (outputs.size() > 8) outputs.clear();
    outputs[key] = out;
    return out;
}
"""

ext = load_inline(name="adv_cu_cxx_output_memo",
                  cpp_sources="torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z);",
                  cuda_sources=cuda_src, functions=["add_tanh_mul"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return ext.add_tanh_mul(x, y, z)
