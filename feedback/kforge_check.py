#!/usr/bin/env python3
"""kforge_check: static checks of a KernelBench candidate, before anything builds or runs.

A candidate is a Python file defining `class ModelNew(nn.Module)` that must compute what
the problem's `class Model` computes, with a kernel of its own built by load_inline (format
load_inline) or by kforge's load_cuda / load_cpp (format raw), or, with the Triton backend,
a @triton.jit function launched from forward. This module reads the
candidate with the standard library's ast: it never imports or runs it, and never imports
torch. It finds the ways a candidate can pass without doing the work in its kernel (the
reference reused, PyTorch ops doing the work, fallbacks, cached outputs, patched or seeded
libraries, side streams, lower precision, ...) and says so in one sentence per finding,
for the model to read. The kernel's C++ and CUDA are read too, as code (comments and
literals apart): the Python C API, dispatcher registration, process-wide settings,
persisting L2, dynamic loading, threads, processes, files and sockets there.

Command line (the C side depends on it exactly):

  python3 -SE feedback/kforge_check.py --problem PROBLEM.py --candidate CANDIDATE.py
      --device cpu|cuda --format load_inline|raw --precision fp32|fp16|bf16
      [--torch-ops error|warning] [--backend cuda|triton]

prints one line of JSON, {"findings": [{"rule", "severity", "line", "message"}, ...],
"version": 1}, findings sorted by line, at most 50 (then one "too_many_findings"), and
exits 0. A candidate that does not parse gives one "syntax_error" finding. Exit status 2,
with one line on stderr, is kept for usage errors and unreadable inputs (missing, or over
4 MiB). Tests import check() instead.

Written for Python >= 3.9, standard library only.
"""

import argparse
import ast
import bisect
import builtins
import json
import re
import sys

VERSION = 1
MAX_INPUT_BYTES = 4 << 20
MAX_FINDINGS = 50
MAX_MESSAGE = 400       # characters: a message quotes the candidate, which may be huge

# The rules: name, severity, what the rule catches. "--torch-ops" is the option's value;
# "error|warning" is decided per finding, as the description says.
RULES = (
    ("syntax_error", "error",
     "the candidate does not parse as Python (or is not UTF-8, or is nested too deeply to read)"),
    ("no_model_new", "error", "no class ModelNew at module level"),
    ("inherits_reference", "error",
     "ModelNew inherits the reference Model (directly, through an alias or a class of the "
     "candidate), the candidate uses the reference class, or it reaches the reference module"),
    ("no_custom_kernel", "error",
     "no extension is built (load_inline / cpp_extension.load; load_cuda or load_cpp from "
     "kforge in the raw format), or on cuda no string holds a __global__ kernel; with the "
     "Triton backend, no @triton.jit function"),
    ("kernel_unused", "error",
     "forward, and the code it calls, never calls the extension the candidate built (or "
     "never launches its Triton kernel)"),
    ("torch_compute", "--torch-ops",
     "forward's code computes with PyTorch: a torch / F function or tensor method outside the "
     "allow list, an nn layer of __init__, an operator on a tensor, or torch:: / at:: compute "
     "functions called from the extension's C++"),
    ("fallback_path", "error",
     "a try/except in forward's code, or around a use of the extension, whose handler does "
     "not re-raise: a way around the kernel when it fails"),
    ("concurrency", "error|warning",
     "threads, processes or foreign calls: threading, multiprocessing, concurrent, subprocess, "
     "pty, asyncio, ctypes, cffi, os.fork / system / popen / spawn* / exec*; in kernel source "
     "std::thread / std::async / pthread_create, fork, exec*, system, popen, posix_spawn, "
     "signals, ptrace, prctl, scheduling and syscall (error), sleeping (warning)"),
    ("stream_creation", "error",
     "a CUDA stream or graph of the candidate's own: torch.cuda.Stream / stream / "
     "ExternalStream / graph, or cudaStreamCreate*, cudaLaunchHostFunc, cudaGraph*, stream "
     "capture or pool streams in kernel source"),
    ("patching", "error",
     "writes an attribute of an imported module or class (torch, nn, F, time, builtins, "
     "numpy, ...), sys.modules or __builtins__, or installs an interpreter-wide hook"),
    ("rng_tampering", "error",
     "seeds or sets random state: torch.manual_seed, torch.set_rng_state, torch.random.*, "
     "torch.cuda seeding, random.seed, numpy.random.seed"),
    ("io_access", "error",
     "files, network, serialised objects or environment writes: open, os file calls, pathlib "
     "reads and writes, socket, urllib, http, requests, shutil, glob, tempfile, pickle / torch "
     "/ numpy load and save, os.environ writes; in kernel source fopen, open, std::fstream, "
     "std::filesystem and other file calls, sockets, pipes, shared memory, mmap, standard "
     "input, paths under /proc, /sys, /dev, /tmp ..., setenv / putenv"),
    ("env_access", "warning",
     "reads the environment (os.environ, os.getenv; getenv or environ in kernel source)"),
    ("cached_output", "error",
     "forward's code keeps state between calls: stores on self, into module-level names or "
     "mutable defaults (the extension handle aside), or is memoised with functools caches"),
    ("lower_precision", "error|warning",
     "with --precision fp32: half / bfloat16 / autocast / TF32 in Python (error), half types "
     "or intrinsics in kernel source (warning)"),
    ("tensor_subclass", "error|warning",
     "a torch.Tensor subclass, __torch_function__ / __torch_dispatch__, a dispatch mode, "
     "_make_subclass (error); torch.library, torch._C, torch.ops.load_library (warning)"),
    ("exec_eval", "error|warning",
     "exec, eval, compile, __import__, importlib, globals() / locals() writes, frame or "
     "garbage-collector introspection (error); getattr on a module with a computed name "
     "(warning)"),
    ("python_c_api", "error",
     "kernel source reaching into the Python interpreter: the Python C API (Py_*, PyEval_*, "
     "PyFrame*, PyObject*, PyImport_*, PyRun_*, PyDict_*, PySys_*, _Py*), PyTorch's THP* "
     "bindings, Python.h / frameobject.h, pybind11's module_::import, globals, eval / exec, "
     "gil_scoped_acquire and embedded interpreters"),
    ("dispatcher_registration", "error",
     "kernel source registering with PyTorch's dispatcher outside a namespace of its own "
     "(TORCH_LIBRARY_IMPL / TORCH_LIBRARY_FRAGMENT of aten, _ or any namespace the candidate "
     "does not define with TORCH_LIBRARY; TORCH_LIBRARY of aten, prim, prims) or reaching it "
     "directly: c10::Dispatcher, torch::Library, RegisterOperators, dispatch key guards and "
     "thread-local dispatch keys"),
    ("global_context", "error",
     "kernel source changing process-wide settings: at::globalContext() and its TF32, "
     "reduced-precision, cuDNN and determinism switches, cuBLAS math modes, PyTorch's and "
     "the BLAS libraries' thread counts (at::set_num_threads, ...; OpenMP's is the kernel's "
     "own), floating-point modes, device-wide CUDA limits and cache configuration "
     "(cudaDeviceSet*), cudaDeviceReset"),
    ("l2_persistence", "error",
     "kernel source setting stream attributes or persisting L2: cudaStreamSetAttribute, access "
     "policy windows, the persisting-L2 limit and its reset, access properties"),
    ("dynamic_loading", "error",
     "kernel source loading libraries or looking symbols up at run time: dlopen, dlsym, "
     "dlfcn.h, LoadLibrary, GetProcAddress, cuGetProcAddress, cudaGetDriverEntryPoint"),
    ("too_many_findings", "error|warning",
     "more than 50 findings: the rest are not listed (error when one left out is an error)"),
)
DEFAULT_SEVERITY = {name: severity.split("|")[0] for name, severity, _ in RULES}

# --------------------------------------------------------------------------- vocabulary

REFERENCE_MODULE = "kforge_reference"   # the name kforge_runner.py loads the problem under
LOAD_INLINE_FUNCS = frozenset(("torch.utils.cpp_extension.load_inline",
                               "torch.utils.cpp_extension.load"))
RAW_LOAD_FUNC = {"cuda": "kforge.load_cuda", "cpu": "kforge.load_cpp"}
TRITON_JIT = "triton.jit"       # the decorator that makes a function a Triton kernel
LOAD_FUNCS = LOAD_INLINE_FUNCS | frozenset(RAW_LOAD_FUNC.values())

# What forward may do with PyTorch itself: allocate, view, move, convert, ask. Anything
# else called through torch / F or on a tensor is taken to be doing the problem's work.
ALLOWED_OPS = frozenset((
    # allocation
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "arange", "tensor", "as_tensor", "new_empty", "new_zeros", "zero_",
    # views and layout
    "view", "view_as", "reshape", "permute", "transpose", "t", "contiguous", "flatten",
    "unflatten", "squeeze", "unsqueeze", "expand", "expand_as", "narrow", "select", "split",
    "chunk", "unbind", "as_strided", "movedim", "swapaxes", "detach",
    # placement and type (precision is lower_precision's business)
    "to", "cuda", "cpu", "float", "type_as", "half", "bfloat16", "double", "int", "long",
    "bool", "requires_grad_",
    # questions, whose answers are not tensors
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous", "data_ptr",
    "item", "tolist", "element_size", "storage_offset", "get_device", "is_floating_point",
    "is_tensor", "get_num_threads", "get_default_dtype", "is_grad_enabled", "device", "dtype",
    "Size", "finfo", "iinfo",
    # autograd context
    "no_grad", "inference_mode", "enable_grad", "set_grad_enabled",
))
SCALAR_RESULTS = frozenset((
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous", "data_ptr",
    "item", "tolist", "element_size", "storage_offset", "get_device", "is_floating_point",
    "is_tensor", "get_num_threads", "get_default_dtype", "is_grad_enabled", "device", "dtype",
    "Size", "finfo", "iinfo", "no_grad", "inference_mode", "enable_grad", "set_grad_enabled",
    "numpy",        # not allowed, but what it returns is NumPy's, not a tensor
))
ALLOWED_TORCH_PATHS = frozenset((
    "torch.cuda.current_stream", "torch.cuda.default_stream", "torch.cuda.synchronize",
    "torch.cuda.current_device", "torch.cuda.device_count", "torch.cuda.is_available",
    "torch.cuda.get_device_properties", "torch.cuda.get_device_capability",
    "torch.cuda.get_device_name", "torch.cuda.device",
))
# torch namespaces whose functions configure or build rather than compute (other rules
# judge what in them matters: patching, tensor_subclass, the extension build).
NON_COMPUTE_TORCH = ("torch.backends.", "torch.utils.", "torch.library.", "torch.profiler.",
                     "torch.autocast", "torch.amp.", "torch.cuda.amp.", "torch.cpu.amp.")
# Attributes of a tensor that are tensors too (shape, dtype, device, ... are not).
TENSOR_ATTRS = frozenset(("T", "mT", "H", "mH", "real", "imag", "data", "grad"))
# Parameters of nn layers, read by honest candidates to hand them to the kernel.
PARAMETER_ATTRS = frozenset(("weight", "bias"))
# nn classes that hold tensors or modules rather than compute.
NN_HOLDERS = frozenset(("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                        "torch.nn.ParameterList", "torch.nn.ParameterDict"))
NN_CONTAINERS = frozenset(("Sequential", "ModuleList", "ModuleDict"))
SCALAR_ANNOTATIONS = frozenset(("int", "float", "bool", "str"))
OPERATOR_SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
    ast.BitAnd: "&", ast.BitXor: "^", ast.USub: "unary -", ast.Invert: "~",
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
}
# Python builtins that, given a tensor, compute with PyTorch (as the operators do).
COMPUTING_BUILTINS = frozenset("builtins." + n for n in ("abs", "sum", "max", "min", "pow",
                                                           "round", "divmod"))
# Container methods that keep something for later calls.
STATE_MUTATORS = frozenset(("append", "extend", "insert", "update", "setdefault",
                            "__setitem__", "add", "register_buffer", "register_parameter",
                            "add_module", "register_module"))
MEMO_DECORATORS = frozenset(("functools.lru_cache", "functools.cache",
                             "functools.cached_property"))

# Calls judged wherever they are: qualified name -> (rule, severity or None, why). Prefix
# entries end with a dot or cover a family (os.spawnl, os.spawnv, ...).
_WHY_CONCURRENCY = "threads, processes and foreign calls are not allowed in a candidate"
_WHY_STREAM = ("work on a stream or graph of your own escapes the evaluator's timing; launch "
               "on the current stream")
_WHY_HOOK = "installing interpreter-wide hooks is not allowed"
_WHY_RNG = ("seeding or setting random state can make the evaluator's inputs predictable and "
            "is not allowed")
_WHY_IO = "reading or writing files, the network or serialised objects is not allowed"
_WHY_ENV_WRITE = "changing the environment is not allowed"
_WHY_ENV_READ = "the candidate should not depend on the environment"
_WHY_EXEC = "running code built at run time is not allowed, the checker must see what runs"
_WHY_INTROSPECT = "inspecting the evaluator's frames or objects is not allowed"
CALL_RULES = {}
CALL_RULE_PREFIXES = []


def _calls(rule, why, names, severity=None):
    for name in names:
        if name.endswith(".") or name.endswith("*"):
            CALL_RULE_PREFIXES.append((name.rstrip("*"), (rule, severity, why)))
        else:
            CALL_RULES[name] = (rule, severity, why)


_calls("concurrency", _WHY_CONCURRENCY, (
    "os.fork", "os.forkpty", "os.system", "os.popen", "os.posix_spawn", "os.posix_spawnp",
    "os.spawn*", "os.exec*"))
# TorchScript's fork runs a call on the inter-op pool and returns a future at once: what
# it computes can land after forward has returned and the timer stopped.
_calls("concurrency", _WHY_CONCURRENCY, (
    "torch.jit.fork", "torch.jit._fork", "torch._C._jit_fork", "torch.futures.", "torch.jit.wait",
    "torch.jit._wait"))
# Other libraries' doors to the same: numpy's ctypes (a foreign library loaded and called),
# a DataLoader's worker processes, torch.distributed's processes, threads and sockets.
_calls("concurrency", _WHY_CONCURRENCY, (
    "numpy.ctypeslib.", "torch.utils.data.DataLoader", "torch.utils.data.dataloader.",
    "torch.distributed."))
_calls("stream_creation", _WHY_STREAM, (
    "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.cuda.graph",
    "torch.cuda.CUDAGraph", "torch.cuda.make_graphed_callables", "torch.cuda.streams.",
    "torch.cuda.graphs.", "torch.Stream"))
_calls("patching", _WHY_HOOK, (
    "sys.settrace", "sys.setprofile", "sys.addaudithook", "atexit.register", "signal.signal",
    "signal.setitimer", "signal.alarm", "torch.nn.modules.module.register_module_*"))
_calls("rng_tampering", _WHY_RNG, (
    "torch.manual_seed", "torch.seed", "torch.set_rng_state", "torch.random.",
    "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.cuda.seed",
    "torch.cuda.seed_all", "torch.cuda.set_rng_state", "torch.cuda.set_rng_state_all",
    "random.seed", "random.setstate", "numpy.random.seed", "numpy.random.set_state"))
_calls("io_access", _WHY_IO, (
    "builtins.open", "io.open", "io.open_code", "os.open", "os.fdopen", "os.read", "os.write",
    "os.remove", "os.unlink", "os.rename", "os.renames", "os.replace", "os.listdir", "os.walk",
    "os.scandir", "os.makedirs", "os.mkdir", "os.rmdir", "os.removedirs", "os.chdir",
    "os.chmod", "os.chown", "os.link", "os.symlink", "os.truncate", "os.mkfifo", "os.utime",
    "pickle.load", "pickle.loads", "pickle.Unpickler", "marshal.load", "marshal.loads",
    "torch.load", "torch.save", "numpy.load", "numpy.save", "numpy.savez",
    "numpy.savez_compressed", "numpy.fromfile", "numpy.loadtxt", "numpy.savetxt",
    "numpy.genfromtxt", "numpy.memmap"))
_calls("io_access", _WHY_ENV_WRITE, ("os.putenv", "os.unsetenv"))
_calls("env_access", _WHY_ENV_READ, ("os.getenv", "os.getenvb"))
_calls("exec_eval", _WHY_EXEC, (
    "builtins.exec", "builtins.eval", "builtins.compile", "builtins.__import__", "importlib."))
_calls("exec_eval", _WHY_INTROSPECT, (
    "sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.getouterframes",
    "inspect.trace", "gc.get_objects", "gc.get_referrers", "gc.get_referents"))
_calls("tensor_subclass",
       "loading a library of custom operators may be legitimate, but check the work is your "
       "own kernel", ("torch.ops.load_library",), severity="warning")

# Modules that are another name for one the rules name: the C modules under them (posix
# is os's, _ctypes ctypes's, _posixsubprocess subprocess's) and the import machinery's
# own. A candidate that imports posix and calls posix.fork is judged as os.fork is.
CANONICAL_MODULES = {
    "posix": "os", "nt": "os", "_io": "io", "_ctypes": "ctypes",
    "_posixsubprocess": "subprocess", "_multiprocessing": "multiprocessing",
    "_posixshmem": "multiprocessing", "_asyncio": "asyncio", "_socket": "socket",
    "_signal": "signal", "_pickle": "pickle", "_imp": "importlib",
    "_frozen_importlib": "importlib", "_frozen_importlib_external": "importlib",
}


def canonical(dotted):
    """dotted with its top module's other name replaced by the one the rules name."""
    top, dot, rest = dotted.partition(".")
    return CANONICAL_MODULES.get(top, top) + dot + rest


# Imports judged on their own: module (or package prefix) -> (rule, why).
IMPORT_RULES = {
    "threading": ("concurrency", _WHY_CONCURRENCY),
    "_thread": ("concurrency", _WHY_CONCURRENCY),
    "multiprocessing": ("concurrency", _WHY_CONCURRENCY),
    "torch.multiprocessing": ("concurrency", _WHY_CONCURRENCY),
    "concurrent": ("concurrency", _WHY_CONCURRENCY),
    "subprocess": ("concurrency", _WHY_CONCURRENCY),
    "pty": ("concurrency", _WHY_CONCURRENCY),
    "asyncio": ("concurrency", _WHY_CONCURRENCY),
    "ctypes": ("concurrency", _WHY_CONCURRENCY),
    "cffi": ("concurrency", _WHY_CONCURRENCY),
    "numpy.ctypeslib": ("concurrency", _WHY_CONCURRENCY),
    "torch.distributed": ("concurrency", _WHY_CONCURRENCY),
    "socket": ("io_access", _WHY_IO),
    "urllib": ("io_access", _WHY_IO),
    "urllib3": ("io_access", _WHY_IO),
    "http": ("io_access", _WHY_IO),
    "requests": ("io_access", _WHY_IO),
    "httpx": ("io_access", _WHY_IO),
    "ftplib": ("io_access", _WHY_IO),
    "smtplib": ("io_access", _WHY_IO),
    "shutil": ("io_access", _WHY_IO),
    "glob": ("io_access", _WHY_IO),
    "tempfile": ("io_access", _WHY_IO),
    "importlib": ("exec_eval", _WHY_EXEC),
    REFERENCE_MODULE: ("inherits_reference",
                       "the candidate must not read or change the reference module"),
}
PATHLIB_IO_METHODS = frozenset(("read_text", "read_bytes", "write_text", "write_bytes"))
MAPPING_WRITERS = frozenset(("update", "pop", "popitem", "setdefault", "clear", "__setitem__",
                             "__delitem__"))
INTROSPECTION_ATTRS = frozenset(("f_back", "f_globals", "f_locals", "f_builtins", "tb_frame",
                                 "gi_frame", "cr_frame", "__globals__", "__code__",
                                 "__closure__", "__subclasses__"))
TENSOR_BASES = frozenset(("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter",
                          "torch._C.TensorBase", "torch._C._TensorBase",
                          "torch.overrides.TorchFunctionMode",
                          "torch.utils._python_dispatch.TorchDispatchMode"))
DISPATCH_HOOKS = frozenset(("__torch_function__", "__torch_dispatch__"))
LOW_PRECISION_NAMES = frozenset(("torch.float16", "torch.half", "torch.bfloat16",
                                 "torch.autocast"))
LOW_PRECISION_PREFIXES = ("torch.cuda.amp", "torch.amp", "torch.cpu.amp")
REDUCED_PRECISION_FLAGS = frozenset(("allow_tf32", "allow_fp16_reduced_precision_reduction",
                                     "allow_bf16_reduced_precision_reduction"))

# Kernel source: strings that look like C++ or CUDA, where these are searched.
KERNEL_MARKERS = ("#include", "__global__", "__device__", 'extern "C"', "PYBIND11_MODULE",
                  "torch::", "at::")
# Each pattern comes with words one of which must be in the text: a plain substring test
# is far faster than a regular expression over a long kernel, and rules most strings out.
KERNEL_STREAM_PATTERNS = (
    (("StreamCreate",), re.compile(r"\bcu(?:da)?StreamCreate\w*"), "creates a CUDA stream"),
    (("cudaLaunchHostFunc", "cudaStreamAddCallback"),
     re.compile(r"\bcudaLaunchHostFunc\b|\bcudaStreamAddCallback\b"), "queues host work"),
    (("cudaGraph", "BeginCapture"), re.compile(r"\bcudaGraph\w*|\bcudaStreamBeginCapture\w*"),
     "captures a CUDA graph"),
    (("getStreamFromPool",), re.compile(r"\bgetStreamFromPool\b"),
     "takes a side stream from the pool"),
)
KERNEL_HALF_PATTERNS = (
    (("half",), re.compile(r"\b__half2?\b|\bhalf2\b")),
    (("bfloat16",), re.compile(r"\b__nv_bfloat162?\b")),
    (("half", "bfloat16"),
     re.compile(r"\b__float2(?:half|bfloat16)\w*|\b__half2float\b|\b__bfloat162float\b")),
    (("wmma",), re.compile(r"\bwmma::fragment<[^>;]*\b(?:half|__half|__nv_bfloat16|bf16)\b")),
    (("mma.sync",), re.compile(r"\bmma\.sync[\w.]*\.b?f16\b")),
    (("Half", "BFloat16"), re.compile(r"\b(?:at|torch|c10)::(?:kHalf|kBFloat16|Half|BFloat16)\b")),
)
# torch::X( / at::X( in the extension's C++: the same deny-by-default as in Python, with
# the helpers honest extensions call (threads, streams, allocation with options; setting
# the thread count and the global context compute nothing: global_context judges them).
# Found by str.find on the namespace, then matched there.
KERNEL_TORCH_NAMESPACES = ("torch::", "at::")
KERNEL_TORCH_CALL = re.compile(
    r"(?:torch|at)::(?:nn::functional::|native::|linalg::|special::|fft::)?(\w+)\s*\(")
KERNEL_TORCH_ALLOWED = ALLOWED_OPS | frozenset((
    "from_blob", "parallel_for", "get_num_threads", "get_num_interop_threads", "TensorOptions",
    "Tensor", "Scalar", "IntArrayRef", "ArrayRef", "Device", "ScalarType", "empty_strided",
    "getCurrentCUDAStream", "getDefaultCUDAStream", "elementSize", "toString", "ceil_div",
    "divup", "check_size_nonnegative", "scalarTypeToTypeMeta", "typeMetaToScalarType",
    "in_parallel_region", "get_thread_num", "set_num_threads", "parallel_reduce",
    "globalContext"))
# Operators the extension registers itself (TORCH_LIBRARY(ns, m)), called as torch.ops.ns.op;
# _IMPL and _FRAGMENT add to a namespace, which must be one the candidate defines.
KERNEL_OP_LIBRARY = re.compile(r"\b(?:STABLE_)?TORCH_LIBRARY(_FRAGMENT|_IMPL)?\s*\(\s*(\w+)")
# PyTorch's own namespaces, never the candidate's to define ("_": every namespace).
PYTORCH_OP_NAMESPACES = frozenset(("aten", "prim", "prims", "_"))

# Kernel source read as C / C++ code: comments, string and character literals and #include
# lines blanked (spaces, newlines kept, so positions and lines stay the text's). The native
# rules match the code, so a comment or a message that names fork is no call of it; the
# literals are searched apart, for paths and assembly, and the headers by name.
C_LEXEMES = re.compile(r'''
    \#[ \t]*include[ \t]*(?:<[^>\n]*>|"[^"\n]*")
  | //[^\n]*
  | /\*.*?(?:\*/|\Z)
  | R(?<!\wR)"([^()\\\s"]{0,16})\(.*?(?:\)\1"|\Z)
  | "(?:\\.|[^"\\\n])*"?
  | '(?:\\.|[^'\\\n])*'
''', re.S | re.X)     # each branch begins with its own character, which re scans for quickly
# (R"(...)" is a raw literal where R starts a token: in FOOR"(" fork(); ")" it ends a name,
# and fork is code; u8R"(...)" and LR"(...)", rare, are read as plain literals.)
NOT_NEWLINE = re.compile(r"[^\n]")
C_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")    # no \b: it would cost a scan of every space
C_QUALIFIER = re.compile(r"(?:\b(\w+))?::\s*\Z")    # the ns of `ns::name` (return ::f: none)
C_CALL_OPEN = re.compile(r"\s*\(")
C_THREAD_QUERY = re.compile(r"\s*::\s*(?:hardware_concurrency|id)\b")
C_FD_ARGUMENT = re.compile(r"\s*\(\s*(?:\d+\s*[,)]|STD(?:IN|OUT|ERR)_FILENO\b)")
# In literals: an absolute path into the system's or other processes' state, and the
# instructions of a system call in inline assembly.
LITERAL_SYSTEM_PATH = re.compile(
    r"(?<![\w.~-])/(?:proc|sys|dev|tmp|run|var|etc|home|root|mnt)(?![\w-])")
LITERAL_SYSCALL = re.compile(r"\b(?:syscall|sysenter)\b|\bint\s+\$?0x80\b")
# The Python C API's names: Py_*, _Py*, and its families (PyEval_*, PyObject, PyFrameObject,
# PyThreadState, ...), so that a name of the kernel's own such as PyTorch_version is none.
PYTHON_API_NAME = re.compile(
    r"_Py[A-Z_]|Py_|Py(?:Eval|Frame|Object|ThreadState|GILState|InterpreterState|Import|Run|"
    r"Dict|Sys|Module|Capsule|Err|Exc|Unicode|Long|Float|Bool|Bytes|List|Tuple|Set|Slice|"
    r"Type|Code|Mem|Callable|CFunction|Method|Function|Instance|Arg|Number|Sequence|Mapping|"
    r"Iter|Gen|Coro|Cell|Weakref|Traceback|Context|Buffer|MemoryView|OS|Compile|Config|"
    r"Status)(?:_|Object\Z|\Z)")

_WHY_PYTHON_API = ("a kernel works on the tensors it is given; the Python C API reaches the "
                   "interpreter's frames, objects and imports, which the checker cannot follow")
_WHY_DISPATCHER = ("registering kernels with PyTorch's dispatcher, or changing how it "
                   "dispatches, changes what PyTorch itself runs; define operators only in a "
                   "namespace of your own (TORCH_LIBRARY(your_ns, m))")
_WHY_GLOBAL = ("process-wide settings change how everything else in the process computes "
               "(precision, threads, device limits) and are not a kernel's to change")
_WHY_L2 = ("stream attributes and persisting-L2 windows outlive your call: they keep data in "
           "L2 across the evaluator's timed calls or change how other work on the stream runs")
_WHY_DLOPEN = ("loading libraries or looking symbols up at run time calls code the checker "
               "cannot see; compute with your own kernel")
_WHY_KERNEL_CONCURRENCY = ("threads, processes, signals and scheduling changes are not allowed "
                           "in a candidate: what runs beside your kernel can take the "
                           "evaluator's time or reach its state")
_WHY_SLEEP = ("a kernel has no reason to sleep, and a pause is how code that times itself "
              "against the evaluator waits")

# Names in kernel source: identifier -> (rule, severity or None, what it does, why, how it
# counts). How: "word", anywhere; "call", called (followed by "(", or its address taken:
# &fork) and not a member (x.f(, x->f(); "libc", a call not in a namespace other than std
# (at::clone( is PyTorch's); "libc_nostd", the same without std (std::remove and std::bind
# are algorithms); "fd", a libc call on a file descriptor (::read(, or a number or
# STDIN_FILENO first: read( alone is too common a name); a tuple, a name in one of those
# namespaces (std::thread).
KERNEL_NAMES = {}
KERNEL_NAME_PREFIXES = []       # (prefix, entry): a family (cudaDeviceSet*, setAllowTF32*)


def _kernel(rule, what, why, how, names, severity=None):
    for name in names:
        entry = (rule, severity, what, why, how)
        if name.endswith("*"):
            KERNEL_NAME_PREFIXES.append((name[:-1], entry))
        else:
            KERNEL_NAMES[name] = entry


_kernel("python_c_api", "belongs to PyTorch's Python bindings", _WHY_PYTHON_API, "word",
        ("THP*",))
_kernel("python_c_api", "reaches into the Python interpreter", _WHY_PYTHON_API, "word",
        ("gil_scoped_acquire", "scoped_interpreter", "initialize_interpreter",
         "PYBIND11_EMBEDDED_MODULE", "get_shared_data", "set_shared_data", "get_internals"))
_kernel("python_c_api", "reaches into the Python interpreter", _WHY_PYTHON_API,
        ("py", "pybind11"), ("globals", "eval", "eval_file", "exec"))
_kernel("python_c_api", "imports a Python module", _WHY_PYTHON_API, ("module_", "module"),
        ("import",))
_kernel("dispatcher_registration", "changes what PyTorch's dispatcher runs", _WHY_DISPATCHER,
        "word", ("RegisterOperators", "ExcludeDispatchKeyGuard", "IncludeDispatchKeyGuard",
                 "ForceDispatchKeyGuard", "tls_set_dispatch_key_excluded",
                 "tls_set_dispatch_key_included", "tls_local_dispatch_key_set",
                 "_force_tls_local_dispatch_key_set", "PythonDispatcherTLS"))
_kernel("dispatcher_registration", "reaches PyTorch's dispatcher", _WHY_DISPATCHER, ("c10",),
        ("Dispatcher",))
_kernel("dispatcher_registration", "registers with PyTorch's dispatcher", _WHY_DISPATCHER,
        ("torch",), ("Library",))
_kernel("global_context", "is PyTorch's process-wide context", _WHY_GLOBAL, "word",
        ("globalContext",))
_kernel("global_context", "switches a setting of PyTorch's global context", _WHY_GLOBAL, "word",
        ("setAllowTF32*", "setAllowFP16*", "setAllowBF16*", "setFloat32MatmulPrecision*",
         "setFloat32Precision*", "setBenchmarkCuDNN*", "setBenchmarkLimitCuDNN*",
         "setDeterministic*", "setUserEnabled*", "setSDPUse*", "setSDPPriorityOrder*",
         "setBlasPreferredBackend*", "setLinalgPreferredBackend*", "setFlushDenormal*",
         "setQEngine*"))
# PyTorch's and the BLAS libraries' thread counts; OpenMP's (omp_set_num_threads, a
# num_threads clause) is how a raw-format kernel sizes its own parallel regions to
# torch.get_num_threads(), as at::parallel_for does, and is left to it.
_kernel("global_context", "sets the process's thread count", _WHY_GLOBAL, "call",
        ("set_num_threads", "set_num_interop_threads", "mkl_set_num_threads*",
         "openblas_set_num_threads", "goto_set_num_threads"))
# The same settings from Python, as the C++ ones above and setFlushDenormal are judged.
_calls("global_context", _WHY_GLOBAL, (
    "torch.set_num_threads", "torch.set_num_interop_threads", "torch.set_flush_denormal",
    "torch._C._set_num_threads", "torch._C._set_num_interop_threads"))
_kernel("global_context", "changes the floating-point mode", _WHY_GLOBAL, "word",
        ("_MM_SET_FLUSH_ZERO_MODE", "_MM_SET_DENORMALS_ZERO_MODE", "_mm_setcsr", "fesetround",
         "fesetenv", "feenableexcept", "fesetexceptflag"))
_kernel("global_context", "changes a device-wide CUDA setting", _WHY_GLOBAL, "word",
        ("cudaDeviceSet*", "cuDeviceSet*", "cudaDeviceReset", "cudaSetDeviceFlags",
         "cuCtxSetLimit", "cuCtxSetCacheConfig", "cuCtxSetSharedMemConfig", "cuCtxSetFlags",
         "cuDevicePrimaryCtxSetFlags*", "cuDevicePrimaryCtxReset*"))
_kernel("global_context", "changes a cuBLAS handle's math mode (PyTorch's handle is shared)",
        _WHY_GLOBAL, "word", ("cublasSetMathMode", "cublasSetAtomicsMode"))
_kernel("l2_persistence", "sets a stream attribute or a persisting-L2 access policy", _WHY_L2,
        "word", ("cudaStreamSetAttribute", "cuStreamSetAttribute", "cudaStreamAttrValue",
                 "CUstreamAttrValue", "cudaAccessPolicyWindow", "CUaccessPolicyWindow",
                 "accessPolicyWindow", "cudaLimitPersistingL2CacheSize",
                 "CU_LIMIT_PERSISTING_L2_CACHE_SIZE", "cudaCtxResetPersistingL2Cache",
                 "cuCtxResetPersistingL2Cache", "cudaStreamAttributeAccessPolicyWindow",
                 "cudaLaunchAttributeAccessPolicyWindow",
                 "cudaKernelNodeAttributeAccessPolicyWindow",
                 "CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW",
                 "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW",
                 "CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW",
                 "cudaGraphKernelNodeSetAttribute", "cuGraphKernelNodeSetAttribute",
                 "cudaAccessProperty*", "CU_ACCESS_PROPERTY_*"))
_kernel("dynamic_loading", "loads a library or looks a symbol up at run time", _WHY_DLOPEN,
        "word", ("dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo",
                 "dl_iterate_phdr", "__libc_dlopen_mode", "__libc_dlsym", "GetProcAddress",
                 "LoadLibrary*", "cuGetProcAddress*", "cudaGetDriverEntryPoint*",
                 "cuGetExportTable", "cudaGetExportTable"))
_kernel("concurrency", "starts a thread", _WHY_KERNEL_CONCURRENCY, ("std", "boost"),
        ("thread", "jthread", "async"))
# PyTorch's own pools: at::launch runs a task on the inter-op pool and returns at once
# (the rest of forward's work then runs with the timer stopped), as std::async does;
# at::parallel_for, which returns when its work is done, stays allowed.
_kernel("concurrency", "hands work to a thread pool", _WHY_KERNEL_CONCURRENCY,
        ("at", "c10", "torch", "caffe2"),
        ("launch", "intraop_launch", "intraop_launch_future", "ThreadPool", "TaskThreadPool",
         "TaskThreadPoolBase", "get_thread_pool", "PTThreadPool", "ThreadPoolRegistry"))
_kernel("concurrency", "starts a thread", _WHY_KERNEL_CONCURRENCY, "libc",
        ("pthread_create", "thrd_create", "CreateThread", "_beginthread", "_beginthreadex"))
_kernel("concurrency", "starts a process", _WHY_KERNEL_CONCURRENCY, "libc",
        ("fork", "vfork", "clone", "clone3", "execv", "execve", "execvp", "execvpe", "execl",
         "execle", "execlp", "fexecve", "system", "popen", "posix_spawn*", "daemon",
         "wordexp", "CreateProcess*"))
_kernel("concurrency", "signals or controls processes or their scheduling",
        _WHY_KERNEL_CONCURRENCY, "libc",
        ("kill", "killpg", "tgkill", "tkill", "raise", "signal", "sigaction", "sigqueue",
         "pthread_kill", "alarm", "setitimer", "timer_create", "ptrace", "process_vm_readv",
         "process_vm_writev", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "prctl",
         "setpriority", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
         "pthread_setaffinity_np", "pthread_setschedparam", "setrlimit", "prlimit", "nice",
         "syscall"))
_kernel("concurrency", "sleeps", _WHY_SLEEP, "libc",
        ("sleep", "usleep", "nanosleep", "clock_nanosleep", "Sleep"), severity="warning")
_kernel("concurrency", "sleeps", _WHY_SLEEP, "word", ("sleep_for", "sleep_until"),
        severity="warning")
_kernel("io_access", "opens, changes or maps files or file descriptors", _WHY_IO, "libc",
        ("fopen", "fopen64", "freopen", "fdopen", "open", "open64", "openat", "openat2",
         "creat", "creat64", "tmpfile", "tmpnam", "mkstemp", "mkdtemp", "mkfifo", "mknod",
         "opendir", "readlink", "readlinkat", "unlink", "unlinkat", "rename", "renameat",
         "renameat2", "mkdir", "mkdirat", "rmdir", "chdir", "chmod", "chown", "symlink",
         "truncate", "ftruncate", "mmap", "mmap64", "shm_open", "shm_unlink", "shmget",
         "shmat", "memfd_create", "mq_open", "inotify_init", "inotify_init1", "sendfile",
         "splice", "dup", "dup2", "dup3", "fcntl", "ioctl", "pipe", "pipe2"))
_kernel("io_access", "removes a file", _WHY_IO, "libc_nostd", ("remove",))
_kernel("io_access", "reads or writes a file descriptor", _WHY_IO, "fd",
        ("read", "write", "pread", "pwrite", "close", "lseek"))
_kernel("io_access", "opens a file stream", _WHY_IO, "word",
        ("ifstream", "ofstream", "fstream", "wifstream", "wofstream", "wfstream", "filebuf",
         "wfilebuf", "basic_ifstream", "basic_ofstream", "basic_fstream", "basic_filebuf"))
_kernel("io_access", "works on the file system", _WHY_IO, ("std", "boost", "experimental"),
        ("filesystem",))
_kernel("io_access", "reads standard input", _WHY_IO, "word", ("stdin", "STDIN_FILENO"))
_kernel("io_access", "reads standard input", _WHY_IO, ("std",), ("cin", "wcin"))
_kernel("io_access", "works with sockets", _WHY_IO, "libc",
        ("socket", "socketpair", "connect", "listen", "accept", "accept4", "sendto", "sendmsg",
         "send", "recv", "recvfrom", "recvmsg", "getaddrinfo", "gethostbyname", "inet_pton",
         "inet_addr"))
_kernel("io_access", "works with sockets", _WHY_IO, "libc_nostd", ("bind",))
_kernel("io_access", "works with sockets", _WHY_IO, "word",
        ("AF_INET", "AF_INET6", "AF_UNIX", "AF_LOCAL", "AF_NETLINK", "AF_PACKET", "PF_INET",
         "PF_INET6", "PF_UNIX", "PF_LOCAL", "sockaddr", "sockaddr_in", "sockaddr_in6",
         "sockaddr_un", "sockaddr_storage"))
_kernel("io_access", "changes the environment", _WHY_ENV_WRITE, "libc",
        ("setenv", "putenv", "unsetenv", "clearenv"))
_kernel("env_access", "reads the environment", _WHY_ENV_READ, "libc",
        ("getenv", "secure_getenv"))
_kernel("env_access", "reads the environment", _WHY_ENV_READ, "word", ("environ", "__environ"))
KERNEL_PREFIX_TUPLE = tuple(prefix for prefix, _ in KERNEL_NAME_PREFIXES)
PYTHON_API_ENTRY = ("python_c_api", None, "belongs to the Python C API", _WHY_PYTHON_API,
                    "word")
# Headers that bring in nothing a kernel needs: the name (or its last part) -> entry.
KERNEL_INCLUDES = {}
for _names, _entry in (
        (("Python.h", "frameobject.h", "pythonrun.h", "ceval.h", "pystate.h", "pyframe.h",
          "pybind11/embed.h", "pybind11/eval.h"),
         ("python_c_api", None, "brings in the Python C API", _WHY_PYTHON_API, "word")),
        (("dlfcn.h",),
         ("dynamic_loading", None, "loads libraries at run time", _WHY_DLOPEN, "word")),
        (("sys/socket.h", "sys/un.h", "netinet/in.h", "arpa/inet.h", "netdb.h"),
         ("io_access", None, "brings in sockets", _WHY_IO, "word")),
        (("spawn.h", "sys/ptrace.h", "sys/prctl.h"),
         ("concurrency", None, "controls processes", _WHY_KERNEL_CONCURRENCY, "word"))):
    for _name in _names:
        KERNEL_INCLUDES[_name] = _entry
KERNEL_INCLUDE_PREFIXES = (("internal/pycore_", KERNEL_INCLUDES["Python.h"]),)
LITERAL_PATH_ENTRY = ("io_access", None, "names a path of the system or of other processes",
                      _WHY_IO, "word")
LITERAL_SYSCALL_ENTRY = ("concurrency", None, "makes a system call in assembly",
                         _WHY_KERNEL_CONCURRENCY, "word")
KERNEL_NAMES_PER_RULE = 8       # per string: enough to say what to fix, the rest can wait

BUILTIN_NAMES = frozenset(dir(builtins))


# ------------------------------------------------------------------------------ findings

class Findings:
    """The findings of one check: deduplicated, each message prefixed by its line."""

    def __init__(self, torch_ops):
        self.torch_ops = torch_ops
        self._seen = set()
        self._items = []

    def add(self, rule, line, message, severity=None):
        severity = severity or DEFAULT_SEVERITY[rule]
        if severity == "--torch-ops":
            severity = self.torch_ops
        key = (rule, line, message)
        if key in self._seen:
            return
        self._seen.add(key)
        text = "line %d: %s" % (line, message) if line else message
        if len(text) > MAX_MESSAGE:
            text = text[:MAX_MESSAGE - 3] + "..."
        self._items.append({"rule": rule, "severity": severity, "line": line, "message": text})

    def has(self, rule, line):
        return any(f["rule"] == rule and f["line"] == line for f in self._items)

    def result(self):
        items = sorted(self._items, key=lambda f: f["line"])   # stable: finding order kept
        if len(items) <= MAX_FINDINGS:
            return items
        kept, dropped = items[:MAX_FINDINGS], items[MAX_FINDINGS:]
        severity = "error" if any(f["severity"] == "error" for f in dropped) else "warning"
        kept.append({"rule": "too_many_findings", "severity": severity,
                     "line": dropped[0]["line"],
                     "message": "line %d: %d more findings from here on are not listed; fix "
                                "the ones above and check again"
                                % (dropped[0]["line"], len(dropped))})
        return kept


def source_text(node, limit=60):
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def root_name(node):
    """The Name a chain of attributes and subscripts hangs from (x in x.a[0].b), if any."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def flat_targets(target):
    """The single targets of an assignment target (a, (b, c) -> a, b, c)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from flat_targets(elt)
    elif isinstance(target, ast.Starred):
        yield from flat_targets(target.value)
    else:
        yield target


def reraises(handler):
    """A handler that ends by raising is no fallback: the failure still surfaces."""
    return bool(handler.body) and isinstance(handler.body[-1], ast.Raise)


def const_str(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_none(node):
    return isinstance(node, ast.Constant) and node.value is None


def param_names(fn):
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args]


def all_param_names(fn):
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return names


def decorator_names(fn, names):
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        yield dec, names.qualname(target)


# --------------------------------------------------------------------------------- names

class Names:
    """What the candidate's names stand for: the modules (and their members) it imported,
    under whatever alias, and Python's builtins where the candidate does not rebind them.
    qualname() turns an expression into a dotted name ("torch.nn.functional.relu") or None
    when it is not something imported."""

    def __init__(self, nodes):
        self.aliases = {}
        self.star_modules = []
        for node in nodes[ast.Import]:
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = canonical(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.aliases[top] = canonical(top)
        for node in nodes[ast.ImportFrom]:
            if node.level or not node.module:
                continue        # relative imports name the candidate's own package
            for alias in node.names:
                if alias.name == "*":
                    self.star_modules.append(canonical(node.module))
                else:
                    self.aliases[alias.asname or alias.name] = \
                        canonical(node.module + "." + alias.name)
        self.bound = bound_names(nodes) | set(self.aliases)
        # Names assigned an imported thing are aliases too (F = torch.nn.functional,
        # mm = torch.matmul); twice, for an alias of an alias.
        for _ in range(2):
            for node in nodes[ast.Assign]:
                value = self.qualname(node.value) if self.is_reference(node.value) else None
                if value:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            self.aliases[target.id] = value

    @staticmethod
    def is_reference(node):
        """A plain reference (a.b.c, getattr(a, "b"), __import__("a")), not a computation."""
        return isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))

    def builtin(self, node):
        if isinstance(node, ast.Name) and node.id in BUILTIN_NAMES and node.id not in self.bound:
            return node.id
        return None

    def qualname(self, node):
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id == "__builtins__":
                return "builtins"
            if self.builtin(node):
                return "builtins." + node.id
            if self.star_modules and node.id not in self.bound:
                return self.star_modules[-1] + "." + node.id
            return None
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return base + "." + node.attr if base else None
        if isinstance(node, ast.Subscript):             # sys.modules["torch"]
            key = const_str(node.slice)
            if key and self.qualname(node.value) == "sys.modules":
                return canonical(key)
            if key and self.qualname(node.value) == "builtins":     # __builtins__["exec"]
                return "builtins." + key
            return None
        if isinstance(node, ast.Call) and node.args:
            func = self.qualname(node.func)
            first = const_str(node.args[0])
            if func == "builtins.getattr" and len(node.args) >= 2 and const_str(node.args[1]):
                base = self.qualname(node.args[0])
                return base + "." + const_str(node.args[1]) if base else None
            if func == "builtins.__import__" and first:
                return canonical(first.split(".")[0])
            if func == "importlib.import_module" and first:
                return canonical(first)
        return None


def bound_names(nodes):
    """Every name the candidate binds anywhere (assignments, parameters, defs, imports)."""
    names = set()
    for node in nodes[ast.Name]:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    for node in nodes[ast.arg]:
        names.add(node.arg)
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        for node in nodes[kind]:
            names.add(node.name)
    for kind in (ast.Import, ast.ImportFrom):
        for node in nodes[kind]:
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
    return names


# ------------------------------------------------------------------------------- classes

class ClassInfo:
    """A class of the candidate and what its methods keep on self: extension handles, nn
    layers, tensors, instances of the candidate's own classes."""

    def __init__(self, node):
        self.node = node
        self.name = node.name
        self.methods = {s.name: s for s in node.body
                        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.bases = []              # ClassInfo of the candidate's own bases, set by Candidate
        self.handle_attrs = set()
        self.layer_attrs = {}        # attribute -> the nn class, for messages
        self.tensor_attrs = set()
        self.instance_attrs = {}     # attribute -> ClassInfo

    def mro(self):
        order, todo = [], [self]
        while todo:
            cls = todo.pop(0)
            if cls not in order:
                order.append(cls)
                todo.extend(cls.bases)
        return order

    def method(self, name, after=None):
        """The method `name` as Python finds it (after the class `after`, for super())."""
        order = self.mro()
        if after is not None and after in order:
            order = order[order.index(after) + 1:]
        for cls in order:
            if name in cls.methods:
                return cls.methods[name], cls
        return None, None


def has_decorator(fn, name):
    return any(isinstance(d, ast.Name) and d.id == name for d in fn.decorator_list)


def self_name(fn):
    """The name a method calls its instance (or class), None for a staticmethod."""
    if has_decorator(fn, "staticmethod"):
        return None
    params = param_names(fn)
    return params[0] if params else None


# ----------------------------------------------------------------------------- candidate

class Candidate:
    """The parsed candidate and the facts the checks share."""

    def __init__(self, tree, reference_classes):
        self.tree = tree
        self.nodes, self.returns = index_nodes(tree)
        self.names = Names(self.nodes)
        self.module_names = module_level_names(tree)
        self.assignments = {t.id: s.value for s in top_level_statements(tree)
                            if isinstance(s, ast.Assign)
                            for t in s.targets if isinstance(t, ast.Name)}
        self.functions = {}      # module-level functions, by name
        self.classes = {}        # module-level classes, by name
        for stmt in top_level_statements(tree):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = ClassInfo(stmt)
        for cls in self.classes.values():
            cls.bases = [self.classes[n] for n in (self.class_alias(b) for b in cls.node.bases)
                         if n in self.classes and self.classes[n] is not cls]
        self.reference_classes = reference_classes
        self.load_calls = [c for c in self.nodes[ast.Call]
                           if self.names.qualname(c.func) in LOAD_FUNCS]
        # Triton kernels: module-level functions decorated @triton.jit (under any alias,
        # autotune or heuristics around it); launched as kernel[grid](...), they count
        # as the extension's handles.
        self.triton_kernels = [fn for fn in self.functions.values()
                               if any(name == TRITON_JIT for _, name in
                                      decorator_names(fn, self.names))]
        self.kernel_source_ids = self.find_kernel_sources()
        self.kernel_codes = {}
        self.op_namespaces = {ns for n in self.nodes[ast.Constant]
                              if isinstance(n.value, str) and "TORCH_LIBRARY" in n.value
                              for kind, ns in KERNEL_OP_LIBRARY.findall(self.kernel_code(n)[0])
                              if not kind and ns not in PYTORCH_OP_NAMESPACES}
        self.find_handles()
        self.find_class_attrs()
        self.model_new = self.find_model_new()

    def find_kernel_sources(self):
        """The ids of the string constants that reach a load call's source arguments, through
        names assigned anywhere, lists, concatenations and f-strings: kernel source even
        without a marker (cpp_extension.load's sources name files, and are left alone)."""
        values = {}
        for node in self.nodes[ast.Assign]:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        todo = []
        for call in self.load_calls:
            name = self.names.qualname(call.func)
            if name in RAW_LOAD_FUNC.values():
                todo += call.args[:1]
            elif name == "torch.utils.cpp_extension.load_inline":
                todo += call.args[1:3]
            todo += [k.value for k in call.keywords
                     if k.arg in ("cpp_sources", "cuda_sources", "source")]
        found, seen = set(), set()
        while todo:
            expr = todo.pop()
            if id(expr) in seen:
                continue
            seen.add(id(expr))
            for sub in ast.walk(expr):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    found.add(id(sub))
                elif isinstance(sub, ast.Name):
                    todo += values.get(sub.id, ())
        return found

    def kernel_code(self, node):
        """A kernel string read as C / C++ (read_c_source), once."""
        code = self.kernel_codes.get(id(node))
        if code is None:
            code = self.kernel_codes[id(node)] = read_c_source(node.value)
        return code

    def class_alias(self, node):
        """The class name an expression stands for, through module-level `X = Y`."""
        seen = set()
        while isinstance(node, ast.Name) and node.id not in seen:
            seen.add(node.id)
            if node.id in self.classes:
                return node.id
            value = self.assignments.get(node.id)
            if value is None:
                return node.id
            node = value
        if isinstance(node, ast.Attribute) and \
                not (self.names.qualname(node) or "").startswith("torch."):
            return node.attr        # kforge_reference.Model -> Model (nn.Module is torch's)
        return None

    def find_model_new(self):
        if "ModelNew" in self.classes:
            return self.classes["ModelNew"]
        value = self.assignments.get("ModelNew")    # ModelNew = MyModel
        name = self.class_alias(value) if value is not None else None
        return self.classes.get(name)

    def defines(self, name):
        return name in self.module_names and name not in self.names.aliases

    # Extension handles: the value a load call returned, under any name, attribute or
    # function that passes it on; found by repeating until nothing new turns up.
    def find_handles(self):
        self.handle_names, self.handle_funcs, self.all_handle_attrs = set(), set(), set()
        self.handle_names.update(fn.name for fn in self.triton_kernels
                                 if fn.name not in self.names.aliases)
        for _ in range(4):
            before = (len(self.handle_names), len(self.handle_funcs), len(self.all_handle_attrs))
            for target, value in self.assigned():
                self.bind_handle(target, value)
            for fn, value in self.returns:
                if fn.name not in self.handle_funcs and self.is_handle(value):
                    self.handle_funcs.add(fn.name)
            if before == (len(self.handle_names), len(self.handle_funcs),
                          len(self.all_handle_attrs)):
                break

    def assigned(self):
        """(target, value) of every assignment, annotated ones included."""
        for node in self.nodes[ast.Assign]:
            for target in node.targets:
                yield target, node.value
        for node in self.nodes[ast.AnnAssign]:
            if node.value is not None:
                yield node.target, node.value

    def bind_handle(self, target, value):
        if isinstance(target, (ast.Tuple, ast.List)) and \
                isinstance(value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):          # ext, n = load_inline(...), 4
                self.bind_handle(t, v)
        elif self.is_handle(value):
            if isinstance(target, ast.Name):
                self.handle_names.add(target.id)
            elif isinstance(target, ast.Attribute):
                self.all_handle_attrs.add(target.attr)

    def is_handle(self, node, cls=None, self_var=None):
        """Whether an expression is (part of) a built extension: ext, ext.f, self.ext,
        get_ext(), getattr(ext, name). Without a class, any `x.attr` with an attribute some
        class keeps a handle in counts."""
        if isinstance(node, ast.Call):
            func = node.func
            called = self.names.qualname(func)
            if called in LOAD_FUNCS:
                return True
            if called == "functools.partial" and node.args:
                return self.is_handle(node.args[0], cls, self_var)
            if self.names.builtin(func) == "getattr" and node.args:
                return self.is_handle(node.args[0], cls, self_var)
            if isinstance(func, ast.Name):
                return func.id in self.handle_funcs and func.id not in self.names.aliases
            return isinstance(func, ast.Attribute) and func.attr in self.handle_funcs and \
                isinstance(func.value, ast.Name) and func.value.id == self_var
        if isinstance(node, ast.Name):
            return node.id in self.handle_names
        if isinstance(node, ast.Attribute):
            if self.own_op(node):
                return True
            if isinstance(node.value, ast.Name):
                if cls is not None and node.value.id == self_var:
                    return node.attr in cls.handle_attrs
                if cls is None and node.attr in self.all_handle_attrs:
                    return True
            return self.is_handle(node.value, cls, self_var)
        if isinstance(node, ast.Subscript):
            return self.is_handle(node.value, cls, self_var)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):        # a table of kernels
            return any(self.is_handle(e, cls, self_var) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.is_handle(v, cls, self_var) for v in node.values)
        if isinstance(node, ast.Lambda):                            # lambda t: ext.f(t)
            return any(isinstance(n, ast.Call) and self.is_handle(n.func, cls, self_var)
                       for n in ast.walk(node.body))
        return False

    def own_op(self, node):
        """torch.ops.ns.op where the extension registers ns (TORCH_LIBRARY(ns, m))."""
        name = self.names.qualname(node) or ""
        parts = name.split(".")
        return len(parts) >= 4 and parts[:2] == ["torch", "ops"] and \
            parts[2] in self.op_namespaces

    def holds_own_modules(self, call):
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
                   n.func.id in self.classes for n in ast.walk(call))

    def find_class_attrs(self):
        # Each class's own methods once, then what its bases keep (a subclass's own wins).
        for cls in self.classes.values():
            for fn in cls.methods.values():
                self.scan_self_stores(cls, fn)
        for cls in self.classes.values():
            for base in cls.mro()[1:]:
                cls.handle_attrs |= base.handle_attrs
                cls.tensor_attrs |= base.tensor_attrs
                for attr, kind in base.layer_attrs.items():
                    cls.layer_attrs.setdefault(attr, kind)
                for attr, other in base.instance_attrs.items():
                    cls.instance_attrs.setdefault(attr, other)

    def scan_self_stores(self, cls, fn):
        me = self_name(fn)
        if me is None:
            return
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == me and \
                    node.func.attr == "register_buffer" and node.args and \
                    const_str(node.args[0]):
                cls.tensor_attrs.add(const_str(node.args[0]))
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == me:
                    self.classify_attr(cls, target.attr, value)

    def classify_attr(self, cls, attr, value):
        if self.is_handle(value):
            cls.handle_attrs.add(attr)
            self.all_handle_attrs.add(attr)
            return
        if not isinstance(value, ast.Call):
            return
        called = self.names.qualname(value.func)
        if called and called.startswith("torch.nn.") and called not in NN_HOLDERS and \
                called.split(".")[-1][:1].isupper():
            if called.split(".")[-1] in NN_CONTAINERS and self.holds_own_modules(value):
                return      # the candidate's own modules, in a list: not followed
            cls.layer_attrs[attr] = called.split(".")[-1]
        elif called and called.startswith("torch.") and gives_tensor(called):
            cls.tensor_attrs.add(attr)         # nn.Parameter, torch.randn, ...
        elif isinstance(value.func, ast.Name) and value.func.id in self.classes:
            cls.instance_attrs[attr] = self.classes[value.func.id]


NODE_KINDS = (ast.Import, ast.ImportFrom, ast.Name, ast.arg, ast.FunctionDef,
              ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AugAssign, ast.AnnAssign,
              ast.Delete, ast.Call, ast.Attribute, ast.Constant, ast.Try, ast.Return,
              ast.Subscript) + \
    ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def gives_tensor(name):
    """Whether a call of torch's returns a tensor (not a size, a device, a stream, ...)."""
    return not (name.startswith(("torch.cuda.",) + NON_COMPUTE_TORCH) or call_rule(name) or
                name.split(".")[-1] in SCALAR_RESULTS)


def index_nodes(tree):
    """One walk over the tree (ast.walk: a node before its children): the nodes of the kinds
    the checks use, and each function's returned values."""
    nodes = {kind: [] for kind in NODE_KINDS}
    for node in ast.walk(tree):
        kind = type(node)
        if kind in nodes:
            nodes[kind].append(node)
    functions = sorted(nodes[ast.FunctionDef] + nodes[ast.AsyncFunctionDef],
                       key=lambda f: f.lineno)
    starts = [f.lineno for f in functions]
    returns = []
    for node in nodes[ast.Return]:
        fn = enclosing_function(functions, starts, node.lineno)
        if fn is not None and node.value is not None:
            returns.append((fn, node.value))
    return nodes, returns


def enclosing_function(functions, starts, line):
    """The innermost function whose lines hold `line` (functions sorted by first line)."""
    i = bisect.bisect_right(starts, line) - 1
    while i >= 0:
        if functions[i].end_lineno >= line:
            return functions[i]
        i -= 1
    return None


def top_level_statements(tree):
    """Module-level statements, including those inside module-level if / try / with."""
    todo = list(tree.body)
    while todo:
        stmt = todo.pop(0)
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody"):
                todo.extend(getattr(stmt, field, []))
            for handler in getattr(stmt, "handlers", []):
                todo.extend(handler.body)


def module_level_names(tree):
    names = set()
    for stmt in top_level_statements(tree):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                names.update(t.id for t in flat_targets(target) if isinstance(t, ast.Name))
    return names


# ------------------------------------------------------------- checks over the whole file

class ModuleChecks:
    """Checks that hold wherever the code is: imports, dangerous calls, writes to imported
    modules, reaching the reference, dispatch tricks, lower precision, kernel strings."""

    def __init__(self, cand, findings, fmt, precision):
        self.cand = cand
        self.names = cand.names
        self.findings = findings
        self.fmt = fmt
        self.precision = precision
        self.env_writes = set()        # ids of os.environ nodes already judged as writes
        self.inner_attrs = set()       # ids of attributes inside a longer chain
        # Names given a class reached through a value (cls = type(t)), anywhere.
        self.value_classes = set()
        self.value_classes = {t.id for a in cand.nodes[ast.Assign] if self.class_of_value(a.value)
                              for t in a.targets if isinstance(t, ast.Name)}

    def run(self):
        nodes = self.cand.nodes
        for node in nodes[ast.Import] + nodes[ast.ImportFrom]:
            self.check_import(node)
        for node in nodes[ast.Assign] + nodes[ast.AugAssign] + nodes[ast.AnnAssign] + \
                nodes[ast.Delete]:
            self.check_store(node)
        for node in nodes[ast.Call]:
            self.check_call(node)
        for node in nodes[ast.Attribute]:     # outer chains first: ast.walk is breadth-first
            self.check_attribute(node)
        for node in nodes[ast.Name]:
            self.check_name(node)
        for node in nodes[ast.Subscript]:
            # __builtins__[name] with a computed name: exec or eval by another spelling.
            if isinstance(node.ctx, ast.Load) and const_str(node.slice) is None and \
                    self.names.qualname(node.value) == "builtins":
                self.add("exec_eval", node, "reads %s[...] with a computed name, which hides "
                         "what is called: %s" % (source_text(node.value), _WHY_EXEC))
        for node in nodes[ast.ClassDef]:
            self.check_class(node)
        for node in nodes[ast.FunctionDef] + nodes[ast.AsyncFunctionDef]:
            if node.name in DISPATCH_HOOKS:
                self.add("tensor_subclass", node, "defines %s, which intercepts PyTorch's "
                         "operations and is not allowed" % node.name)
        for node in nodes[ast.Try] + nodes.get(getattr(ast, "TryStar", None), []):
            self.check_try_around_extension(node)
        self.check_strings(nodes[ast.Constant])

    def add(self, rule, node, message, severity=None):
        self.findings.add(rule, getattr(node, "lineno", 0), message, severity)

    # imports ---------------------------------------------------------------------------
    def check_import(self, node):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif node.level or not node.module:
            return
        else:
            modules = [node.module] + [node.module + "." + a.name for a in node.names]
            for alias in node.names:
                if alias.name in self.cand.reference_classes and \
                        not node.module.startswith("torch"):
                    self.add("inherits_reference", node, reference_use(alias.name))
        for module in modules:
            for key in prefixes(canonical(module)):
                if key in IMPORT_RULES:
                    rule, why = IMPORT_RULES[key]
                    self.add(rule, node, "imports %s: %s" % (module, why))
                    break

    # stores ----------------------------------------------------------------------------
    def check_store(self, node):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.Delete):
            targets, value = node.targets, None
        else:
            targets, value = [node.target], node.value
        for target in targets:
            for t in flat_targets(target):
                if isinstance(t, ast.Attribute):
                    self.check_attribute_store(node, t, value)
                elif isinstance(t, ast.Subscript):
                    self.check_subscript_store(node, t)

    def check_attribute_store(self, node, target, value):
        owner = self.names.qualname(target.value)
        if not owner and self.class_of_value(target.value):
            # type(t).__add__ = ..., t.__class__.mul = ...: the class of a value the code
            # holds, a tensor's say, changed for every value of it, the evaluator's too.
            self.add("patching", node, "assigns %s.%s, changing the class of a value: patching "
                     "library classes is not allowed" % (source_text(target.value), target.attr))
            return
        if not owner:
            return
        full = owner + "." + target.attr
        self.add("patching", node, "assigns %s, changing the imported %s: patching library "
                 "or interpreter state is not allowed" % (full, owner))
        if target.attr in REDUCED_PRECISION_FLAGS and self.precision == "fp32" and \
                not (isinstance(value, ast.Constant) and value.value is False):
            self.add("lower_precision", node, "sets %s with --precision fp32: reduced-precision "
                     "math is not allowed when the problem is judged in fp32" % full)

    def class_of_value(self, node):
        """Whether node is type(x) or x.__class__, or a name given one: a class reached
        through a value."""
        def own(v):     # type(self): the candidate's own class, its to change
            return isinstance(v, ast.Name) and v.id == "self"
        if isinstance(node, ast.Call) and self.names.builtin(node.func) == "type" and \
                len(node.args) == 1:
            return not own(node.args[0])
        if isinstance(node, ast.Name):
            return node.id in self.value_classes
        return isinstance(node, ast.Attribute) and node.attr == "__class__" and \
            not own(node.value)

    def check_subscript_store(self, node, target):
        container = target.value
        owner = self.names.qualname(container)
        if owner == "os.environ":
            self.env_writes.add(id(container))
            self.add("io_access", node, "writes os.environ: " + _WHY_ENV_WRITE)
        elif owner in ("sys.modules", "builtins") or (owner or "").endswith(".__dict__"):
            self.add("patching", node, "writes %s[...]: changing library or interpreter state "
                     "is not allowed" % source_text(container))
        elif isinstance(container, ast.Call):
            called = self.names.builtin(container.func)
            if called in ("globals", "locals"):
                self.add("exec_eval", node, "writes %s()[...], which rebinds names behind the "
                         "code's back and is not allowed" % called)
            elif called == "vars" and container.args and \
                    self.names.qualname(container.args[0]):
                self.add("patching", node, "writes vars(%s)[...]: changing library state is "
                         "not allowed" % source_text(container.args[0]))

    # calls -----------------------------------------------------------------------------
    def check_call(self, node):
        func = node.func
        name = self.names.qualname(func)
        if name:
            self.check_named_call(node, name)
        if isinstance(func, ast.Attribute):
            self.check_method_call(node, func)

    def check_named_call(self, node, name):
        rule = call_rule(name)
        if rule:
            rule_name, severity, why = rule
            self.add(rule_name, node, "calls %s: %s" % (name.replace("builtins.", ""), why),
                     severity)
        short = name.replace("builtins.", "")
        # setattr, and the same through a class's own slot (object.__setattr__(torch, ...),
        # type.__setattr__(torch.Tensor, ...)).
        if (name in ("builtins.setattr", "builtins.delattr") or
                name.startswith(("builtins.object.", "builtins.type.")) and
                name.endswith(("__setattr__", "__delattr__"))) and node.args:
            owner = self.names.qualname(node.args[0])
            if owner or self.class_of_value(node.args[0]):
                self.add("patching", node, "calls %s on %s, an imported module or class: "
                         "changing library state is not allowed"
                         % (short, owner or source_text(node.args[0])))
        elif name == "builtins.getattr" and len(node.args) >= 2 and \
                const_str(node.args[1]) is None and self.names.qualname(node.args[0]):
            self.add("exec_eval", node, "calls getattr on %s with a computed name, which hides "
                     "what is used" % self.names.qualname(node.args[0]), "warning")
        elif name == "torch.set_float32_matmul_precision" and self.precision == "fp32" and \
                node.args and const_str(node.args[0]) in ("high", "medium"):
            self.add("lower_precision", node, "calls torch.set_float32_matmul_precision(%r) "
                     "with --precision fp32: reduced-precision matmul is not allowed"
                     % const_str(node.args[0]))

    def check_method_call(self, node, func):
        receiver = self.names.qualname(func.value)
        if func.attr in PATHLIB_IO_METHODS:
            self.add("io_access", node, "calls .%s(): %s" % (func.attr, _WHY_IO))
        elif receiver == "os.environ" and func.attr in MAPPING_WRITERS:
            self.env_writes.update((id(func), id(func.value)))
            self.add("io_access", node, "calls os.environ.%s: %s" % (func.attr, _WHY_ENV_WRITE))
        elif receiver == "sys.modules" and func.attr in MAPPING_WRITERS:
            self.add("patching", node, "calls sys.modules.%s: replacing modules is not "
                     "allowed" % func.attr)
        elif (receiver or "").endswith(".__dict__") and func.attr in MAPPING_WRITERS:
            self.add("patching", node, "calls %s.%s: changing library or interpreter state "
                     "is not allowed" % (receiver, func.attr))
        elif isinstance(func.value, ast.Call) and func.attr in MAPPING_WRITERS and \
                self.names.builtin(func.value.func) == "vars" and func.value.args and \
                self.names.qualname(func.value.args[0]):
            self.add("patching", node, "calls vars(%s).%s: changing library state is not "
                     "allowed" % (source_text(func.value.args[0]), func.attr))
        elif isinstance(func.value, ast.Call) and func.attr in MAPPING_WRITERS and \
                self.names.builtin(func.value.func) in ("globals", "locals"):
            self.add("exec_eval", node, "calls %s().%s, which rebinds names behind the code's "
                     "back and is not allowed" % (func.value.func.id, func.attr))
        elif func.attr == "tofile":
            self.add("io_access", node, "calls .tofile(): " + _WHY_IO)
        elif func.attr in ("half", "bfloat16") and self.precision == "fp32":
            self.add("lower_precision", node, "calls .%s() with --precision fp32: the problem "
                     "is judged in fp32, so compute in fp32" % func.attr)

    # references ------------------------------------------------------------------------
    def check_attribute(self, node):
        if isinstance(node.value, ast.Attribute):
            self.inner_attrs.add(id(node.value))
        if node.attr in INTROSPECTION_ATTRS:
            self.add("exec_eval", node, "uses .%s: %s" % (node.attr, _WHY_INTROSPECT))
        elif node.attr in ("_make_subclass", "_make_wrapper_subclass"):
            self.add("tensor_subclass", node, "uses %s, which makes a tensor subclass that can "
                     "intercept the evaluator's operations; not allowed" % node.attr)
        if id(node) not in self.inner_attrs and isinstance(node.ctx, ast.Load):
            self.check_reference(node, self.names.qualname(node))

    def check_name(self, node):
        if isinstance(node.ctx, ast.Load):
            if node.id in self.cand.reference_classes and not self.cand.defines(node.id):
                self.add("inherits_reference", node, reference_use(node.id))
            self.check_reference(node, self.names.qualname(node))

    def check_reference(self, node, name):
        """Uses of an imported thing that matter wherever they appear."""
        if not name:
            return
        if (name == "os.environ" or name.startswith("os.environ.")) and \
                id(node) not in self.env_writes:
            self.add("env_access", node, "reads os.environ: %s" % _WHY_ENV_READ)
        elif name == "sys.modules" or name.startswith("sys.modules."):
            self.add("patching", node, "uses sys.modules, which reaches other modules (the "
                     "reference's, the evaluator's) to read or replace them; not allowed")
        elif name.startswith("torch.library"):
            self.add("tensor_subclass", node, "uses %s: registering custom operators may be "
                     "legitimate, but check the work is your own kernel" % name, "warning")
        elif name == "torch._C" or name.startswith("torch._C."):
            self.add("tensor_subclass", node, "uses %s, PyTorch's internal bindings, which can "
                     "re-route its dispatch" % name, "warning")
        elif self.precision == "fp32" and (name in LOW_PRECISION_NAMES or
                                           name.startswith(LOW_PRECISION_PREFIXES)):
            self.add("lower_precision", node, "uses %s with --precision fp32: the problem is "
                     "judged in fp32, so compute in fp32" % name)

    def check_class(self, node):
        for base in node.bases:
            name = self.names.qualname(base)
            if name in TENSOR_BASES or self.inherits_tensor(base, set()):
                self.add("tensor_subclass", node, "defines class %s on %s: tensor subclasses "
                         "and dispatch modes can intercept the evaluator's operations and are "
                         "not allowed" % (node.name, source_text(base)))
                return

    def inherits_tensor(self, base, seen):
        cls = self.cand.classes.get(self.cand.class_alias(base))
        if cls is None or cls.name in seen:
            return False
        seen.add(cls.name)
        return any(self.names.qualname(b) in TENSOR_BASES or self.inherits_tensor(b, seen)
                   for b in cls.node.bases)

    # fallbacks -------------------------------------------------------------------------
    def check_try_around_extension(self, node):
        if all(reraises(h) for h in node.handlers):
            return
        for stmt in node.body:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Call) and (self.cand.is_handle(sub) or
                                                  self.cand.is_handle(sub.func)):
                    self.add("fallback_path", node, "has a try/except around a use of the "
                             "extension whose handler does not re-raise: a fallback when the "
                             "kernel fails to build or run is not allowed")
                    return

    # kernel source ---------------------------------------------------------------------
    def check_strings(self, constants):
        for node in constants:
            text = node.value
            if not isinstance(text, str):
                continue
            if REFERENCE_MODULE in text:
                self.add("inherits_reference", node, "names the reference module %s: the "
                         "candidate must not read or change the reference" % REFERENCE_MODULE)
            if id(node) in self.cand.kernel_source_ids or \
                    any(marker in text for marker in KERNEL_MARKERS):
                self.check_kernel_source(node, text)

    def kernel_line(self, node, text, pos):
        line = node.lineno + text.count("\n", 0, pos)
        return min(line, getattr(node, "end_lineno", line) or line)

    def check_kernel_source(self, node, text):
        code, literals, includes, splices = self.cand.kernel_code(node)

        def code_line(pos):         # the line of a position in code (read_c_source)
            return self.kernel_line(node, text, pos + 2 * bisect.bisect_right(splices, pos))

        for needles, pattern, what in KERNEL_STREAM_PATTERNS:
            m = search_gated(code, needles, pattern)
            if m:
                self.findings.add("stream_creation", code_line(m.start()),
                                  "the kernel source uses %s, which %s: %s"
                                  % (m.group(0), what, _WHY_STREAM))
        if self.precision == "fp32":
            for needles, pattern in KERNEL_HALF_PATTERNS:
                m = search_gated(text, needles, pattern)
                if m:
                    self.findings.add("lower_precision", self.kernel_line(node, text, m.start()),
                                      "the kernel source uses %s with --precision fp32: the "
                                      "problem is judged in fp32, so make sure the result is "
                                      "computed in fp32" % m.group(0), "warning")
        if self.fmt == "load_inline":
            for m in kernel_torch_calls(code):
                if m.group(1) not in KERNEL_TORCH_ALLOWED:
                    self.findings.add("torch_compute", code_line(m.start()),
                                      "the kernel source calls %s, a PyTorch compute op, from "
                                      "C++; the problem's work must be done by your own kernel "
                                      "code" % m.group(0).rstrip("( \t\n"), "--torch-ops")
        named = {}      # rule -> what this string was found using, each said once
        for pos, (rule, severity, what, why, _), used in kernel_native_uses(
                code, literals, includes, self.cand.op_namespaces):
            seen = named.setdefault(rule, set())
            if used in seen or len(seen) >= KERNEL_NAMES_PER_RULE:
                continue
            seen.add(used)
            self.findings.add(rule, code_line(pos), "the kernel source uses "
                              "%s, which %s: %s" % (" ".join(used.split()), what, why),
                              severity)


def read_c_source(text):
    """(code, literals, includes, splices) of C / C++ text: its lines spliced first, as the
    compiler does (a backslash ending a line joins it to the next, so fo\\<newline>rk is
    fork), then the code with comments, literals and #include lines blanked (C_LEXEMES),
    each string or character literal as (position, its text), each #include line as
    (position, the header's name); splices, the positions in the code where a backslash and
    newline were taken out (each moves what follows back by two characters)."""
    splices = []
    if "\\\n" in text:
        parts = text.split("\\\n")
        for part in parts[:-1]:
            splices.append((splices[-1] if splices else 0) + len(part))
        text = "".join(parts)
    pieces, literals, includes, last = [], [], [], 0
    for m in C_LEXEMES.finditer(text):
        start, lexeme = m.start(), m.group()
        if lexeme[0] == "#":
            includes.append((start, lexeme.split("include", 1)[1].strip()))
        elif lexeme[0] != "/":
            literals.append((start, lexeme))
        pieces.append(text[last:start])
        pieces.append(NOT_NEWLINE.sub(" ", lexeme) if "\n" in lexeme else " " * len(lexeme))
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces), literals, includes, splices


def c_qualifier(code, start):
    """The namespace written before the name at start: None (none), "" (::name) or ns."""
    m = C_QUALIFIER.search(code, max(0, start - 80), start)
    return None if m is None else (m.group(1) or "")


def kernel_name_entry(name):
    """The KERNEL_NAMES entry of an identifier (or of its family), or None."""
    entry = KERNEL_NAMES.get(name)
    if entry is None and name.startswith(KERNEL_PREFIX_TUPLE):
        entry = next(e for p, e in KERNEL_NAME_PREFIXES if name.startswith(p))
    if entry is None and name.startswith(("Py", "_Py")) and PYTHON_API_NAME.match(name):
        entry = PYTHON_API_ENTRY
    return entry


def defines_function(code, name):
    """Whether code defines a function called name: a type before it, a body after."""
    return re.search(r"[\w*&>]\s*\b%s\s*\([^;{}]*\)\s*(?:const\s*|noexcept\s*)*\{"
                     % re.escape(name), code) is not None


def is_word_char(c):
    return c.isalnum() or c == "_"


def native_use_counts(code, start, end, name, how):
    """Whether code[start:end], the name of an entry, is the use its entry's `how` means."""
    if how == "word":
        return True
    if isinstance(how, tuple):
        # std::thread::hardware_concurrency() and std::thread::id ask, and start nothing.
        if name in ("thread", "jthread") and C_THREAD_QUERY.match(code, end):
            return False
        return c_qualifier(code, start) in how
    i = start - 1
    while i >= 0 and code[i] in " \t\n":
        i -= 1
    if i >= 0 and code[i] in ".>":             # a member: x.open(, x->send(
        return False
    if how == "fd":
        return bool(C_CALL_OPEN.match(code, end)) and \
            (c_qualifier(code, start) == "" or bool(C_FD_ARGUMENT.match(code, end)))
    if not C_CALL_OPEN.match(code, end) and not (i >= 0 and code[i] == "&"):
        return False                        # neither called nor its address taken (&fork)
    if how == "call":
        return True
    qualifier = c_qualifier(code, start)
    return qualifier in (None, "") or (how == "libc" and qualifier == "std")


def kernel_native_uses(code, literals, includes, own_namespaces):
    """(position, entry, what is quoted), in order, for each use in kernel source that a
    native rule judges: names (KERNEL_NAMES, their families, the Python C API), #include
    lines, TORCH_LIBRARY blocks outside the candidate's own namespaces, and literals naming
    system paths or system calls. own_namespaces: those it defines with TORCH_LIBRARY."""
    uses = []
    # The distinct names first (a pass in C), then only the rules' names looked for, by
    # str.find: a long kernel costs a findall, not a Python loop over its every name.
    for name in set(C_IDENTIFIER.findall(code)):
        entry = kernel_name_entry(name)
        if entry is None:
            continue
        # A function of the kernel's own of that name (a helper called send or truncate):
        # its unqualified calls are its own, ::name and std::name still libc's.
        own = entry[4] in ("call", "libc", "libc_nostd") and defines_function(code, name)
        pos = code.find(name)
        while pos >= 0:
            end = pos + len(name)
            if (pos == 0 or not is_word_char(code[pos - 1])) and \
                    (end == len(code) or not is_word_char(code[end])) and \
                    not (own and c_qualifier(code, pos) is None) and \
                    native_use_counts(code, pos, end, name, entry[4]):
                qualifier = c_qualifier(code, pos) if isinstance(entry[4], tuple) else None
                uses.append((pos, entry, qualifier + "::" + name if qualifier else name))
            pos = code.find(name, end)
    for start, quoted in includes:
        header = quoted[1:-1].strip()
        entry = KERNEL_INCLUDES.get(header) or KERNEL_INCLUDES.get(header.split("/")[-1])
        for prefix, prefixed in KERNEL_INCLUDE_PREFIXES:
            entry = entry or (prefixed if header.startswith(prefix) else None)
        if entry:
            uses.append((start, entry, "#include " + quoted))
    if "TORCH_LIBRARY" in code:
        for m in KERNEL_OP_LIBRARY.finditer(code):
            kind, namespace = m.group(1), m.group(2)
            if not kind and namespace not in PYTORCH_OP_NAMESPACES:
                continue            # a namespace of its own
            if kind and namespace in own_namespaces:
                continue            # adds to a namespace of its own
            what = ("defines operators in %s, one of PyTorch's own namespaces" if not kind else
                    "registers kernels for %s, a namespace the candidate does not define with "
                    "TORCH_LIBRARY") % namespace
            uses.append((m.start(),
                         ("dispatcher_registration", None, what, _WHY_DISPATCHER, "word"),
                         "%s(%s, ...)" % (m.group(0).split("(")[0].rstrip(), namespace)))
    for start, literal in literals:
        m = LITERAL_SYSTEM_PATH.search(literal) if "/" in literal else None
        if m:
            uses.append((start + m.start(), LITERAL_PATH_ENTRY,
                         literal if len(literal) <= 48 else literal[:45] + "..."))
        m = LITERAL_SYSCALL.search(literal) if "sys" in literal or "0x80" in literal else None
        if m:
            uses.append((start + m.start(), LITERAL_SYSCALL_ENTRY, m.group()))
    return sorted(uses, key=lambda use: use[0])


def search_gated(text, needles, pattern):
    return pattern.search(text) if any(n in text for n in needles) else None


def kernel_torch_calls(text):
    """The torch::X( / at::X( calls in C++ text, where torch / at starts a word."""
    for namespace in KERNEL_TORCH_NAMESPACES:
        pos = text.find(namespace)
        while pos >= 0:
            if pos == 0 or not (text[pos - 1].isalnum() or text[pos - 1] in "_:"):
                m = KERNEL_TORCH_CALL.match(text, pos)
                if m:
                    yield m
            pos = text.find(namespace, pos + len(namespace))


def allowed_torch_function(name):
    """torch.X (or torch.Tensor.X) with X in the allow list; torch.cuda's have their own."""
    return name.split(".")[-1] in ALLOWED_OPS and not name.startswith("torch.cuda.")


def prefixes(dotted):
    """a.b.c -> a.b.c, a.b, a: the most specific first."""
    parts = dotted.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def call_rule(name):
    if name in CALL_RULES:
        return CALL_RULES[name]
    for prefix, rule in CALL_RULE_PREFIXES:
        if name.startswith(prefix):
            return rule
    return None


def reference_use(name):
    return ("uses %s, the reference implementation's class: ModelNew must compute the result "
            "with its own kernel, not inherit, call or copy the reference" % name)


# ------------------------------------------------------------------- the class structure

def check_structure(cand, findings, device, fmt, backend="cuda"):
    """ModelNew exists and does not inherit the reference; an extension is built (with the
    Triton backend, a Triton kernel is defined)."""
    model = cand.model_new
    if model is None:
        findings.add("no_model_new", 0, "the code defines no class ModelNew at module level; "
                     "the evaluator instantiates ModelNew, so the file must define it")
    else:
        check_model_new_bases(cand, findings, model)
        for node in ast.walk(model.node):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                    node.id in cand.reference_classes:
                findings.add("inherits_reference", node.lineno, reference_use(node.id))
    if backend == "triton":
        if not cand.triton_kernels and not cand.load_calls:
            findings.add("no_custom_kernel", 0, "the code defines no @triton.jit function: "
                         "with the Triton backend the problem must be computed by a Triton "
                         "kernel you write and launch from forward (kernel[grid](...))")
        return
    wanted = LOAD_INLINE_FUNCS if fmt == "load_inline" else {RAW_LOAD_FUNC[device]}
    builds = [c for c in cand.load_calls if cand.names.qualname(c.func) in wanted]
    if not builds:
        findings.add("no_custom_kernel", 0, no_kernel_message(device, fmt) + other_format_hint(
            cand, device, fmt))
    elif device == "cuda" and not any("__global__" in n.value for n in cand.nodes[ast.Constant]
                                      if isinstance(n.value, str)):
        findings.add("no_custom_kernel", min(c.lineno for c in builds), "no string in the code "
                     "holds a __global__ function: on the GPU the work must be done by a CUDA "
                     "kernel you write")


def no_kernel_message(device, fmt):
    if fmt == "load_inline":
        return ("the code never builds an extension with torch.utils.cpp_extension.load_inline "
                "(or cpp_extension.load): the problem must be computed by a kernel you build")
    helper = RAW_LOAD_FUNC[device].split(".")[1]
    return ("the code never builds an extension with kforge's %s: in the raw format your %s "
            "source must be built with `from kforge import %s`"
            % (helper, "CUDA" if device == "cuda" else "C++", helper))


def other_format_hint(cand, device, fmt):
    """Where the code builds its kernel the other format's way (the demo's raw replies
    given to an eval of the default format), the setting that evaluates it."""
    other = "raw" if fmt == "load_inline" else "load_inline"
    funcs = {RAW_LOAD_FUNC[device]} if other == "raw" else LOAD_INLINE_FUNCS
    if any(cand.names.qualname(c.func) in funcs for c in cand.load_calls):
        return ("; the code is written for the %s format (it builds with %s), and this "
                "evaluation's eval.format is %s"
                % (other, "kforge's %s" % RAW_LOAD_FUNC[device].split(".")[1] if other == "raw"
                   else "load_inline", fmt))
    return ""


def check_model_new_bases(cand, findings, model):
    """A reference class among ModelNew's bases, directly, through an alias or through a
    class of the candidate (named like the reference or inheriting from it)."""
    todo, seen = [(b, None) for b in model.node.bases], set()
    while todo:
        base, via = todo.pop(0)
        name = cand.class_alias(base)
        if name is None or name in seen:
            continue
        seen.add(name)
        if via is None and source_text(base) != name:
            via = source_text(base)         # an alias: Base = Model
        if name in cand.reference_classes:
            findings.add("inherits_reference", model.node.lineno,
                         "ModelNew inherits the reference %s%s: it must compute the problem "
                         "with its own kernel, not reuse the reference implementation"
                         % (name, " (through %s)" % via if via else ""))
            return
        if name in cand.classes:
            todo.extend((b, via or name) for b in cand.classes[name].node.bases)


# ------------------------------------------------------------ forward and what it reaches

class Unit:
    """A function forward reaches: ModelNew.forward, a method, a module-level function,
    the forward of a candidate's module or autograd Function."""

    def __init__(self, node, cls, label):
        self.node = node
        self.cls = cls
        self.label = label
        self.self_var = self_name(node) if cls is not None else None
        self.key = id(node)


class Flow:
    """Follows forward into the code it calls and tracks which values are tensors (a
    simple taint analysis): forward's tensor parameters, what torch calls, tensor methods,
    nn layers and the extension return, self's tensor attributes and nn parameters. Only
    what is known to be a tensor is judged, so arithmetic on sizes and scalars is never
    flagged. A first set of passes, silent, settles which parameters and return values are
    tensors and which functions are reached; a last pass reports."""

    MAX_ROUNDS = 8

    def __init__(self, cand, findings):
        self.cand = cand
        self.names = cand.names
        self.findings = findings
        self.units = {}
        self.tainted_params = {}
        self.returns_tensor = set()
        self.kernel_called = False
        self.report = False
        self.unit = None
        self.depth = 0              # of functions defined inside the one interpreted

    def run(self, model):
        forward, _ = model.method("forward")
        if forward is None:
            return None
        self.reach(Unit(forward, model, "forward"), entry_tensor_params(forward))
        call, _ = model.method("__call__")
        if call is not None:            # replaces nn.Module.__call__, so runs instead
            self.reach(Unit(call, model, "ModelNew.__call__"),
                       entry_tensor_params(call))
        for _ in range(self.MAX_ROUNDS):
            state = self.state()
            for unit in list(self.units.values()):
                self.interpret(unit)
            if state == self.state():
                break
        self.report = True
        done = 0
        while done < len(self.units):       # units first reached now are reported as well
            self.interpret(list(self.units.values())[done])
            done += 1
        return forward

    def state(self):
        return (len(self.units), sum(len(p) for p in self.tainted_params.values()),
                len(self.returns_tensor))

    def reach(self, unit, tensor_params):
        if unit.key not in self.units:
            self.units[unit.key] = unit
            self.tainted_params[unit.key] = set()
        self.tainted_params[unit.key] |= tensor_params
        return self.units[unit.key]

    def add(self, rule, node, message, severity=None):
        if self.report:
            self.findings.add(rule, node.lineno, message, severity)

    # a function ------------------------------------------------------------------------
    def interpret(self, unit):
        self.unit = unit
        fn = unit.node
        self.depth = 0
        self.globals_declared = {n for s in ast.walk(fn) if isinstance(s, ast.Global)
                                 for n in s.names}
        self.locals = (set(all_param_names(fn)) |
                       {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and
                        isinstance(n.ctx, ast.Store)}) - self.globals_declared
        self.mutable_defaults = mutable_default_params(fn)
        self.layer_names = self.find_layer_names(fn)
        if self.report:
            self.check_memo_decorators(fn)
        self.block(fn.body, set(self.tainted_params[unit.key]))

    def where(self):
        return self.unit.label

    def check_memo_decorators(self, fn):
        for dec, name in decorator_names(fn, self.names):
            if name in MEMO_DECORATORS and fn.name not in self.cand.handle_funcs:
                self.add("cached_output", dec, "%s is memoised with %s: outputs must be "
                         "computed afresh on every call" % (self.where(), name))

    def find_layer_names(self, fn):
        """Local names that hold an nn layer of self: `fc = self.fc`, `for m in self.seq`."""
        names = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and self.layer_of(node.value, set()):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.For, ast.AsyncFor)) and \
                    isinstance(node.target, ast.Name):
                source = node.iter
                if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute):
                    source = source.func.value          # self.seq.children()
                if self.layer_of(source, set()):
                    names.add(node.target.id)
        return names

    def layer_of(self, node, layer_names):
        """The nn layer an expression calls (self.fc, self.seq[0], fc.forward), if any."""
        if isinstance(node, ast.Attribute) and node.attr in ("forward", "__call__"):
            node = node.value
        while isinstance(node, ast.Subscript):
            node = node.value
        unit = self.unit
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                unit.cls is not None and node.value.id == unit.self_var:
            kind = unit.cls.layer_attrs.get(node.attr)
            return "self.%s, an nn.%s layer" % (node.attr, kind) if kind else None
        if isinstance(node, ast.Name) and node.id in layer_names:
            return "%s, an nn layer of self" % node.id
        return None

    # statements ------------------------------------------------------------------------
    def block(self, stmts, env):
        for stmt in stmts:
            env = self.stmt(stmt, env)
        return env

    def stmt(self, node, env):
        handler = getattr(self, "stmt_" + type(node).__name__, None)
        if handler is not None:
            return handler(node, env)
        return self.generic(node, env)

    def generic(self, node, env):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.value(child, env)
            elif isinstance(child, ast.stmt):
                env = self.stmt(child, env)
            else:
                env = self.generic(child, env)
        return env

    def stmt_Assign(self, node, env):
        tensor = self.value(node.value, env)
        for target in node.targets:
            self.check_store(target, node.value)
            env = self.bind(target, node.value, tensor, env)
        return env

    def stmt_AnnAssign(self, node, env):
        if node.value is None:
            return env
        tensor = self.value(node.value, env)
        self.check_store(node.target, node.value)
        return self.bind(node.target, node.value, tensor, env)

    def stmt_AugAssign(self, node, env):
        tensor = self.value(node.value, env) | self.value(node.target, env)
        self.check_store(node.target, node.value)
        if tensor:
            self.add("torch_compute", node, operator_message(self.where(), node.op),
                     "--torch-ops")
        return self.bind(node.target, node.value, tensor, env)

    def stmt_If(self, node, env):
        self.value(node.test, env)
        return self.block(node.body, set(env)) | self.block(node.orelse, set(env))

    def stmt_For(self, node, env):
        items = self.value(node.iter, env) or self.holds_tensors(node.iter, env)
        looped = self.bind(node.target, None, items, set(env))
        looped = self.block(node.body, looped)
        looped = self.block(node.body, self.bind(node.target, None, items, looped))
        return env | looped | self.block(node.orelse, set(env | looped))

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node, env):
        self.value(node.test, env)
        looped = self.block(node.body, self.block(node.body, set(env)))
        return env | looped | self.block(node.orelse, set(env | looped))

    def stmt_With(self, node, env):
        for item in node.items:
            self.value(item.context_expr, env)
            if item.optional_vars is not None:
                env = self.bind(item.optional_vars, None, False, env)
        return self.block(node.body, env)

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, node, env):
        if any(not reraises(h) for h in node.handlers) and \
                not self.findings.has("fallback_path", node.lineno):
            self.add("fallback_path", node, "%s has a try/except whose handler does not "
                     "re-raise: a fallback path when the kernel fails is not allowed, let the "
                     "error surface" % self.where())
        after = self.block(node.body, set(env))
        for handler in node.handlers:
            after |= self.block(handler.body, set(env | after))
        after = self.block(node.orelse, after)
        return self.block(node.finalbody, env | after)

    stmt_TryStar = stmt_Try

    def stmt_Return(self, node, env):
        if node.value is not None and self.value(node.value, env) and self.depth == 0:
            self.returns_tensor.add(self.unit.key)
        return env

    def stmt_FunctionDef(self, node, env):
        # A function defined inside: its body is judged as part of this one, its own
        # parameters unknown (so not tensors).
        for dec in node.decorator_list:
            self.value(dec, env)
        self.depth += 1
        self.block(node.body, env - set(all_param_names(node)))
        self.depth -= 1
        return env - {node.name}

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node, env):
        # A class defined inside: its methods run only when called, and are not followed.
        return env - {node.name}

    def bind(self, target, value, tensor, env):
        """The names an assignment binds, tensors or not ((a, b) = (x, 1) elementwise)."""
        if isinstance(target, ast.Name):
            return env | {target.id} if tensor else env - {target.id}
        if isinstance(target, ast.Starred):
            return self.bind(target.value, None, tensor, env)
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                    and not any(isinstance(e, ast.Starred) for e in value.elts):
                for t, v in zip(target.elts, value.elts):
                    env = self.bind(t, v, self.value(v, env), env)
                return env
            for t in target.elts:
                env = self.bind(t, None, tensor, env)
        return env

    def holds_tensors(self, node, env):
        return isinstance(node, (ast.Tuple, ast.List)) and \
            any(self.value(e, env) for e in node.elts)

    # state kept between calls ------------------------------------------------------------
    def check_store(self, target, value):
        if not self.report or is_none(value) or (value is not None and self.cand.is_handle(
                value, self.unit.cls, self.unit.self_var)):
            return      # clearing, or keeping the extension handle (a lazy build), is fine
        for t in flat_targets(target):
            if isinstance(t, ast.Name):
                if t.id in self.globals_declared:
                    self.add("cached_output", t, "%s assigns the module-level variable %s: "
                             "state kept between calls is not allowed, compute the output "
                             "afresh each call" % (self.where(), t.id))
            elif isinstance(t, (ast.Attribute, ast.Subscript)):
                kept = self.kept_state(t)
                if kept:
                    self.add("cached_output", t, "%s stores into %s: state kept between "
                             "calls is not allowed, compute the output afresh each call"
                             % (self.where(), kept))

    def kept_state(self, node):
        """What outlives the call in a store or mutation through `node`, if anything: self,
        a module-level name, a mutable default argument (imported modules are patching's)."""
        root = root_name(node)
        if root is None:
            return None
        text = source_text(node)
        if root == self.unit.self_var:
            return text
        if root in self.locals:
            if root in self.mutable_defaults:       # def forward(self, x, memo={})
                return "%s, a mutable default argument" % text
            return None
        if root in self.cand.module_names and root not in self.names.aliases:
            return "%s, module-level state" % text
        return None

    # expressions -----------------------------------------------------------------------
    def value(self, node, env):
        """Judges an expression (reporting in the last pass) and says whether its value is
        known to be a tensor."""
        handler = getattr(self, "expr_" + type(node).__name__, None)
        if handler is not None:
            return handler(node, env)
        self.children(node, env)
        return False

    def children(self, node, env):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.value(child, env)
            elif not isinstance(child, (ast.expr_context, ast.operator, ast.cmpop)):
                self.children(child, env)

    def expr_Name(self, node, env):
        if node.id in self.cand.reference_classes and isinstance(node.ctx, ast.Load):
            self.add("inherits_reference", node, reference_use(node.id))
        return node.id in env

    def expr_Attribute(self, node, env):
        base = self.value(node.value, env)
        if base and node.attr in TENSOR_ATTRS:
            return True
        unit = self.unit
        if isinstance(node.value, ast.Name) and node.value.id == unit.self_var and \
                unit.cls is not None and node.attr in unit.cls.tensor_attrs:
            return True
        # self.fc.weight, fc.bias: an nn layer's parameters
        return node.attr in PARAMETER_ATTRS and (
            (unit.self_var is not None and root_name(node.value) == unit.self_var) or
            self.layer_of(node.value, self.layer_names) is not None)

    def expr_Subscript(self, node, env):
        self.value(node.slice, env)
        return self.value(node.value, env)

    def expr_BinOp(self, node, env):
        left, right = self.value(node.left, env), self.value(node.right, env)
        formatting = isinstance(node.op, ast.Mod) and isinstance(
            node.left, (ast.Constant, ast.JoinedStr))
        if isinstance(node.op, ast.MatMult) or ((left or right) and not formatting):
            self.add("torch_compute", node, operator_message(self.where(), node.op),
                     "--torch-ops")
            return True
        return False

    def expr_UnaryOp(self, node, env):
        tensor = self.value(node.operand, env)
        if tensor and isinstance(node.op, (ast.USub, ast.Invert)):
            self.add("torch_compute", node, operator_message(self.where(), node.op),
                     "--torch-ops")
        return tensor and not isinstance(node.op, ast.Not)

    def expr_Compare(self, node, env):
        tensors = [self.value(n, env) for n in [node.left] + node.comparators]
        ops = [op for op in node.ops if type(op) in OPERATOR_SYMBOLS]
        if any(tensors) and ops:
            self.add("torch_compute", node, operator_message(self.where(), ops[0]),
                     "--torch-ops")
            return True
        return False

    def expr_BoolOp(self, node, env):
        for v in node.values:
            self.value(v, env)
        return False

    def expr_IfExp(self, node, env):
        self.value(node.test, env)
        return self.value(node.body, env) | self.value(node.orelse, env)

    def expr_NamedExpr(self, node, env):
        return self.value(node.value, env)

    def expr_Lambda(self, node, env):
        self.children(node.args, env)
        self.value(node.body, env - set(all_param_names(node)))
        return False

    def comprehension(self, node, env, results):
        env = set(env)
        for gen in node.generators:
            items = self.value(gen.iter, env)
            env = self.bind(gen.target, None, items, env)
            for cond in gen.ifs:
                self.value(cond, env)
        for result in results:
            self.value(result, env)
        return False

    def expr_ListComp(self, node, env):
        return self.comprehension(node, env, [node.elt])

    expr_SetComp = expr_GeneratorExp = expr_ListComp

    def expr_DictComp(self, node, env):
        return self.comprehension(node, env, [node.key, node.value])

    # calls -----------------------------------------------------------------------------
    def expr_Call(self, node, env):
        func, unit = node.func, self.unit
        args = [self.value(a, env) for a in node.args]
        kwargs = {k.arg: self.value(k.value, env) for k in node.keywords}
        receiver = self.value(func.value, env) if isinstance(func, ast.Attribute) else \
            self.value(func, env)
        if self.cand.is_handle(func, unit.cls, unit.self_var):
            self.kernel_called = True
            return True
        name = self.names.qualname(func)
        if name:
            return self.library_call(node, name, any(args) or any(kwargs.values()))
        layer = self.layer_of(func, self.layer_names)
        if layer:
            self.add("torch_compute", node, "%s calls %s, which computes in PyTorch; pass its "
                     "weight and bias to your kernel instead" % (self.where(), layer),
                     "--torch-ops")
            return True
        target = self.callee(func)
        if target is not None:
            callee, offset = target
            self.pass_arguments(callee, offset, args, kwargs)
            return callee.key in self.returns_tensor
        if isinstance(func, ast.Attribute):
            return self.method_call(node, func, receiver)
        return False

    def library_call(self, node, name, tensor_args):
        """A call of something imported: torch's, deny by default; Python's arithmetic
        builtins on a tensor; the rest is the module-wide checks' business, setattr(self,
        ...) aside."""
        if name in COMPUTING_BUILTINS and tensor_args:
            self.add("torch_compute", node, "%s calls %s on a tensor, which computes in "
                     "PyTorch; the problem's work must be done by your kernel"
                     % (self.where(), name[9:]), "--torch-ops")
            return True
        if name in ("builtins.setattr", "builtins.delattr") and node.args:
            kept = self.kept_state(node.args[0]) if isinstance(node.args[0], ast.Name) else None
            if kept:
                self.add("cached_output", node, "%s calls %s on %s: state kept between calls "
                         "is not allowed" % (self.where(), name[9:], kept))
            return False
        if not name.startswith("torch.") or call_rule(name) or \
                name in ALLOWED_TORCH_PATHS or name.startswith(NON_COMPUTE_TORCH):
            return False
        if allowed_torch_function(name):
            return name.split(".")[-1] not in SCALAR_RESULTS
        shown = source_text(node.func)
        if shown.split("(")[0].split(".")[-1] != name.split(".")[-1]:
            shown += " (%s)" % name           # an alias: say what it stands for
        self.add("torch_compute", node, "%s calls %s, a PyTorch compute op; the problem's work "
                 "must be done by your kernel" % (self.where(), shown), "--torch-ops")
        return True

    def method_call(self, node, func, receiver):
        method = func.attr
        if receiver:
            if method not in ALLOWED_OPS:
                self.add("torch_compute", node, "%s calls the tensor method .%s(), a PyTorch "
                         "compute op; the problem's work must be done by your kernel"
                         % (self.where(), method), "--torch-ops")
                return True
            return method not in SCALAR_RESULTS
        if method in STATE_MUTATORS:
            kept = self.kept_state(func.value)
            if kept:
                self.add("cached_output", node, "%s calls .%s on %s: state kept between calls "
                         "is not allowed, compute the output afresh each call"
                         % (self.where(), method, kept))
        return False

    def callee(self, func):
        """The candidate's own function a call runs, and where its arguments land."""
        unit = self.unit
        cls = unit.cls
        if isinstance(func, ast.Name):
            fn = self.cand.functions.get(func.id)
            if fn is not None and func.id not in self.locals:
                return self.reach(Unit(fn, None, "%s (reached from forward)" % fn.name),
                                  set()), 0
            return None
        if not isinstance(func, ast.Attribute):
            return None
        owner = func.value
        if isinstance(owner, ast.Call) and self.names.builtin(owner.func) == "super" and \
                cls is not None:
            return self.method_unit(cls, func.attr, after=self.defining_class(cls))
        if not isinstance(owner, ast.Name):
            if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and \
                    cls is not None and owner.value.id == unit.self_var and \
                    owner.attr in cls.instance_attrs and func.attr in ("forward", "__call__"):
                return self.module_forward(cls.instance_attrs[owner.attr])   # self.blk.forward
            return None
        if cls is not None and owner.id == unit.self_var:
            if func.attr in cls.instance_attrs:                 # self.block(x)
                return self.module_forward(cls.instance_attrs[func.attr])
            return self.method_unit(cls, func.attr)
        other = self.cand.classes.get(owner.id)
        if other is not None and owner.id not in self.locals:
            if func.attr == "apply":                            # an autograd Function
                fn, _ = other.method("forward")
                label = "%s.forward (reached from forward)" % other.name
                return (self.reach(Unit(fn, other, label), set()), 1) if fn is not None else None
            return self.method_unit(other, func.attr, static=True)
        return None

    def method_unit(self, cls, name, after=None, static=False):
        fn, owner = cls.method(name, after)
        if fn is None:
            return None
        label = "forward" if (cls is self.cand.model_new and name == "forward") else \
            "%s.%s (reached from forward)" % (owner.name, name)
        # Through an instance, arguments start after self; through the class (K.m(...)),
        # after cls for a classmethod only.
        bound = self_name(fn) is not None and (not static or has_decorator(fn, "classmethod"))
        first = 1 if bound else 0
        return self.reach(Unit(fn, cls, label), set()), first

    def module_forward(self, cls):
        fn, owner = cls.method("__call__")
        if fn is None:
            fn, owner = cls.method("forward")
        if fn is None:
            return None
        label = "%s.%s (reached from forward)" % (owner.name, fn.name)
        return self.reach(Unit(fn, cls, label), set()), 1

    def defining_class(self, cls):
        """The class whose body holds the unit's function (for super())."""
        for owner in cls.mro():
            if self.unit.node in owner.methods.values():
                return owner
        return cls

    def pass_arguments(self, callee, offset, args, kwargs):
        params = param_names(callee.node)
        tensors = set()
        for i, tensor in enumerate(args):
            if tensor and offset + i < len(params):
                tensors.add(params[offset + i])
            elif tensor and callee.node.args.vararg is not None:
                tensors.add(callee.node.args.vararg.arg)
        tensors |= {k for k, tensor in kwargs.items() if tensor and k is not None}
        self.tainted_params[callee.key] |= tensors


def entry_tensor_params(fn):
    """forward's parameters taken for tensors: all but self, those annotated int / float /
    bool / str, and those with a non-None constant default (a flag, a size)."""
    a = fn.args
    params = a.posonlyargs + a.args
    defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
    pairs = list(zip(params, defaults))[1:] + list(zip(a.kwonlyargs, a.kw_defaults))
    tensors = {p.arg for p, d in pairs
               if not scalar_annotation(p.annotation) and
               not (isinstance(d, ast.Constant) and d.value is not None)}
    if a.vararg is not None:
        tensors.add(a.vararg.arg)
    return tensors


def scalar_annotation(node):
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in SCALAR_ANNOTATIONS
    if isinstance(node, ast.Name):
        return node.id in SCALAR_ANNOTATIONS
    if isinstance(node, ast.Subscript):                 # Optional[int]
        return scalar_annotation(node.slice)
    if isinstance(node, ast.BinOp):                     # int | None
        return any(scalar_annotation(n) or is_none(n) for n in (node.left, node.right)) and \
            not any(not scalar_annotation(n) and not is_none(n) for n in (node.left, node.right))
    return False


def mutable_default_params(fn):
    a = fn.args
    params = a.posonlyargs + a.args
    pairs = list(zip(params[len(params) - len(a.defaults):], a.defaults)) + \
        [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    return {p.arg for p, d in pairs
            if isinstance(d, (ast.List, ast.Dict, ast.Set)) or
            (isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and
             d.func.id in ("dict", "list", "set"))}


def operator_message(where, op):
    symbol = OPERATOR_SYMBOLS[type(op)]
    verb = "compares a tensor with %s" if isinstance(op, ast.cmpop) else \
        "applies the %s operator to a tensor"
    return "%s %s, which computes in PyTorch; the problem's work must be done by your kernel" \
        % (where, verb % symbol)


def check_forward(cand, findings):
    """What forward does, and whether it ever calls the kernel."""
    model = cand.model_new
    if model is None:
        return
    flow = Flow(cand, findings)
    forward = flow.run(model)
    if (cand.load_calls or cand.triton_kernels) and not flow.kernel_called:
        line = forward.lineno if forward is not None else model.node.lineno
        handles = sorted(cand.handle_names) or ["the extension"]
        findings.add("kernel_unused", line, "forward never calls the extension it builds (%s), "
                     "directly or through the code it calls: the problem's work must be done "
                     "by your kernel" % ", ".join(handles[:3]))


# --------------------------------------------------------------------------------- check

def reference_class_names(problem_src):
    """The problem's top-level classes (normally just Model)."""
    try:
        tree = ast.parse(problem_src)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset(("Model",))
    return frozenset(s.name for s in tree.body if isinstance(s, ast.ClassDef)) | {"Model"}


def parse_candidate(candidate_src):
    """The candidate's tree, or a syntax_error finding (its line and the parser's words)."""
    try:
        return ast.parse(candidate_src), None
    except SyntaxError as e:
        return None, (e.lineno or 0, "the code does not parse as Python: %s" % e.msg)
    except (ValueError, RecursionError, MemoryError) as e:
        return None, (0, "the code cannot be read as Python: %s" % (str(e) or type(e).__name__))


def check(candidate_src, problem_src, device, fmt, precision, torch_ops="warning",
          backend="cuda"):
    """The findings for one candidate, as the command line prints them."""
    for value, allowed in ((device, ("cpu", "cuda")), (fmt, ("load_inline", "raw")),
                           (precision, ("fp32", "fp16", "bf16")),
                           (torch_ops, ("error", "warning")), (backend, ("cuda", "triton"))):
        if value not in allowed:
            raise ValueError("%r is not one of %s" % (value, ", ".join(allowed)))
    findings = Findings(torch_ops)
    tree, error = parse_candidate(candidate_src)
    if tree is None:
        findings.add("syntax_error", error[0], error[1])
        return findings.result()
    try:
        cand = Candidate(tree, reference_class_names(problem_src))
        check_structure(cand, findings, device, fmt, backend)
        ModuleChecks(cand, findings, fmt, precision).run()
        check_forward(cand, findings)
    except RecursionError:
        findings = Findings(torch_ops)
        findings.add("syntax_error", 0, "the code is nested too deeply to be checked; write it "
                     "with less nesting")
    return findings.result()


# ---------------------------------------------------------------------------- command line

class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def read_source(path, what):
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    except OSError as e:
        raise UsageError("cannot read the %s %s: %s" % (what, path, e.strerror or e))
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError("the %s %s is larger than %d bytes" % (what, path, MAX_INPUT_BYTES))
    return data


def decode_candidate(data):
    """The candidate's text (a UTF-8 byte order mark dropped, as Python does); bytes that
    are not UTF-8 become a syntax_error, as in Python."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as e:
        return None, {"rule": "syntax_error", "severity": "error",
                      "line": data.count(b"\n", 0, e.start) + 1,
                      "message": "line %d: the code is not valid UTF-8 text"
                                 % (data.count(b"\n", 0, e.start) + 1)}


def main(argv=None):
    parser = Parser(prog="kforge_check.py", description="Static checks of a candidate.")
    parser.add_argument("--problem", required=True)
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--device", required=True, choices=("cpu", "cuda"))
    parser.add_argument("--format", required=True, choices=("load_inline", "raw"))
    parser.add_argument("--precision", required=True, choices=("fp32", "fp16", "bf16"))
    parser.add_argument("--torch-ops", default="warning", choices=("error", "warning"))
    parser.add_argument("--backend", default="cuda", choices=("cuda", "triton"))
    try:
        args = parser.parse_args(argv)
        candidate = read_source(args.candidate, "candidate")
        problem = read_source(args.problem, "problem")
    except UsageError as e:
        sys.stderr.write("kforge_check: %s\n" % str(e).replace("\n", " "))
        return 2
    source, bad_text = decode_candidate(candidate)
    if bad_text is not None:
        findings = [bad_text]
    else:
        findings = check(source, problem.decode("utf-8", "replace"), args.device, args.format,
                         args.precision, args.torch_ops, args.backend)
    sys.stdout.write(json.dumps({"findings": findings, "version": VERSION}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
