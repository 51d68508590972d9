#!/usr/bin/env python3
"""kforge runner: the only code in kforge that touches PyTorch or CUDA (docs/DESIGN.md §5).

One JSON request on stdin, one JSON result on file descriptor 3; stdout and stderr are
free-form logs that the parent captures. Modes:

  precompile  import the candidate only (load_inline builds into build_dir), CUDA hidden
  execute     correctness trials and, when correct, timing (candidate, optionally reference)
  profile     the candidate (or the reference) over a few forward calls: under kforge's
              CUPTI injection on cuda (cudaProfilerStart/Stop around the calls, the
              library writes the profile), else torch.profiler's top kernels
  baseline    time the reference alone (eager, optionally torch.compile)
  probe       import torch and, on cuda, run a tiny kernel (GPU health)
  selftest    check the build prerequisites (torch, its C++ headers, pybind11, the
              compiler, ninja; nvcc and a GPU on cuda), then build a known-good tiny
              extension with load_inline exactly as candidates are built (a C++ op on cpu,
              a __global__ kernel on cuda) and run it; details.build_s and run_s time it.
              With "format": "raw" (eval.format), the raw format's instead: its
              compiler, and the known-good extension built and called as load_cuda /
              load_cpp build and call a candidate's

Started with --warm, the runner imports torch and its extension machinery before it reads
its request (kforge starts the next runner while the current one works); with --warm-load,
for a step that loads a build rather than makes one, torch alone. Either then takes the
request's "env", "work_dir" and "rlimit_cpu_s" as a fresh runner would have had them. Its
CUDA_VISIBLE_DEVICES is the one it was started with (torch may fix the device count at
import): a request that asks for another is refused.

Started with --zygote, the runner is a fork server: it imports what --warm does, once,
and then, for each message on the socket at fd 4 (kb_spawn_fork in base/spawn.c), forks
a child that goes on as a --warm runner with the message's pipes as its fds 0 to 3 and
the message's CUDA_VISIBLE_DEVICES (the server never initialises CUDA, so one server makes
a precompile's runner, which sees no GPU, and an execute's). The server runs no request
and no candidate, so each child is a process no candidate has touched, without an import
of its own.

A failure the candidate cannot cause (torch not importable; a build that failed for want
of torch's headers, pybind11, the compiler or ninja, confirmed by probing those
prerequisites independently of the candidate's code) has the status env_error, with
details.stage (torch, headers, pybind11, compiler, ninja, cuda, build, run) and
details.fix, a one-line remedy.

Evaluation follows KernelBench's eval_kernel_against_ref (seeded trials, per-precision
tolerances, CUDA-event timing with warm-up, L2 flush and a discarded first trial) and closes
its known holes: the reference and the candidate live in separate module namespaces, each
model gets its own clone of the inputs and the candidate's clone is checked for mutation,
the reference output stays alive while the candidate runs, both models are in eval() mode,
side-stream work and degenerate outputs are flagged (excessive speedups are kforge's to
judge, feedback/verdict.c, from the timings this runner measures), and the torch functions
the harness relies on are bound before candidate code runs.

Written for Python >= 3.8 and torch 1.13 .. 2.x.
"""

import builtins
import faulthandler
import fcntl
import functools
import gc
import glob
import importlib.util
import io
import json
import math
import os
import platform
import random
import resource
import struct
import sys
import threading
import time
import traceback

RESULT_FD = 3
# In a runner beneath its namespace's init: the read end of the init's acknowledgements
# of freezes (enter_namespaces), until candidate_pidfd hands it to the judge.
NS_ACK_FD = None
STATUSES = ("ok", "compile_error", "no_model_new", "shape_mismatch", "value_mismatch",
            "runtime_error", "cuda_error", "timeout", "crashed", "env_error")
# `kforge eval --help` quotes this line (orchestrator/eval.c): keep it one line of JSON.
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
# Compiler output keeps its head (where gcc and nvcc put the first error, after ninja's
# command lines) and its tail (the Python exception); the driver picks from both.
COMPILER_OUTPUT_HEAD = 12288
COMPILER_OUTPUT_TAIL = 4096
EXCEPTION_CAP = 4096
TRACEBACK_CAP = 4096
PROFILE_TOP = 15
# Texts that mean the CUDA context is (probably) poisoned rather than a plain Python error.
CUDA_ERROR_MARKERS = ("CUDA error", "CUDA_ERROR", "cudaError", "illegal memory access",
                      "device-side assert", "unspecified launch failure",
                      "misaligned address", "illegal instruction")
CUDA_ERROR_TYPES = ("CudaError", "AcceleratorError", "CUDAError")
# Texts that say CUDA itself is unavailable (precompile runs with CUDA hidden).
CUDA_UNAVAILABLE_MARKERS = ("no CUDA GPUs are available", "Found no NVIDIA driver",
                            "CUDA driver initialization failed", "No CUDA GPUs",
                            "Torch not compiled with CUDA enabled",
                            "CUDA_VISIBLE_DEVICES")
# Texts in a failed load_inline build that can mean a missing prerequisite rather than a
# fault of the code. Seen alone they prove nothing (a candidate may print them, or include
# a header of its own that is missing): env_probe() must confirm the prerequisite is gone.
ENV_BUILD_MARKERS = ("torch/extension.h: No such file", "Python.h: No such file",
                     "pybind11/", "Ninja is required", ": not found", "command not found",
                     "['which',", "No such file or directory: 'c++'", "nvcc")
ENV_PROBE_TIMEOUT_S = 120
# The one-line remedies for a missing prerequisite, per stage. Debian's python3-torch
# ships without its C++ headers (libtorch-dev) and without pybind11 (pybind11-dev).
ENV_FIXES = {
    "torch": "install PyTorch for this Python (Debian: apt-get install python3-torch) or "
             "run tools/setup.sh; or set runner.python / KFORGE_PYTHON to a Python that "
             "imports torch",
    "headers": {"debian": "apt-get install libtorch-dev python3-dev (Debian's python3-torch "
                          "has no C++ headers), or run tools/setup.sh",
                "other": "reinstall torch with its C++ headers (pip install --force-reinstall "
                         "torch) and install this Python's development headers"},
    "pybind11": {"debian": "apt-get install pybind11-dev, or run tools/setup.sh",
                 "other": "pip install pybind11 (or reinstall torch, whose wheel carries it)"},
    "compiler": "apt-get install g++ (or set CXX to a C++ compiler), or run tools/setup.sh",
    "ninja": "apt-get install ninja-build (or pip install ninja), or run tools/setup.sh",
    "cuda": "check the NVIDIA driver (nvidia-smi), that torch is a CUDA build "
            "(torch.version.cuda) and that the CUDA toolkit's nvcc is on PATH or in CUDA_HOME",
    "build": "the known-good extension does not build here: read the compiler output in "
             "the runner log ('kforge doctor --fresh' shows it)",
    "run": "the known-good extension built but did not compute its result: check the "
           "torch installation ('kforge doctor --fresh')",
    "timing": "install Triton for this Python (pip install triton), or choose another "
              "eval.timing (cuda_event, KernelBench's default, or host_time)",
}


def log(msg):
    sys.stderr.write("[runner] %s\n" % msg)
    sys.stderr.flush()


def tail(text, cap):
    if text is None:
        return ""
    if len(text) <= cap:
        return text
    return "[... %d characters truncated ...]\n" % (len(text) - cap) + text[-cap:]


def head_tail(text, head, tail_cap):
    """text with its middle cut out when it is longer than head + tail_cap characters."""
    if text is None:
        return ""
    if len(text) <= head + tail_cap:
        return text
    return "%s\n[... %d characters truncated ...]\n%s" % (
        text[:head], len(text) - head - tail_cap, text[-tail_cap:])


def first_line(text, cap=300):
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line[:cap]
    return ""


def finite(x):
    """JSON has no NaN/Infinity: non-finite floats become the strings "nan", "inf", "-inf"."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def sanitize(obj):
    if isinstance(obj, dict):
        return {str(k): sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [sanitize(v) for v in obj]
    if isinstance(obj, float):
        return finite(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    return str(obj)


class Outcome(Exception):
    """Ends the evaluation with a status (raised from deep inside the steps)."""

    def __init__(self, status, message, exc=None, flags=(), env=None):
        Exception.__init__(self, message)
        self.status = status
        self.message = message
        self.exc = exc
        self.flags = list(flags)
        self.env = env      # (stage, fix) of an env_error


def debian_torch(torch):
    return (getattr(torch, "__file__", None) or "").startswith("/usr/lib/python3/dist-packages/")


def env_fix(stage, torch=None):
    fix = ENV_FIXES.get(stage, ENV_FIXES["build"])
    if isinstance(fix, dict):
        fix = fix["debian" if torch is not None and debian_torch(torch) else "other"]
    return fix


def env_error(stage, message, torch=None, exc=None):
    return Outcome("env_error", message, exc, env=(stage, env_fix(stage, torch)))


HAS_INCLUDE_PROBE = "".join(
    "#if !__has_include(<%s>)\n#error kforge-missing %s\n#endif\n" % (h, h)
    for h in ("Python.h", "torch/extension.h", "pybind11/pybind11.h"))


def env_probe(torch, cuda):
    """The build prerequisites of load_inline, checked without building anything and
    without the candidate's code: ninja, the compiler torch will call, torch's C++ headers,
    Python.h and pybind11 on the include paths torch passes (the compiler's own
    __has_include), and on cuda the toolkit. Returns None, or the Outcome to raise."""
    import shutil
    import subprocess
    import sysconfig
    try:
        from torch.utils import cpp_extension
    except Exception as e:
        return env_error("torch", "torch.utils.cpp_extension does not import: %s"
                         % first_line(e), torch, e)
    if not cpp_extension.is_ninja_available():
        return env_error("ninja", "ninja is not installed ('ninja --version' fails); "
                         "load_inline builds with it", torch)
    # The compiler torch will run behind kforge's fast-build wrapper, if that is $CXX:
    # the one a missing or broken compiler must be named as.
    cxx = os.environ.get("KFORGE_CXX_REAL") or os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        return env_error("compiler", "the C++ compiler '%s' is not on PATH" % cxx, torch)
    includes = list(cpp_extension.include_paths(cuda))
    py_include = sysconfig.get_path("include", scheme="posix_prefix")
    if py_include:
        includes.append(py_include)
    argv = [cxx, "-fsyntax-only", "-x", "c++", "-"]
    for inc in includes:
        argv += ["-isystem", inc]
    try:
        p = subprocess.run(argv, input=HAS_INCLUDE_PROBE, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True,
                           timeout=ENV_PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as e:
        return env_error("compiler", "the C++ compiler '%s' does not run: %s"
                         % (cxx, first_line(e)), torch, e)
    missing = [line.split("kforge-missing ", 1)[1].strip() for line in p.stdout.splitlines()
               if "kforge-missing " in line]
    if "torch/extension.h" in missing or "Python.h" in missing:
        return env_error("headers", "%s not found on torch's include paths (%s)"
                         % (" and ".join(h for h in missing if h != "pybind11/pybind11.h"),
                            ", ".join(includes)), torch)
    if missing:
        return env_error("pybind11", "pybind11/pybind11.h not found on torch's include "
                         "paths (%s)" % ", ".join(includes), torch)
    if p.returncode != 0:
        return env_error("compiler", "the C++ compiler '%s' fails on an empty program: %s"
                         % (cxx, first_line(p.stdout)), torch)
    if cuda:
        if cpp_extension.CUDA_HOME is None:
            return env_error("cuda", "no CUDA toolkit: nvcc is not on PATH and CUDA_HOME is "
                             "unset", torch)
        nvcc = os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc")
        if not os.access(nvcc, os.X_OK):
            return env_error("cuda", "no nvcc at %s" % nvcc, torch)
    return None


def raw_env_probe(torch, cuda):
    """The raw format's one prerequisite, checked without building anything: the
    compiler its builds run (raw_compiler). Returns None, or the Outcome to raise."""
    import shutil
    compiler = raw_compiler(cuda)
    if shutil.which(compiler) is None:
        if cuda:
            return env_error("cuda", "no nvcc at %s (set CUDA_HOME, or put nvcc on PATH)"
                             % compiler, torch)
        return env_error("compiler", "the C++ compiler '%s' is not on PATH" % compiler, torch)
    return None


def exception_text(exc):
    return "%s: %s" % (type(exc).__name__, exc)


def describe_exception(exc):
    return tail(exception_text(exc), EXCEPTION_CAP)


def compiler_output(text):
    return head_tail(text, COMPILER_OUTPUT_HEAD, COMPILER_OUTPUT_TAIL)


def is_cuda_error(exc):
    if type(exc).__name__ in CUDA_ERROR_TYPES:
        return True
    text = str(exc)
    if "out of memory" in text and "CUDA error" not in text:
        return False
    return any(m in text for m in CUDA_ERROR_MARKERS)


def error_status(exc):
    return "cuda_error" if is_cuda_error(exc) else "runtime_error"


def is_out_of_memory(exc):
    """torch.cuda.OutOfMemoryError (torch.OutOfMemoryError in 2.x), a CUDA/C++ allocation
    failure reported as text, or Python's MemoryError: flagged so the report can count them."""
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or \
        "out of memory" in str(exc)


# --------------------------------------------------------------- output capture

# A problem whose output is near zero or constant on its inputs is checked again on its
# inputs scaled by this (check_scaled).
DEGENERATE_SCALE = 1000.0
RUNNER_THREAD = "kforge-runner"  # the runner's own threads; any other is the candidate's


def children():
    """This process's children as (pid, dead): dead for a zombie, not yet reaped."""
    kids = []
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                kids += [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            continue
    found = []
    for pid in kids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        found.append((pid, state in ("Z", "X")))
    return found


def live_children():
    """Pids of this process's children that are not yet dead (zombies are)."""
    return [pid for pid, dead in children() if not dead]


class FdTee:
    """Captures everything written to fds 1 and 2 (by Python, C++ or a compiler
    subprocess) while still forwarding it to the original stdout, so a crash in the
    middle leaves the text in the parent's log."""

    def __init__(self, cap=1 << 20):
        self.cap = cap
        self.chunks = []
        self.size = 0
        self.dropped = 0

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved_out = os.dup(1)
        self.saved_err = os.dup(2)
        rfd, wfd = os.pipe()
        os.set_inheritable(rfd, False)
        self.rfd = rfd
        os.dup2(wfd, 1)
        os.dup2(wfd, 2)
        os.close(wfd)
        self.thread = threading.Thread(target=self._pump, name=RUNNER_THREAD, daemon=True)
        self.thread.start()
        return self

    def _pump(self):
        while True:
            try:
                data = os.read(self.rfd, 65536)
            except OSError:
                break
            if not data:
                break
            try:
                os.write(self.saved_out, data)
            except OSError:
                pass
            self.chunks.append(data)
            self.size += len(data)
            while self.size > self.cap and len(self.chunks) > 1:
                dropped = self.chunks.pop(0)
                self.size -= len(dropped)
                self.dropped += len(dropped)

    def __exit__(self, *exc):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(self.saved_out, 1)
        os.dup2(self.saved_err, 2)
        # A grandchild that kept the pipe open must not hang us.
        self.thread.join(timeout=5)
        os.close(self.saved_out)
        os.close(self.saved_err)
        return False

    def text(self):
        return b"".join(self.chunks).decode("utf-8", errors="replace")


# --------------------------------------------------------------- the judge's channel

# An execute is two processes (docs/DESIGN.md §5, trust boundaries): the judge (mode "judge")
# imports the problem alone, computes and times the reference and compares; the
# candidate's runner (mode "execute") imports the candidate, runs it on the inputs the
# judge names and times it. They speak over a Unix stream socket that the judge listens
# on (the request's judge.socket) and the candidate's runner connects to, proving itself
# with the request's judge.token: frames of a JSON head and a raw payload, every one
# capped by its receiver. Nothing of the judge (its reference model, its outputs, its
# frames) is ever in a process where candidate code has run.
JUDGE_CONNECT_S = 120       # how long the candidate's runner looks for the judge
JUDGE_HELLO_S = 10          # what a connection may take to prove itself
JUDGE_HEAD_CAP = 1 << 20
# A payload of this many bytes or more crosses the judge's channel in a sealed memfd
# whose descriptor the frame carries (the receiver maps it: one copy in all), not through
# the socket: on an H200 host under gVisor a KernelBench level-1 problem's 6.4 GB output
# took seconds a trial through the socket, and an evaluation over two minutes.
PEER_MEMFD_MIN = 1 << 20
PEER_FRAME = struct.Struct("<IQB")  # head bytes, payload bytes, how the payload travels
PEER_INLINE, PEER_MEMFD = 0, 1
PEER_SEALS = ("F_SEAL_WRITE", "F_SEAL_SHRINK", "F_SEAL_GROW")
# The inputs' digest (Evaluator.inputs_digest): sums of this many words each, folded.
DIGEST_CHUNK = 1 << 20
DIGEST_SAMPLE = 4096
DIGEST_BASE, DIGEST_MOD = 1000003, (1 << 61) - 1
PEER_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16",
               "int8", "uint8", "bool")
# A correctness trial's outputs may be at most this many times the reference's bytes
# (plus OUTPUT_SLACK): a wrong shape is reported as one, a flood is refused.
OUTPUT_FACTOR = 4
OUTPUT_SLACK = 64 << 20
# What the judge may send the candidate's side (inputs, where they cannot be made there).
INPUTS_CAP = 1 << 36
# The second input distribution of the correctness check (inputs x become
# SECOND_SCALE * x + SECOND_SHIFT): outputs that do not follow the inputs fail it.
SECOND_SCALE, SECOND_SHIFT = 1.75, 0.5
# Timed calls whose outputs are verified afterwards: each with this probability, at
# least VERIFY_MIN and at most VERIFY_MAX of a timing, chosen once every call is made.
VERIFY_FRACTION = 0.1
VERIFY_MIN, VERIFY_MAX = 3, 24
# The fewest calls of one model in a block of the interleaved timing on a GPU; on the
# CPU every block is CPU_BLOCK calls: what moves a CPU timing is the host's memory
# bandwidth over seconds, which only calls that alternate closely share (each call then
# follows the other process's, alike for both). The figures (2-core VM, leaky_relu on
# 8 MB, two processes alternating blocks of K calls, six pairs): the ratio of two
# identical kernels 0.89-1.02 with K=10 and 0.96-1.01 with K=1, while a block's median in
# one process drifted 0.41-0.58 ms within two seconds; the demo's repeat spread_max 0.41
# -> 0.13-0.24 (tools/bench/README.md, repeat).
BLOCK_MIN = 5
CPU_BLOCK = 1
# A pass whose SM clock moved by more than this (relative) is timed again, at most
# CLOCK_REDOS times in a timing.
CLOCK_CHANGE = 0.05
CLOCK_REDOS = 2
# rejected reference_slowed, on a GPU: the reference timed between the candidate's blocks
# slower than its clean timing by more than this (relative, and 4 standard errors). The
# candidate's runner is stopped while the reference is timed (Runner.freeze), so nothing
# of it runs on the host then; on a GPU, work it queued before may still run. On the CPU
# the ratio is recorded and not judged: another process's caches and the host's load
# move it by tens of percent (up to 1.7x for honest kernels in a CI run on two cores).
# On an H200, 0.15 rejected an honest matmul once (a 30 us cuBLAS reference, its baseline
# timed minutes before in another process): 0.3. Work a candidate queued on the GPU
# before its runner was stopped can so hide at most a 1.3x inflation.
REFERENCE_SLOWED = {"cuda": 0.3, "cpu": 0.5}
# The candidate's namespace is stopped by its init's signal handler (Runner.freeze),
# which acknowledges it: the judge waits at most this long for that before the
# reference's block. The first FROZEN_KEPT windows are kept in details.judge.frozen.
FREEZE_ACK_S = 0.5
# ... and the init acknowledges once every thread of the namespace has stopped, or after
# this long (NS_INIT's freeze says why).
FREEZE_SETTLE_S = 0.2
FROZEN_KEPT = 64
# suspect timers_disagree: the judge's clock over a candidate's block of calls exceeds
# what the candidate's timers account for by more than the same measure of the
# reference's blocks plus max(this, half the candidate's time a call, 4 MADs, EXCESS_SHARE
# of the reference's measure). That measure is the harness's own work a call (the hold,
# the flush, the input set, the fingerprint: 1.5-1.9 ms on an H200), and it moves by
# itself: honest demo kernels' exceeded the reference's by up to 0.41 ms (2 of 15 turns
# flagged with 4 MADs alone); a cheat's hidden work of 2 ms a call is still far above.
EXCESS_FLOOR_MS = {"cuda": 0.1, "cpu": 1.0}
EXCESS_SHARE = 0.35
# ... judged from this many blocks of each at least (fewer say too little of the noise),
# with the channel's round trip, the median of PINGS, taken off a candidate's blocks.
TIMER_BLOCKS = 3
PINGS = 5
# rejected below_physical_floor: a candidate faster than moving its inputs (and the
# outputs that cannot stay in L2) once at the GPU's peak bandwidth, by this margin,
# where that floor is at least FLOOR_MIN_MS and the reference itself respects it.
FLOOR_MARGIN = 0.95
FLOOR_MIN_MS = 0.01


class PeerError(Exception):
    """The other side of the judge's channel broke the protocol or went away."""


def drain(fd):
    """Reads whatever a non-blocking-read pipe holds now."""
    import select
    while select.select([fd], [], [], 0)[0]:
        if not os.read(fd, 4096):
            return


def await_byte(fd, wanted, timeout_s):
    """The first of the bytes wanted to come on fd within timeout_s (others read and
    passed), or None."""
    import select
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        got = os.read(fd, 4096)
        if not got:
            return None
        for b in got:
            if b in wanted:
                return bytes([b])


def sealed_memfd(chunks, size):
    """A memfd holding the chunks, sealed against any change (write, shrink, grow), or
    None where the system has no sealed memfd (the payload then goes inline)."""
    if not hasattr(os, "memfd_create") or not hasattr(fcntl, "F_ADD_SEALS"):
        return None
    try:
        fd = os.memfd_create("kforge-peer", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:
        return None
    try:
        # pwrite, not a shared mapping: the kernel fills the pages without a fault each
        # (a quarter of the time for 1 GB on a 2-core VM).
        off = 0
        for c in chunks:
            view = memoryview(c).cast("B")
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:done + (1 << 30)], off + done)
            off += done
        if off != size:
            raise ValueError("wrote %d of %d bytes" % (off, size))
        seals = fcntl.F_SEAL_SEAL
        for name in PEER_SEALS:
            seals |= getattr(fcntl, name)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
        return fd
    except (OSError, ValueError):
        os.close(fd)
        return None


def mapped_payload(fd, size):
    """The payload of a memfd the other side sent: checked to be a regular file of the
    frame's size that can no longer change (a descriptor the sender could still write
    through would let bytes change after the judge read them), mapped copy-on-write."""
    import mmap
    import stat
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size != size:
        raise PeerError("a payload descriptor that is not a file of %d bytes" % size)
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except (OSError, AttributeError):
        raise PeerError("a payload descriptor without seals")
    if any(not seals & getattr(fcntl, name) for name in PEER_SEALS):
        raise PeerError("a payload descriptor that is not sealed against change")
    return mmap.mmap(fd, size, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)


class Peer:
    def __init__(self, sock):
        self.sock = sock
        self.memfd = True	# until the system says it has none
        self.payload_bytes = {"memfd": 0, "inline": 0}

    def send(self, head, chunks=()):
        import array
        import socket
        data = json.dumps(head).encode()
        size = sum(len(c) for c in chunks)
        fd = sealed_memfd(chunks, size) if self.memfd and size >= PEER_MEMFD_MIN else None
        self.payload_bytes["inline" if fd is None else "memfd"] += size
        if fd is None:
            self.memfd = self.memfd and size < PEER_MEMFD_MIN
            self.sock.sendall(PEER_FRAME.pack(len(data), size, PEER_INLINE) + data)
            for c in chunks:
                if len(c):
                    self.sock.sendall(c)
            return
        try:
            frame = PEER_FRAME.pack(len(data), size, PEER_MEMFD)
            # The descriptor rides on the frame's first bytes, which the receiver reads
            # with recvmsg.
            sent = self.sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                array.array("i", [fd]))])
            self.sock.sendall(frame[sent:] + data)
        finally:
            os.close(fd)

    def exact(self, n):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.sock.recv_into(view[got:], min(n - got, 1 << 24))
            if k == 0:
                raise PeerError("the other side closed the connection")
            got += k
        return buf

    def frame(self):
        """The frame's fixed part, and the descriptors that came with it."""
        import array
        import socket
        buf = bytearray(PEER_FRAME.size)
        view, got, fds = memoryview(buf), 0, []
        space = socket.CMSG_SPACE(4 * array.array("i").itemsize)
        while got < len(buf):
            k, anc, _, _ = self.sock.recvmsg_into([view[got:]], space)
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    a = array.array("i")
                    a.frombytes(cdata[:len(cdata) - len(cdata) % a.itemsize])
                    fds.extend(a)
            if k == 0:
                for fd in fds:
                    os.close(fd)
                raise PeerError("the other side closed the connection")
            got += k
        return PEER_FRAME.unpack(bytes(buf)), fds

    def recv(self, payload_cap=0):
        """(head, payload): head a JSON object, payload at most payload_cap bytes (a
        copy-on-write map of the sender's sealed memfd, or bytes read from the socket)."""
        (n, m, how), fds = self.frame()
        fd = fds.pop(0) if how == PEER_MEMFD and fds else None
        for extra in fds:
            os.close(extra)
        try:
            if n > JUDGE_HEAD_CAP or m > payload_cap or how not in (PEER_INLINE, PEER_MEMFD):
                raise PeerError("a message of %d + %d bytes (at most %d + %d)"
                                % (n, m, JUDGE_HEAD_CAP, payload_cap))
            if how == PEER_MEMFD and (fd is None or m == 0):
                raise PeerError("a payload in a memfd that did not come")
            try:
                head = json.loads(bytes(self.exact(n)))
            except ValueError as e:
                raise PeerError("an unparsable message: %s" % first_line(e))
            if not isinstance(head, dict) or not isinstance(head.get("op"), str):
                raise PeerError("a message without an op")
            self.payload_bytes["inline" if fd is None else "memfd"] += m
            if fd is not None:
                return head, mapped_payload(fd, m)
            return head, (self.exact(m) if m else bytearray())
        finally:
            if fd is not None:
                os.close(fd)


def tensor_bytes(t):
    """A plain tensor's bytes on the host, row-major: a view of a host tensor's memory
    (which the view keeps alive), copied only from a device or a strided tensor; a copy
    where torch has no NumPy to make the view with."""
    import ctypes
    import torch
    c = t.detach().contiguous().cpu()
    n = c.numel() * c.element_size()
    if not n:
        return b""
    try:
        return memoryview(c.reshape(-1).view(torch.uint8).numpy())
    except (RuntimeError, TypeError, ValueError):
        return ctypes.string_at(c.data_ptr(), n)


def pack_tensors(outs):
    """(metas, chunks) of tensors for a Peer message."""
    metas, chunks = [], []
    for t in outs:
        data = tensor_bytes(t)
        metas.append({"shape": list(t.shape), "dtype": str(t.dtype).split(".")[-1],
                      "nbytes": len(data)})
        chunks.append(data)
    return metas, chunks


def unpack_tensors(torch, metas, payload):
    """The tensors a Peer message carries, views of payload; PeerError for a description
    that does not add up (a dtype not in PEER_DTYPES, a size that is not its shape's)."""
    if not isinstance(metas, list) or len(metas) > 64:
        raise PeerError("no list of tensors")
    out, off = [], 0
    for m in metas:
        try:
            dtype = m["dtype"]
            shape = [int(d) for d in m["shape"]]
            nbytes = int(m["nbytes"])
        except (KeyError, TypeError, ValueError):
            raise PeerError("a tensor described without shape, dtype or size")
        if dtype not in PEER_DTYPES or any(d < 0 for d in shape) or len(shape) > 16:
            raise PeerError("a tensor of dtype %r, shape %r" % (dtype, shape))
        dt = getattr(torch, dtype)
        numel = 1
        for d in shape:
            numel *= d
        if numel * torch.empty((), dtype=dt).element_size() != nbytes or off + nbytes > len(payload):
            raise PeerError("a tensor whose size is not its shape's")
        if numel:
            t = torch.frombuffer(payload, dtype=dt, count=numel, offset=off).reshape(shape)
        else:
            t = torch.empty(shape, dtype=dt)
        out.append(t)
        off += nbytes
    if off != len(payload):
        raise PeerError("%d bytes beyond the tensors described" % (len(payload) - off))
    return out


def judge_spec(req):
    spec = req.get("judge")
    if not isinstance(spec, dict) or not isinstance(spec.get("socket"), str) or \
            not isinstance(spec.get("token"), str) or len(spec["token"]) < 16:
        raise Outcome("runtime_error", "the request names no judge (judge.socket, judge.token)")
    return spec["socket"], spec["token"]


# sun_path holds 108 bytes: a longer path (a deep run directory) is reached from the
# working directory instead (the judge's and the candidate's are siblings).
SUN_PATH_MAX = 100


def socket_path(path):
    return path if len(path.encode()) < SUN_PATH_MAX else os.path.relpath(path)


def judge_listen(req):
    """In the judge: the candidate's runner, connected and proven by its token. Connections
    that do not prove themselves within JUDGE_HELLO_S are dropped and the next awaited,
    up to JUDGE_CONNECT_S in all."""
    import hmac
    import socket
    path, token = judge_spec(req)
    try:
        os.unlink(path)
    except OSError:
        pass
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(socket_path(path))
    lsock.listen(4)
    deadline = time.monotonic() + JUDGE_CONNECT_S
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PeerError("the candidate's runner did not connect within %d s"
                                % JUDGE_CONNECT_S)
            lsock.settimeout(left)
            try:
                conn, _ = lsock.accept()
            except socket.timeout:
                continue
            conn.settimeout(JUDGE_HELLO_S)
            try:
                head, _ = Peer(conn).recv()
                ok = head.get("op") == "hello" and isinstance(head.get("token"), str) and \
                    hmac.compare_digest(head["token"].encode(), token.encode())
            except (OSError, PeerError):
                ok = False
            if ok:
                peer = Peer(conn)
                peer.pidfd = peer.init_pidfd = peer.init_ack = None
                try:
                    # The candidate's runner's pidfd, its namespace init's and the
                    # init's acknowledgements (candidate_pidfd), sent before any
                    # candidate code ran: what the judge stops them with while it times.
                    _, fds, _, _ = socket.recv_fds(conn, 1, 3)
                    peer.pidfd = fds[0] if fds else None
                    if len(fds) == 3:
                        peer.init_pidfd, peer.init_ack = fds[1], fds[2]
                    else:
                        for fd in fds[1:]:
                            os.close(fd)
                except (OSError, AttributeError):
                    pass
                conn.settimeout(None)
                return peer
            log("judge: a connection that did not prove itself was dropped")
            conn.close()
    finally:
        lsock.close()
        try:
            os.unlink(path)
        except OSError:
            pass


def judge_connect(req):
    """In the candidate's runner: the judge's channel, before any candidate code runs."""
    import socket
    path, token = judge_spec(req)
    deadline = time.monotonic() + JUDGE_CONNECT_S
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(socket_path(path))
            break
        except (FileNotFoundError, ConnectionRefusedError) as e:
            s.close()
            if time.monotonic() > deadline:
                raise Outcome("runtime_error", "the judge did not listen at %s: %s"
                              % (path, first_line(e)), flags=["judge_failed"])
            time.sleep(0.005)
    peer = Peer(s)
    peer.send({"op": "hello", "token": token})
    candidate_pidfd(s)
    return peer


def candidate_pidfd(s):
    """Sends the judge a pidfd of this process (or none where the kernel or Python has
    none), and of its namespace's init where it has one, with which the judge stops it
    (SIGSTOP) and everything in its namespace for as long as it times the reference:
    whatever the candidate leaves running, in this process or another, then waits too,
    and cannot take the reference's time (kforge_runner.py, Runner.freeze)."""
    import socket
    fds = []
    try:
        fds = [os.pidfd_open(os.getpid())]
        # In a PID namespace of its own (pid 2 beneath its init, enter_namespaces), the
        # init's too, whose SIGUSR1 stops every process of the namespace (NS_INIT): a
        # process the candidate started, which this one's SIGSTOP leaves running.
        if os.getpid() == 2 and os.getppid() == 1 and NS_ACK_FD is not None:
            fds += [os.pidfd_open(1), NS_ACK_FD]
    except (OSError, AttributeError):
        pass
    try:
        s.sendmsg([b"P"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                            struct.pack("%di" % len(fds), *fds))] if fds else [])
    finally:
        for fd in fds:
            os.close(fd)
        if NS_ACK_FD is not None and NS_ACK_FD not in fds:
            os.close(NS_ACK_FD)
        globals()["NS_ACK_FD"] = None   # the judge's now: no candidate code reads it


# --------------------------------------------------------------- the GPU's own facts

def cuda_init_error(torch):
    """Why CUDA would not start, as the driver said it (is_available only says False): an
    H200 judge once found none while its candidate's runner, forked beside it, did."""
    try:
        torch.cuda.init()
    except Exception as e:  # noqa: BLE001 (the message is all that is wanted)
        return ": " + first_line(e)
    return ""


def gpu_memory_facts(torch):
    """(peak DRAM bytes a second, L2 bytes, source) of CUDA device 0 from the driver's
    attributes (memory clock and bus width: DDR, two transfers a clock), else NVML's;
    (None, None, why) where neither answers."""
    import ctypes
    l2 = None
    try:
        l2 = int(torch.cuda.get_device_properties(0).L2_cache_size)
    except Exception:
        pass
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, clock, width = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        if cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0 and \
                cuda.cuDeviceGetAttribute(ctypes.byref(clock), 36, dev) == 0 and \
                cuda.cuDeviceGetAttribute(ctypes.byref(width), 37, dev) == 0 and \
                clock.value > 0 and width.value > 0:
            if l2 is None:
                l2v = ctypes.c_int()
                if cuda.cuDeviceGetAttribute(ctypes.byref(l2v), 38, dev) == 0:
                    l2 = l2v.value
            return 2.0 * clock.value * 1e3 * width.value / 8.0, l2, "driver"
    except (OSError, AttributeError):
        pass
    nvml = Nvml.get()
    if nvml is not None:
        got = nvml.memory_peak()
        if got is not None:
            return got, l2, "nvml"
    return None, l2, "neither the driver nor NVML gave the memory clock and bus width"


class Nvml:
    """NVML through ctypes, for device 0 of this process (found by its UUID, since NVML
    ignores CUDA_VISIBLE_DEVICES): the SM clock now, the memory's peak. None where NVML
    cannot be loaded or the device not found."""
    _one = False

    def __init__(self, lib, handle):
        self.lib, self.handle = lib, handle

    @classmethod
    def get(cls, uuid=None):
        if cls._one is not False:
            return cls._one
        cls._one = None
        try:
            import ctypes
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return None
            handle = ctypes.c_void_p()
            if uuid:
                rc = lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(handle))
            else:
                rc = lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
            if rc == 0:
                cls._one = cls(lib, handle)
        except (OSError, AttributeError):
            pass
        return cls._one

    def sm_clock(self):
        import ctypes
        mhz = ctypes.c_uint()
        return mhz.value if self.lib.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(mhz)) == 0 \
            else None

    def memory_peak(self):
        import ctypes
        mhz, width = ctypes.c_uint(), ctypes.c_uint()
        try:
            if self.lib.nvmlDeviceGetMaxClockInfo(self.handle, 2, ctypes.byref(mhz)) != 0 or \
                    self.lib.nvmlDeviceGetMemoryBusWidth(self.handle, ctypes.byref(width)) != 0:
                return None
        except AttributeError:
            return None
        return 2.0 * mhz.value * 1e6 * width.value / 8.0 if mhz.value and width.value else None


def rel_se(st):
    """The relative standard error of a timing's median (MEDIAN_SE_PER_MAD)."""
    if not st or not st.get("median_ms") or st.get("mad_ms") is None or not st.get("trials"):
        return 0.0
    return MEDIAN_SE_PER_MAD * st["mad_ms"] / st["median_ms"] / math.sqrt(st["trials"])


class CandidateFailed(Exception):
    """The candidate's runner said its side failed (its message's status and text)."""

    def __init__(self, head):
        Exception.__init__(self, head.get("message"))
        self.head = {k: head.get(k) for k in ("status", "message", "flags")}
        status = head.get("status")
        self.status = status if status in STATUSES and status != "ok" else "runtime_error"
        self.message = first_line(head.get("message") or "the candidate's runner failed", 500)



# --------------------------------------------------------------- the runner

class Runner:
    def __init__(self, req, result_file):
        self.req = req
        self.result_file = result_file
        self.mode = req.get("mode", "")
        self.device_kind = req.get("device") or "cpu"
        self.precision = req.get("precision") or "fp32"
        self.seed = int(req.get("seed", 42))
        self.flags = []
        self.details = {"message": "", "exception": "", "traceback": "",
                        "compiler_output": "", "trials": []}
        self.timing = {"candidate": None, "reference": None, "reference_compile": None}
        self.compiled = False
        self.correct = False
        self.speedup = None
        self.profile = None
        self.env = {"device_name": None, "torch": None, "cuda": None,
                    "python": platform.python_version(), "gpu_count": 0}
        self.torch = None
        self.device = None
        # Where the step's time went: seconds from the request to the end of each phase
        # (details.phases_s), so that a slow step shows which part was slow.
        self.t_request = time.monotonic()
        self.details["phases_s"] = {}
        self.hold_us, self.hold_cycles = 0.0, 0   # timing_setup: eval.timing_hold_us
        self.preempted = 0      # the judge's involuntary switches in its timed blocks
        self.fp_cache = {}      # fingerprint weights (fp_weights)
        # Whether any of the candidate's code has run in this process (its module's
        # import, where load_inline also builds): a failure of the runner's own before
        # it is no failure of the candidate's (details.candidate_ran; fsm/actions.c,
        # runner_failure). The judge runs none but reads what the candidate sends, so it
        # never says none ran.
        self.candidate_ran = self.mode == "judge"

    # ------------------------------------------------------------ plumbing

    def phase(self, name):
        self.details["phases_s"][name] = round(time.monotonic() - self.t_request, 4)

    def flag(self, name):
        if name not in self.flags:
            self.flags.append(name)

    def mark_candidate(self):
        """Says on the result pipe, before the candidate's code first runs here, that it
        is about to (the request's candidate_mark): written, it stays, so kforge knows
        whatever this process reports after it may be the candidate's doing."""
        if not self.candidate_ran and self.req.get("candidate_mark"):
            self.result_file.write(str(self.req["candidate_mark"]))
            self.result_file.flush()
        self.candidate_ran = True

    def write_result(self, status, message=None):
        if message is not None:
            self.details["message"] = first_line(message, 500)
        res = {"status": status, "mode": self.mode, "compiled": self.compiled,
               "correct": self.correct, "flags": self.flags, "details": self.details,
               "timing": self.timing, "speedup": self.speedup, "env": self.env}
        if self.profile is not None:
            res["profile"] = self.profile
        text = json.dumps(sanitize(res), allow_nan=False)
        self.result_file.write(text)
        self.result_file.write("\n")
        self.result_file.flush()

    def run(self):
        try:
            status, message = self.dispatch()
        except Outcome as o:
            for f in o.flags:
                self.flag(f)
            if o.env is not None:
                self.details["stage"], self.details["fix"] = o.env
            if o.exc is not None and is_out_of_memory(o.exc):
                self.flag("out_of_memory")
            if o.exc is not None:
                self.details["exception"] = describe_exception(o.exc)
                self.details["traceback"] = tail(
                    "".join(traceback.format_exception(type(o.exc), o.exc,
                                                       o.exc.__traceback__)),
                    TRACEBACK_CAP)
            status, message = o.status, o.message
        except BaseException as e:  # an internal runner error: still one result
            self.flag("runner_error")
            self.details["candidate_ran"] = self.candidate_ran
            self.details["exception"] = describe_exception(e)
            self.details["traceback"] = tail(traceback.format_exc(), TRACEBACK_CAP)
            status, message = error_status(e), "runner error: %s" % first_line(e)
        self.write_result(status, message)

    def dispatch(self):
        if self.mode not in ("precompile", "execute", "judge", "profile", "baseline",
                             "probe", "selftest"):
            raise Outcome("runtime_error", "unknown mode %r" % self.mode)
        if self.precision not in TOLERANCE:
            raise Outcome("runtime_error", "unknown precision %r" % self.precision)
        if self.device_kind not in ("cpu", "cuda"):
            raise Outcome("runtime_error", "unknown device %r" % self.device_kind)
        build_dir = self.req.get("build_dir")
        if build_dir:
            os.makedirs(build_dir, exist_ok=True)
            os.environ["TORCH_EXTENSIONS_DIR"] = build_dir
        self.import_torch()
        self.phase("torch")
        if self.mode in ("precompile", "selftest", "execute", "profile"):
            build_compilers(self.req, build_dir)
        if self.mode in ("execute", "profile"):
            self.mark_started()
            # SCHED_OTHER (0) for a timing; a warm runner waits under SCHED_IDLE (5) and
            # kforge puts it back at the hand-over.
            if hasattr(os, "sched_getscheduler"):
                self.details["sched_policy"] = os.sched_getscheduler(0)
        self.details["allocator"] = MALLOC_POLICY
        return getattr(self, "mode_" + self.mode)()

    def mark_started(self):
        """The request's started_file, written as the models' time begins: kforge times
        the step's deadline (eval.timeout_s) from it, and the runner's start up to here
        (the interpreter, torch's import) has an allowance of its own. Not written (no
        such path, or it cannot be): the step keeps only that longer deadline."""
        path = self.req.get("started_file")
        if not path:
            return
        try:
            with open(path, "w"):
                pass
        except OSError as e:
            log("started file %s not written: %s" % (path, e))

    def import_torch(self):
        try:
            import torch
        except BaseException as e:
            raise env_error("torch", "%s cannot import torch: %s"
                            % (sys.executable, first_line(e)), None, e)
        self.torch = torch
        # A warm runner imported torch before its request's OMP_NUM_THREADS was known.
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads.isdigit() and int(threads) > 0 and torch.get_num_threads() != int(threads):
            torch.set_num_threads(int(threads))
        # Bound before any candidate code runs, so a candidate that patches torch or
        # time does not patch the judge; and what the reference calls, so that a
        # candidate that rebinds it (vars(torch), a C++ initialiser) is caught and undone.
        self.namespaces = [(owner, dict(vars(owner))) for owner in
                           (torch, torch.nn.functional, torch.Tensor)]
        self.allclose = torch.allclose
        self.tensor_equal = torch.equal
        self.perf_counter = time.perf_counter
        self.env["torch"] = torch.__version__
        self.env["torch_file"] = getattr(torch, "__file__", None)
        self.env["cuda"] = torch.version.cuda
        if self.device_kind == "cuda" and self.mode != "precompile":
            try:
                self.env["gpu_count"] = torch.cuda.device_count()
                if not torch.cuda.is_available():
                    raise RuntimeError("torch.cuda.is_available() is False (CUDA_VISIBLE_DEVICES=%r)%s"
                                       % (os.environ.get("CUDA_VISIBLE_DEVICES"), cuda_init_error(torch)))
                torch.cuda.set_device(0)
                self.env["device_name"] = torch.cuda.get_device_name(0)
                self.env["capability"] = "%d.%d" % torch.cuda.get_device_capability(0)
                # Which physical GPU CUDA_VISIBLE_DEVICES gave us (nvidia-smi -L names it).
                uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
                if uuid is not None:
                    self.env["device_uuid"] = "GPU-%s" % uuid
            except Exception as e:
                if self.mode == "selftest":
                    raise env_error("cuda", "CUDA unavailable: %s" % first_line(e), torch, e)
                raise Outcome("cuda_error", "CUDA unavailable: %s" % first_line(e), e)
            self.device = torch.device("cuda:0")
            self.synchronize = torch.cuda.synchronize
            self.Event = torch.cuda.Event
            self.event_record = torch.cuda.Event.record
            self.event_elapsed = torch.cuda.Event.elapsed_time
        else:
            self.device = torch.device("cpu")
            self.env["device_name"] = platform.processor() or platform.machine() or "cpu"
            self.synchronize = lambda: None
        # fp32 means fp32: TF32 matmuls and convolutions (10-bit mantissas) off unless the
        # request allows them, for the reference and the candidate alike; check_patched
        # puts them back if a candidate turns them on.
        self.tf32 = bool(self.req.get("allow_tf32")) or self.precision != "fp32"
        if not self.tf32:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        self.dtype = {"fp32": torch.float32, "fp16": torch.float16,
                      "bf16": torch.bfloat16}[self.precision]
        tol = TOLERANCE[self.precision]
        atol, rtol = self.req.get("atol"), self.req.get("rtol")
        self.atol = tol if atol is None or atol < 0 else float(atol)
        self.rtol = tol if rtol is None or rtol < 0 else float(rtol)

    # ------------------------------------------------------------ loading

    def load_module(self, path, name, keep=True):
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError("cannot load %s" % path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        finally:
            if not keep:
                sys.modules.pop(name, None)
        return module

    def load_reference(self):
        path = self.req.get("problem")
        try:
            # Not left in sys.modules: candidate code cannot simply import it and
            # rewrite the globals that get_inputs() reads.
            ref = self.load_module(path, "kforge_reference", keep=False)
            for attr in ("Model", "get_inputs", "get_init_inputs"):
                if not hasattr(ref, attr):
                    raise AttributeError("problem %s defines no %s" % (path, attr))
        except Exception as e:
            raise Outcome("runtime_error", "reference problem failed to load: %s"
                          % first_line(e), e, flags=["reference_error"])
        return ref

    def build_lock(self):
        """Exclusive lock on the build dir for the compile/import. While we hold it no
        other kforge runner uses this build dir, so torch's own 'lock' files left there
        by a runner that was killed mid-build are stale and would hang us: remove them."""
        build_dir = os.environ.get("TORCH_EXTENSIONS_DIR")
        if not build_dir:
            return None
        # Read-only: flock needs no write access, and a build the driver has sealed
        # (root-owned, the runner as an unprivileged user) must still be usable.
        fd = os.open(os.path.join(build_dir, ".kforge-build.lock"),
                     os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        for stale in glob.glob(os.path.join(build_dir, "*", "lock")):
            try:
                os.unlink(stale)
                log("removed stale build lock %s" % stale)
            except OSError:
                pass
        return fd

    def load_candidate(self):
        """Import the candidate (this is where load_inline compiles). Returns ModelNew."""
        path = self.req.get("candidate")
        if not path or not os.path.isfile(path):
            raise Outcome("compile_error", "candidate file not found: %s" % path)
        build_dir = os.environ.get("TORCH_EXTENSIONS_DIR")
        memo = load_memo_of(build_dir) if self.mode in ("execute", "profile") else {}
        if memo:
            # The precompile's builds, loaded as they are (LOAD_MEMO): torch's extension
            # machinery is imported only if the candidate asks for something else.
            sys.modules["torch.utils.cpp_extension"] = LazyCppExtension(build_dir, memo)
            self.torch.utils.cpp_extension = sys.modules["torch.utils.cpp_extension"]
        else:
            try:
                # Imported here so its start-up notices land in the log, not the
                # compiler output.
                import torch.utils.cpp_extension as cpp_extension
                keep_unchanged_sources(cpp_extension)
                if self.mode == "precompile" and build_dir:
                    record_loads(cpp_extension, build_dir)
            except Exception:
                pass
        if self.req.get("fault") == "before_candidate":   # kforge's tests (feedback/run.c)
            raise RuntimeError("a fault the test asked for (runner-fault), before the "
                               "candidate's code")
        lock_fd = self.build_lock()
        t0 = time.monotonic()
        exc = None
        sys.modules["kforge"] = raw_api_module()
        try:
            with FdTee() as tee:
                try:
                    self.mark_candidate()
                    cand = self.load_module(path, "kforge_candidate")
                except BaseException as e:  # SystemExit from candidate code too
                    exc = e
        finally:
            if lock_fd is not None:
                os.close(lock_fd)
        self.details["compile_s"] = round(time.monotonic() - t0, 3)
        captured = tee.text()
        if exc is not None:
            # Whole, not describe_exception's tail: a failed build's exception holds the
            # compiler's output, first error first.
            text = exception_text(exc)
            if captured.strip() and captured.strip() not in text:
                text = captured + "\n" + text
            self.details["compiler_output"] = compiler_output(text)
            if self.mode == "precompile" and self.device_kind == "cuda" and \
                    any(m in str(exc) for m in CUDA_UNAVAILABLE_MARKERS):
                # The module needs a GPU at import time; the execute step will tell.
                self.flag("import_needs_gpu")
                return None
            if is_cuda_error(exc) and self.mode != "precompile":
                raise Outcome("cuda_error", "candidate import failed: %s" % first_line(exc), exc)
            env = self.build_env_failure(exc)
            if env is not None:
                raise env
            msg = first_line(exc)
            if "Error building extension" in str(exc):
                msg = "Compilation failed: " + msg
            else:
                msg = "Candidate module failed to load: " + msg
            raise Outcome("compile_error", msg, exc)
        self.details["compiler_output"] = compiler_output(captured)
        self.compiled = True
        self.check_patched()
        model_new = getattr(cand, "ModelNew", None)
        if model_new is None:
            raise Outcome("no_model_new", "the candidate defines no ModelNew")
        if not callable(model_new):
            raise Outcome("no_model_new", "ModelNew in the candidate is not a class")
        return model_new

    def build_env_failure(self, exc):
        """The Outcome for a build that failed for want of a prerequisite, or None. Both
        must hold: the failure is torch's own (load_inline's build or its compiler check),
        its text names a missing prerequisite, and env_probe(), which runs none of the
        candidate's code, finds that prerequisite missing. A candidate's own compile error
        (or text it printed) therefore stays a compile_error."""
        text = str(exc)
        raised_by_torch = isinstance(exc, (RuntimeError, OSError)) or \
            type(exc).__name__ == "CalledProcessError"
        if not raised_by_torch or not any(m in text for m in ENV_BUILD_MARKERS):
            return None
        probe = env_probe(self.torch, self.device_kind == "cuda")
        if probe is None:
            return None
        probe.message = "%s (the candidate's build failed: %s)" % (probe.message,
                                                                    first_line(exc, 200))
        probe.exc = exc
        return probe

    def check_patched(self):
        """Undo a candidate's rebinding of the functions the check and the timing rely on."""
        torch = self.torch
        guarded = [(torch, "allclose", self.allclose, "torch.allclose"),
                   (torch, "equal", self.tensor_equal, "torch.equal"),
                   (time, "perf_counter", self.perf_counter, "time.perf_counter")]
        if self.device.type == "cuda":
            guarded += [(torch.cuda, "synchronize", self.synchronize, "torch.cuda.synchronize"),
                        (torch.cuda, "Event", self.Event, "torch.cuda.Event"),
                        (self.Event, "record", self.event_record, "torch.cuda.Event.record"),
                        (self.Event, "elapsed_time", self.event_elapsed,
                         "torch.cuda.Event.elapsed_time")]
        patched = []
        for owner, attr, saved, name in guarded:
            if getattr(owner, attr) is not saved:
                patched.append(name)
                setattr(owner, attr, saved)
        for owner, saved in self.namespaces:
            now = vars(owner)
            for attr, obj in saved.items():
                if now.get(attr, obj) is not obj:
                    patched.append("%s.%s" % (owner.__name__, attr))
                    setattr(owner, attr, obj)
        if patched:
            self.flag("torch_patched")
            log("candidate patched %s (restored)" % ", ".join(patched))
        if not self.tf32:
            on = [name for owner, name in ((torch.backends.cuda.matmul, "matmul"),
                                           (torch.backends.cudnn, "cudnn"))
                  if getattr(owner, "allow_tf32", False)]
            if on:
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                self.flag("tf32_enabled")
                log("candidate turned TF32 on for %s in an fp32 evaluation (restored)"
                    % ", ".join(on))

    # ------------------------------------------------------------ models, inputs

    def set_seed(self, seed):
        """torch.manual_seed's effect on every generator a problem draws from (the CPU's,
        Python's and, on a GPU, the device's), without its calls into torch's other
        backends (MPS, XPU, MTIA), each of which, not started, queues a call with the
        caller's stack formatted: about a millisecond a seed in a runner, and a timed
        pass seeds an input set for every call."""
        torch = self.torch
        torch.random.default_generator.manual_seed(seed)
        random.seed(seed)
        if self.device.type == "cuda":
            torch.cuda.manual_seed(seed)

    def place(self, x):
        torch = self.torch
        if isinstance(x, torch.Tensor):
            if x.is_floating_point():
                x = x.to(dtype=self.dtype)
            return x.to(device=self.device)
        if isinstance(x, (list, tuple)):
            return type(x)(self.place(v) for v in x)
        return x

    def make_inputs(self, ref, seed):
        """The problem's get_inputs() under seed, on the device: made on the CPU and
        copied, as KernelBench does, or with input_placement "device" made on the GPU
        (torch's factory functions under the device as default, seeded by the CUDA
        generator: other numbers than the CPU's, the same for both models)."""
        return [self.place(x) for x in self.made_inputs(ref, seed)]

    def made_inputs(self, ref, seed):
        """get_inputs() under seed as it made them, before make_inputs places them."""
        self.set_seed(seed)
        if self.req.get("input_placement") == "device" and self.device.type == "cuda" \
                and hasattr(self.torch, "set_default_device"):
            self.details["input_placement"] = "device"
            with self.device:
                return list(ref.get_inputs())
        self.details["input_placement"] = "host"
        return list(ref.get_inputs())

    def input_message(self, made):
        """A trial's inputs for the candidate's runner, as get_inputs() made them (so
        both sides place the same bytes): (template, chunks), the template a list with
        {"tensor": i} for each tensor and {"value": v} for anything JSON holds; None
        for a set that JSON cannot carry (the runner then makes it from the seed)."""
        torch = self.torch
        template, tensors = [], []
        for x in made:
            if isinstance(x, torch.Tensor):
                if type(x) is not torch.Tensor or str(x.dtype).split(".")[-1] not in PEER_DTYPES:
                    return None
                template.append({"tensor": len(tensors)})
                tensors.append(x)
            elif x is None or isinstance(x, (bool, int, float, str)):
                template.append({"value": x})
            else:
                return None
        metas, chunks = pack_tensors(tensors)
        return {"template": template, "tensors": metas}, chunks

    def regenerated_inputs(self):
        """Whether a trial's inputs are made again by the candidate's runner from the
        seed rather than sent: where they are made on the device (eval.inputs: device),
        so that they never cross the host. A large problem's inputs handed over took
        7-9 s a trial on an H200 host for 4 GB (two copies across the host); made again on
        the GPU, milliseconds. The digest the judge sends proves them the same bytes."""
        return self.req.get("input_placement") == "device"

    def inputs_digest(self, made):
        """A digest of an input set, equal only for the same values in the same places:
        per tensor its dtype, shape, the sums of its bytes' 32-bit words (or bytes) in
        chunks of DIGEST_CHUNK and DIGEST_SAMPLE of its words at places spread over it,
        taken on the tensor's own device (exact integers, so no reduction order moves
        them), folded on the host into a polynomial hash; anything else by its JSON
        text."""
        torch = self.torch
        out = []
        for x in made:
            if not isinstance(x, torch.Tensor):
                out.append(["value", json.dumps(x, sort_keys=True, default=repr)])
                continue
            flat = x.detach().contiguous().reshape(-1)
            n = flat.numel() * flat.element_size()
            words = flat.view(torch.uint8)
            if n and n % 4 == 0:
                try:
                    words = words.view(torch.int32)
                except RuntimeError:
                    # A view whose offset is no multiple of 4 bytes: its copy's is 0, so
                    # the digest does not depend on where the values lie.
                    words = words.clone().view(torch.int32)
            m = words.numel()
            whole = m - m % DIGEST_CHUNK
            sums = []
            if whole:
                sums = words[:whole].view(-1, DIGEST_CHUNK).sum(dim=1, dtype=torch.int64).tolist()
            if m > whole:
                sums.append(int(words[whole:].sum(dtype=torch.int64)))
            if m:
                # The sums miss an order changed within a chunk (a permutation of its
                # words): words at places spread over the tensor do not.
                k = min(m, DIGEST_SAMPLE)
                at = torch.arange(k, dtype=torch.int64, device=words.device) * (m - 1) // max(1, k - 1)
                sums += words.index_select(0, at).to(torch.int64).tolist()
            h = 0
            for v in sums:
                h = (h * DIGEST_BASE + v) % DIGEST_MOD
            out.append([str(x.dtype).split(".")[-1], list(x.shape), h])
        return out

    def clone_inputs(self, inputs):
        torch = self.torch
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]

    def init_reference(self, ref):
        """The problem's Model with the evaluation's seed, in eval mode (the judge's, a
        baseline's or a reference profile's: never in a process that runs a candidate)."""
        torch = self.torch
        try:
            self.set_seed(self.seed)
            init_inputs = [self.place(x) for x in ref.get_init_inputs()]
            self.set_seed(self.seed)
            with torch.no_grad():
                model = ref.Model(*init_inputs)
                model = model.to(device=self.device, dtype=self.dtype)
            model.eval()
        except Exception as e:
            raise Outcome(error_status(e), "reference model failed to initialise: %s"
                          % first_line(e), e, flags=["reference_error"])
        return model

    def init_candidate(self, ref, model_new_cls):
        """ModelNew with the same seed and init inputs as the judge's Model (so that
        parameters made in the same order match), in eval mode."""
        torch = self.torch
        try:
            self.set_seed(self.seed)
            init_inputs = [self.place(x) for x in ref.get_init_inputs()]
        except Exception as e:
            raise Outcome(error_status(e), "get_init_inputs() failed: %s" % first_line(e), e,
                          flags=["reference_error"])
        try:
            self.set_seed(self.seed)
            with torch.no_grad():
                model_new = model_new_cls(*init_inputs)
                if isinstance(model_new, torch.nn.Module):
                    model_new = model_new.to(device=self.device, dtype=self.dtype)
            if hasattr(model_new, "eval"):
                model_new.eval()
            self.synchronize()
        except Exception as e:
            raise Outcome(error_status(e), "ModelNew failed to initialise: %s"
                          % first_line(e), e)
        return model_new

    def transformed(self, inputs, transform):
        """inputs with every floating tensor x replaced by scale * x + shift (transform a
        dict; None: as they are)."""
        if not transform:
            return inputs
        torch = self.torch
        a, b = float(transform.get("scale", 1.0)), float(transform.get("shift", 0.0))
        return [x * a + b if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                for x in inputs]

    def timed_inputs(self, ref, seed):
        """A fresh input set for one timed call: the problem's get_inputs() under seed,
        made where the calls run (on a GPU, torch's factory functions with the GPU as
        default device), so that a set costs microseconds and no two calls share one."""
        self.set_seed(seed)
        if self.device.type == "cuda" and hasattr(self.torch, "set_default_device"):
            with self.device:
                inputs = ref.get_inputs()
        else:
            inputs = ref.get_inputs()
        return [self.place(x) for x in inputs]

    def fp_weights(self, shape, seed):
        """The fingerprint's random weights for an output of shape (fingerprint)."""
        key = (tuple(shape), seed)
        w = self.fp_cache.get(key)
        if w is None:
            torch = self.torch
            n = 1
            for d in shape:
                n *= int(d)
            g = torch.Generator(device=self.device).manual_seed(int(seed) & (2 ** 63 - 1))
            w = torch.randn(n, generator=g, device=self.device, dtype=torch.float32)
            if len(self.fp_cache) > 8:
                self.fp_cache.clear()
            self.fp_cache[key] = w
        return w

    def fingerprint(self, out, seed):
        """Each output tensor of a call reduced to one number, <out, w> with w random
        weights named by seed (float32 products summed in float64): cheap next to the
        call, and no cheaper to fake than the output itself. Device scalars (no wait);
        NaN for what is not a real tensor."""
        torch = self.torch
        outs = out if isinstance(out, (list, tuple)) else [out]
        fps = []
        for t in outs:
            if not isinstance(t, torch.Tensor) or t.is_complex():
                fps.append(torch.tensor(float("nan"), dtype=torch.float64))
                continue
            w = self.fp_weights(t.shape, seed)
            fps.append((t.detach().reshape(-1).to(torch.float32) * w).sum(dtype=torch.float64))
        return fps

    def fp_bound(self, r, w):
        """How far a fingerprint of an output allclose to r may be from r's: the sum of
        |w| times each element's tolerance, plus float32 rounding of the products."""
        torch = self.torch
        rf = r.detach().reshape(-1).to(torch.float32).abs()
        aw = w.abs()
        return float((aw * (self.atol + self.rtol * rf)).sum(dtype=torch.float64)) + \
            2.0 ** -20 * float((aw * rf).sum(dtype=torch.float64))

    # ------------------------------------------------------------ execute: the judge

    def mode_judge(self):
        """The judge of an execute: the reference, its outputs and its timing, and every
        comparison, in a process that never imports the candidate. Drives the candidate's
        runner over the channel: the candidate's load, the correctness trials (the inputs
        made on both sides from the seeds the judge names, the candidate's outputs sent
        here), and, when correct, the timing: blocks of calls of each, interleaved, every
        call on a fresh input set, the candidate's outputs committed by fingerprints
        during its blocks and a random sample verified here afterwards."""
        self.fp_cache = {}
        if self.req.get("fault") == "judge_start":   # kforge's tests (feedback/run.c)
            raise RuntimeError("a fault the test asked for (judge-fault), before the judge "
                               "listens")
        self.peer = judge_listen(self.req)
        # From here the candidate's runner hears of the judge's end through the channel
        # (judge.c, fbj_connected: a judge that ended before this phase is one it would
        # wait for).
        self.phase("connected")
        ref = self.load_reference()
        model = self.init_reference(ref)
        self.phase("models")
        self.judge = {"candidate": None, "freeze": (
            "not frozen: it sent no pidfd" if getattr(self.peer, "pidfd", None) is None else
            "the candidate's runner and every process of its namespace stopped while the "
            "reference is timed" if getattr(self.peer, "init_pidfd", None) is not None else
            "the candidate's runner stopped while the reference is timed")}
        # How the payloads crossed the channel, by the judge's count of what it sent and
        # received (memfd or inline bytes): the one place a slow channel shows.
        self.judge["payload_bytes"] = self.peer.payload_bytes
        self.judge["allocator"] = MALLOC_POLICY     # the reference's side (fix_allocator)
        self.details["judge"] = self.judge
        timed = int(self.req.get("perf_trials", 100)) > 0
        clean = self.req.get("reference_clean")
        clean = clean if isinstance(clean, dict) and clean.get("median_ms") else None
        try:
            self.peer.send({"op": "start"})
            self.expect("loaded")
            self.phase("candidate")
            passed = self.judge_correctness(ref, model)
            self.phase("correctness")
            msg = "correct (%d/%d trials)" % (passed, passed)
            if timed:
                msg += self.judge_timing(ref, model, clean)
                self.phase("timing")
            self.finish_candidate()
            return "ok", msg
        except CandidateFailed as cf:
            # The candidate's runner ended its side with this status (its result has
            # the details): the judge's result says the same.
            self.judge["candidate"] = cf.head
            for f in cf.head.get("flags") or []:
                if isinstance(f, str):
                    self.flag(f[:64])
            raise Outcome(cf.status, cf.message)
        except PeerError as e:
            self.judge["channel"] = str(e)
            self.flag("candidate_ended")
            raise Outcome("crashed", "the candidate's runner ended during the evaluation: %s"
                          % first_line(e))
        except Outcome:
            self.finish_candidate()
            raise

    def expect(self, op, payload_cap=0):
        """The candidate side's next message, which must be op (or one of a tuple of ops;
        or its "failed")."""
        head, payload = self.peer.recv(payload_cap)
        if head["op"] == "failed":
            raise CandidateFailed(head)
        if head["op"] not in (op if isinstance(op, tuple) else (op,)):
            raise PeerError("expected %s, got %s" % (op, head["op"][:40]))
        return head, payload

    def finish_candidate(self):
        """Tells the candidate's runner the evaluation is over and takes its last report
        (its own flags: what its process saw), when it is still there."""
        try:
            self.peer.send({"op": "done"})
            head, _ = self.peer.recv()
        except (OSError, PeerError):
            return
        if head.get("op") == "final":
            flags = [f[:64] for f in head.get("flags") or [] if isinstance(f, str)]
            self.judge["candidate_flags"] = flags[:32]
            for f in flags:
                self.flag(f)

    # correctness

    def output_cap(self, ref_outs):
        total = sum(r.numel() * r.element_size() for r in ref_outs)
        return total * OUTPUT_FACTOR + OUTPUT_SLACK

    def judge_trial(self, ref, model, k, seed, transform=None, atol=None, label=None,
                    prepared=None):
        """One correctness trial: the candidate's outputs on the inputs of seed (and
        transform) against the reference's (prepared: what reference_on made for this
        seed and transform, the reference's outputs then not computed again). Returns
        (ok, max_abs_diff, avg_abs_diff, ref_outs); shape and count mismatches end the
        evaluation."""
        torch = self.torch
        t0 = time.perf_counter()
        msg = {"op": "trial", "k": k, "seed": seed, "transform": transform}
        # The inputs as made, sent: the candidate's runner places the same bytes (no
        # second generation, and no problem whose inputs are not reproducible differs).
        made, pristine, ref_outs = prepared if prepared is not None else (None, None, None)
        if made is None:
            made = self.transformed(self.made_inputs(ref, seed), transform)
            pristine = [self.place(x) for x in made]
        regen = self.regenerated_inputs()
        if regen:
            # Made again on the other side from the seed; sent only if its digest differs.
            msg["inputs_digest"] = self.inputs_digest(made)
            shipped, chunks = None, ()
        else:
            shipped = self.input_message(made)
            chunks = ()
            if shipped is not None:
                msg["inputs"], chunks = shipped
        self.peer.send(msg, chunks)
        del shipped, chunks
        if not regen:
            del made
        t1 = time.perf_counter()
        if ref_outs is None:
            ref_outs = self.outputs_as_list(
                self.run_model(model, self.clone_inputs(pristine), "Model"), "Model")
        t2 = time.perf_counter()
        head, payload = self.expect(("outputs", "need_inputs") if regen else "outputs",
                                    self.output_cap(ref_outs))
        if head["op"] == "need_inputs":
            # Its inputs came out otherwise (a get_inputs() that does not repeat from
            # its seed): these, as made, after all.
            self.flag("inputs_not_reproducible")
            shipped = self.input_message(made)
            if shipped is None:
                raise Outcome("runtime_error", "the problem's inputs do not repeat from their "
                              "seed and cannot be sent (eval.inputs: host sends them)")
            self.peer.send({"op": "inputs", "inputs": shipped[0]}, shipped[1])
            del shipped
            head, payload = self.expect("outputs", self.output_cap(ref_outs))
        if regen:
            del made
        t3 = time.perf_counter()
        cand_outs = unpack_tensors(torch, head.get("tensors"), payload)
        if head.get("mutated"):
            self.flag("input_mutated")
        got = self.compare_outputs(ref_outs, cand_outs, atol)
        # Where a trial's time goes (inputs, reference, the wait for the candidate's
        # outputs, the comparison), in ms: what a slow execute spends its lease on.
        self.judge.setdefault("trial_ms", []).append(
            [round(1000 * x, 2) for x in (t1 - t0, t2 - t1, t3 - t2, time.perf_counter() - t3)])
        return got + (ref_outs, bool(head.get("mutated")))

    def compare_outputs(self, ref_outs, cand_outs, atol=None):
        """(allclose, max |diff|, mean |diff|) of the candidate's outputs against the
        reference's, by the precision's tolerances (atol: another absolute one)."""
        atol = self.atol if atol is None else atol
        if len(ref_outs) != len(cand_outs):
            raise Outcome("shape_mismatch", "Output count mismatch: expected %d, got %d"
                          % (len(ref_outs), len(cand_outs)))
        ok, max_d, avg_d = True, 0.0, 0.0
        for r, c in zip(ref_outs, cand_outs):
            if tuple(r.shape) != tuple(c.shape):
                raise Outcome("shape_mismatch", "Output shape mismatch: expected %s, got %s"
                              % (list(r.shape), list(c.shape)))
            if c.dtype != r.dtype:
                self.flag("output_dtype_mismatch")
            c = c.to(device=r.device, dtype=r.dtype)
            if r.numel() == 0:
                continue
            try:
                close = bool(self.allclose(r, c, atol=atol, rtol=self.rtol))
                # float64 for a small output's reported difference, float32 (a quarter of
                # the memory traffic) for a large one's, which tolerances dwarf anyway.
                diff = (r.double() - c.double()).abs() if r.numel() < (1 << 16) \
                    else (r.float() - c.float()).abs()
                md, ad = float(diff.max()), float(diff.mean())
            except Exception as e:
                raise Outcome(error_status(e), "comparing outputs failed: %s" % first_line(e), e)
            del diff
            max_d = md if math.isnan(md) or md > max_d else max_d
            avg_d = ad if math.isnan(ad) or ad > avg_d else avg_d
            ok = ok and close
        return ok, max_d, avg_d

    def judge_correctness(self, ref, model):
        """KernelBench's trials (seeded inputs, per-precision tolerances), then the same
        on a second distribution (inputs scaled and shifted: outputs that do not follow
        the inputs fail it) and, for a problem whose output is near zero or constant on
        its inputs, on inputs scaled by DEGENERATE_SCALE with a tolerance relative to the
        output's size."""
        torch = self.torch
        n = int(self.req.get("correctness_trials", 5))
        torch.manual_seed(self.seed)
        trial_seeds = [int(torch.randint(0, 2 ** 32 - 1, (1,)).item()) for _ in range(n)]
        trials = self.details["trials"]
        passed, failure = 0, None
        for k, seed in enumerate(trial_seeds):
            ok, md, ad, ref_outs, mutated = self.judge_trial(ref, model, k, seed)
            self.check_degenerate(ref_outs)
            del ref_outs
            trials.append({"trial": k + 1, "seed": seed, "ok": ok and not mutated,
                           "max_abs_diff": md, "avg_abs_diff": ad})
            if mutated and failure is None:
                failure = ("value_mismatch", "ModelNew modified its input tensors in place "
                           "(trial %d)" % (k + 1))
            if ok and not mutated:
                passed += 1
            elif not ok and failure is None:
                failure = ("value_mismatch",
                           "Output mismatch in trial %d/%d: max_abs_diff=%s avg_abs_diff=%s "
                           "(atol=%g rtol=%g)" % (k + 1, n, fmt(md), fmt(ad), self.atol, self.rtol))
        self.details["trials_passed"] = passed
        self.details["trials_total"] = n
        if failure is not None:
            raise Outcome(failure[0], failure[1])
        self.second_distribution(ref, model, n)
        if "degenerate_output" in self.flags:
            self.check_scaled(ref, model, n + 1)
        self.correct = True
        return passed

    def reference_finite(self, model, inputs):
        """The reference's outputs on inputs, or None where it fails or is not finite (a
        problem whose inputs must keep a domain: the check is then skipped)."""
        torch = self.torch
        try:
            outs = self.outputs_as_list(self.run_model(model, self.clone_inputs(inputs), "Model"),
                                        "Model")
        except Outcome:
            return None
        if not all(bool(torch.isfinite(r).all()) for r in outs if r.is_floating_point()):
            return None
        return outs

    def reference_on(self, ref, model, seed, transform):
        """A check's inputs, made once for both of its uses: (as made and transformed, as
        placed, the reference's outputs on them or None where it fails or is not
        finite), for judge_trial's prepared."""
        made = self.transformed(self.made_inputs(ref, seed), transform)
        pristine = [self.place(x) for x in made]
        return made, pristine, self.reference_finite(model, pristine)

    def second_distribution(self, ref, model, k):
        transform = {"scale": SECOND_SCALE, "shift": SECOND_SHIFT}
        seed = self.seed + 7919
        prepared = self.reference_on(ref, model, seed, transform)
        if prepared[2] is None:
            self.details["second_distribution"] = "skipped: the reference fails or is not " \
                "finite on inputs x%g%+g" % (SECOND_SCALE, SECOND_SHIFT)
            return
        ok, md, _, _, _ = self.judge_trial(ref, model, k, seed, transform, prepared=prepared)
        self.details["second_distribution"] = "%s at x%g%+g (max_abs_diff %s)" % (
            "ok" if ok else "mismatch", SECOND_SCALE, SECOND_SHIFT, fmt(md))
        if not ok:
            raise Outcome("value_mismatch",
                          "Output mismatch on a second input distribution (inputs x%g%+g): "
                          "max_abs_diff=%s; the output must follow the inputs, whatever "
                          "their values" % (SECOND_SCALE, SECOND_SHIFT, fmt(md)))

    def check_scaled(self, ref, model, k):
        """A problem whose reference output is near zero or constant on its inputs (a
        property of the problem, flagged degenerate_output) is checked once more on
        inputs scaled by DEGENERATE_SCALE, the tolerance relative to the output's size:
        an honest kernel still matches, a constant one no longer does."""
        transform = {"scale": DEGENERATE_SCALE, "shift": 0.0}
        seed = self.seed + 1
        prepared = self.reference_on(ref, model, seed, transform)
        ref_outs = prepared[2]
        if ref_outs is None or self.degenerate(ref_outs):
            self.details["scaled_check"] = "reference still degenerate at x%g" % DEGENERATE_SCALE
            return
        scale = max([1.0] + [float(r.detach().float().abs().max()) for r in ref_outs
                             if r.is_floating_point() and r.numel()])
        ok, md, _, _, _ = self.judge_trial(ref, model, k, seed, transform, atol=self.atol * scale,
                                           prepared=prepared)
        if not ok:
            self.details["scaled_check"] = "mismatch at x%g" % DEGENERATE_SCALE
            raise Outcome("value_mismatch",
                          "Output mismatch on inputs scaled by %g (this problem's output "
                          "is near zero or constant on its own inputs, so it is checked "
                          "there too): max_abs_diff=%s, tolerance %g relative to the "
                          "output's size" % (DEGENERATE_SCALE, fmt(md), self.atol))
        self.details["scaled_check"] = "ok at x%g" % DEGENERATE_SCALE

    # timing

    def freeze(self, on):
        """Stops (on) or resumes the candidate's runner, through the pidfd it sent before
        any candidate code ran, and every process of its PID namespace through its init's
        (NS_INIT's SIGUSR1 and SIGUSR2): stopped, nothing of it (a thread it left, a
        process it started, a spin it waits on) can run while the reference is timed.
        Each window is kept in details.judge.frozen ([start, end], CLOCK_MONOTONIC s;
        the first FROZEN_KEPT). Given up, and said in details.judge.freeze (or
        freeze_namespace), where a signal fails."""
        fd = getattr(self.peer, "pidfd", None)
        if fd is None:
            return
        import signal
        init = getattr(self.peer, "init_pidfd", None)
        if not on and self.judge.get("frozen") and self.judge["frozen"][-1][1] is None:
            # The window ends as the resuming begins.
            self.judge["frozen"][-1][1] = round(time.monotonic(), 6)
        if init is not None:
            ack = self.peer.init_ack
            try:
                if on:
                    drain(ack)
                signal.pidfd_send_signal(init, signal.SIGUSR1 if on else signal.SIGUSR2)
                if on:
                    got = await_byte(ack, b"su", FREEZE_ACK_S)
                    if got is None:
                        self.judge["freeze_namespace"] = "unconfirmed: the namespace's " \
                            "init did not answer within %g s" % FREEZE_ACK_S
                    elif got == b"u":
                        self.judge["unsettled"] = self.judge.get("unsettled", 0) + 1
            except (OSError, AttributeError) as e:
                self.judge["freeze_namespace"] = "not frozen: %s" % first_line(e)
                self.peer.init_pidfd = init = None
        try:
            signal.pidfd_send_signal(fd, signal.SIGSTOP if on else signal.SIGCONT)
        except (OSError, AttributeError) as e:
            self.judge["freeze"] = "not frozen: %s" % first_line(e)
            self.peer.pidfd = None
            return
        if on:
            windows = self.judge.setdefault("frozen", [])
            if len(windows) < FROZEN_KEPT:
                windows.append([round(time.monotonic(), 6), None])

    def sm_clock(self):
        nvml = Nvml.get(self.env.get("device_uuid")) if self.device.type == "cuda" else None
        return nvml.sm_clock() if nvml is not None else None

    def fresh_seeds(self, n):
        return [int.from_bytes(os.urandom(7), "little") for _ in range(n)]

    def judge_block(self, ref, model, seeds, fp_seed, setup, fixed=None):
        """The reference's calls, one a fresh input set (fixed: one set for all), exactly
        as the candidate's runner makes its own (c_block): (times, the judge's clock over
        the block, the page faults its timed calls took)."""
        method, flush_buf = setup
        t0 = time.perf_counter()
        switches = involuntary_switches()
        ms = []
        faults = 0
        with self.torch.no_grad(), gc_paused():
            for s in seeds:
                inputs = fixed if fixed is not None else self.timed_inputs(ref, s)
                f0 = minor_faults()
                t, out = self.trial(model, inputs, method, flush_buf, keep=True)
                faults += minor_faults() - f0
                self.fingerprint(out, fp_seed)
                ms.append(t)
                del out, inputs
        self.synchronize()
        self.preempted += involuntary_switches() - switches
        return ms, (time.perf_counter() - t0) * 1000.0, faults

    def candidate_block(self, seeds, fp_seed, fixed):
        """The candidate's calls of one block, made in its runner: (times, the judge's
        clock over the block, fingerprints, the page faults its timed calls took by its
        own count: a diagnosis, never a judgement)."""
        t0 = time.perf_counter()
        self.peer.send({"op": "block", "seeds": seeds, "fp_seed": fp_seed, "fixed": fixed})
        head, _ = self.expect("times")
        wall = (time.perf_counter() - t0) * 1000.0
        ms, fps = head.get("ms"), head.get("fp")
        if not isinstance(ms, list) or not isinstance(fps, list) or len(ms) != len(seeds) or \
                len(fps) != len(seeds) or not all(isinstance(x, (int, float)) for x in ms):
            raise PeerError("a block's times that do not match its calls")
        faults = head.get("faults")
        faults = faults if isinstance(faults, int) and 0 <= faults < 2 ** 40 else 0
        return [float(x) for x in ms], wall, fps, faults

    def judge_timing(self, ref, model, clean):
        """The timing of an execute (the request's timing): the reference here and the
        candidate in its runner, by blocks of calls interleaved ABBA (whatever else the
        machine does weighs on both alike), each call on a fresh input set made outside
        its timed window; passes of perf_trials calls of each until the speedup's 95%
        interval is within timing.max_spread or timing.max_passes (a pass during which
        the SM clock moved is timed again, CLOCK_REDOS times at most). Without
        time_reference the candidate alone is timed on one input set (KernelBench's
        method; kforge compares it to the reference's clean baseline). Then the checks
        only this side can make: the fingerprints of a random sample of the candidate's
        calls against the reference on the same inputs (stale_output), the reference
        against its clean timing (reference_slowed), the judge's clock over each block
        against what the timers say (timers_disagree), and the physical floor
        (below_physical_floor)."""
        torch = self.torch
        tcfg = self.req.get("timing") or {}
        method, trials, discard, warmup, flush_buf = self.timing_setup()
        if method == "do_bench":
            return self.judge_do_bench(ref, model)
        setup = (method, flush_buf)
        interleave = bool(self.req.get("time_reference"))
        statistic = tcfg.get("statistic", "mean")
        max_spread = float(tcfg.get("max_spread", 0.1))
        max_passes = max(1, int(tcfg.get("max_passes", 3)))
        budget_s = float(tcfg.get("budget_s", 0) or 0)
        # On a GPU, blocks of a tenth of a pass, at least BLOCK_MIN calls (each call starts
        # from a flushed L2 anyway); on the CPU, CPU_BLOCK calls (why: there).
        block = CPU_BLOCK if self.device.type == "cpu" else max(min(trials, BLOCK_MIN), trials // 10)
        per_pass = -(-trials // block)
        # One set of fingerprint weights for the timing (the candidate knows them while it
        # runs, whatever their period; made once, they cost nothing a call).
        fp_seed = self.fresh_seeds(1)[0]
        fixed = None
        if not interleave:
            fixed = self.make_inputs(ref, self.seed)
        t_start = time.monotonic()
        cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
        # Warm-ups of each, then the discarded first calls.
        self.peer.send({"op": "warmup", "n": warmup + discard, "seed": self.seed,
                        "fixed": fixed is not None, "fp_seed": fp_seed})
        with torch.no_grad():
            if interleave:
                warm = self.timed_inputs(ref, self.seed)
                self.warm_up_models((model,), warm, warmup + discard)
                self.fingerprint(model(*warm), fp_seed)    # its weights made now
                del warm
        self.expect("warm")
        # The channel's own round trip, which a candidate's block costs beside its calls
        # and the reference's does not (check_timers takes it off).
        rtt = []
        for _ in range(PINGS):
            t0 = time.perf_counter()
            self.peer.send({"op": "ping"})
            self.expect("pong")
            rtt.append((time.perf_counter() - t0) * 1000.0)
        self.round_trip_ms = median_of(rtt)
        self.preempted = 0
        ref_s, cand_s, calls, log_, clocks = [], [], [], [], []
        walls = {"candidate": [], "reference": []}
        passes = rounds = redone = 0
        pair = None
        while True:
            passes += 1
            p_ref, p_cand, p_calls, p_walls, p_clock = [], [], [], {"candidate": [], "reference": []}, []
            p_faults = {"candidate": 0, "reference": 0}
            switches, stolen = involuntary_switches(), steal_ticks(cores)
            for r in range(per_pass):
                n = min(block, trials - r * block)
                if n <= 0:
                    break
                order = ("reference", "candidate") if rounds % 2 == 0 else ("candidate", "reference")
                for who in order:
                    if who == "reference" and not interleave:
                        continue
                    seeds = self.fresh_seeds(n)
                    p_clock.append(self.sm_clock())
                    if who == "reference":
                        self.freeze(True)
                        try:
                            ms, wall, faults = self.judge_block(ref, model, seeds, fp_seed, setup)
                        finally:
                            self.freeze(False)
                        p_ref += ms
                    else:
                        ms, wall, fps, faults = self.candidate_block(seeds, fp_seed, fixed is not None)
                        p_cand += ms
                        p_calls += [(s, fp_seed, fp) for s, fp in zip(seeds, fps)]
                    p_walls[who].append((wall, sum(ms), len(ms)))
                    p_faults[who] += faults
                    p_clock.append(self.sm_clock())
                rounds += 1
            seen = [c for c in p_clock if c]
            moved = bool(seen) and max(seen) > min(seen) * (1 + CLOCK_CHANGE)
            clocks.append({"min_mhz": min(seen) if seen else None,
                           "max_mhz": max(seen) if seen else None, "moved": moved})
            if moved and redone < CLOCK_REDOS:
                redone += 1
                passes -= 1
                log("timing: the SM clock moved %s-%s MHz during a pass; timing it again"
                    % (min(seen), max(seen)))
                continue
            ref_s += p_ref
            cand_s += p_cand
            calls += p_calls
            for k in walls:
                walls[k] += p_walls[k]
            one = speedup_interval(stats(p_ref), stats(p_cand), 1, 1, statistic) if interleave else {}
            log_.append({"speedup": one.get("speedup"), "nivcsw": involuntary_switches() - switches,
                         "steal_ticks": steal_ticks(cores) - stolen,
                         "faults_per_call": {k: round(v / float(max(1, sum(n for _, _, n in p_walls[k]))), 1)
                                             for k, v in p_faults.items()}})
            st, rst = stats(cand_s), stats(ref_s)
            if not interleave:
                break
            pair = speedup_interval(rst, st, passes, rounds, statistic)
            if (passes >= max_passes or pair["speedup"] is None or pair["spread"] is None
                    or pair["spread"] <= max_spread
                    or (budget_s > 0 and time.monotonic() - t_start > budget_s)):
                break
        st = stats(cand_s)
        st["method"] = method
        st["l2_flush"] = flush_buf is not None
        if self.hold_cycles:
            st["hold_us"] = self.hold_us
        self.timing["candidate"] = st
        key = "%s_ms" % ("median" if statistic == "median" else "mean")
        msg = ", %.4g ms" % st[key] if st.get(key) is not None else ""
        if interleave:
            rst = stats(ref_s)
            rst["preempted"] = self.preempted / float(max(1, len(ref_s)))
            rst["method"], rst["l2_flush"] = method, flush_buf is not None
            if self.hold_cycles:
                rst["hold_us"] = self.hold_us
            pair["pass_log"] = log_
            self.timing["reference"] = rst
            self.timing["pair"] = pair
            self.speedup = pair["speedup"]
            key = "%s_ms" % pair["statistic"]
            if self.speedup is not None:
                msg += " (reference %.4g ms, speedup %.3g, 95%% interval %s)" % (
                    rst[key], self.speedup, "-".join(fmt(x) for x in pair["ci95"] or ["n/a"]))
        self.details["clocks"] = {"passes": clocks, "redone": redone}
        del flush_buf
        self.verify_calls(ref, model, calls, fixed)
        if interleave:
            self.check_reference_slowed(clean, self.timing["reference"])
        self.check_timers(walls)
        self.check_floor(ref, model, st)
        return msg

    def judge_do_bench(self, ref, model):
        """eval.timing do_bench: Triton's own protocol for each, one after the other, on
        the seed's inputs (no interleaving, no fresh sets: do_bench repeats one call)."""
        self.peer.send({"op": "do_bench"})
        head, _ = self.expect("do_bench")
        st = head.get("timing") if isinstance(head.get("timing"), dict) else {}
        st = {k: v for k, v in st.items() if k in ("mean_ms", "std_ms", "min_ms", "max_ms",
                                                   "median_ms", "mad_ms", "trials", "method")}
        self.timing["candidate"] = st
        if self.req.get("time_reference"):
            rst = self.time_do_bench(model, self.make_inputs(ref, self.seed))
            rst.pop("stream_check", None)
            self.timing["reference"] = rst
            self.timing["pair"] = speedup_interval(rst, st, 1, 1)
            self.speedup = self.timing["pair"]["speedup"]
        return ", %.4g ms (do_bench)" % st["mean_ms"] if st.get("mean_ms") else ""

    def verify_calls(self, ref, model, calls, fixed):
        """Fingerprints of a random sample of the candidate's timed calls, chosen now that
        every call is made, against the reference's on the same inputs: an output kept
        from an earlier call, computed from something else than its inputs, or not
        computed, misses (stale_output)."""
        torch = self.torch
        rng = random.SystemRandom()
        info = {"checks": 0, "calls": len(calls)}
        self.details["verify"] = info
        chosen = [i for i in range(len(calls)) if rng.random() < VERIFY_FRACTION]
        rest = [i for i in range(len(calls)) if i not in chosen]
        rng.shuffle(rest)
        chosen = sorted((chosen + rest[:max(0, VERIFY_MIN - len(chosen))])[:VERIFY_MAX])
        with torch.no_grad():
            for i in chosen:
                seed, fp_seed, fps = calls[i]
                inputs = fixed if fixed is not None else self.timed_inputs(ref, seed)
                outs = self.reference_finite(model, inputs)
                if outs is None:
                    info["skipped"] = "the reference fails or is not finite on a timed set"
                    continue
                info["checks"] += 1
                if not isinstance(fps, list) or len(fps) != len(outs):
                    bad = "%s fingerprints for %d outputs" % (
                        len(fps) if isinstance(fps, list) else "no", len(outs))
                else:
                    bad = None
                    for j, r in enumerate(outs):
                        w = self.fp_weights(r.shape, fp_seed)
                        want = float((r.detach().reshape(-1).to(torch.float32) * w).sum(dtype=torch.float64))
                        got = fps[j]
                        bound = self.fp_bound(r, w)
                        if not isinstance(got, (int, float)) or not math.isfinite(got) or \
                                abs(got - want) > bound:
                            bad = "output %d: fingerprint %s, the reference's %s (within %s)" % (
                                j, fmt(got) if isinstance(got, (int, float)) else repr(got)[:40],
                                fmt(want), fmt(bound))
                            break
                if bad is not None:
                    self.flag("stale_output")
                    info["failed_at"] = i + 1
                    info["why"] = bad
                    return

    def check_reference_slowed(self, clean, rst):
        """The reference timed between the candidate's blocks against its clean timing
        (the request's reference_clean: its baseline, timed in a process no candidate
        ran in): slower by more than REFERENCE_SLOWED and 4 standard errors, on a GPU
        with the hold, something the candidate left running took its time (rejected).
        Recorded and not judged where the timing is the host's pace rather than the
        GPU's: on the CPU (why: REFERENCE_SLOWED), and on a GPU without the hold, where
        a call of a few microseconds is timed at the pace its launches leave the host,
        and the host of the judge (cores shared with the stopped namespace of the
        candidate) is not the baseline's: a one-op ReLU on 64 Ki floats unheld was
        rejected so in three of three evaluations on one H200 (16 cores, two for the
        two processes), the last with every thread of the candidate's namespace stopped
        before each of the reference's blocks."""
        if not clean or not clean.get("median_ms") or not rst or not rst.get("median_ms"):
            return
        ratio = rst["median_ms"] / clean["median_ms"]
        tol = max(REFERENCE_SLOWED[self.device.type],
                  4 * math.sqrt(rel_se(clean) ** 2 + rel_se(rst) ** 2))
        more = rst.get("preempted", 0.0) - clean.get("preempted", 0.0)
        judged = self.device.type == "cuda" and self.hold_cycles > 0
        self.details["reference_slowed"] = {"ratio": ratio, "tolerance": tol,
                                            "preempted_more": more, "judged": judged}
        if ratio > 1 + tol and judged:
            self.flag("reference_slowed")

    def check_timers(self, walls):
        """The judge's clock over each block of calls against the sum of what the timers
        measured in it: a call costs its timed span plus the harness's fixed work (the
        input set, the flush, the fingerprint), which the reference's blocks, made the
        same way, measure. A candidate's calls that cost much more than their timers
        say did work outside the timed windows (timers_disagree: suspect)."""
        def per_call(rows, fixed_ms):
            return [(wall - fixed_ms - total) / n for wall, total, n in rows if n > 0]
        rtt = getattr(self, "round_trip_ms", 0.0)
        c = per_call(walls["candidate"], rtt)
        r = per_call(walls["reference"], 0.0)
        if len(c) < TIMER_BLOCKS or len(r) < TIMER_BLOCKS:
            self.details["timers"] = {"judged": False, "why": "fewer than %d blocks of each"
                                      % TIMER_BLOCKS}
            return
        ec, er = median_of(c), median_of(r)
        mad = median_of([abs(x - ec) for x in c]) + median_of([abs(x - er) for x in r])
        st = self.timing.get("candidate") or {}
        allowed = max(EXCESS_FLOOR_MS[self.device.type], 0.5 * (st.get("median_ms") or 0.0),
                      4 * mad, EXCESS_SHARE * max(er, 0.0))
        self.details["timers"] = {"excess_ms": ec, "reference_excess_ms": er,
                                  "allowed_ms": allowed, "round_trip_ms": rtt}
        # Judged on a GPU only, as reference_slowed: on the CPU the host's load is in
        # every block (an honest LeakyReLU flagged in a CI run of four tests on two
        # cores), and work a CPU candidate hides between its calls has nothing to take:
        # its inputs are fresh each call, and its runner is stopped while the reference
        # is timed.
        if ec - er > allowed and self.device.type == "cuda":
            self.flag("timers_disagree")

    def check_floor(self, ref, model, st):
        """rejected below_physical_floor: a candidate faster than reading its inputs (and
        writing the outputs that cannot stay in L2) once at the GPU's peak DRAM bandwidth
        (after the L2 flush, no input is in L2). Applied where that floor is measurable
        and the reference itself respects it (else the problem need not read all of its
        inputs)."""
        if self.device.type != "cuda":
            return
        torch = self.torch
        peak, l2, source = gpu_memory_facts(torch)
        info = {"peak_bytes_s": peak, "l2_bytes": l2, "source": source}
        self.details["floor"] = info
        if not peak or not st.get("median_ms"):
            info["applies"] = False
            return
        with torch.no_grad():
            inputs = self.timed_inputs(ref, self.seed)
            outs = self.outputs_as_list(self.run_model(model, inputs, "Model"), "Model")
        in_b = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
        out_b = sum(o.numel() * o.element_size() for o in outs)
        flushed = (self.req.get("timing") or {}).get("l2_flush", True)
        l2 = l2 or 0
        moved = (in_b if flushed else max(0, in_b - l2)) + max(0, out_b - l2)
        floor_ms = moved / peak * 1e3
        rmed = (self.timing.get("reference") or self.timing.get("reference_clean") or {}).get("median_ms")
        info.update({"input_bytes": in_b, "output_bytes": out_b, "floor_ms": floor_ms,
                     "applies": floor_ms >= FLOOR_MIN_MS and (rmed is None or rmed >= floor_ms)})
        if info["applies"] and st["median_ms"] < floor_ms * FLOOR_MARGIN:
            self.flag("below_physical_floor")

    # ------------------------------------------------------------ execute: the candidate

    def mode_execute(self):
        """The candidate's side of an execute: connects to the judge before any candidate
        code runs, waits for its start, loads the candidate and answers the judge's
        requests (its outputs on the inputs of a seed, blocks of timed calls) until it
        is done. What this process's result says of correctness and speed is the judge's
        (kforge merges the two)."""
        self.fp_cache = {}
        self.peer = judge_connect(self.req)
        try:
            head, _ = self.peer.recv()
            if head["op"] != "start":
                raise PeerError("expected start, got %s" % head["op"][:40])
            ref = self.load_reference()
            model_new_cls = self.load_candidate()
            self.phase("load")
            model_new = self.init_candidate(ref, model_new_cls)
            self.phase("models")
            self.peer.send({"op": "loaded"})
            self.serve(ref, model_new)
        except Outcome as o:
            self.tell_failed(o.status, o.message, o.flags)
            raise
        except PeerError as e:
            raise Outcome("runtime_error", "the judge's channel broke: %s" % first_line(e),
                          flags=["judge_failed"])
        except BaseException as e:  # noqa: B036 (SystemExit from candidate code too)
            self.tell_failed(error_status(e), "runner error: %s" % first_line(e), [])
            raise
        return "ok", "the candidate's side done"

    def tell_failed(self, status, message, flags):
        try:
            self.peer.send({"op": "failed", "status": status, "message": message,
                            "flags": list(flags) + [f for f in self.flags if f not in flags]})
        except OSError:
            pass

    def serve(self, ref, model_new):
        method = flush_buf = None
        fixed = None
        while True:
            head, payload = self.peer.recv(INPUTS_CAP)
            op = head["op"]
            if op == "trial":
                self.c_trial(ref, model_new, head, payload)
            elif op == "warmup":
                method, _, _, _, flush_buf = self.timing_setup()
                self.synchronize()
                fixed = self.make_inputs(ref, int(head.get("seed", self.seed))) \
                    if head.get("fixed") else None
                with self.torch.no_grad():
                    warm = fixed if fixed is not None else self.timed_inputs(ref, self.seed)
                    self.warm_up_models((model_new,), warm, int(head.get("n", 1)))
                    # the fingerprint's weights made now, outside every block
                    self.fingerprint(model_new(*warm), int(head.get("fp_seed", 0)))
                    del warm
                self.synchronize()
                self.peer.send({"op": "warm"})
            elif op == "ping":
                self.peer.send({"op": "pong"})
            elif op == "block":
                self.c_block(ref, model_new, head, method, flush_buf, fixed)
            elif op == "do_bench":
                st = self.timing_failed(lambda: self.time_do_bench(
                    model_new, self.make_inputs(ref, self.seed)), "ModelNew")
                if st is not None:
                    self.check_side_stream(st)
                self.peer.send({"op": "do_bench", "timing": st or {}})
            elif op == "done":
                del flush_buf
                if method is not None and self.device.type == "cuda":
                    st = {"stream_check": self.stream_check(
                        model_new, fixed if fixed is not None else self.timed_inputs(ref, self.seed))}
                    self.timing["candidate"] = st
                    self.check_side_stream(st)
                self.check_leftovers()
                self.peer.send({"op": "final", "flags": self.flags})
                return
            else:
                raise PeerError("an unknown op %r" % op[:40])

    def c_trial(self, ref, model_new, head, payload):
        torch = self.torch
        t_start = time.perf_counter()
        seed = int(head.get("seed", self.seed))
        shipped = head.get("inputs")
        pristine = None
        if not isinstance(shipped, dict):
            made = self.transformed(self.made_inputs(ref, seed), head.get("transform"))
            digest = head.get("inputs_digest")
            if digest is None or self.inputs_digest(made) == digest:
                pristine = [self.place(x) for x in made]
            else:
                # Not the judge's: ask for its inputs as made.
                del made
                self.peer.send({"op": "need_inputs"})
                head, payload = self.peer.recv(INPUTS_CAP)
                if head["op"] != "inputs":
                    raise PeerError("expected inputs, got %s" % head["op"][:40])
                shipped = head.get("inputs")
        if pristine is None:
            if not isinstance(shipped, dict) or not isinstance(shipped.get("template"), list):
                raise PeerError("a trial's inputs without a template")
            tensors = unpack_tensors(torch, shipped.get("tensors"), payload)
            pristine = []
            for item in shipped["template"]:
                if "tensor" in item and 0 <= int(item["tensor"]) < len(tensors):
                    pristine.append(self.place(tensors[int(item["tensor"])]))
                else:
                    pristine.append(item.get("value"))
        t0 = time.perf_counter()
        used = self.clone_inputs(pristine)
        # The inputs in place before the call, as before every timed call (trial), so
        # that a candidate whose own stream does not wait for the current one reads
        # finished inputs. On an H200, side_stream_hidden (its ReLU on a stream of its own
        # behind a 1 ms spin) returned, in two or three trials of five, outputs unlike
        # its inputs' ReLU (max |diff| 5.0-5.4, mean 0.4-0.6: zeros or other values);
        # whether this is that race is not established.
        self.synchronize()
        outs = self.outputs_as_list(self.run_model(model_new, used, "ModelNew"), "ModelNew")
        t1 = time.perf_counter()
        mutated = not self.inputs_unchanged(pristine, used)
        if mutated:
            self.flag("input_mutated")
        metas, chunks = pack_tensors(outs)
        t2 = time.perf_counter()
        self.details.setdefault("trial_ms", []).append(
            [round(1000 * x, 2) for x in (t0 - t_start, t1 - t0, t2 - t1)])
        self.peer.send({"op": "outputs", "tensors": metas, "mutated": mutated}, chunks)

    def c_block(self, ref, model_new, head, method, flush_buf, fixed):
        """The candidate's calls of one block, each on a fresh input set (the seeds the
        judge sent; fixed: the one set of the timing), timed, and each call's outputs
        committed by their fingerprints before the next."""
        seeds = head.get("seeds")
        if not isinstance(seeds, list) or len(seeds) > 100000 or method is None:
            raise PeerError("a block without seeds, or before the warm-up")
        fp_seed = int(head.get("fp_seed", 0))
        ms, fps, faults = [], [], 0
        try:
            with self.torch.no_grad(), gc_paused():
                for s in seeds:
                    inputs = fixed if fixed is not None else self.timed_inputs(ref, int(s))
                    f0 = minor_faults()
                    t, out = self.trial(model_new, inputs, method, flush_buf, keep=True)
                    faults += minor_faults() - f0
                    ms.append(t)
                    fps.append(self.fingerprint(out, fp_seed))
                    del out, inputs
            self.synchronize()
            fps = [[float(x) for x in f] for f in fps]
        except Exception as e:
            if is_cuda_error(e):
                raise Outcome("cuda_error", "ModelNew failed while timing: %s" % first_line(e), e)
            raise Outcome("runtime_error", "ModelNew failed while timing: %s" % first_line(e), e)
        self.peer.send({"op": "times", "ms": ms, "fp": fps, "faults": faults})


    # ------------------------------------------------------------ correctness

    def outputs_as_list(self, out, who):
        torch = self.torch
        if isinstance(out, torch.Tensor):
            outs = [out]
        elif isinstance(out, (list, tuple)) and out and \
                all(isinstance(t, torch.Tensor) for t in out):
            outs = list(out)
        else:
            raise Outcome("runtime_error", "%s returned %s, not a tensor (or a tuple of tensors)"
                          % (who, type(out).__name__))
        # A Tensor subclass can answer the comparison itself (__torch_function__): only
        # plain tensors are compared.
        for t in outs:
            if type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter:
                self.flag("output_subclass")
                raise Outcome("value_mismatch", "%s returned a %s, a subclass of torch.Tensor; "
                              "return plain tensors" % (who, type(t).__name__))
        return outs

    def inputs_unchanged(self, pristine, used):
        torch = self.torch
        for a, b in zip(pristine, used):
            if not isinstance(a, torch.Tensor):
                continue
            if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
                return False
            if self.tensor_equal(a, b):
                continue
            if a.is_floating_point():
                same = (a == b) | (torch.isnan(a) & torch.isnan(b))
                if bool(same.all()):
                    continue
            return False
        return True

    def degenerate(self, ref_outs):
        """Whether zeros (or a constant) would pass allclose against these outputs: empty,
        or near zero or constant within the tolerance. NaN outputs are flagged."""
        torch = self.torch
        for r in ref_outs:
            if r.numel() == 0:
                return True
            if not (r.is_floating_point() or r.is_complex()):
                continue
            rf = r.detach().float()
            if bool(torch.isnan(rf).any()):
                self.flag("reference_nan")
                continue
            amax = float(rf.abs().max())
            span = float(rf.max() - rf.min())
            if amax <= self.atol or span <= 2 * self.atol:
                return True
        return False

    def check_degenerate(self, ref_outs):
        if self.degenerate(ref_outs):
            self.flag("degenerate_output")

    def run_model(self, model, inputs, who):
        torch = self.torch
        try:
            with torch.no_grad():
                out = model(*inputs)
            self.synchronize()
            return out
        except Outcome:
            raise
        except Exception as e:
            flags = ["reference_error"] if who == "Model" else []
            raise Outcome(error_status(e), "%s forward failed: %s" % (who, first_line(e)), e,
                          flags=flags)

    # ------------------------------------------------------------ timing

    def timing_setup(self):
        """(method, trials, discard, warmup, flush buffer) of the request's timing."""
        torch = self.torch
        tcfg = self.req.get("timing") or {}
        cuda = self.device.type == "cuda"
        method = tcfg.get("method", "cuda_event") if cuda else "host_time"
        flush_buf = None
        if cuda and method != "do_bench" and tcfg.get("l2_flush", True):
            flush_buf = torch.empty((32, 1024, 1024), dtype=torch.int64, device=self.device)
        # kforge sends a hold only for CUDA events on a GPU (fb_timing_hold_us).
        self.hold_us = float(tcfg.get("hold_us") or 0) if cuda else 0.0
        self.hold_cycles = int(self.hold_us * self.gpu_cycles_per_us()) if self.hold_us > 0 else 0
        return (method, int(self.req.get("perf_trials", 100)), int(tcfg.get("discard_first", 1)),
                int(self.req.get("warmup", 3)), flush_buf)

    def gpu_cycles_per_us(self):
        """The GPU's clock as torch.cuda._sleep counts it: cycles a microsecond, from the
        fastest of three spins of a million cycles timed by CUDA events."""
        torch = self.torch
        best = None
        for _ in range(3):
            start, end = self.Event(enable_timing=True), self.Event(enable_timing=True)
            self.event_record(start)
            torch.cuda._sleep(1000000)
            self.event_record(end)
            self.synchronize()
            ms = self.event_elapsed(start, end)
            best = ms if best is None or ms < best else best
        rate = 1000.0 / max(best, 1e-6)
        self.details["gpu_cycles_per_us"] = round(rate, 1)
        return rate

    def trial(self, model, inputs, method, flush_buf, keep=False):
        """One timed call, KernelBench's way: synchronize, flush L2, then the call between
        two CUDA events (or the host clock and a synchronize). With eval.timing_hold_us
        the GPU then spins that long before the start event (torch.cuda._sleep), so the
        host has queued all of the call's launches before the GPU reaches them: the events
        time the GPU's work alone, at whatever pace the host runs (nvbench's blocking
        kernel, by a timed spin). Without it, a call whose launches take the host longer
        than the flush takes the GPU is timed at the host's pace, which on the GPU hosts
        moved by up to 4x from one run to the next (tools/bench/README.md, repeat).
        Returns the milliseconds, with keep (ms, the call's output)."""
        self.synchronize()
        if flush_buf is not None:
            flush_buf.fill_(42)
        if method == "cuda_event":
            if self.hold_cycles:
                self.torch.cuda._sleep(self.hold_cycles)
            start = self.Event(enable_timing=True)
            end = self.Event(enable_timing=True)
            self.event_record(start)
            out = model(*inputs)
            self.event_record(end)
            self.synchronize()
            ms = self.event_elapsed(start, end)
        else:
            t0 = self.perf_counter()
            out = model(*inputs)
            self.synchronize()
            ms = (self.perf_counter() - t0) * 1000.0
        return (ms, out) if keep else ms

    def warm_up_models(self, models, inputs, warmup):
        """warmup untimed calls of each model, each synchronized, then (on CUDA) the
        allocator's cache emptied before the timed trials."""
        for _ in range(warmup):
            for m in models:
                m(*inputs)
                self.synchronize()
        if self.device.type == "cuda":
            self.torch.cuda.empty_cache()

    def time_model(self, model, inputs):
        """KernelBench's cuda_event (or host_time) method: warm-ups, then trials with the
        first `discard_first` thrown away, synchronize and L2 flush before each. On CUDA a
        short extra pass compares wall and event time (stream_check)."""
        method, trials, discard, warmup, flush_buf = self.timing_setup()
        if method == "do_bench":
            return self.time_do_bench(model, inputs)
        with self.torch.no_grad():
            self.warm_up_models((model,), inputs, warmup)
            with gc_paused():
                samples = [self.trial(model, inputs, method, flush_buf)
                           for _ in range(trials + discard)][discard:]
            st = stats(samples)
            st["method"], st["l2_flush"] = method, flush_buf is not None
            if self.hold_cycles:
                st["hold_us"] = self.hold_us
            del flush_buf
            if self.device.type == "cuda":
                st["stream_check"] = self.stream_check(model, inputs)
        return st

    def time_do_bench(self, model, inputs):
        """Triton's triton.testing.do_bench with its defaults (eval.timing do_bench): its
        own warm-up, L2 flush and repetitions (25 ms and 100 ms of runs); every sample
        where this Triton returns them (return_mode "all"), else its mean."""
        try:
            from triton.testing import do_bench
        except Exception as e:
            raise env_error("timing", "eval.timing do_bench needs Triton, which %s cannot "
                            "import: %s" % (sys.executable, first_line(e)), self.torch, e)

        def call():
            model(*inputs)

        with self.torch.no_grad():
            try:
                samples = do_bench(call, return_mode="all")
            except (AssertionError, TypeError, ValueError):  # a Triton before "all"
                samples = [do_bench(call)]
        st = stats([float(x) for x in samples])
        st["method"] = "do_bench"
        st["stream_check"] = self.stream_check(model, inputs)
        return st

    def stream_check(self, model, inputs, n=10):
        """Wall and event time of the same calls, the GPU idle at the start (so the event
        span includes the launches), and the wall-minus-event cost of an empty region."""
        perf = self.perf_counter
        ev, host, empty = [], [], []
        for _ in range(n):
            self.synchronize()
            start = self.Event(enable_timing=True)
            end = self.Event(enable_timing=True)
            t0 = perf()
            self.event_record(start)
            model(*inputs)
            self.event_record(end)
            self.synchronize()
            host.append((perf() - t0) * 1000.0)
            ev.append(self.event_elapsed(start, end))
        for _ in range(n):
            self.synchronize()
            start = self.Event(enable_timing=True)
            end = self.Event(enable_timing=True)
            t0 = perf()
            self.event_record(start)
            self.event_record(end)
            self.synchronize()
            empty.append((perf() - t0) * 1000.0 - self.event_elapsed(start, end))
        return {"event_median_ms": stats(ev)["median_ms"], "host_median_ms": stats(host)["median_ms"],
                "overhead_ms": stats(empty)["median_ms"], "calls": n}

    def check_side_stream(self, st):
        """Events record on the current stream only; wall time around the call plus a
        device synchronize covers every stream. Work hidden on a side stream shows as
        wall time well above event time plus the fixed record/synchronize overhead."""
        sc = st.get("stream_check")
        if not sc or sc.get("event_median_ms") is None:
            return
        ev, host, overhead = sc["event_median_ms"], sc["host_median_ms"], sc["overhead_ms"] or 0.0
        if host - ev - overhead > max(0.5 * ev, 0.05):
            self.flag("side_stream_suspected")

    def timing_failed(self, fn, who):
        """fn(), or None when it raised: a CUDA error is the candidate's (cuda_error),
        anything else is flagged timing_error and the result stays correct but untimed."""
        try:
            return fn()
        except Exception as e:
            if is_cuda_error(e):
                self.correct = False
                raise Outcome("cuda_error", "%s failed while timing: %s" % (who, first_line(e)), e)
            self.flag("timing_error")
            self.details["exception"] = describe_exception(e)
            log("timing %s failed: %s" % (who, first_line(e)))
            return None

    # ------------------------------------------------------------ modes

    def mode_probe(self):
        torch = self.torch
        if self.device.type != "cuda":
            return "ok", "probe ok (cpu)"
        try:
            x = torch.arange(1 << 20, device=self.device, dtype=torch.float32)
            s = float((x * 2).sum())
            torch.cuda.synchronize()
            expect = float((1 << 20) * ((1 << 20) - 1))
            if abs(s - expect) > 1e-3 * expect:
                raise RuntimeError("probe kernel returned %r, expected %r" % (s, expect))
        except Exception as e:
            raise Outcome("cuda_error", "GPU probe failed: %s" % first_line(e), e)
        return "ok", "probe ok (%s)" % self.env["device_name"]

    def mode_selftest(self):
        torch = self.torch
        cuda = self.device_kind == "cuda"
        # A run of the raw format builds no candidate with load_inline (a reply in that
        # format is rejected before any build), so it proves the raw build instead: the
        # compiler, a shared object, the ctypes call on torch's stream.
        raw = self.req.get("format") == "raw"
        prerequisites = raw_env_probe if raw else env_probe
        probe = prerequisites(torch, cuda)
        if probe is not None:
            raise probe
        if raw:
            warm_wait = lambda: None  # noqa: E731
        else:
            from torch.utils.cpp_extension import load_inline
            warm_wait = self.warm_fast_build(load_inline, cuda)
        t0 = time.monotonic()
        exc = None
        with FdTee() as tee:
            try:
                if raw:
                    ext = raw_load(SELFTEST_RAW_CUDA if cuda else SELFTEST_RAW_CPP, cuda,
                                   "kforge_selftest_raw_%s" % self.device_kind)
                    add_one = functools.partial(add_one_raw, torch, ext.add_one)
                elif cuda:
                    add_one = load_inline(name="kforge_selftest_cuda",
                                          cpp_sources=[SELFTEST_CUDA_DECL],
                                          cuda_sources=[SELFTEST_CUDA],
                                          functions=["add_one"]).add_one
                else:
                    add_one = load_inline(name="kforge_selftest_cpu", cpp_sources=[SELFTEST_CPP],
                                          functions=["add_one"]).add_one
            except BaseException as e:
                exc = e
        self.details["build_s"] = round(time.monotonic() - t0, 3)
        warm_wait()
        if exc is not None:
            self.details["compiler_output"] = compiler_output(tee.text() + "\n" +
                                                              exception_text(exc))
            probe = prerequisites(torch, cuda)
            if probe is not None:
                raise probe
            raise env_error("build", "the known-good %s extension failed to build: %s"
                            % (self.device_kind, first_line(exc)), torch, exc)
        self.compiled = True
        t0 = time.monotonic()
        # Under kforge's CUPTI injection (a GPU with the library built), the call is
        # measured in metrics mode, which keeps the device's counter availability image
        # for the profiles to come (kprof/inject.c, availability_path).
        gate = torch.cuda.cudart() if cuda and os.environ.get("KPROF_OUT") else None
        try:
            x = torch.arange(4096, dtype=torch.float32, device=self.device)
            if gate is not None:
                gate.cudaProfilerStart()
            try:
                y = add_one(x)
                self.synchronize()
            finally:
                if gate is not None:
                    gate.cudaProfilerStop()
            ok = bool(torch.equal(y.cpu(), x.cpu() + 1))
        except Exception as e:
            raise env_error("run", "the known-good %s extension failed to run: %s"
                            % (self.device_kind, first_line(e)), torch, e)
        self.details["run_s"] = round(time.monotonic() - t0, 3)
        if not ok:
            raise env_error("run", "the known-good %s extension computed a wrong result"
                            % self.device_kind, torch)
        self.correct = True
        return "ok", "built in %.1f s, ran in %.3f s" % (self.details["build_s"],
                                                         self.details["run_s"])

    # The optimisation levels candidates' binding files are built with most: none (a CUDA
    # candidate's main.cpp, unless it passes extra_cflags), -O2 and -O3. A precompiled
    # header serves only its own flags, but for the levels that share one with clang++
    # (PCH_SAME_LEVEL): there -O3's warm-up finds -O2's header and makes none.
    PCH_WARM_CFLAGS = ([], ["-O2"], ["-O3"])

    def warm_fast_build(self, load_inline, cuda):
        """Starts a tiny extension's build per PCH_WARM_CFLAGS through the fast-build
        wrapper, each in a thread, so that the precompiled headers candidates will use
        exist before the first of them (only a selftest may write them); returns a
        function that waits for them all. They build beside the known-good extension:
        on a GPU host without clang++ the headers (g++'s) took about 35 s after a
        known-good build of 31.6 s, one after the other, in a first run's start. A failure
        only costs speed later. Their compilers write nothing to this process's output
        (torch's build keeps ninja's, the wrapper's go nowhere), which the known-good
        build's FdTee reads."""
        if not os.environ.get("KFORGE_PCH_DIR"):
            return lambda: None
        t0 = time.monotonic()

        def one(i):
            try:
                load_inline(name="kforge_pch_warm_%s_%d" % (self.device_kind, i),
                            cpp_sources=[SELFTEST_CPP], functions=["add_one"],
                            extra_cflags=self.PCH_WARM_CFLAGS[i], with_cuda=cuda)
            except BaseException as e:  # noqa: B036 (logged; the selftest goes on)
                log("fast-build warm-up %s failed: %s" % (self.PCH_WARM_CFLAGS[i], first_line(e)))
        threads = [threading.Thread(target=one, args=(i,))
                   for i in range(len(self.PCH_WARM_CFLAGS))]
        for t in threads:
            t.start()

        def wait():
            for t in threads:
                t.join()
            self.details["pch_warm_s"] = round(time.monotonic() - t0, 3)
        return wait

    def mode_precompile(self):
        model_new = self.load_candidate()
        if model_new is None:
            return "ok", "candidate imports only with a GPU; compile deferred to execute"
        return "ok", "compiled in %.1f s" % self.details["compile_s"]

    def check_leftovers(self):
        """Work must happen inside forward, in this thread: a thread or a child process of
        the candidate's still alive once its forward calls returned could compute outside
        what the checks and the timing see (flags threads_left, processes_left). What
        forward patched is undone and flagged as what the import patched is."""
        self.check_patched()
        threads = [t.name for t in threading.enumerate()
                   if t is not threading.main_thread() and t.name != RUNNER_THREAD]
        if threads:
            self.flag("threads_left")
            self.details["threads_left"] = threads[:8]
        kids = live_children()
        if kids:
            self.flag("processes_left")
            self.details["processes_left"] = kids[:8]

    def mode_baseline(self):
        torch = self.torch
        ref = self.load_reference()
        model = self.init_reference(ref)
        inputs = self.make_inputs(ref, self.seed)
        # Exceptions here are the reference's, not a candidate's.
        try:
            self.timing["reference"] = self.time_model(model, inputs)
        except Exception as e:
            raise Outcome(error_status(e), "reference failed while timing: %s" % first_line(e),
                          e, flags=["reference_error"])
        msg = "reference %.4g ms" % self.timing["reference"]["mean_ms"]
        if self.req.get("baseline_compile"):
            if not hasattr(torch, "compile"):
                self.flag("compile_unavailable")
                msg += "; torch.compile unavailable in torch %s" % torch.__version__
            else:
                try:
                    if hasattr(torch, "_dynamo"):
                        torch._dynamo.reset()
                    compiled = torch.compile(model)
                    self.timing["reference_compile"] = self.time_model(compiled, inputs)
                    msg += ", torch.compile %.4g ms" % self.timing["reference_compile"]["mean_ms"]
                except Exception as e:
                    if is_cuda_error(e):
                        raise Outcome("cuda_error", "torch.compile of the reference failed: %s"
                                      % first_line(e), e)
                    self.flag("compile_failed")
                    self.details["exception"] = describe_exception(e)
                    msg += "; torch.compile failed: %s" % first_line(e, 200)
        return "ok", msg

    def mode_profile(self):
        """The candidate's forward (or, with profile_reference, the reference's) profiled
        over profile_iters calls after one untimed call. On cuda under kforge's CUPTI
        injection (request "kprof", or KPROF_OUT in the environment) the calls are
        gated by cudaProfilerStart/Stop, which the library collects between, and the
        library writes the profile itself (kforge reads it once this process ends);
        torch.profiler is never used then: Kineto would take CUPTI's one subscriber
        slot or corrupt the library's timestamps. Elsewhere, torch.profiler's table."""
        torch = self.torch
        ref = self.load_reference()
        target = "reference" if self.req.get("profile_reference") else "candidate"
        if target == "reference":
            model = self.init_reference(ref)
            who = "Model"
        else:
            model_new_cls = self.load_candidate()
            model = self.init_candidate(ref, model_new_cls)
            who = "ModelNew"
        inputs = self.make_inputs(ref, self.seed)
        self.phase("models")
        iters = int(self.req.get("profile_iters", 5))
        cuda = self.device.type == "cuda"
        if cuda and (self.req.get("kprof") or os.environ.get("KPROF_OUT")):
            return self.profile_cupti(model, inputs, iters, who, target)
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CPU]
        if cuda:
            activities.append(ProfilerActivity.CUDA)
        try:
            with torch.no_grad():
                model(*inputs)  # warm-up outside the trace
                self.synchronize()
                with profile(activities=activities) as prof:
                    for _ in range(iters):
                        model(*inputs)
                    self.synchronize()
        except Exception as e:
            raise Outcome(error_status(e), "%s failed under the profiler: %s"
                          % (who, first_line(e)), e)
        rows = []
        for ev in prof.key_averages():
            if cuda:
                if not is_device_event(ev):
                    continue
                total_us = first_attr(ev, ("self_device_time_total", "self_cuda_time_total"))
            else:
                total_us = first_attr(ev, ("self_cpu_time_total",))
            if not total_us or total_us <= 0:
                continue
            calls = int(getattr(ev, "count", 0) or 0)
            rows.append({"name": ev.key, "calls": calls, "total_ms": total_us / 1000.0,
                         "mean_ms": total_us / 1000.0 / max(calls, 1)})
        rows.sort(key=lambda r: r["total_ms"], reverse=True)
        total = sum(r["total_ms"] for r in rows)
        self.profile = {"device": self.device.type, "iterations": iters,
                        "total_ms": total, "kernels": rows[:PROFILE_TOP],
                        "kernel_count": len(rows), "source": "torch.profiler",
                        "target": target}
        return "ok", "profiled %d iterations, %d kernels" % (iters, len(rows))

    def profile_cupti(self, model, inputs, iters, who, target):
        """Warm-up outside the gate (builds, lazy module loading, allocator growth), then
        cudaProfilerStart, the forward calls, a synchronize, cudaProfilerStop: the
        library collects what the device ran between, and writes its JSON at the stop."""
        torch = self.torch
        cudart = torch.cuda.cudart()
        warmup = max(1, min(int(self.req.get("warmup", 3)), 3))
        try:
            with torch.no_grad():
                for _ in range(warmup):
                    model(*inputs)
                self.synchronize()
                cudart.cudaProfilerStart()
                try:
                    for _ in range(iters):
                        model(*inputs)
                    self.synchronize()
                finally:
                    try:
                        cudart.cudaProfilerStop()
                    except Exception as e:  # a poisoned context: the error above says why
                        log("cudaProfilerStop: %s" % first_line(e))
        except Exception as e:
            raise Outcome(error_status(e), "%s failed under the profiler: %s"
                          % (who, first_line(e)), e)
        self.phase("profile")
        self.profile = {"source": "cupti", "device": "cuda", "iterations": iters,
                        "target": target, "mode": os.environ.get("KPROF_MODE", "trace")}
        return "ok", "profiled %d forward calls of %s under CUPTI" % (iters, who)


# The selftest's known-good extensions: y = x + 1, elementwise.
SELFTEST_CPP = """
torch::Tensor add_one(torch::Tensor x) {
    auto c = x.contiguous();
    auto y = torch::empty_like(c);
    const float *in = c.data_ptr<float>();
    float *out = y.data_ptr<float>();
    for (int64_t i = 0; i < c.numel(); i++)
        out[i] = in[i] + 1.0f;
    return y;
}
"""
SELFTEST_RAW_CPP = """
#include <cstdint>
extern "C" void add_one(const float *in, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = in[i] + 1.0f;
}
"""
SELFTEST_RAW_CUDA = """
#include <cstdint>
#include <cuda_runtime.h>
__global__ void add_one_kernel(const float *in, float *out, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] + 1.0f;
}
extern "C" void add_one(const float *in, float *out, int64_t n, cudaStream_t stream) {
    add_one_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(in, out, n);
}
"""


def add_one_raw(torch, add_one, x):
    """The raw known-good extension called as the load_inline one is: y = x + 1."""
    c = x.contiguous()
    y = torch.empty_like(c)
    add_one(c, y, c.numel())
    return y


SELFTEST_CUDA_DECL = "torch::Tensor add_one(torch::Tensor x);"
SELFTEST_CUDA = """
__global__ void add_one_kernel(const float *in, float *out, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] + 1.0f;
}
torch::Tensor add_one(torch::Tensor x) {
    auto c = x.contiguous();
    auto y = torch::empty_like(c);
    int64_t n = c.numel();
    add_one_kernel<<<(unsigned)((n + 255) / 256), 256>>>(c.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""



# ------------------------------------------------------------ fast builds

# What both compiler wrappers below begin with: a source's slim copy, beside it with
# ".kforge-slim" before its extension, each torch/extension.h line made torch/types.h (the
# same lines, so line numbers hold).
SLIM_COPY = r'''
import os

FULL, SLIM = "#include <torch/extension.h>", "#include <torch/types.h>"


def slim_copy(src):
    """The slim copy of src, made beside it, or None when src includes no
    torch/extension.h."""
    with open(src, errors="surrogateescape") as f:
        lines = f.read().split("\n")
    if not any(l.strip() == FULL for l in lines):
        return None
    base, ext = os.path.splitext(src)
    slim = base + ".kforge-slim" + ext
    with open(slim, "w", errors="surrogateescape") as f:
        f.write("\n".join(SLIM if l.strip() == FULL else l for l in lines))
    # The compiler's depfile names this copy: dated as its source, it does not look to
    # ninja like an input that changed while the build ran (which would rebuild it at
    # every later load, in a build sealed read-only by then).
    st = os.stat(src)
    os.utime(slim, ns=(st.st_atime_ns, st.st_mtime_ns))
    return slim
'''


# The optimisation levels whose binding files share the precompiled header of another
# with clang++ (FAST_CXX): a header holds declarations, macros and template
# instantiations, no code; -O2 and -O3 define the same macros, and clang++ 14 made the
# same object, byte for byte, from a binding file at either level with either header
# (the demo's ReLU, a linear layer's). One header fewer per cache: 9.5 s of CPU on the
# 2-core machine, at every fresh cache's selftest.
PCH_SAME_LEVEL = {"-O3": "-O2"}


# The compiler wrapper that load_inline's builds run as $CXX (install_fast_cxx). A
# translation unit that begins with torch/extension.h (load_inline's main.cpp always
# does) is compiled with a precompiled header made for exactly its flags: clang++ with
# its templates instantiated in the header where clang++ is installed (the demo's ReLU:
# 22 s -> 5 s on 2 cores), else the compiler itself with a .gch (22 s -> 14 s). The
# header is not all of torch/extension.h but what a binding file needs of it, the tensor
# API (torch/types.h) and the Python bindings (torch/python.h), without the C++ frontend
# (torch/all.h: nn modules, optimisers, data loaders), whose templates every translation
# unit would otherwise instantiate and compile again (the ReLU's main.cpp: 7.1 s -> 4.5 s
# of CPU); the file's torch/extension.h lines become torch/types.h in a copy beside it, as
# the nvcc wrapper below does. Code that needs the frontend fails there and gets the
# original command. Whatever goes wrong on that path, the original command runs unchanged, so a candidate
# that fails is failed by the original compiler and its errors are the ones the model
# sees. The headers live in the shared cache (pch_dir), written only where this process
# may write: by the selftest, whose builds make them before any candidate's (kforge
# seals the directory afterwards when the runner runs as another user, so no candidate
# can plant one).
FAST_CXX = SLIM_COPY + r"""
import fcntl, hashlib, os, shutil, subprocess, sys

PCH_HEADER = SLIM + "\n#include <torch/python.h>\n"
PCH_SAME_LEVEL = @PCH_SAME_LEVEL@
argv = sys.argv[1:]
real = os.environ.get("KFORGE_CXX_REAL") or "c++"


def original():
    os.execvp(real, [real] + argv)


def identity(exe):
    path = shutil.which(exe)
    if path is None:
        return None
    path = os.path.realpath(path)
    st = os.stat(path)
    return "%s %d %d" % (path, st.st_size, int(st.st_mtime))


def fast():
    pch_dir = os.environ.get("KFORGE_PCH_DIR")
    if not pch_dir or "-c" not in argv:
        return 1
    srcs = [a for a in argv if a.endswith((".cpp", ".cc", ".cxx")) and not a.startswith("-")]
    if len(srcs) != 1:
        return 1
    with open(srcs[0], errors="replace") as f:
        if f.readline().strip() != FULL:
            return 1
    flags, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
        elif a in ("-o", "-MF"):
            skip = True
        elif a in ("-c", "-MMD", srcs[0]) or a.startswith("-DTORCH_EXTENSION_NAME="):
            pass
        else:
            flags.append(a)
    clang = os.environ.get("KFORGE_FAST_CXX", "clang++")
    cc = clang if clang and identity(clang) else real
    ident = identity(cc)
    if ident is None:
        return 1
    use_clang = cc != real
    # clang++ generates a unit's code at the unit's own level: a header made at -O2
    # serves -O3 too (the same object, byte for byte), so the two share one. A .gch is
    # kept to its own flags.
    pch_flags = [PCH_SAME_LEVEL.get(a, a) for a in flags] if use_clang else flags
    key = hashlib.sha256(("%s\0%s\0%s" % (ident, "\0".join(pch_flags), PCH_HEADER)).encode()).hexdigest()[:24]
    d = os.path.join(pch_dir, key)
    header = os.path.join(d, "kforge_pch.h")
    pch = header + (".pch" if use_clang else ".gch")
    # Only a selftest makes headers (KFORGE_PCH_WRITE, install_fast_cxx): the shared cache
    # is no candidate's to write, and a sandboxed build could not.
    may_make = os.environ.get("KFORGE_PCH_WRITE") == "1" and os.access(pch_dir, os.W_OK)
    if not os.path.exists(pch) and not may_make:
        # A selftest may be making it now (it holds the lock while it does): wait for it.
        try:
            with open(os.path.join(d, "lock")) as lk:
                fcntl.flock(lk, fcntl.LOCK_SH)
        except OSError:
            pass
        if not os.path.exists(pch):
            # Flags no selftest warmed (-fopenmp, -march=native, -O0): the slim copy with
            # the header's text included, no precompiled header: less than half the
            # original command's work, which reads all of torch/extension.h with its C++
            # frontend (a small binding file alone on the 2-core machine: 8.4 s so with
            # clang++, 12.3 s for clang++ on the original, 19.9 s for g++ on it; 2.4 s
            # with the precompiled header).
            return compile_slim(cc, flags, srcs[0], ["-include", beside(srcs[0])])
    if not os.path.exists(pch):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "lock"), "w") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            if not os.path.exists(pch):
                with open(header, "w") as f:
                    f.write(PCH_HEADER)
                tmp = pch + ".tmp%d" % os.getpid()
                extra = ["-fpch-instantiate-templates"] if use_clang else []
                r = subprocess.run([cc] + pch_flags + extra + ["-x", "c++-header", header, "-o", tmp],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if r.returncode != 0:
                    return 1
                os.rename(tmp, pch)
    use = ["-include-pch", pch] if use_clang else ["-include", header, "-Winvalid-pch"]
    return compile_slim(cc, flags, srcs[0], use)


def beside(src):
    # PCH_HEADER's text in a file beside src's slim copy, dated as src (slim_copy says why).
    path = os.path.splitext(src)[0] + ".kforge-slim.h"
    with open(path, "w") as f:
        f.write(PCH_HEADER)
    st = os.stat(src)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return path


def compile_slim(cc, flags, src, use):
    slim = slim_copy(src)
    # -w: what the fast compiler warns about is not what the model's compiler would say.
    rest = [slim if a == src else a for a in argv if a not in flags]
    r = subprocess.run([cc] + flags + use + ["-w"] + rest, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode


try:
    rc = fast()
except Exception:
    rc = 1
if rc != 0:
    original()
""".replace("@PCH_SAME_LEVEL@", repr(PCH_SAME_LEVEL))


# The nvcc wrapper (install_fast_cxx, through torch's PYTORCH_NVCC): a .cu that includes
# torch/extension.h, as KernelBench-format candidates do, is compiled first with
# torch/types.h in its place (the same line, so line numbers hold): torch's tensor API
# without its C++ frontend and Python bindings, which only the binding file needs. nvcc
# parses half as much (the demo's ReLU .cu on the H100 host: 57.5 s -> 26.8 s). Should
# that fail for any reason, the original command runs unchanged: what it accepts and the
# errors the model sees are the original's.
FAST_NVCC = SLIM_COPY + r"""
import os, subprocess, sys

argv = sys.argv[1:]
real = os.environ.get("KFORGE_NVCC_REAL") or "nvcc"


def fast():
    if "-c" not in argv:
        return 1
    srcs = [i for i, a in enumerate(argv) if a.endswith(".cu") and not a.startswith("-")]
    if len(srcs) != 1:
        return 1
    slim = slim_copy(argv[srcs[0]])
    if slim is None:
        return 1
    args = list(argv)
    args[srcs[0]] = slim
    return subprocess.run([real] + args, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode


try:
    rc = fast()
except Exception:
    rc = 1
if rc != 0:
    os.execvp(real, [real] + argv)
"""


def install_wrapper(pch_dir, name, code, may_write):
    """The path of a wrapper script in pch_dir (written when missing by the selftest, the
    one step that may write the shared cache: may_write), or None."""
    import hashlib
    text = "#!%s -SE\n%s" % (sys.executable, code)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.join(pch_dir, name % digest)
    if not os.path.exists(path):
        if not may_write or not os.access(pch_dir, os.W_OK):
            return None
        tmp = "%s.tmp%d" % (path, os.getpid())
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.rename(tmp, path)
    return path


def write_json(path, obj):
    """obj as JSON at path, whole or not at all (a temporary file renamed)."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.rename(tmp, path)


# The compilers a build was made with, beside it: a later load must write the same
# build.ninja, or torch rewrites it and ninja builds again (in a build sealed read-only by
# then), so whether the fast-build wrappers were there when it was built decides, not
# whether they are there now.
BUILD_COMPILERS = ".kforge-compilers.json"
COMPILER_VARS = ("CXX", "KFORGE_CXX_REAL", "KFORGE_PCH_DIR", "PYTORCH_NVCC", "KFORGE_NVCC_REAL")


def build_compilers(req, build_dir):
    """Sets this process's compilers for load_inline: a build's recorded ones when it has
    them (a load after the precompile), else the fast-build wrappers (install_fast_cxx),
    recorded for the loads to come."""
    record = os.path.join(build_dir, BUILD_COMPILERS) if build_dir else None
    if record and os.path.exists(record):
        try:
            with open(record) as f:
                saved = json.load(f)
            for k in COMPILER_VARS:
                if saved.get(k):
                    os.environ[k] = saved[k]
                else:
                    os.environ.pop(k, None)
            return
        except (OSError, ValueError):
            pass
    install_fast_cxx(req)
    if record and req.get("mode") in ("precompile", "execute", "profile"):
        try:
            write_json(record, {k: os.environ.get(k) for k in COMPILER_VARS})
        except OSError:
            pass  # a build dir this process may not write: it builds nothing either


def install_fast_cxx(req):
    """Points $CXX at the fast-build wrapper (FAST_CXX) for this process's load_inline
    builds, writing the wrapper into the shared cache's pch_dir when missing (only where
    this process may write there). No-op when the request has no pch_dir."""
    pch_dir = req.get("pch_dir")
    if not pch_dir or not os.path.isdir(pch_dir) or os.environ.get("KFORGE_CXX_REAL"):
        return
    # The name ends in g++: torch accepts a compiler by its name before asking it -v.
    may_write = req.get("mode") == "selftest"
    path = install_wrapper(pch_dir, "kforge-%s-g++", FAST_CXX, may_write)
    if may_write:
        os.environ["KFORGE_PCH_WRITE"] = "1"
    if path is not None:
        os.environ["KFORGE_CXX_REAL"] = os.environ.get("CXX") or "c++"
        os.environ["KFORGE_PCH_DIR"] = pch_dir
        os.environ["CXX"] = path
    nvcc = install_wrapper(pch_dir, "kforge-%s-nvcc", FAST_NVCC, may_write)
    if nvcc is not None and req.get("device") == "cuda":
        real = os.environ.get("PYTORCH_NVCC")
        if not real:  # what torch itself would run
            try:
                from torch.utils.cpp_extension import CUDA_HOME
            except Exception:
                CUDA_HOME = None
            real = os.path.join(CUDA_HOME or "/usr/local/cuda", "bin", "nvcc")
        os.environ["KFORGE_NVCC_REAL"] = real
        os.environ["PYTORCH_NVCC"] = nvcc


class WriteIfChanged(io.StringIO):
    """A file opened for writing that touches the disk only if its content changes."""

    def __init__(self, path):
        io.StringIO.__init__(self)
        self.path = path

    def close(self):
        if not self.closed:
            data = self.getvalue()
            try:
                with builtins.open(self.path) as f:
                    same = f.read() == data
            except OSError:
                same = False
            if not same:
                with builtins.open(self.path, "w") as f:
                    f.write(data)
        io.StringIO.close(self)


# ------------------------------------------------------------ the raw build format

# eval.format "raw": the candidate's kernels and launchers are plain C++/CUDA with
# extern "C" entry points taking pointers and scalars, compiled by nvcc (or the C++
# compiler on the CPU) with no torch header at all, and called through ctypes. The
# candidate imports them with `from kforge import load_cuda` (load_cpp on the CPU); the
# glue that turns tensors into pointers is here, checked at every call (device, dtype,
# contiguity, argument count) so a mismatch is an exception rather than memory garbage.
RAW_ELEMENT_DTYPES = {
    "float": "float32", "double": "float64", "half": "float16", "__half": "float16",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "int": "int32",
    "int32_t": "int32", "long": "int64", "long int": "int64", "long long": "int64",
    "int64_t": "int64", "short": "int16", "int16_t": "int16", "char": "int8",
    "signed char": "int8", "int8_t": "int8", "unsigned char": "uint8", "uint8_t": "uint8",
    "bool": "bool", "void": None,
}
RAW_SCALARS = {
    "int": "c_int32", "int32_t": "c_int32", "unsigned": "c_uint32", "unsigned int": "c_uint32",
    "uint32_t": "c_uint32", "long": "c_int64", "long int": "c_int64", "long long": "c_int64",
    "int64_t": "c_int64", "size_t": "c_size_t", "unsigned long": "c_uint64",
    "uint64_t": "c_uint64", "float": "c_float", "double": "c_double", "bool": "c_bool",
    "short": "c_int16", "int16_t": "c_int16",
}
RAW_STREAMS = ("cudaStream_t", "CUstream")
RAW_RETURNS = {"void": None, "int": "c_int", "float": "c_float", "double": "c_double"}
RAW_QUALIFIERS = ("const", "volatile", "__restrict__", "__restrict", "restrict")
RAW_CUDA_HELPERS = r"""
extern "C" int kforge_raw_last_error(void) { return (int)cudaGetLastError(); }
extern "C" const char *kforge_raw_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
"""


def raw_prototypes(source):
    """{name: (return type, [(kind, type), ...])} of the source's extern "C" functions;
    kind is "ptr" (type: the element), "scalar" or "stream"."""
    import re
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    found = {}
    for m in re.finditer(r'extern\s+"C"\s+(?:__host__\s+)?(\w+)\s+([A-Za-z_]\w*)\s*\(([^)]*)\)\s*[{;]',
                         text):
        ret, name, params = m.group(1), m.group(2), m.group(3).strip()
        if name.startswith("kforge_raw_"):
            continue
        if ret not in RAW_RETURNS:
            raise TypeError("extern \"C\" %s: returns %s; an entry point returns void, int, "
                            "float or double" % (name, ret))
        args = []
        for k, param in enumerate(p for p in params.split(",") if p.strip()):
            words = [w for w in param.replace("*", " * ").split() if w not in RAW_QUALIFIERS]
            stars = words.count("*")
            words = [w for w in words if w != "*"]
            type_words = ("int", "long", "short", "char", "unsigned", "signed", "float",
                          "double", "bool", "void")
            if len(words) > 1 and words[-1] not in type_words:
                words = words[:-1]  # the parameter's name
            base = " ".join(words)
            if base == "void" and stars == 0 and k == 0:
                break
            if stars == 0 and base in RAW_STREAMS:
                args.append(("stream", base))
            elif stars == 1 and base in RAW_ELEMENT_DTYPES:
                args.append(("ptr", base))
            elif stars == 0 and base in RAW_SCALARS:
                args.append(("scalar", base))
            else:
                raise TypeError("extern \"C\" %s: parameter %d (%s) is neither a pointer to "
                                "a tensor's elements (%s), a scalar (%s) nor a cudaStream_t"
                                % (name, k + 1, param.strip(),
                                   ", ".join(sorted(k for k in RAW_ELEMENT_DTYPES if k)),
                                   ", ".join(sorted(RAW_SCALARS))))
        found[name] = (ret, args)
    if not found:
        raise TypeError('the source defines no extern "C" function to call')
    return found


def raw_arch_flags():
    flags = []
    for tok in (os.environ.get("TORCH_CUDA_ARCH_LIST") or "").replace(",", ";").replace(" ", ";").split(";"):
        tok = tok.strip()
        if not tok:
            continue
        ptx = tok.endswith("+PTX")
        num = tok.replace("+PTX", "").replace(".", "")
        if not num[:2].isdigit():
            continue
        flags.append("-gencode=arch=compute_%s,code=sm_%s" % (num, num))
        if ptx:
            flags.append("-gencode=arch=compute_%s,code=compute_%s" % (num, num))
    return flags


def raw_compiler(cuda):
    import shutil
    if cuda:
        nvcc = os.environ.get("KFORGE_NVCC_REAL") or os.environ.get("PYTORCH_NVCC")
        if not nvcc:
            home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
            nvcc = os.path.join(home, "bin", "nvcc")
            if not os.path.exists(nvcc):
                nvcc = shutil.which("nvcc") or nvcc
        return nvcc
    return os.environ.get("KFORGE_CXX_REAL") or os.environ.get("CXX") or "c++"


def raw_build(source, cuda, name, extra_cflags, extra_ldflags):
    """The shared object of source, built once into TORCH_EXTENSIONS_DIR (the candidate's
    build directory), named by a hash of everything that goes into it."""
    import hashlib
    import subprocess
    compiler = raw_compiler(cuda)
    if cuda:
        source = source + "\n" + RAW_CUDA_HELPERS
        flags = ["-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC"] + raw_arch_flags()
    else:
        flags = ["-O3", "-std=c++17", "-shared", "-fPIC"]
    flags += [str(f) for f in extra_cflags]
    ldflags = [str(f) for f in extra_ldflags]
    key = hashlib.sha256(json.dumps([source, compiler, flags, ldflags]).encode()).hexdigest()[:20]
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.getcwd(), "kforge_raw")
    out_dir = os.path.join(root, "%s_%s" % (name, key))
    lib = os.path.join(out_dir, "lib%s.so" % name)
    if os.path.exists(lib):
        return lib
    os.makedirs(out_dir, exist_ok=True)
    src = os.path.join(out_dir, name + (".cu" if cuda else ".cpp"))
    with open(src, "w") as f:
        f.write(source)
    tmp = lib + ".tmp"
    cmd = [compiler] + flags + ["-o", tmp, src] + ldflags
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
    except OSError as e:
        raise RuntimeError("Error building extension '%s': cannot run %s: %s"
                           % (name, compiler, e))
    if done.returncode == 0 and done.stdout:
        sys.stderr.write(done.stdout)  # warnings: the compiler output of a good build
    if done.returncode != 0:
        raise RuntimeError("Error building extension '%s':\n%s\n%s" % (
            name, " ".join(cmd), done.stdout))
    os.rename(tmp, lib)
    return lib


class RawModule(object):
    """What load_cuda / load_cpp return: one attribute per extern "C" function."""

    def __init__(self, name, path):
        self.__name__ = name
        self.__file__ = path


def raw_load(source, cuda, name=None, extra_cflags=(), extra_ldflags=()):
    import ctypes
    import torch
    if not isinstance(source, str):
        raise TypeError("the source must be a string of %s code" % ("CUDA" if cuda else "C++"))
    name = name or ("kforge_raw_cuda" if cuda else "kforge_raw_cpp")
    if not name.replace("_", "").isalnum():
        raise ValueError("name must be letters, digits and underscores: %r" % (name,))
    protos = raw_prototypes(source)
    path = raw_build(source, cuda, name, extra_cflags, extra_ldflags)
    lib = ctypes.CDLL(path)
    module = RawModule(name, path)
    last_error = error_string = None
    if cuda:
        last_error = lib.kforge_raw_last_error
        last_error.restype = ctypes.c_int
        error_string = lib.kforge_raw_error_string
        error_string.restype = ctypes.c_char_p
        error_string.argtypes = [ctypes.c_int]
    device_type = "cuda" if cuda else "cpu"
    for fname, (ret, params) in protos.items():
        fn = getattr(lib, fname)
        fn.restype = getattr(ctypes, RAW_RETURNS[ret]) if RAW_RETURNS[ret] else None
        fn.argtypes = [ctypes.c_void_p if kind != "scalar" else getattr(ctypes, RAW_SCALARS[t])
                       for kind, t in params]
        setattr(module, fname, raw_caller(torch, fname, fn, params, device_type, last_error,
                                          error_string))
    return module


def raw_stream_getter(torch):
    """The current CUDA stream's handle: torch's own getter of the raw handle where it has
    one (no Stream object made a call, a few microseconds less per launch, which a
    kernel of a few microseconds would otherwise be timed with), else the public way."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    device = getattr(torch._C, "_cuda_getDevice", None)
    if raw is not None and device is not None:
        return lambda: raw(device())
    return lambda: torch.cuda.current_stream().cuda_stream


def raw_caller(torch, fname, fn, params, device_type, last_error, error_string):
    """The Python function for one extern "C" entry point. A call checks each argument
    (the common case in a few attribute reads: a timed call of a microsecond kernel is
    mostly this) and, where one fails, check says which check and why."""
    user = [(k, t) for k, t in params if k != "stream"]
    dtypes = {t: getattr(torch, d) for k, t in params if k == "ptr"
              for d in [RAW_ELEMENT_DTYPES[t]] if d}
    plan = [(kind, dtypes.get(t)) for kind, t in params]
    tensor = torch.Tensor
    on_device = "is_cuda" if device_type == "cuda" else None
    stream = raw_stream_getter(torch) if any(k == "stream" for k, _ in params) else None

    def check(k, kind, t, a):
        if kind == "ptr":
            if not isinstance(a, tensor):
                raise TypeError("%s: parameter %d (%s*) needs a tensor, got %s"
                                % (fname, k + 1, t, type(a).__name__))
            if a.device.type != device_type:
                raise ValueError("%s: parameter %d is a tensor on %s, not %s"
                                 % (fname, k + 1, a.device, device_type))
            if t in dtypes and a.dtype != dtypes[t]:
                raise TypeError("%s: parameter %d (%s*) needs a %s tensor, got %s"
                                % (fname, k + 1, t, dtypes[t], a.dtype))
            if not a.is_contiguous():
                raise ValueError("%s: parameter %d is not contiguous (call .contiguous())"
                                 % (fname, k + 1))
        elif isinstance(a, tensor):
            raise TypeError("%s: parameter %d (%s) is a scalar, got a tensor"
                            % (fname, k + 1, t))

    def slow(args):
        it = iter(args)
        for k, (kind, t) in enumerate(params):
            if kind != "stream":
                check(k, kind, t, next(it))

    def call(*args):
        if len(args) != len(user):
            raise TypeError("%s takes %d arguments (%d given)" % (fname, len(user), len(args)))
        cargs = []
        i = 0
        for kind, want in plan:
            if kind == "stream":
                cargs.append(stream())
                continue
            a = args[i]
            i += 1
            if kind == "ptr":
                if not (isinstance(a, tensor) and
                        (getattr(a, on_device) if on_device else a.device.type == "cpu") and
                        (want is None or a.dtype is want) and a.is_contiguous()):
                    slow(args)
                cargs.append(a.data_ptr())
            elif isinstance(a, tensor):
                slow(args)
            else:
                cargs.append(a)
        result = fn(*cargs)
        if last_error is not None:
            err = last_error()
            if err != 0:
                raise RuntimeError("CUDA error: %s (launched by %s)"
                                   % (error_string(err).decode(errors="replace"), fname))
        return result

    call.__name__ = fname
    return call


def raw_api_module():
    """The module `kforge` a raw-format candidate imports."""
    import types
    m = types.ModuleType("kforge")
    m.__doc__ = "kforge's raw build format: load_cuda(source) and load_cpp(source)."

    def load_cuda(source, name=None, extra_cflags=(), extra_ldflags=()):
        """Compiles CUDA source (no torch header) with nvcc; returns its extern "C"
        functions, which take tensors for pointers, numbers for scalars, and fill a
        cudaStream_t parameter with the current stream themselves."""
        return raw_load(source, True, name, extra_cflags, extra_ldflags)

    def load_cpp(source, name=None, extra_cflags=(), extra_ldflags=()):
        """Compiles C++ source (no torch header); returns its extern "C" functions."""
        return raw_load(source, False, name, extra_cflags, extra_ldflags)

    m.load_cuda = load_cuda
    m.load_cpp = load_cpp
    return m


def keep_unchanged_sources(cpp_extension):
    """torch < 2.1 rewrites main.cpp, cuda.cu and build.ninja on every load_inline, so
    ninja rebuilds a precompiled extension in every new process. Later versions write
    only on change (_maybe_write); give older ones the same behaviour through the
    module's own `open`, leaving every other open() alone."""
    if hasattr(cpp_extension, "_maybe_write") or "open" in vars(cpp_extension):
        return

    def open_(file, mode="r", *args, **kwargs):
        if mode == "w" and not args and not kwargs and isinstance(file, str) and \
                os.path.basename(file) in ("main.cpp", "cuda.cu", "build.ninja"):
            return WriteIfChanged(file)
        return builtins.open(file, mode, *args, **kwargs)

    cpp_extension.open = open_


# A candidate's load_inline calls, as its precompile made them, for the steps after it:
# each call's arguments (their canonical JSON's hash) and the module it loaded, beside the
# build (LOAD_MEMO). An execute or profile step whose candidate calls load_inline with the
# same arguments gets that module imported from the same file torch would import it from,
# without torch's extension machinery (setuptools, a compiler probe, ninja's up-to-date
# check: about 0.7 s of a warm evaluation on 2 cores). Anything else (other arguments, no
# record, a file gone, any other name of torch.utils.cpp_extension) is torch's own.
LOAD_MEMO = ".kforge-loads.json"
LOAD_MEMO_CAP = 1 << 20


def load_key(args, kwargs):
    """The hash of load_inline's arguments, or None when one is not plain data."""
    def plain(v):
        if v is None or isinstance(v, (str, bool, int, float)):
            return True
        if isinstance(v, (list, tuple)):
            return all(plain(x) for x in v)
        return False
    if not plain(list(args)) or not all(isinstance(k, str) and plain(v) for k, v in kwargs.items()):
        return None
    import hashlib
    text = json.dumps({"args": list(args), "kwargs": kwargs}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def load_memo_of(build_dir):
    if not build_dir:
        return {}
    try:
        with open(os.path.join(build_dir, LOAD_MEMO)) as f:
            memo = json.loads(f.read(LOAD_MEMO_CAP))
        return memo if isinstance(memo, dict) else {}
    except (OSError, ValueError):
        return {}


def inside(path, root):
    return os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)


def record_loads(cpp_extension, build_dir):
    """Wraps cpp_extension.load_inline so that each call that returns a module loaded
    from a file under build_dir is recorded in its LOAD_MEMO."""
    real = cpp_extension.load_inline
    memo = load_memo_of(build_dir)

    def load_inline(*args, **kwargs):
        module = real(*args, **kwargs)
        key = load_key(args, kwargs)
        path = getattr(module, "__file__", None)
        name = getattr(module, "__name__", None)
        if key and isinstance(path, str) and isinstance(name, str) and inside(path, build_dir):
            memo[key] = {"name": name, "file": os.path.relpath(path, build_dir)}
            try:
                write_json(os.path.join(build_dir, LOAD_MEMO), memo)
            except OSError:
                pass  # the steps after it go through torch's own load_inline
        return module

    cpp_extension.load_inline = load_inline


class LazyCppExtension(type(sys)):
    """torch.utils.cpp_extension for an execute or profile step whose precompile left a
    LOAD_MEMO: load_inline with recorded arguments imports the recorded module; any other
    call or name is the real module's, imported then (or the one a warm runner imported
    already), which from then on stands in sys.modules in its place."""

    def __init__(self, build_dir, memo):
        type(sys).__init__(self, "torch.utils.cpp_extension")
        self._kforge_build_dir = build_dir
        self._kforge_memo = memo
        held = sys.modules.get("torch.utils.cpp_extension")
        self._kforge_real = None if isinstance(held, LazyCppExtension) else held

    def _kforge_module(self):
        if self._kforge_real is None:
            if sys.modules.get("torch.utils.cpp_extension") is self:
                del sys.modules["torch.utils.cpp_extension"]
            import importlib
            self._kforge_real = importlib.import_module("torch.utils.cpp_extension")
            keep_unchanged_sources(self._kforge_real)
        sys.modules["torch.utils.cpp_extension"] = self._kforge_real
        import torch.utils
        torch.utils.cpp_extension = self._kforge_real
        return self._kforge_real

    def load_inline(self, *args, **kwargs):
        key = load_key(args, kwargs)
        hit = self._kforge_memo.get(key) if key else None
        if isinstance(hit, dict) and isinstance(hit.get("name"), str) and \
                isinstance(hit.get("file"), str):
            path = os.path.join(self._kforge_build_dir, hit["file"])
            if inside(path, self._kforge_build_dir) and os.path.isfile(path):
                spec = importlib.util.spec_from_file_location(hit["name"], path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
        return self._kforge_module().load_inline(*args, **kwargs)

    def __getattr__(self, attr):
        if attr.startswith("_kforge") or (attr.startswith("__") and attr.endswith("__")):
            raise AttributeError(attr)
        return getattr(self._kforge_module(), attr)


def is_device_event(ev):
    dt = getattr(ev, "device_type", None)
    return dt is not None and str(dt).split(".")[-1] in ("CUDA", "PrivateUse1")


def first_attr(obj, names):
    for n in names:
        v = getattr(obj, n, None)
        if v is not None:
            try:
                return float(v)
            except (TypeError, ValueError):
                continue
    return None


def stats(samples):
    if not samples:
        return {"mean_ms": None, "std_ms": None, "min_ms": None, "max_ms": None,
                "median_ms": None, "mad_ms": None, "trials": 0}
    n = len(samples)
    mean = sum(samples) / n
    var = sum((s - mean) ** 2 for s in samples) / n
    med = median_of(samples)
    return {"mean_ms": mean, "std_ms": math.sqrt(var), "min_ms": min(samples),
            "max_ms": max(samples), "median_ms": med,
            "mad_ms": median_of([abs(s - med) for s in samples]), "trials": n}


class gc_paused:
    """Python's cyclic collector off for a timed loop, back on after it (as timeit
    does): a collection that falls inside a call's events is timed as the call's, and
    each timed call makes Python objects (the fingerprint's, the inputs'), so over
    many calls the collector would run inside some. The garbage waits until the loop
    ends. Not what puts calls of 0.1-0.2 ms among 9 us ones in KernelBench-style loops
    on an H200: those came in bursts with the collector off too (tools/bench/README.md,
    kbcheck)."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self.was:
            gc.enable()
        return False


def median_of(xs):
    srt = sorted(xs)
    n = len(srt)
    return srt[n // 2] if n % 2 else 0.5 * (srt[n // 2 - 1] + srt[n // 2])


def steal_ticks(cores):
    """The time the hypervisor ran something else on these cores (/proc/stat's steal, in
    clock ticks), summed: a timing thread can lose its core this way with no switch the
    guest sees. 0 where there is no such count."""
    total = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                name, _, rest = line.partition(" ")
                if name[:3] == "cpu" and name[3:].isdigit() and int(name[3:]) in cores:
                    fields = rest.split()
                    total += int(fields[7]) if len(fields) > 7 else 0
    except (OSError, ValueError):
        return 0
    return total


def minor_faults():
    """The page faults this process took without I/O (getrusage's ru_minflt): a call that
    allocates memory its process has not touched yet pays one a page (fix_allocator)."""
    try:
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    except (AttributeError, OSError):
        return 0


def involuntary_switches():
    """The times this thread was preempted (getrusage RUSAGE_THREAD's ru_nivcsw): another
    runnable task on the timing core shows here."""
    try:
        return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
    except (AttributeError, OSError):
        return 0


# The standard error of a median of n trials, as a multiple of MAD / sqrt(n): MAD * 1.4826
# estimates a normal spread's sigma without the outliers, and a median's standard error
# is sqrt(pi / 2) = 1.2533 times a mean's.
MEDIAN_SE_PER_MAD = 1.4826 * 1.2533


def speedup_interval(rst, st, passes, rounds, statistic="mean"):
    """The speedup of a reference over a candidate timed in one process, by the request's
    statistic: "mean", the ratio of their means (KernelBench's speedup, on a GPU), or
    "median", the ratio of their medians (on the CPU, where a few trials preempted for
    milliseconds move a mean of 0.2 ms kernels by tens of percent from run to run); a
    95% interval for it from the trials' spread (the delta method on the log of the
    ratio: a relative standard error of sqrt(se_r^2/x_r^2 + se_c^2/x_c^2), with a mean's
    se sd/sqrt(n) and a median's MEDIAN_SE_PER_MAD * MAD/sqrt(n), so the interval stays
    positive); "spread" the interval's relative half-width; and the ratio of medians
    and of means both, whichever is the speedup."""
    pair = {"speedup": None, "ci95": None, "spread": None, "median_speedup": None,
            "mean_speedup": None, "statistic": statistic, "passes": passes,
            "rounds": rounds}
    if not rst or not st or not rst.get("mean_ms") or not st.get("mean_ms"):
        return pair
    pair["mean_speedup"] = rst["mean_ms"] / st["mean_ms"]
    if rst.get("median_ms") and st.get("median_ms"):
        pair["median_speedup"] = rst["median_ms"] / st["median_ms"]
    by_median = (statistic == "median" and pair["median_speedup"] is not None
                 and rst.get("mad_ms") is not None and st.get("mad_ms") is not None)
    pair["statistic"] = "median" if by_median else "mean"
    pair["speedup"] = pair["median_speedup"] if by_median else pair["mean_speedup"]
    n_r, n_c = rst.get("trials") or 0, st.get("trials") or 0
    if n_r > 1 and n_c > 1:
        def rel_sd(s):   # a trial's spread relative to the statistic
            return (MEDIAN_SE_PER_MAD * s["mad_ms"] / s["median_ms"] if by_median
                    else s["std_ms"] / s["mean_ms"])
        rel = math.sqrt(rel_sd(rst) ** 2 / n_r + rel_sd(st) ** 2 / n_c)
        pair["ci95"] = [pair["speedup"] * math.exp(-1.96 * rel),
                        pair["speedup"] * math.exp(1.96 * rel)]
        pair["spread"] = math.exp(1.96 * rel) - 1.0
    return pair


def fmt(x):
    if x is None or isinstance(x, str):
        return "n/a" if x is None else x
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return "%.6g" % x


def open_result_file():
    """fd 3 is the result pipe. Made close-on-exec so compilers and other grandchildren
    never hold it; without it (run by hand) the result goes to stdout."""
    try:
        os.fstat(RESULT_FD)
    except OSError:
        return os.fdopen(os.dup(1), "w")
    os.set_inheritable(RESULT_FD, False)
    return os.fdopen(RESULT_FD, "w")


def set_dumpable(on):
    """prctl(PR_SET_DUMPABLE): a process that is not dumpable cannot be traced, nor its
    memory read or written through /proc, by another process of the same user."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 1 if on else 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception as e:  # not Linux, or no libc: nothing to protect with
        log("prctl(PR_SET_DUMPABLE): %s" % first_line(e))


WARM_VISIBLE = None
CUDA_AHEAD = False      # start CUDA's driver before the request (cuda_ahead)
AHEAD_DONE = None       # what cuda_ahead did (details.cuda_ahead)


def warm_up(build):
    """--warm, --warm-load: started before its request, which may come much later, so the
    request's wait does not include importing torch. CUDA is not touched
    (CUDA_VISIBLE_DEVICES comes with the request), and while it waits no other process of
    the same user (an earlier candidate) can reach into it. build (--warm: the request
    will likely build, a precompile): torch's extension machinery too, about a third of
    the import; an execute or profile (--warm-load) loads its precompile's build without
    it (LOAD_MEMO), and imports it at need."""
    set_dumpable(False)
    global WARM_VISIBLE
    WARM_VISIBLE = os.environ.get("CUDA_VISIBLE_DEVICES")
    gc.disable()
    try:
        import torch  # noqa: F401  (a failure is reported by the request's own import)
        if build:
            import torch.utils.cpp_extension  # noqa: F401
    except BaseException:
        pass
    finally:
        gc.enable()


def cuda_ahead():
    """A warm runner for an execute (kforge tells it: warm.c, warm_cuda_ahead), before its
    request and so before its step holds the GPU: starts the CUDA driver (cuInit and
    torch's CUDA state, 0.1-0.2 s on the H100 hosts), which puts nothing on the GPU. Not
    the context: on an H200, processes making contexts beside an event-timed loop put
    over 100 us between its synchronize and its events in 1% of its calls (200-240 of
    24,000 in 4 s, up to 1.4 ms; 1-3 with processes starting the driver only, 7-25 with
    none), the gap by which a runner suspects work on a side stream, and the pace of
    any timing the host's launches bound; an honest softmax was judged suspect so. What
    fails is left for the request's own first CUDA call to report; what was done goes in
    details.cuda_ahead."""
    global AHEAD_DONE
    t0 = time.perf_counter()
    try:
        import torch
        torch._C._cuda_init()
        done = "driver"
    except BaseException as e:
        done = "failed: %s" % first_line(e)
    AHEAD_DONE = {"done": done, "s": round(time.perf_counter() - t0, 4)}


ZYGOTE_FD = 4
ZYGOTE_MSG_CAP = 4096
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
ZYGOTE_NVML = None      # the server's own value of NVML_CHECK, which its children get back
ZYGOTE_PID = None       # the server a forked runner came from (details.server)


def zygote():
    """--zygote: the fork server. Returns in a child only, with fds 0 to 3 its own (True);
    False when kforge closes the socket. Each child is forked twice (the middle process
    exits at once) so that it is reparented to kforge, a subreaper, which then waits for
    it, kills its group and reads its pipes as for a runner it started; it leads a process
    group of its own. The server is not dumpable and single-threaded when it forks (no
    thread of an import is copied half-way)."""
    import array
    import socket
    # Importing torch's extension machinery asks torch.cuda.is_available(), which starts
    # the CUDA runtime with the server's GPUs (none): every fork then found no GPU (seen
    # on the H200 host: is_available() False in a child given GPU 0). Asked through NVML
    # instead (torch's own switch for processes that fork), nothing of CUDA is started.
    global ZYGOTE_NVML, ZYGOTE_PID
    ZYGOTE_NVML = os.environ.get(NVML_CHECK)
    ZYGOTE_PID = os.getpid()
    os.environ[NVML_CHECK] = "1"
    warm_up(True)
    gc.freeze()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        # A child could not use CUDA (the driver cannot be forked once started), nor see
        # other GPUs than these: no server; kforge starts its runners the plain way.
        log("zygote: CUDA was initialised by the import; not serving")
        return False
    ctl = socket.socket(fileno=ZYGOTE_FD)
    listening = ctl.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
    sys.stdout.flush()
    sys.stderr.flush()
    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        log("zygote: threads after the import: %d; forking anyway" % len(os.listdir("/proc/self/task")))
    devnull = os.open(os.devnull, os.O_RDWR)   # a long wait: its pipe is read at the end only
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    if listening:
        # Started detached, with no result pipe at fd 3: held here, so that no descriptor
        # the server accepts or receives lands on 0 to 3, which a child's dup2s overwrite.
        try:
            os.fstat(3)
        except OSError:
            os.dup2(devnull, 3)
        if devnull > 3:
            os.close(devnull)
        return zygote_listen(ctl)
    os.close(devnull)
    while True:
        try:
            got = zygote_receive(ctl)
        except InterruptedError:
            continue
        except OSError:
            return False
        if got is None:
            return False
        msg, fds = got
        pid = zygote_fork(ctl, fds, msg) if len(fds) == 3 else 0
        if pid < 0:
            return True         # the child: a runner now
        for fd in fds:
            os.close(fd)
        try:
            ctl.sendall(b"%d\n" % pid)
        except OSError:
            return False


ZYGOTE_FDS = 4          # stdin, output, result and, for a watcher, the hold descriptor


def zygote_receive(conn):
    """One message and the descriptors that came with it, (msg, [fd, ...]); None at EOF."""
    import array
    import socket
    fds = array.array("i")
    msg, anc, _, _ = conn.recvmsg(ZYGOTE_MSG_CAP, socket.CMSG_SPACE(ZYGOTE_FDS * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    if not msg:
        for fd in fds:
            os.close(fd)
        return None
    return msg, list(fds)


ZYGOTE_TICK_S = 2       # how often a listening server looks at its socket and its clock
ZYGOTE_RECV_S = 10      # what a connection may take to send its message


def zygote_marks(path):
    """What a listening server must still match to serve: its socket file (removed or
    replaced: another server has it, or kforge's cache was emptied) and torch's version
    file (torch upgraded under it: its forks would run the old one; kforge's key for a
    server holds torch's identity too, so the next eval asks another). Not this file: it
    may be a copy in an eval's staging directory, gone with that eval, and the key holds
    the runner's code."""
    marks = []
    torch = sys.modules.get("torch")
    for p in (path,
              os.path.join(os.path.dirname(torch.__file__), "version.py") if torch else None):
        try:
            st = os.stat(p) if p else None
            marks.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) if st else None)
        except OSError:
            marks.append(None)
    return marks


SO_PEERPIDFD = 77        # socket(7), Linux 6.5: a pidfd of the peer, not a pid to reuse


def seccomp_filters(status):
    """How many seccomp filters /proc/<pid>/status says its process is under (the
    Seccomp_filters field, Linux 5.9; else 1 for filter mode); None where unreadable."""
    fields = {}
    for line in status.splitlines():
        k, _, v = line.partition(":")
        fields[k] = v.strip()
    if fields.get("Seccomp_filters", "").isdigit():
        return int(fields["Seccomp_filters"])
    if fields.get("Seccomp", "").isdigit():
        return 1 if fields["Seccomp"] == "2" else 0
    return None


def zygote_peer_trusted(conn):
    """Whether the process that connected may have a runner forked: never one under more
    seccomp filters than this server, which every runner is from its request on
    (sandbox/), and what it starts inherits. A Unix socket's path is no boundary to
    Landlock, so a candidate that finds this server's socket could otherwise ask for a
    runner and hand it a request without a sandbox. The peer is named by a pidfd where the
    kernel gives one (SO_PEERPIDFD), and checked to be alive after its status is read; else
    by SO_PEERCRED's pid."""
    import socket
    import struct
    pid, pidfd = None, -1
    try:
        pidfd = struct.unpack("i", conn.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD, 4))[0]
        with open("/proc/self/fdinfo/%d" % pidfd) as f:
            for line in f:
                if line.startswith("Pid:"):
                    pid = int(line.split()[1])
    except (OSError, ValueError, struct.error):
        pass
    try:
        if pid is None:
            pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                      struct.calcsize("3i")))[0]
        with open("/proc/%d/status" % pid) as f:
            theirs = seccomp_filters(f.read())
        with open("/proc/self/status") as f:
            mine = seccomp_filters(f.read())
        if pidfd >= 0:
            import signal
            try:    # the same process still, so the status read was its
                signal.pidfd_send_signal(pidfd, 0)
            except PermissionError:
                pass    # alive, another user's (kforge as root, this server as nobody)
        return theirs is not None and mine is not None and theirs <= mine
    except (OSError, ValueError, struct.error):
        return False
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def zygote_listen(lsock):
    """--zygote on a listening socket (--listen PATH --idle SECONDS): a server that
    outlives the kforge process that started it (kforge eval), for the next ones, which
    connect to PATH, one connection a request. Each request gets a watcher, a fork of
    this server that forks the runner, waits for it and reports its end on the
    connection (kb_spawn_fork_watched). The server ends once no runner it made still runs
    and nobody connected for the idle time since the last one ended, or its marks
    changed (zygote_marks); with an idle time of 0, only then. Returns False to end, True
    in a child that is a runner now."""
    import socket
    args = sys.argv[1:]
    path = args[args.index("--listen") + 1] if "--listen" in args[:-1] else ""
    try:
        idle = float(args[args.index("--idle") + 1]) if "--idle" in args[:-1] else 60.0
    except ValueError:
        idle = 60.0
    marks = zygote_marks(path)
    last = time.monotonic()
    watchers = set()
    lsock.settimeout(ZYGOTE_TICK_S)
    while True:
        if zygote_reap_watchers(watchers):
            last = time.monotonic()
        # --idle 0: a run's server, which its supervisor ends (warm.c, fb_warm_serve).
        ending = (idle > 0 and time.monotonic() - last > idle) or zygote_marks(path) != marks
        # Never while a runner it made still runs: its watcher would be orphaned, and
        # the kforge that started this server, a subreaper, would kill it as a stray.
        if ending and not watchers:
            return False
        if ending:      # no accept till one ends: then it counts as this server's use
            try:
                watchers.discard(os.wait()[0])
            except ChildProcessError:
                watchers.clear()
            last = time.monotonic()
            continue
        try:
            conn, _ = lsock.accept()
        except (socket.timeout, InterruptedError):
            continue
        except OSError:
            return False
        last = time.monotonic()
        if not zygote_peer_trusted(conn):
            log("zygote: a connection from a sandboxed process refused")
            conn.close()
            continue
        try:
            conn.settimeout(ZYGOTE_RECV_S)
            got = zygote_receive(conn)
        except OSError:
            got = None
        if got is None:
            conn.close()
            continue
        msg, fds = got
        if len(fds) not in (3, 4):
            for fd in fds:
                os.close(fd)
            conn.close()
            continue
        try:
            watcher = os.fork()
        except OSError:
            watcher = -1
        if watcher == 0:
            lsock.close()
            try:
                conn.settimeout(None)
                if zygote_watch(conn, fds, msg):
                    return True     # the runner
            except BaseException:
                pass
            os._exit(0)
        if watcher > 0:
            watchers.add(watcher)
        for fd in fds:
            os.close(fd)
        conn.close()    # the watcher's now (a failed fork: the client sees EOF)


def zygote_reap_watchers(watchers):
    """Reaps the watchers that ended; whether any did."""
    ended = False
    while watchers:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            watchers.clear()
            return True
        if pid == 0:
            break
        watchers.discard(pid)
        ended = True
    return ended


def zygote_watch(conn, fds, msg):
    """In a watcher: forks the runner (returns True in it), answers its pid, then passes on
    the signals the connection asks for (a number a line) until the runner ends, or kills
    it when the connection closes (its kforge is gone); then kills its group and its
    orphans (this process is their subreaper) and answers "exit STATUS RUNNING KILLED".
    A fourth descriptor (a kforge run's worker sends one: the write end of a pipe its
    supervisor reads) is held till then and never given to the runner, so that the
    supervisor, once its worker is dead, sees the pipe's end only when every runner the
    worker had, and everything those left, is gone (warm.c, fb_warm_hold). The watcher
    leads a group of its own: a server that dies, killed with its group, takes no
    watcher with it, and so no runner in the middle of its step."""
    import ctypes
    import select
    import signal
    req = zygote_request(msg)
    if req is None:
        conn.sendall(b"0\n")
        return False
    _, idle, visible, ahead, drop, name = req
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)     # PR_SET_CHILD_SUBREAPER: the runner's orphans come here
    me = os.getpid()
    child = os.fork()
    if child == 0:
        zygote_child(conn, fds[:3], me, visible, ahead, drop, fds[3:])
        return True
    if name:    # after the fork: the runner keeps the server's name
        libc.prctl(15, name.encode(), 0, 0, 0)     # PR_SET_NAME
    for fd in fds[:3]:
        os.close(fd)
    try:
        zygote_place(child, idle)
    except OSError:
        pass
    try:
        conn.sendall(b"%d\n" % child)
    except OSError:
        os.killpg(child, signal.SIGKILL)
    poll = select.poll()
    poll.register(conn.fileno(), select.POLLIN)
    pidfd = os.pidfd_open(child) if hasattr(os, "pidfd_open") else -1
    if pidfd >= 0:
        poll.register(pidfd, select.POLLIN)
    pending = b""
    while True:
        if os.waitid(os.P_PID, child, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break
        ready = dict(poll.poll(None if pidfd >= 0 else 50))
        if conn.fileno() in ready:
            try:
                data = conn.recv(256)
            except OSError:
                data = b""
            if not data:
                zygote_signal(child, signal.SIGKILL)
                poll.unregister(conn.fileno())
                continue
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip().isdigit() and 0 < int(line) < 65:
                    zygote_signal(child, int(line))
            pending = pending[-32:]
    # The zombie still holds its group id: what is left of the group dies with it.
    zygote_signal(child, signal.SIGKILL)
    _, status = os.waitpid(child, 0)
    running, killed = zygote_reap_orphans()
    try:
        conn.sendall(b"exit %d %d %d\n" % (status, running, killed))
    except OSError:
        pass
    return False


def zygote_signal(child, sig):
    try:
        os.killpg(child, sig)
    except OSError:
        pass


def zygote_reap_orphans():
    """Kills and reaps this watcher's children (the runner's orphans, re-parented here),
    round after round until none is left: (killed while running, found dead by a signal),
    as kforge's own subreaper counts them (fbw_reap_strays)."""
    import signal
    running, killed = 0, 0
    for _ in range(8):
        found = children()
        if not found:
            break
        for pid, dead in found:
            if not dead:
                try:
                    os.kill(pid, signal.SIGKILL)
                    running += 1
                except OSError:
                    pass
        for pid, dead in found:
            try:
                _, st = os.waitpid(pid, 0)
            except ChildProcessError:
                continue
            if dead and os.WIFSIGNALED(st):
                killed += 1
    return running, killed


def zygote_place(child, idle):
    """A forked runner's group (its own, whichever of the two runs first, as kb_spawn
    does; OSError where it cannot be set) and, with idle, SCHED_IDLE: set before the
    server answers, so that kforge's hand-over to normal comes after; where it cannot be,
    the child waits at the server's priority, doing nothing till then."""
    os.setpgid(child, child)
    if idle:
        try:
            os.sched_setscheduler(child, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass


def zygote_request(msg):
    """A fork request's (parent, idle, visible, ahead, drop, name): the pid the child must
    come to (0: none named), whether it waits under SCHED_IDLE, its CUDA_VISIBLE_DEVICES
    (None: unset), whether it starts CUDA's driver before its request (cuda_ahead), the
    (uid, gid) it runs as where a server kept as root makes it (None: the server's own),
    and the name its watcher takes ("kfw-PID", PID the requester's: feedback/warm.c,
    FB_WATCHER_NAME; "": none); None for a malformed one."""
    try:
        m = json.loads(msg.decode())
        parent, idle, visible = int(m.get("parent", 0)), bool(m.get("idle")), m.get("visible")
        ahead = bool(m.get("cuda_ahead"))
        drop = m.get("drop")
        drop = None if drop is None else (int(drop[0]), int(drop[1]))
        name = m.get("name") or ""
    except (ValueError, AttributeError, TypeError, IndexError, KeyError):
        return None
    if (visible is not None and not isinstance(visible, str)) or not isinstance(name, str) \
            or len(name) > 15:
        return None
    if drop is not None and (drop[0] <= 0 or drop[1] < 0):
        return None
    return parent, idle, visible, ahead, drop, name


def zygote_fork(ctl, fds, msg):
    """The child's pid (0: none could be made) in the server, -1 in the child."""
    req = zygote_request(msg)
    if req is None:
        return 0
    parent, idle, visible, ahead, drop, _ = req
    try:
        r, w = os.pipe()
    except OSError:
        return 0
    try:
        middle = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return 0
    if middle == 0:
        try:
            os.close(r)
            child = os.fork()
        except OSError:
            os._exit(1)
        if child == 0:
            try:
                os.close(w)
                zygote_child(ctl, fds, parent, visible, ahead, drop)
            except BaseException:
                os._exit(127)
            return -1
        try:
            zygote_place(child, idle)
            os.write(w, b"%d" % child)
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 32)
    os.close(r)
    os.waitpid(middle, 0)
    return int(got) if got.isdigit() else 0


def zygote_child(ctl, fds, parent, visible, ahead, drop, close=()):
    """In the forked child: its own group, the message's pipes as fds 0 to 3, close (the
    watcher's) closed, its user where drop names one (a server kept as root: every
    runner runs as runner.user, and its watcher stays root, out of its reach), killed with
    kforge (PR_SET_PDEATHSIG, armed once kforge is its parent: the middle process exits
    first, and after the drop, which clears it), and the GPUs its step is to see
    (visible: CUDA_VISIBLE_DEVICES, None for unset). The server never initialised CUDA,
    so the driver reads them at this process's first CUDA call, as it would in a runner
    started with them; ahead: what main starts of it before the request (cuda_ahead)."""
    import ctypes
    global WARM_VISIBLE, CUDA_AHEAD
    WARM_VISIBLE = visible
    CUDA_AHEAD = ahead
    for name, value in (("CUDA_VISIBLE_DEVICES", visible), (NVML_CHECK, ZYGOTE_NVML)):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    os.setpgid(0, 0)
    ctl.close()
    for fd in close:
        os.close(fd)
    for target, fd in zip((0, 1, 2, 3), (fds[0], fds[1], fds[1], fds[2])):
        os.dup2(fd, target)
    for fd in set(fds):
        if fd > 3:
            os.close(fd)
    if drop is not None:
        try:    # most to least privileged, as kforge's own spawn does (base/spawn.c)
            os.setgroups([drop[1]])
            os.setgid(drop[1])
            os.setuid(drop[0])
        except OSError:
            os._exit(127)
    deadline = time.monotonic() + 5
    while os.getppid() != parent and time.monotonic() < deadline:
        time.sleep(0.001)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != parent:
        os._exit(127)


def take_request_context(req):
    """The environment, working directory and CPU limit a fresh runner would have been
    started with for this request (a warm runner was started before it was known)."""
    env = req.get("env")
    if isinstance(env, dict):
        # torch may have read the device count at its import: the GPUs are fixed now.
        if env.get("CUDA_VISIBLE_DEVICES") != WARM_VISIBLE:
            raise ValueError("this warm runner was started with CUDA_VISIBLE_DEVICES=%r; "
                             "the request needs %r" % (WARM_VISIBLE, env.get("CUDA_VISIBLE_DEVICES")))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = None
    if req.get("work_dir"):
        os.chdir(req["work_dir"])
    limit = req.get("rlimit_cpu_s")
    if isinstance(limit, int) and limit > 0:
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(used.ru_utime + used.ru_stime) + 1 + limit
        cur_soft, cur_hard = resource.getrlimit(resource.RLIMIT_CPU)
        if cur_soft == resource.RLIM_INFINITY or soft < cur_soft:
            hard = soft + 1 if cur_hard == resource.RLIM_INFINITY else min(soft + 1, cur_hard)
            resource.setrlimit(resource.RLIMIT_CPU, (min(soft, hard), hard))
    set_dumpable(True)


def confine(req):
    """The sandbox kforge asks for (req["sandbox"]: libkforge_sandbox.so and its policy,
    feedback/policy.c), applied to this process before any candidate or problem code
    runs: Landlock and seccomp (sandbox/sandbox.h). Its report ("landlock=7 scope=1
    seccomp=1 threads=1"), None where none was asked for; raises RuntimeError where it
    cannot be applied as asked (strict and a layer missing, more than one thread).
    Python's own paths are shown back: a venv may live anywhere, under /tmp say."""
    sbx = req.get("sandbox")
    if not isinstance(sbx, dict):
        return None
    import ctypes
    spec = str(sbx.get("spec", ""))
    for p in sorted(set(sys.path) | {sys.prefix, sys.exec_prefix, sys.base_prefix}):
        if p and os.path.isabs(p) and "\n" not in p and os.path.exists(p):
            spec += "visible %s\n" % p
    report = ctypes.create_string_buffer(512)
    try:
        lib = ctypes.CDLL(str(sbx.get("lib")))
    except OSError as e:
        raise RuntimeError("cannot load the sandbox library: %s" % first_line(e))
    lib.kforge_sandbox_apply.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    if lib.kforge_sandbox_apply(spec.encode(), report, len(report)) != 0:
        raise RuntimeError(report.value.decode(errors="replace"))
    return report.value.decode(errors="replace")


# The namespace's init (pid 1): reaps what comes to it until the runner (argv[2]) ends,
# then kills what is left (kill(-1) from a namespace's init reaches every other process
# in it) and counts it, and tells the waiter "STATUS LEFT" (argv[1], a pipe). As pid 1 it
# gets no signal it has no handler for but SIGKILL and SIGSTOP, from inside or out.
NS_INIT = r"""
import os, signal, sys, time
SETTLE_S = @SETTLE_S@
signal.signal(signal.SIGINT, signal.SIG_DFL)
w, runner, status = int(sys.argv[1]), int(sys.argv[2]), None
ack = int(sys.argv[3])
os.set_blocking(ack, False)
# Whether /proc is this namespace's (its mount may fail: enter_namespaces' proc=0): there
# the init is pid 1. Elsewhere it lists the host's processes, none of them ours to wait for.
try:
    OWN_PROC = os.readlink("/proc/self") == "1"
except OSError:
    OWN_PROC = False


def running():
    # The threads of the namespace (this /proc is its own) not yet stopped: each woken
    # by the SIGSTOP runs until it stops.
    n = 0
    for p in os.listdir("/proc"):
        if not p.isdigit() or p == "1":
            continue
        try:
            tasks = os.listdir("/proc/%s/task" % p)
        except OSError:
            continue
        for t in tasks:
            try:
                with open("/proc/%s/task/%s/stat" % (p, t), "rb") as f:
                    st = f.read()
            except OSError:
                continue
            state = st[st.rfind(b")") + 2:st.rfind(b")") + 3]
            if state not in (b"T", b"t", b"Z", b"X"):
                n += 1
    return n


def freeze(sig, frame):
    # The judge's (through the pidfd the runner sent it, Runner.freeze): every process
    # of the namespace stopped (SIGUSR1) or resumed (SIGUSR2) while the reference is
    # timed, the runner and whatever it started alike; then acknowledged to the judge.
    # A stop is acknowledged once every thread of the namespace has stopped ("s"), or
    # SETTLE_S on with some still running ("u", counted in details.judge.unsettled):
    # kill returns with each of them only woken to stop, still runnable on the cores
    # the judge times on, where a GPU runner has a dozen threads (CUDA's, torch's).
    # Without a /proc of the namespace there is nothing to look at: "s" at once.
    stop = sig == signal.SIGUSR1
    try:
        os.kill(-1, signal.SIGSTOP if stop else signal.SIGCONT)
    except OSError:
        pass
    answer = b"s" if stop else b"c"
    if stop and OWN_PROC:
        end = time.monotonic() + SETTLE_S
        while True:
            try:
                left = running()
            except OSError:
                left = 0
            if not left or time.monotonic() > end:
                break
            os.sched_yield()
        answer = b"u" if left else b"s"
    try:
        os.write(ack, answer)
    except OSError:
        pass


if os.getpid() == 1:
    signal.signal(signal.SIGUSR1, freeze)
    signal.signal(signal.SIGUSR2, freeze)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1, signal.SIGUSR2})
while status is None:
    try:
        pid, st = os.waitpid(-1, 0)
    except InterruptedError:
        continue
    except ChildProcessError:
        status = 0x7f00
        break
    if pid == runner:
        status = st
left = 0
# Only as a namespace's init: anywhere else kill(-1) reaches every process of the user,
# all of the host's as root.
if os.getpid() == 1:
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
while True:
    try:
        os.waitpid(-1, 0)
        left += 1
    except InterruptedError:
        continue
    except ChildProcessError:
        break
os.write(w, b"%d %d\n" % (status, left))
""".replace("@SETTLE_S@", repr(FREEZE_SETTLE_S))

# The waiter: the process kforge started (or the fork server forked), outside the
# namespace. Waits for the init (argv[2]), writes argv[4] and the count of what the runner
# left on the result pipe (argv[3], kforge's FB_NS_TRAILER) and ends as the runner did: its exit code, or its signal (raised on itself; this
# process is no namespace's init, so the signal takes it).
NS_WAIT = r"""
import os, resource, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
r, init, res = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
while True:
    try:
        _, st = os.waitpid(init, 0)
        break
    except InterruptedError:
        continue
    except ChildProcessError:
        st = 0x7f00
        break
got = b""
while len(got) < 64:
    try:
        chunk = os.read(r, 64)
    except InterruptedError:
        continue
    if not chunk:
        break
    got += chunk
parts = got.split()
if len(parts) == 2 and all(x.isdigit() for x in parts):
    st, left = int(parts[0]), int(parts[1])
    try:
        if res >= 0:
            os.write(res, b"%s%d\n" % (sys.argv[4].encode(), left))
    except OSError:
        pass
if os.WIFSIGNALED(st):
    sig = os.WTERMSIG(st)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        signal.signal(sig, signal.SIG_DFL)
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)
os._exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 127)
"""


def enter_namespaces(req):
    """Puts this runner in namespaces of its own where the request asks (its sandbox's
    "namespaces", feedback/contain.c): a PID namespace, where it is pid 2 beneath an init
    of its own and sees, signals and outlives nothing of the host's processes (all it
    leaves dies with the namespace); a mount namespace with a /proc of that namespace
    alone; and, not being root, a user namespace (mapped to its own ids) to make them in.
    This process stays outside, made the waiter (NS_WAIT): kforge's pid for the runner,
    which ends as the runner does. Returns what was made ("pid=1 mount=1 proc=1 user=1"),
    None where nothing was asked; raises RuntimeError where it cannot be made. Before
    the sandbox (confine), which refuses all of these calls afterwards."""
    sbx = req.get("sandbox")
    if not isinstance(sbx, dict) or not sbx.get("namespaces"):
        return None
    import ctypes
    try:
        lib = ctypes.CDLL(str(sbx.get("lib")))
    except OSError as e:
        raise RuntimeError("cannot load the sandbox library: %s" % first_line(e))
    libc = ctypes.CDLL(None, use_errno=True)
    user = os.geteuid() != 0
    report = ctypes.create_string_buffer(256)
    lib.kforge_sandbox_enter_namespaces.argtypes = [ctypes.c_int, ctypes.c_char_p,
                                                    ctypes.c_size_t]
    if lib.kforge_sandbox_enter_namespaces(int(user), report, len(report)) != 0:
        raise RuntimeError(report.value.decode(errors="replace"))
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    # The init's acknowledgements of the judge's freezes (NS_INIT): its write end the
    # init's, its read end the runner's until it hands it to the judge (candidate_pidfd).
    ack_r, ack_w = os.pipe()
    init = os.fork()
    if init == 0:
        # Pid 1: a /proc of this namespace, then the runner, then the init's loop.
        proc = lib.kforge_sandbox_mount_proc() == 0
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: the waiter gone, so is it
        runner = os.fork()
        if runner == 0:
            global NS_ACK_FD
            os.close(r)
            os.close(w)
            os.close(ack_w)
            NS_ACK_FD = ack_r
            if user:
                # The capabilities its user namespace gave it, which it no longer needs.
                hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
                libc.capset(hdr, (ctypes.c_uint32 * 6)())
            return "pid=1 mount=1 proc=%d user=%d" % (proc, user)
        try:
            os.close(r)
            os.close(ack_r)
            os.set_inheritable(w, True)
            os.set_inheritable(ack_w, True)
            # A freeze signalled before NS_INIT has its handlers would end the init (the
            # signals' default): blocked across the exec, NS_INIT unblocks them.
            import signal
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGUSR2})
            os.execv(sys.executable, [sys.executable, "-S", "-I", "-c", NS_INIT, str(w),
                                      str(runner), str(ack_w)])
        finally:
            os._exit(127)
    # This process never returns to the runner's code from here: the runner is the child.
    try:
        os.close(w)
        os.close(ack_r)
        os.close(ack_w)
        os.set_inheritable(r, True)
        try:
            os.set_inheritable(RESULT_FD, True)
            res = RESULT_FD
        except OSError:     # run by hand: the result goes to stdout, no trailer
            res = -1
        # The trailer (kforge's FB_NS_TRAILER) precedes the count of what the runner left.
        os.execv(sys.executable, [sys.executable, "-S", "-I", "-c", NS_WAIT, str(r), str(init),
                                  str(res), str(sbx.get("trailer", ""))])
    finally:
        os._exit(127)


def pin_cpus(req):
    """The cores the request gives this step (kforge keeps a run's builds and timings on
    cores of their own, on the CPU): those of them this process may use, as a sorted
    list; None where none is given or none is usable (left where it is)."""
    cpus = req.get("cpus")
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return None
    try:
        # The kernel keeps the cores of the set that this process may use at all.
        os.sched_setaffinity(0, {int(c) for c in cpus})
        return sorted(os.sched_getaffinity(0))
    except (OSError, ValueError, TypeError, OverflowError) as e:
        log("cpus %s not taken: %s" % (cpus, e))
    return None


# glibc's allocator, fixed in every runner before torch is imported (so in a fork server
# too, whose children inherit it): every block up to MALLOC_MMAP_THRESHOLD comes from the
# heap, which is trimmed back to the system only past MALLOC_TRIM_THRESHOLD. Left to glibc,
# a block over 128 KiB is a mapping of its own (its pages faulted in on first use) until a
# free raises that threshold, and the heap is trimmed at twice it, so where a process's
# tensors came from, and what each call paid in faults, followed its past: the demo's L2_2
# reference (three ops on 4 MB tensors) took 3.45 ms a call in the judges of three runs of
# the same kernels, 6.50 ms in two, and 7.9-9.0 ms in the baseline's own process; alone,
# 8.3-9.0 ms with every such block mapped and 2.9-3.4 ms without (tools/bench/README.md,
# repeat). Fixed, every process starts from one policy; larger blocks are mapped every
# call, alike for both sides.
MALLOC_MMAP_THRESHOLD = 32 << 20    # glibc's largest (half its 64 MiB heap on 64-bit)
MALLOC_TRIM_THRESHOLD = 1 << 30
MALLOC_POLICY = None                # "fixed", or why not (details.allocator)


def fix_allocator():
    global MALLOC_POLICY
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
        ok = mallopt(-3, MALLOC_MMAP_THRESHOLD) == 1 and mallopt(-1, MALLOC_TRIM_THRESHOLD) == 1
        MALLOC_POLICY = "fixed" if ok else "mallopt refused"
    except (OSError, AttributeError):    # no glibc (musl has no mallopt)
        MALLOC_POLICY = "no mallopt"


def main():
    faulthandler.enable(file=sys.stderr, all_threads=True)
    fix_allocator()
    forked = "--zygote" in sys.argv[1:]
    if forked and not zygote():
        return 0
    global CUDA_AHEAD
    warm = forked or "--warm" in sys.argv[1:] or "--warm-load" in sys.argv[1:]
    result_file = open_result_file()
    if warm and not forked:
        warm_up("--warm" in sys.argv[1:])
        CUDA_AHEAD = "--cuda-ahead" in sys.argv[1:]
    if warm and CUDA_AHEAD:
        cuda_ahead()
    try:
        raw = sys.stdin.read()
        req = json.loads(raw)
        if not isinstance(req, dict):
            raise ValueError("the request is not a JSON object")
        if warm:
            take_request_context(req)
    except Exception as e:
        r = Runner({"mode": "unknown"}, result_file)
        r.flag("runner_error")
        r.details["candidate_ran"] = False
        r.details["exception"] = describe_exception(e)
        r.write_result("runtime_error", "bad request: %s" % first_line(e))
        return 0
    pinned = pin_cpus(req)
    try:
        spaces = enter_namespaces(req)
    except Exception as e:
        spaces = "none: %s" % first_line(e)
        if (req.get("sandbox") or {}).get("strict"):
            r = Runner({"mode": req.get("mode", "unknown")}, result_file)
            r.flag("sandbox_failed")
            r.details["sandbox"] = "namespaces: " + first_line(e)
            r.write_result("runtime_error", "the runner's namespaces could not be made: %s" %
                           first_line(e))
            return 0
    try:
        confined = confine(req)
    except Exception as e:
        r = Runner({"mode": req.get("mode", "unknown")}, result_file)
        r.flag("sandbox_failed")
        r.details["sandbox"] = first_line(e)
        r.write_result("runtime_error", "the sandbox could not be applied: %s" % first_line(e))
        return 0
    log("mode=%s device=%s precision=%s problem=%s candidate=%s cpus=%s" % (
        req.get("mode"), req.get("device"), req.get("precision"), req.get("problem"),
        req.get("candidate"), pinned))
    runner = Runner(req, result_file)
    # How this process came to run the step: forked from a fork server that imported
    # torch, started ahead to import it and then handed the request, or started for it.
    runner.details["start"] = "forked" if forked else "warm" if warm else "cold"
    if forked:
        runner.details["server"] = ZYGOTE_PID
    if AHEAD_DONE is not None:
        runner.details["cuda_ahead"] = AHEAD_DONE
    if pinned is not None:
        runner.details["cpus"] = pinned
    if confined is not None:
        runner.details["sandbox"] = confined
    if spaces is not None:
        runner.details["namespaces"] = spaces
    runner.run()
    return 0


if __name__ == "__main__":
    code = main()
    # The result is written: skip interpreter teardown, where candidate threads, atexit
    # hooks or extension destructors could hang or crash after the fact.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)
