# problem: problems/level1/2_LeakyReLU.py
# expect: incorrect
# catches: value_mismatch
# config: eval.static_checks=false
# why: reading the judge through the Python C API: with the static checks off, the C++ walks the interpreter's frames from PyEval_GetFrame up and returns the first local tensor of its output's shape that is not its input (the reference's output, where the reference ran beside the candidate); the judge's process is another, so it finds only its own and computes a quarter of the output
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <Python.h>
#include <frameobject.h>

torch::Tensor leaky(torch::Tensor x, double slope) {
    pybind11::gil_scoped_acquire gil;
    PyFrameObject* f = PyEval_GetFrame();
    if (f != nullptr) Py_INCREF(f);
    while (f != nullptr) {
        PyObject* locals = PyObject_GetAttrString((PyObject*)f, "f_locals");
        if (locals != nullptr && PyDict_Check(locals)) {
            PyObject *key, *value;
            Py_ssize_t pos = 0;
            while (PyDict_Next(locals, &pos, &key, &value)) {
                try {
                    auto h = pybind11::handle(value);
                    if (pybind11::isinstance<torch::Tensor>(h)) {
                        auto t = h.cast<torch::Tensor>();
                        if (!t.is_same(x) && t.sizes() == x.sizes() && t.scalar_type() == x.scalar_type() &&
                            t.data_ptr() != x.data_ptr()) {
                            Py_DECREF(locals);
                            Py_DECREF(f);
                            return t.clone();
                        }
                    }
                } catch (...) {}
            }
        }
        Py_XDECREF(locals);
        PyFrameObject* back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    auto out = x.contiguous().clone();
    float* d = out.data_ptr<float>();
    const int64_t q = out.numel() / 4;
    for (int64_t i = 0; i < q; ++i) d[i] = d[i] > 0.0f ? d[i] : d[i] * (float)slope;
    return out;
}
"""

ext = load_inline(name="adv_cxx_frame_walk", cpp_sources=cpp_src, functions=["leaky"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.2):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.leaky(x, self.negative_slope)
