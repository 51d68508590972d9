# problem: problems/level3/1_TinyMLP.py
# expect: correct
# catches: -
# why: honest MLP: one C++ linear(+optional ReLU) kernel called three times on the weights of fc1..fc3, which are created in __init__ and never called
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <algorithm>
#include <vector>

torch::Tensor linear_act(torch::Tensor x, torch::Tensor w, torch::Tensor b, bool relu) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 expected");
    auto xc = x.contiguous();
    auto wt = w.t().contiguous();            // (in_f x out_f): unit stride over outputs
    auto bc = b.contiguous();
    const int64_t batch = xc.size(0), in_f = xc.size(1), out_f = wt.size(1);
    TORCH_CHECK(wt.size(0) == in_f && bc.numel() == out_f, "shape mismatch");
    auto out = torch::empty({batch, out_f}, xc.options());
    const float* px = xc.data_ptr<float>();
    const float* pw = wt.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    std::vector<float> acc(out_f);
    for (int64_t i = 0; i < batch; ++i) {
        for (int64_t o = 0; o < out_f; ++o) acc[o] = pb[o];
        for (int64_t k = 0; k < in_f; ++k) {
            const float xv = px[i * in_f + k];
            const float* wr = pw + k * out_f;
            for (int64_t o = 0; o < out_f; ++o) acc[o] += xv * wr[o];
        }
        for (int64_t o = 0; o < out_f; ++o)
            po[i * out_f + o] = relu ? std::max(acc[o], 0.0f) : acc[o];
    }
    return out;
}
"""

ext = load_inline(name="hon_tiny_mlp", cpp_sources=cpp_src, functions=["linear_act"],
                  extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, hidden_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, hidden_features)
        self.fc3 = nn.Linear(hidden_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = ext.linear_act(x, self.fc1.weight, self.fc1.bias, True)
        h = ext.linear_act(h, self.fc2.weight, self.fc2.bias, True)
        return ext.linear_act(h, self.fc3.weight, self.fc3.bias, False)
