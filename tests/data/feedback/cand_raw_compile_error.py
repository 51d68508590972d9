# Raw-format candidate that does not compile: the compiler's error is the feedback.
import torch.nn as nn
from kforge import load_cpp

ops = load_cpp(r"""
extern "C" void add(const float* a, float* out, long n) {
    for (long i = 0; i < n; ++i)
        out[i] = a[i] + undeclared_thing;
}
""", name="kforge_test_raw_compile_error")


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a
