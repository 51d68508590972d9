# Raw-format candidate whose entry point takes a float tensor where the problem passes
# float32 tensors as int pointers: the glue refuses the call (a runtime error, never a
# read of float bits as ints).
import torch
import torch.nn as nn
from kforge import load_cpp

ops = load_cpp(r"""
extern "C" void add(const int* a, const int* b, int* out, long n) {
    for (long i = 0; i < n; ++i)
        out[i] = a[i] + b[i];
}
""", name="kforge_test_raw_bad_type")


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        ops.add(a, b, out, a.numel())
        return out
