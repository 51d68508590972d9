#!/usr/bin/env python3
"""The duty bench's model for real problems (llm.provider command; tools/bench/duty
--problems): after --latency seconds it answers any problem with a kernel generated from
the problem itself, so a run over a whole problem set (KernelBench's level 1, say) does
the GPU work those problems ask for without a model:

  - the reference's classes, renamed (Model -> TorchBody), do the computation in PyTorch;
  - ModelNew holds a TorchBody and passes its output through a CUDA (or C++) copy kernel
    built in kforge's raw format (a second or two to build), so that a kernel is built,
    loaded and launched on every turn.

The reply's text names the task and turn, so no two replies share a build or an
evaluation: each one is compiled and executed for real. kforge judges such a kernel
`suspect` (PyTorch does the work in forward), which changes nothing in how it is run.

Standard library only; stdin is the request JSON (docs/models.md), stdout the reply."""
import argparse
import ast
import json
import re
import sys
import time

ARCH = re.compile(r"You are given the following architecture:\s*```python\n(.*?)\n```", re.S)

COPY_CUDA = r'''
#include <cuda_runtime.h>
#include <cstdint>

// %(tag)s
__global__ void copy_bytes_kernel(const unsigned char* __restrict__ src,
                                  unsigned char* __restrict__ dst, int64_t n, bool aligned) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t vec = aligned ? n / 16 : 0;
    const uint4* s4 = reinterpret_cast<const uint4*>(src);
    uint4* d4 = reinterpret_cast<uint4*>(dst);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < vec; i += stride)
        d4[i] = s4[i];
    for (int64_t i = vec * 16 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = src[i];
}

extern "C" void copy_bytes(const void* src, void* dst, int64_t nbytes, cudaStream_t stream) {
    if (nbytes == 0) return;
    const int threads = 256;
    int64_t blocks = (nbytes / 16 + threads - 1) / threads;
    if (blocks < 1) blocks = 1;
    if (blocks > 65535) blocks = 65535;
    const bool aligned = ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15) == 0;
    copy_bytes_kernel<<<(int)blocks, threads, 0, stream>>>(
        static_cast<const unsigned char*>(src), static_cast<unsigned char*>(dst), nbytes, aligned);
}
'''

COPY_CPP = r'''
#include <cstdint>
#include <cstring>

// %(tag)s
extern "C" void copy_bytes(const void* src, void* dst, int64_t nbytes) {
    std::memcpy(dst, src, (size_t)nbytes);
}
'''

REPLY = '''I keep the reference computation and pass its output through a copy kernel of my own.

```python
import torch
import torch.nn as nn
from kforge import %(loader)s

%(body)s


copy_source = r"""%(source)s"""

copy_ext = %(loader)s(copy_source, name="%(name)s")


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.body = TorchBody(*args, **kwargs)

    def forward(self, *args):
        out = self.body(*args).contiguous()
        result = torch.empty_like(out)
        copy_ext.copy_bytes(out, result, out.numel() * out.element_size())
        return result
```
'''


def body_of(problem):
    """The problem's code without its input functions and imports, Model renamed."""
    tree = ast.parse(problem)
    keep = [n for n in tree.body
            if not (isinstance(n, ast.FunctionDef) and n.name in ("get_inputs", "get_init_inputs"))
            and not isinstance(n, (ast.Import, ast.ImportFrom))]
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    text = "\n".join(ast.get_source_segment(problem, n) for n in imports + keep)
    return re.sub(r"\bModel\b", "TorchBody", text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before answering")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = ap.parse_args()
    req = json.load(sys.stdin)
    prompt = req["messages"][-1]["content"]
    m = ARCH.search(prompt)
    if not m:
        print("wrap_model: no architecture block in the prompt", file=sys.stderr)
        return 1
    tag = "%s turn %s" % (req.get("task", "?"), req.get("turn", "?"))
    name = "kf_duty_" + re.sub(r"[^A-Za-z0-9]", "_", tag)
    time.sleep(a.latency)
    cuda = a.device == "cuda"
    sys.stdout.write(REPLY % {
        "loader": "load_cuda" if cuda else "load_cpp", "body": body_of(m.group(1)),
        "source": (COPY_CUDA if cuda else COPY_CPP) % {"tag": tag}, "name": name})
    return 0


if __name__ == "__main__":
    sys.exit(main())
