# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: correct
# catches: -
# config: eval.static_checks=false
# speedup_below: 2
# why: a reference made slow from inside the candidate's process: with the static checks off, the C++ registers a kernel for aten::tanh on the CPU through the dispatcher (TORCH_LIBRARY_IMPL) that sleeps 20 ms a call, which a reference timed beside the candidate would call; the judge times the reference in a process of its own, so the candidate's own (honest, naive) kernel earns no more than it is worth
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <torch/library.h>
#include <chrono>
#include <cmath>
#include <thread>

torch::Tensor add_tanh_mul(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    auto xc = x.contiguous(), yc = y.contiguous(), zc = z.contiguous();
    auto out = torch::empty_like(xc);
    const float* px = xc.data_ptr<float>();
    const float* py = yc.data_ptr<float>();
    const float* pz = zc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) po[i] = std::tanh(px[i] + py[i]) * pz[i];
    return out;
}

static torch::Tensor slow_tanh(const torch::Tensor& x) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto out = torch::empty_like(x);
    auto xc = x.contiguous();
    const float* p = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) o[i] = std::tanh(p[i]);
    return out;
}

TORCH_LIBRARY_IMPL(aten, CPU, m) {
    m.impl("tanh", slow_tanh);
}
"""

ext = load_inline(name="adv_dispatcher_slow_reference", cpp_sources=cpp_src,
                  functions=["add_tanh_mul"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return ext.add_tanh_mul(x, y, z)
