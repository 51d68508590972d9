#!/usr/bin/env python3
"""feedback_static_check.py: feedback/kforge_check.py, the static checks of a candidate.

- every rule: small cheating candidates, written here, give exactly the findings marked in
  them (`#! rule severity` on the line the finding must name; `#!0` for line 0); kernel
  source is read as C++, so names in its comments and string literals, and names that only
  look like the native rules' (my_system, remove_padding, std::remove, omp pragmas), give
  none;
- honest candidates (the demo replies in configs/demo_responses, in KernelBench's format
  and in the raw one under raw/, and a few written here) give no error and no
  torch_compute;
- the Triton backend: a @triton.jit function launched from forward is the custom kernel
  (the bundled Triton examples and a few written here pass); a Triton candidate that
  defines none, or never launches it, is caught, as is a Triton-only candidate checked
  for the CUDA C++ backend;
- the command line: one line of JSON and exit 0 (a syntax error is a finding), exit 2 with
  one line on stderr for usage errors and unreadable or oversized inputs;
- time: how long the honest candidates, the command line and a 2 MB candidate take (printed).

Needs only the standard library (no torch). Exit 0 on success, 1 naming what failed.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(ROOT, "feedback", "kforge_check.py")
sys.path.insert(0, os.path.dirname(CHECKER))
import kforge_check  # noqa: E402

FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL: %s" % what)


PROBLEM_RELU = os.path.join(ROOT, "problems", "level1", "1_ReLU.py")
PROBLEM_SRC = open(PROBLEM_RELU).read()

# An honest ReLU on the CPU (as problems/level1/1_ReLU.py asks); cases add to it. Its
# forward is the last thing in it, so a case can add lines to forward's body.
CPU_BASE = '''import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

relu_source = r"""
#include <torch/extension.h>
torch::Tensor relu_forward(torch::Tensor x) {
    auto out = torch::empty_like(x);
    return out;
}
"""
ext = load_inline(name="kf_relu_test", cpp_sources=relu_source, functions=["relu_forward"])
'''
CUDA_BASE = CPU_BASE.replace('#include <torch/extension.h>\n',
                             '#include <torch/extension.h>\n'
                             '__global__ void relu_kernel(const float* x, float* y) {}\n')
MODEL = '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
'''

# Cheating candidates: name -> (source, options). Every finding they give must be marked.
CASES = {}


def case(name, source, device="cpu", fmt="load_inline", precision="fp32", torch_ops="warning",
         backend="cuda"):
    CASES[name] = (source, dict(device=device, fmt=fmt, precision=precision,
                                torch_ops=torch_ops, backend=backend))


# An honest ReLU in Triton (eval.backend triton); cases add to it as to CPU_BASE.
TRITON_BASE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=inside)
'''
TRITON_LAUNCH = '''        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''


case("syntax_error", CPU_BASE + MODEL +
     "        return ext.relu_forward(x))  #! syntax_error error\n")
case("no_model_new", '''#!0 no_model_new error
''' + CPU_BASE + '''
class ModelNw(nn.Module):
    def forward(self, x):
        return ext.relu_forward(x)
''')
case("inherits_reference_direct", CPU_BASE + '''

class ModelNew(Model):  #! inherits_reference error
    def forward(self, x):
        return ext.relu_forward(x)
''')
case("inherits_reference_alias", CPU_BASE + '''
Base = Model  #! inherits_reference error


class Middle(Base):
    pass


class ModelNew(Middle):  #! inherits_reference error
    def forward(self, x):
        return ext.relu_forward(x)
''')
case("inherits_reference_import", CPU_BASE.replace(
    "import torch\n",
    "import torch\nfrom kforge_reference import Model  #! inherits_reference error\n")
    + MODEL.replace("super().__init__()", "super().__init__()\n        self.ref = Model()"
                    "  #! inherits_reference error") + '''        out = ext.relu_forward(x)
        return self.ref(out)
''')
case("inherits_reference_sys_modules", CPU_BASE + '''import sys
ref = sys.modules.get("kforge_reference")  #! inherits_reference error, patching error
''' + MODEL + '''        return ext.relu_forward(x)
''')
case("no_custom_kernel_missing", '''#!0 no_custom_kernel error
import torch
import torch.nn as nn
''' + MODEL + '''        return x.clamp(min=0)  #! torch_compute warning
''')
case("no_custom_kernel_no_global", CPU_BASE.replace(
    'ext = load_inline(', 'ext = load_inline(  #! no_custom_kernel error\n    ') + MODEL +
    '''        return ext.relu_forward(x)
''', device="cuda")
case("no_custom_kernel_wrong_format", '''#!0 no_custom_kernel error
''' + CPU_BASE + MODEL + '''        return ext.relu_forward(x)
''', fmt="raw")
case("kernel_unused", CPU_BASE + '''

class ModelNew(nn.Module):
    def forward(self, x):  #! kernel_unused error
        return torch.relu(x)  #! torch_compute warning
''')
case("torch_compute", CPU_BASE + '''

class ModelNew(nn.Module):
    def __init__(self, n: int = 4):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.w = nn.Parameter(torch.randn(4))
        self.n = n

    def forward(self, x, scale: float = 2.0):
        y = ext.relu_forward(x.contiguous())
        rows, cols = y.size(0) * 4, y.shape[1] + self.n * 2
        z = torch.matmul(y, y.t())  #! torch_compute warning
        z = F.relu(z)  #! torch_compute warning
        s = z.sum(dim=1)  #! torch_compute warning
        p = self.fc(y) @ y  #! torch_compute warning
        q = y * self.w  #! torch_compute warning
        r = -y  #! torch_compute warning
        m = y > 0  #! torch_compute warning
        y += 1  #! torch_compute warning
        h = self.fc.weight.t() * scale  #! torch_compute warning
        return self._finish(y, rows)

    def _finish(self, t, rows: int):
        if rows % 2 == 0:
            return t.exp()  #! torch_compute warning
        return t
''')
case("torch_compute_error", CPU_BASE + MODEL + '''        y = ext.relu_forward(x)
        return y.clamp(max=6.0)  #! torch_compute error
''', torch_ops="error")
case("torch_compute_submodule_and_cpp", CPU_BASE.replace(
    "    return out;\n", "    return torch::mm(x, x);  // #! torch_compute warning\n") + '''

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)  #! torch_compute warning


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(ext.relu_forward(x))
''')
case("fallback_path", CPU_BASE.replace(
    'ext = load_inline(', 'try:  #! fallback_path error\n    ext = load_inline(').replace(
    '"relu_forward"])\n', '"relu_forward"])\nexcept Exception:\n    ext = None\n') + MODEL +
    '''        try:  #! fallback_path error
            return ext.relu_forward(x)
        except RuntimeError:
            return x.clamp(min=0)  #! torch_compute warning
''')
case("concurrency", CPU_BASE + '''import os
import threading  #! concurrency error
from concurrent.futures import ThreadPoolExecutor  #! concurrency error
import ctypes  #! concurrency error
os.system("nvidia-smi")  #! concurrency error
''' + MODEL + '''        return ext.relu_forward(x)
''')
case("stream_creation", CUDA_BASE.replace(
    "__global__ void relu_kernel(const float* x, float* y) {}\n",
    "__global__ void relu_kernel(const float* x, float* y) {}\n"
    "static cudaStream_t side() { cudaStream_t s; cudaStreamCreate(&s); return s; }"
    "  // #! stream_creation error\n") + '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()  #! stream_creation error

    def forward(self, x):
        with torch.cuda.stream(self.side):  #! stream_creation error
            return ext.relu_forward(x)
''', device="cuda")
case("patching", CPU_BASE + '''import builtins
import sys
import time
torch.allclose = lambda *args, **kwargs: True  #! patching error
setattr(time, "perf_counter", lambda: 0.0)  #! patching error
builtins.print = None  #! patching error
sys.modules["numpy"] = None  #! patching error
F.relu = lambda t: t  #! patching error
torch.Tensor.__eq__ = lambda a, b: True  #! patching error
''' + MODEL + '''        return ext.relu_forward(x)
''')
case("rng_tampering", CPU_BASE + '''import random
torch.manual_seed(0)  #! rng_tampering error
random.seed(1)  #! rng_tampering error
''' + MODEL + '''        torch.cuda.manual_seed_all(0)  #! rng_tampering error
        return ext.relu_forward(x)
''')
case("io_access", CPU_BASE + '''import os
import pathlib
import socket  #! io_access error
with open("/tmp/kforge_ref_out.pt", "rb") as f:  #! io_access error
    pass
os.remove("/tmp/x")  #! io_access error
pathlib.Path("/tmp/y").write_text("z")  #! io_access error
os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  #! io_access error
''' + MODEL + '''        torch.save(x, "/tmp/input.pt")  #! io_access error
        return ext.relu_forward(x)
''')
case("env_access", CPU_BASE + '''import os
DEBUG = os.environ.get("KFORGE_DEBUG")  #! env_access warning
LEVEL = os.getenv("LEVEL")  #! env_access warning
''' + MODEL + '''        return ext.relu_forward(x)
''')
case("cached_output", CPU_BASE + '''import functools
_outputs = {}
_calls = 0


@functools.lru_cache(maxsize=None)  #! cached_output error
def run(key):
    return key


class ModelNew(nn.Module):
    def forward(self, x, memo={}):
        global _calls
        _calls += 1  #! cached_output error
        key = x.data_ptr()
        if key in _outputs:
            return _outputs[key]
        out = ext.relu_forward(x)
        run(key)
        _outputs[key] = out  #! cached_output error
        memo[key] = out  #! cached_output error
        self.last = out  #! cached_output error
        setattr(self, "again", out)  #! cached_output error
        return out
''')
case("lower_precision", CUDA_BASE.replace(
    "void relu_kernel(const float* x, float* y) {}",
    "void relu_kernel(const __half* x, float* y) {}  // #! lower_precision warning") + '''
torch.backends.cuda.matmul.allow_tf32 = True  #! lower_precision error, patching error
''' + MODEL + '''        with torch.autocast("cuda"):  #! lower_precision error
            y = ext.relu_forward(x.half())  #! lower_precision error
        return y.to(torch.float16)  #! lower_precision error
''', device="cuda")
# The same at --precision fp16: only the patching of torch's flag remains.
case("lower_precision_fp16", CASES["lower_precision"][0].replace(
    "#! lower_precision warning", "").replace("#! lower_precision error, patching error",
                                              "#! patching error").replace(
    "#! lower_precision error", ""), device="cuda", precision="fp16")
case("tensor_subclass", CPU_BASE + '''

class Sneaky(torch.Tensor):  #! tensor_subclass error
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  #! tensor_subclass error
        return super().__torch_function__(func, types, args, kwargs)


class Mode:
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  #! tensor_subclass error
        return func(*args, **(kwargs or {}))


lib = torch.library.Library("kforge", "DEF")  #! tensor_subclass warning
''' + MODEL + '''        return ext.relu_forward(x)
''')
case("exec_eval", CPU_BASE + '''import importlib  #! exec_eval error
exec("y = 1")  #! exec_eval error
z = eval("1 + 1")  #! exec_eval error
os_module = __import__("os")  #! exec_eval error
globals()["ext2"] = ext  #! exec_eval error
name = "rel" + "u"
op = getattr(torch, name)  #! exec_eval warning
''' + MODEL + '''        return ext.relu_forward(x)
''')
case("triton_no_kernel", '''#!0 no_custom_kernel error
import torch
import torch.nn as nn
import triton
''' + MODEL + '''        return torch.relu(x)  #! torch_compute warning
''', device="cuda", backend="triton")
case("triton_kernel_unused", TRITON_BASE + MODEL.replace("    def forward(self, x):\n",
                                                        "    def forward(self, x):  #! kernel_unused error\n")
     + '''        return torch.relu(x)  #! torch_compute warning
''', device="cuda", backend="triton")
case("triton_kernel_plus_torch", TRITON_BASE + MODEL + '''        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return torch.sigmoid(out)  #! torch_compute warning
''', device="cuda", backend="triton")
case("triton_for_the_cuda_backend", "#!0 no_custom_kernel error\n" + TRITON_BASE + MODEL + TRITON_LAUNCH,
     device="cuda")
case("too_many_findings", CPU_BASE + MODEL + "        y = ext.relu_forward(x)\n" +
     "".join("        y = torch.relu(y)%s\n" % ("  #! torch_compute warning" if i < 50 else "")
             for i in range(60)) + "        return y\n")

# Kernel source read as C++: each native rule names the line of each use (a name once, at
# its first use), in load_inline's and the raw format's sources, on both devices.
RAW_CUDA_BASE = '''import torch
import torch.nn as nn
from kforge import load_cuda

relu_source = r"""
#include <cuda_runtime.h>
__global__ void relu_kernel(const float* x, float* y, long n) {}
extern "C" void relu_forward(const float* x, float* y, long n, cudaStream_t s) {
    relu_kernel<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
}
"""
ext = load_cuda(relu_source, name="kf_raw_relu_test")
''' + MODEL + '''        out = torch.empty_like(x)
        ext.relu_forward(x, out, x.numel())
        return out
'''
RETURN_RELU = MODEL + "        return ext.relu_forward(x)\n"


def cxx(lines, base=CPU_BASE):
    """base with C++ lines added to its kernel source, after its first #include."""
    first = base.index("#include")
    first = base.index("\n", first) + 1
    return base[:first] + lines + base[first:]


case("python_c_api", cxx(r'''#include <Python.h>  // #! python_c_api error
// PyEval_GetFrame() named in a comment is no call of it
/* nor in a block comment: Py_INCREF(f);
   PyObject_GetAttrString(f, "f_locals"); */
static const char* note = "Py_DECREF in a message";
static PyObject* frame_globals() {  // #! python_c_api error
    return PyEval_GetGlobals();  // #! python_c_api error
}
static void reach() {
    pybind11::gil_scoped_acquire gil;  // #! python_c_api error
    auto torch_module = py::module_::import("torch");  // #! python_c_api error
}
''') + RETURN_RELU)
case("python_c_api_raw_cuda", cxx(r'''#include <frameobject.h>  // #! python_c_api error
static void reach() { PyThreadState* t = _PyThreadState_UncheckedGet(); }  // #! python_c_api error
''', RAW_CUDA_BASE), device="cuda", fmt="raw")
case("dispatcher_registration", cxx(r'''// TORCH_LIBRARY_IMPL(aten, CPU, m): a comment
TORCH_LIBRARY(kf_own, m) { m.def("relu(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(kf_own, CPU, m) { m.impl("relu", relu_forward); }
TORCH_LIBRARY_IMPL(aten, CPU, m) {  // #! dispatcher_registration error
    m.impl("relu", relu_forward);
}
TORCH_LIBRARY_FRAGMENT(kf_other, m) {}  // #! dispatcher_registration error
TORCH_LIBRARY(prims, m) {}  // #! dispatcher_registration error
static void route() {
    auto& d = c10::Dispatcher::singleton();  // #! dispatcher_registration error
    c10::impl::ExcludeDispatchKeyGuard guard(keys);  // #! dispatcher_registration error
}
''') + RETURN_RELU)
case("global_context", cxx(r'''static void settings(cublasHandle_t handle) {
    at::globalContext().setAllowTF32CuBLAS(true);  // #! global_context error
    at::set_num_threads(16);  // #! global_context error
    cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 20);  // #! global_context error
    cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH);  // #! global_context error
}
''', CUDA_BASE) + RETURN_RELU, device="cuda")
case("l2_persistence", cxx(r'''static void keep_in_l2(cudaStream_t s, void* p, size_t n) {
    cudaStreamAttrValue attr = {};  // #! l2_persistence error
    attr.accessPolicyWindow.base_ptr = p;  // #! l2_persistence error
    auto window = cudaStreamAttributeAccessPolicyWindow;  // #! l2_persistence error
    cudaStreamSetAttribute(s, window, &attr);  // #! l2_persistence error
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n);  // #! global_context error, l2_persistence error
    cudaStreamAttrValue again = {};
}
''', CUDA_BASE) + RETURN_RELU, device="cuda")
case("dynamic_loading", cxx(r'''#include <dlfcn.h>  // #! dynamic_loading error
static void* blas() {
    void* h = dlopen("libopenblas.so", RTLD_NOW);  // #! dynamic_loading error
    return dlsym(h, "cblas_sgemm");  // #! dynamic_loading error
}
''') + RETURN_RELU)
case("dynamic_loading_raw_cuda", cxx(r'''static void* entry() {
    void* fn = nullptr;
    cudaGetDriverEntryPoint("cuMemcpy", &fn, cudaEnableDefault);  // #! dynamic_loading error
    return fn;
}
''', RAW_CUDA_BASE), device="cuda", fmt="raw")
case("concurrency_kernel_threads", cxx(r'''static void side() {
    std::thread t([] {});  // #! concurrency error
    t.detach();
    auto f = std::async(std::launch::async, [] { return 1; });  // #! concurrency error
    pthread_create(nullptr, nullptr, nullptr, nullptr);  // #! concurrency error
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // #! concurrency warning
}
''') + RETURN_RELU)
case("concurrency_kernel_pools", cxx(r'''static void side(torch::Tensor x) {
    at::launch([x] { (void)x; });  // #! concurrency error, torch_compute warning
    c10::ThreadPool pool(2);  // #! concurrency error
    at::parallel_for(0, 8, 1, [](int64_t b, int64_t e) {});
}
''') + RETURN_RELU)
case("concurrency_other_names", CPU_BASE + '''import posix
import _ctypes  #! concurrency error
from _posixsubprocess import fork_exec  #! concurrency error
import numpy as np
import torch.distributed  #! concurrency error
from torch.utils.data import DataLoader
posix.fork()  #! concurrency error
np.ctypeslib.load_library("libc.so.6", "/lib")  #! concurrency error
_loader = DataLoader([1, 2], num_workers=2)  #! concurrency error
''' + MODEL + '''        out = torch.empty_like(x)
        torch.jit.fork(ext.relu_forward, x)  #! concurrency error
        return ext.relu_forward(x)
''')
case("builtins_by_subscript", CPU_BASE + '''name = "ex" + "ec"
__builtins__[name]("x = 1")  #! exec_eval error
__builtins__["eval"]("1")  #! exec_eval error
torch.set_num_threads(8)  #! global_context error
torch.set_flush_denormal(True)  #! global_context error
''' + MODEL + '''        return ext.relu_forward(x)
''')
case("patching_through_classes", CPU_BASE + '''import time
object.__setattr__(torch.nn.functional, "relu", None)  #! patching error
type.__setattr__(torch.Tensor, "relu", None)  #! patching error
type(torch.ones(1)).__add__ = None  #! patching error
cls = torch.ones(1).__class__
cls.mul = None  #! patching error
time.__dict__.update(perf_counter=None)  #! patching error
vars(time).update(perf_counter=None)  #! patching error
''' + MODEL + '''        type(self).calls = 1
        return ext.relu_forward(x)
''')
case("concurrency_kernel_processes", cxx(r'''/* a comment: fork(), system("ls")
   and kill(1, 9) are no calls */
static void side() {
    TORCH_CHECK(true, "fork() and system() in a message are no calls");
    if (fork() == 0) execvp("sh", nullptr);  // #! concurrency error
    std::system("true");  // #! concurrency error
    ::kill(1, 9);  // #! concurrency error
}
''') + RETURN_RELU)
case("concurrency_kernel_hidden", cxx(r'''#define FOOR
static int system(const char* command) { return ::system(command); }  // #! concurrency error
static void hide() {
    auto s = FOOR"(" ; popen("sh", "r"); ")";  // #! concurrency error
    auto p = &vfork;  // #! concurrency error
}
''') + RETURN_RELU)
case("concurrency_kernel_raw_cuda", cxx(r'''static void call() {
    asm volatile("syscall" ::: "memory");  // #! concurrency error
    usleep(10);  // #! concurrency warning
}
''', RAW_CUDA_BASE), device="cuda", fmt="raw")
case("io_access_kernel", cxx(r'''#include <fstream>
// fopen("x") and std::ifstream in a comment open nothing
static void cache(std::vector<float>& v) {
    FILE* f = std::fopen("cache.bin", "rb");  // #! io_access error
    std::ifstream in("/tmp/kforge_out.bin");  // #! io_access error
    int fd = open("/proc/self/maps", 0);  // #! io_access error
}
''') + RETURN_RELU)
case("io_access_kernel_cuda", cxx(r'''static void ask() {
    int s = socket(AF_INET, SOCK_STREAM, 0);  // #! io_access error
    write(3, "x", 1);  // #! io_access error
    mmap(nullptr, 4096, 0, 0, s, 0);  // #! io_access error
    ::close(s);  // #! io_access error
}
''', CUDA_BASE) + RETURN_RELU, device="cuda")
case("env_access_kernel", cxx(r'''static bool debug() {
    const char* v = std::getenv("KFORGE_DEBUG");  // #! env_access warning
    setenv("OMP_NUM_THREADS", "64", 1);  // #! io_access error
    return v != nullptr;
}
''') + RETURN_RELU)
case("kernel_source_through_names", CPU_BASE.replace(
    'ext = load_inline(name="kf_relu_test", cpp_sources=relu_source, functions=["relu_forward"])',
    'probe = "static int probe() { return fork(); }"  #! concurrency error\n'
    'parts = [relu_source, probe]\n'
    'ext = load_inline(name="kf_relu_test", cpp_sources=parts, functions=["relu_forward"])')
    + RETURN_RELU)
# Names that only look like the rules' (and what is allowed) give nothing: no mark here.
case("kernel_look_alikes_cpu", cxx(r'''#include <omp.h>
#include <algorithm>
#include <thread>
static int my_system(int v) { return v; }
static void execute_kernel() {}
static void remove_padding(float* p) {}
static void write(float* out, int i, float v) { out[i] = v; }
static float truncate(float v, float step) { return v - std::fmod(v, step); }
static int send(int a) { return a; }
static int PyTorch_version = 2, copy_object = 1, dl_handles = 0;
static void honest(torch::Tensor x, std::vector<float>& v) {
    bool forked = false; int kill_mask = 0, open_count = 0, system_id = 0, signal_bits = 0;
    execute_kernel();
    remove_padding(nullptr);
    write(nullptr, 0, 1.0f);
    truncate(1.5f, 0.5f);
    send(3);
    my_system(1);
    auto y = x.clone();
    v.erase(std::remove(v.begin(), v.end(), 0.0f), v.end());
    unsigned cores = std::thread::hardware_concurrency();
    int threads = at::get_num_threads();
    omp_set_num_threads(threads);
    #pragma omp parallel for num_threads(4)
    for (int i = 0; i < 4; ++i) {}
    at::parallel_for(0, 8, 1, [&](int64_t b, int64_t e) {});
    fprintf(stderr, "open failed: %d / %d\n", 1, 2);
    printf("ratio %d / %d of tmp/x, ./proc and a/dev\n", 1, 2);
    auto s = R"(fork(); system("x"); dlopen)";
}
''') + RETURN_RELU)
case("kernel_look_alikes_cuda", cxx(r'''#include <cuda_runtime.h>
__device__ void spin(int* flag) { while (atomicAdd(flag, 0) == 0) __nanosleep(100); }
__device__ float read(const float* p, int i) { return p[i]; }
static void honest(cudaStream_t stream) {
    cudaFuncSetAttribute(relu_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
    cudaStreamSynchronize(stream);
    __threadfence_system();
    int thread = threadIdx_x_placeholder;
}
''', CUDA_BASE) + RETURN_RELU, device="cuda")

# Honest candidates written here: no error, no torch_compute.
HONEST = {
    "autograd_function": (CPU_BASE + '''

class ReluFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ext.relu_forward(x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * (x > 0)


class ModelNew(nn.Module):
    def forward(self, x):
        return ReluFunction.apply(x)
''', "cpu", "load_inline"),
    "lazy_build_and_shapes": (CPU_BASE + '''
_ext = None


def get_ext():
    global _ext
    if _ext is None:
        _ext = load_inline(name="kf_lazy", cpp_sources=relu_source, functions=["relu_forward"])
    return _ext


class ModelNew(nn.Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim
        self.ops = None

    def forward(self, x):
        if self.ops is None:
            self.ops = get_ext()
        dim = self.dim + x.dim() if self.dim < 0 else self.dim
        shape = list(x.shape)
        shape[dim] = 1
        blocks = (x.numel() + 255) // 256
        if x.dim() != 2 or x.shape[0] % 2:
            raise ValueError("unexpected shape %s" % (tuple(x.shape),))
        try:
            out = self.ops.relu_forward(x.contiguous().view(-1))
        except RuntimeError as e:
            raise RuntimeError("relu kernel failed: %s" % e) from e
        return self._shape(out, x, blocks)

    def _shape(self, out, x, blocks: int):
        assert blocks * 256 >= x.numel()
        return out.view_as(x)
''', "cpu", "load_inline"),
    "raw_cuda": ('''import torch
import torch.nn as nn
from kforge import load_cuda

ops = load_cuda(r"""
__global__ void add_kernel(const float* a, const float* b, float* out, long n) {}
extern "C" void add(const float* a, const float* b, float* out, long n, cudaStream_t s) {
    add_kernel<<<(n + 255) / 256, 256, 0, s>>>(a, b, out, n);
}
""", name="kf_raw_add")


class ModelNew(nn.Module):
    def forward(self, a, b):
        if a.shape != b.shape:
            raise RuntimeError("shapes differ")
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty_like(a)
        ops.add(a, b, out, a.numel())
        return out
''', "cuda", "raw"),
}


# Honest Triton candidates (checked with backend triton): ours written here, and the
# bundled Triton examples of the prompts with their problems.
TRITON_HONEST = {
    "launch": TRITON_BASE + MODEL + TRITON_LAUNCH,
    "jit_imported_by_name": TRITON_BASE.replace("import triton\n", "import triton\nfrom triton import jit\n")
    .replace("@triton.jit", "@jit") + MODEL + TRITON_LAUNCH,
    "autotuned": TRITON_BASE.replace("@triton.jit", "@triton.autotune(configs=[triton.Config({'BLOCK': 1024})], "
                                     "key=['n'])\n@triton.jit") + MODEL + '''        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)
        relu_kernel[grid](x, out, x.numel())
        return out
''',
    "through_a_helper": TRITON_BASE + '''

def relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
''' + MODEL + '''        return relu(x.contiguous())
''',
}


def check_triton_honest():
    prompts = os.path.join(ROOT, "llm", "prompts")
    bundled = sorted(glob.glob(os.path.join(prompts, "example*_cuda_triton_new.py")))
    check(len(bundled) == 3, "bundled Triton examples: %s" % bundled)
    for path in bundled:
        problem = path.replace("_triton_new.py", ".py")
        findings = kforge_check.check(open(path).read(), open(problem).read(), "cuda",
                                      "load_inline", "fp32", "warning", "triton")
        check(findings == [], "bundled %s: %s" % (os.path.basename(path), findings))
    for name, source in TRITON_HONEST.items():
        findings = kforge_check.check(source, PROBLEM_SRC, "cuda", "load_inline", "fp32",
                                      "warning", "triton")
        check(findings == [], "honest Triton %s: %s" % (name, findings))


def expected_findings(source):
    """(rule, severity, line) for each `#! rule severity[, rule severity]` mark."""
    expected = set()
    for number, text in enumerate(source.split("\n"), 1):
        m = re.search(r"#!(0?) ([a-z_0-9]+ [a-z]+(?:, [a-z_0-9]+ [a-z]+)*)", text)
        if m:
            line = 0 if m.group(1) else number
            for item in m.group(2).split(", "):
                rule, severity = item.split()
                expected.add((rule, severity, line))
    return expected


def check_cases():
    covered = set()
    for name, (source, options) in sorted(CASES.items()):
        findings = kforge_check.check(source, PROBLEM_SRC, options["device"], options["fmt"],
                                      options["precision"], options["torch_ops"],
                                      options["backend"])
        got = {(f["rule"], f["severity"], f["line"]) for f in findings}
        want = expected_findings(source)
        if name == "too_many_findings":
            # The 50 shown are the first 50 by line; the 51st says the rest were cut.
            check(len(findings) == 51 and findings[-1]["rule"] == "too_many_findings" and
                  findings[-1]["severity"] == "warning",
                  "case too_many_findings: %d findings, last %s" % (len(findings),
                                                                    findings[-1:]))
            got = {(f["rule"], f["severity"], f["line"]) for f in findings[:-1]}
        check(got == want, "case %s: missing %s, unexpected %s" % (
            name, sorted(want - got), sorted(got - want)))
        for f in findings:
            check(f["message"].startswith("line %d: " % f["line"]) if f["line"] else
                  not f["message"].startswith("line "),
                  "case %s: message does not start with its line: %r" % (name, f["message"]))
        covered |= {f["rule"] for f in findings}
    rules = {name for name, _, _ in kforge_check.RULES}
    check(covered == rules, "rules no case produces: %s" % sorted(rules - covered))


def check_format_hint():
    """A kernel in the other build format is refused with a line naming its format and
    the evaluation's (the demo's raw replies given to a load_inline eval, and back)."""
    source, options = CASES["no_custom_kernel_wrong_format"]
    for fmt, other in (("raw", "load_inline"), ("load_inline", None)):
        findings = kforge_check.check(source, PROBLEM_SRC, "cpu", fmt, "fp32", "warning", "cuda")
        msgs = [f["message"] for f in findings if f["rule"] == "no_custom_kernel"]
        if other is None:
            check(not msgs, "a load_inline kernel refused under load_inline: %s" % msgs)
            continue
        check(len(msgs) == 1 and "written for the %s format" % other in msgs[0] and
              "eval.format is %s" % fmt in msgs[0], "no format hint: %s" % msgs)


def check_spliced_lines():
    """A backslash ending a line joins it to the next, in the compiler and in the checker:
    a name split so is found, on the line it starts on, and the lines after stay right
    (a mark cannot follow the backslash, so the lines are named here)."""
    source = cxx("static void hide() {\n"
                 "    int pid = fo\\\n"
                 "rk();\n"
                 "    auto s = \"a \\\n"
                 "b\";\n"
                 "system(s);\n"
                 "}\n") + RETURN_RELU
    lines = source.split("\n")
    want = [("concurrency", "error", lines.index("    int pid = fo\\") + 1),
            ("concurrency", "error", lines.index("system(s);") + 1)]
    findings = kforge_check.check(source, PROBLEM_SRC, "cpu", "load_inline", "fp32")
    got = [(f["rule"], f["severity"], f["line"]) for f in findings]
    check(got == want, "spliced lines: got %s, want %s" % (got, want))


def last_python_block(path):
    """The code kforge would take from a reply: its last ```python block."""
    blocks = re.findall(r"^```python\n(.*?)^```", open(path).read(), re.S | re.M)
    return blocks[-1] if blocks else None


def problem_for(name):
    """L1_1_ReLU -> problems/level1/1_ReLU.py."""
    level, rest = name.split("_", 1)
    return os.path.join(ROOT, "problems", "level" + level[1:], rest + ".py")


def honest_candidates():
    """(label, source, problem path, device, format) of every honest candidate."""
    found = []
    responses = os.path.join(ROOT, "configs", "demo_responses")
    for fmt, root in (("load_inline", responses), ("raw", os.path.join(responses, "raw"))):
        for path in sorted(glob.glob(os.path.join(root, "*", "*", "*.md"))):
            device, name = path.split(os.sep)[-3:-1]
            if device not in ("cpu", "cuda"):
                continue
            source = last_python_block(path)
            if source is not None:    # some demo turns are prose with no code, on purpose
                found.append((os.path.relpath(path, ROOT), source, problem_for(name), device,
                              fmt))
    return found


def not_allowed(findings):
    return [f for f in findings if f["severity"] == "error" or f["rule"] == "torch_compute"]


def check_honest(candidates):
    check(len(candidates) >= 80, "only %d demo candidates found" % len(candidates))
    slowest = 0.0
    for label, source, problem, device, fmt in candidates:
        check(os.path.exists(problem), "%s: no problem file %s" % (label, problem))
        start = time.perf_counter()
        findings = kforge_check.check(source, open(problem).read(), device, fmt, "fp32")
        slowest = max(slowest, time.perf_counter() - start)
        check(not not_allowed(findings), "honest %s: %s" % (label, not_allowed(findings)))
    for name, (source, device, fmt) in HONEST.items():
        findings = kforge_check.check(source, PROBLEM_SRC, device, fmt, "fp32")
        check(not not_allowed(findings), "honest %s: %s" % (name, not_allowed(findings)))
    print("honest candidates: %d checked, slowest %.1f ms in check()"
          % (len(candidates) + len(HONEST), slowest * 1000))


def run_cli(args):
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-SE", CHECKER] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    return p, time.perf_counter() - start


def cli_args(candidate, problem=PROBLEM_RELU, device="cpu", fmt="load_inline",
             precision="fp32"):
    return ["--problem", problem, "--candidate", candidate, "--device", device,
            "--format", fmt, "--precision", precision]


def parse_output(p, what):
    """The JSON line of a successful run, checked against the contract."""
    check(p.returncode == 0, "%s: exit %d, stderr %r" % (what, p.returncode, p.stderr[-500:]))
    lines = p.stdout.split("\n")
    check(len(lines) == 2 and lines[1] == "", "%s: not exactly one line: %r" % (what, p.stdout))
    try:
        out = json.loads(lines[0])
    except ValueError:
        check(False, "%s: not JSON: %r" % (what, p.stdout[:200]))
        return []
    check(sorted(out) == ["findings", "version"] and out["version"] == 1,
          "%s: keys or version: %r" % (what, sorted(out)))
    findings = out.get("findings", [])
    for f in findings:
        check(sorted(f) == ["line", "message", "rule", "severity"] and
              isinstance(f["line"], int) and f["severity"] in ("error", "warning") and
              isinstance(f["message"], str) and "\n" not in f["message"],
              "%s: finding shape: %r" % (what, f))
    check([f["line"] for f in findings] == sorted(f["line"] for f in findings),
          "%s: findings not sorted by line" % what)
    return findings


def check_cli(candidates, scratch):
    slowest = 0.0
    for label, source, problem, device, fmt in candidates:
        path = os.path.join(scratch, "candidate.py")
        with open(path, "w") as f:
            f.write(source)
        p, took = run_cli(cli_args(path, problem, device, fmt))
        slowest = max(slowest, took)
        findings = parse_output(p, "cli " + label)
        check(not not_allowed(findings), "cli honest %s: %s" % (label, not_allowed(findings)))
    print("command line: %d candidates, slowest %.0f ms including interpreter start"
          % (len(candidates), slowest * 1000))

    # A cheat through the command line, with --torch-ops error.
    path = os.path.join(scratch, "cheat.py")
    source = CASES["kernel_unused"][0]
    with open(path, "w") as f:
        f.write(source)
    p, _ = run_cli(cli_args(path) + ["--torch-ops", "error"])
    got = {(f["rule"], f["severity"], f["line"]) for f in parse_output(p, "cli cheat")}
    want = {(r, "error", line) for r, _, line in expected_findings(source)}
    check(got == want, "cli cheat: got %s, want %s" % (sorted(got), sorted(want)))

    # A candidate that does not parse is a finding, not a failure of the checker.
    with open(path, "w") as f:
        f.write("import torch\n\nclass ModelNew(:\n    pass\n")
    p, _ = run_cli(cli_args(path))
    findings = parse_output(p, "cli syntax error")
    check([(f["rule"], f["severity"], f["line"]) for f in findings] ==
          [("syntax_error", "error", 3)], "cli syntax error: %s" % findings)
    with open(path, "wb") as f:
        f.write(b"import torch\nx = '\xff\xfe'\n")
    p, _ = run_cli(cli_args(path))
    findings = parse_output(p, "cli not utf-8")
    check([(f["rule"], f["line"]) for f in findings] == [("syntax_error", 2)],
          "cli not utf-8: %s" % findings)

    # Usage errors and unreadable inputs: exit 2, one line on stderr, nothing on stdout.
    big = os.path.join(scratch, "big.py")
    with open(big, "w") as f:
        f.write("x = 1\n" + "#" * (kforge_check.MAX_INPUT_BYTES + 1) + "\n")
    usage_errors = {
        "no arguments": [],
        "missing --precision": cli_args(path)[:-2],
        "bad --device": cli_args(path, device="tpu"),
        "bad --torch-ops": cli_args(path) + ["--torch-ops", "maybe"],
        "unknown option": cli_args(path) + ["--fast"],
        "missing candidate": cli_args(os.path.join(scratch, "absent.py")),
        "missing problem": cli_args(path, problem=os.path.join(scratch, "absent.py")),
        "oversized candidate": cli_args(big),
    }
    for what, args in usage_errors.items():
        p, _ = run_cli(args)
        check(p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1,
              "usage error %s: exit %d, stdout %r, stderr %r"
              % (what, p.returncode, p.stdout[:200], p.stderr[:300]))


def check_large(candidates):
    """A 2 MB candidate, mostly kernel source, as a long reply would be."""
    label, source, problem, device, fmt = candidates[0]
    padding = "// a long kernel: float acc = 0.0f; acc += x[i] * w[i];\n" * 40000
    big = source.replace('r"""\n', 'r"""\n' + padding, 1)
    check(len(big) > 2000000, "the large candidate is only %d bytes" % len(big))
    start = time.perf_counter()
    findings = kforge_check.check(big, open(problem).read(), device, fmt, "fp32")
    took = time.perf_counter() - start
    check(not not_allowed(findings), "large candidate: %s" % not_allowed(findings))
    print("2 MB candidate: %.0f ms in check()" % (took * 1000))


# The times below are printed, never asserted: on CI's shared 2-core machine a check that
# takes 0.3 s alone took 1.08 s beside the rest of the suite and failed the test.
def main():
    check_cases()
    check_spliced_lines()
    check_format_hint()
    check_triton_honest()
    candidates = honest_candidates()
    check_honest(candidates)
    with tempfile.TemporaryDirectory(prefix="kforge_check_test.") as scratch:
        check_cli(candidates, scratch)
    check_large(candidates)
    if FAILURES:
        print("feedback_static_check: %d failures" % len(FAILURES))
        return 1
    print("feedback_static_check: %d cheating cases, all rules covered; ok" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
