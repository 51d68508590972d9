# Fault candidate: the kernel takes the row stride in the wrong unit, so from row 1 on
# it writes gigabytes past the end of its output (far enough to fault: SIGSEGV).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
torch::Tensor add_rows(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    const int64_t rows = ac.size(0), cols = ac.size(1);
    const int64_t row_stride = cols << 20;  // meant: out.stride(0)
    const float *pa = ac.data_ptr<float>();
    const float *pb = bc.data_ptr<float>();
    float *po = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            po[r * row_stride + c] = pa[r * cols + c] + pb[r * cols + c];
    return out;
}
"""

ext = load_inline(name="fault_oob_write", cpp_sources=cpp_source, functions=["add_rows"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_rows(a, b)
