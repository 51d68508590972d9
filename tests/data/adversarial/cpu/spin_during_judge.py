# problem: problems/level2/2_Add_Mul_Tanh.py
# expect: correct
# catches: -
# config: eval.static_checks=false
# speedup_below: 1
# why: a reference made slow from beside it: with the static checks off, the C++ starts a native thread at load (invisible to Python's thread list) that spins on the process's cores whenever the runner's main thread is blocked, as it is while the judge times the reference between the candidate's blocks, and sleeps while the candidate's own calls run; the judge stops the candidate's whole process while it times the reference, so the spin never runs then and the naive kernel earns what it is worth (less than the reference)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>

// The state letter of the process's main thread (/proc/self/stat's third field).
static char main_state() {
    char buf[512];
    FILE* f = std::fopen("/proc/self/stat", "r");
    if (f == nullptr) return '?';
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* p = std::strrchr(buf, ')');
    return p != nullptr && p[1] == ' ' ? p[2] : '?';
}

static void spinner() {
    volatile double sink = 0.0;
    for (;;) {
        if (main_state() == 'S') {
            auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
            while (std::chrono::steady_clock::now() < until) sink = sink * 0.5 + 1.0;
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
}

static int started = [] { std::thread(spinner).detach(); return 1; }();

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
"""

ext = load_inline(name="adv_spin_during_judge", cpp_sources=cpp_src,
                  functions=["add_tanh_mul"], extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return ext.add_tanh_mul(x, y, z)
