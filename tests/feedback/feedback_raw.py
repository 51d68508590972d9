#!/usr/bin/env python3
"""feedback_raw.py: the raw build format (eval.format: raw) in feedback/kforge_runner.py,
driven directly on the CPU. A raw candidate's C++ has no torch header and is called through
the runner's ctypes glue (`from kforge import load_cpp`): it builds in a fraction of a
second, its build is reused by the execute step, a compile error comes back with the
compiler's message, and a call whose arguments do not fit the extern "C" prototype
(dtype, device, contiguity, count) is refused rather than run on the wrong bytes. The
prototype parser is checked on its own with sources it must accept and refuse. Where a GPU
is present, a cudaStream_t parameter is checked to be filled with the stream current at the
call (the default one, then a side stream).

Skips (77) without a Python that imports torch.
"""
import glob
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from feedback_runner import RUNNER, Env, check, finish, scratch_dir, torch_python  # noqa: E402

PARSER_CASES = r'''
import json, sys
sys.argv = ["kforge_runner"]
import importlib.util
spec = importlib.util.spec_from_file_location("kr", %r)
kr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kr)
out = {}
def parse(name, src):
    try:
        out[name] = {k: [ret, args] for k, (ret, args) in kr.raw_prototypes(src).items()}
    except TypeError as e:
        out[name] = "TypeError: " + str(e)
parse("plain", 'extern "C" void f(const float* __restrict__ a, float *b, int64_t n, cudaStream_t s) {}')
parse("comments", '// extern "C" void hidden(float* a) {}\n/* extern "C" void h2(int x) {} */\nextern "C" int g(void) { return 0; }')
parse("scalars", 'extern "C" double h(unsigned int u, long long l, float x, bool b, size_t z) { return 0; }')
parse("declared", 'extern "C" void d(const __half* x, void* y);\nextern "C" void d(const __half* x, void* y) {}')
parse("double_ptr", 'extern "C" void bad(float** p) {}')
parse("struct", 'struct S { int a; };\nextern "C" void bad2(S s) {}')
parse("none", '__global__ void k(float* a) {}')
parse("ret_ptr", 'extern "C" float* bad3(int n) { return 0; }')
print(json.dumps(out))
'''


def check_parser(python):
    p = subprocess.run([python, "-c", PARSER_CASES % RUNNER], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    check(p.returncode == 0, "the parser cases ran: %s" % p.stderr[-2000:])
    if p.returncode != 0:
        return
    out = __import__("json").loads(p.stdout.splitlines()[-1])
    check(out["plain"] == {"f": ["void", [["ptr", "float"], ["ptr", "float"],
                                           ["scalar", "int64_t"], ["stream", "cudaStream_t"]]]},
          "plain prototype: %s" % out["plain"])
    check(out["comments"] == {"g": ["int", []]}, "commented-out prototypes: %s" % out["comments"])
    check(out["scalars"] == {"h": ["double", [["scalar", "unsigned int"], ["scalar", "long long"],
                                              ["scalar", "float"], ["scalar", "bool"],
                                              ["scalar", "size_t"]]]},
          "scalar parameters: %s" % out["scalars"])
    check(out["declared"] == {"d": ["void", [["ptr", "__half"], ["ptr", "void"]]]},
          "declared then defined: %s" % out["declared"])
    for name, why in (("double_ptr", "float** p"), ("struct", "S s"), ("none", "no extern"),
                      ("ret_ptr", "returns float")):
        check(isinstance(out[name], str) and out[name].startswith("TypeError"),
              "%s is refused: %s" % (name, out[name]))
    check("parameter 1 (float** p)" in out["double_ptr"], "the refusal names the parameter: %s"
          % out["double_ptr"])


# On a GPU: the cudaStream_t parameter is filled with the stream current at the call (the
# default one, then a side stream), read the way torch keeps it (raw_stream_getter), and a
# CPU tensor for a CUDA pointer is refused. Prints {"skip": true} where CUDA is absent.
STREAM_CASE = r'''
import json, os, sys, tempfile
sys.argv = ["kforge_runner"]
import importlib.util
spec = importlib.util.spec_from_file_location("kr", %r)
kr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kr)
import torch
if not torch.cuda.is_available():
    print(json.dumps({"skip": True}))
    sys.exit(0)
os.environ["TORCH_EXTENSIONS_DIR"] = tempfile.mkdtemp()
src = """
#include <cuda_runtime.h>
#include <cstdint>
__global__ void put(long long *out, long long v) { *out = v; }
extern "C" void which_stream(int64_t *out, cudaStream_t s) {
    put<<<1, 1, 0, s>>>((long long *)out, (long long)(intptr_t)s);
}
"""
m = kr.raw_load(src, True, "kf_test_which_stream")
out = torch.zeros(1, dtype=torch.int64, device="cuda")
res = {}
m.which_stream(out)
torch.cuda.synchronize()
res["default"] = [int(out.item()), torch.cuda.current_stream().cuda_stream]
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    m.which_stream(out)
side.synchronize()
res["side"] = [int(out.item()), side.cuda_stream]
try:
    m.which_stream(torch.zeros(1, dtype=torch.int64))
    res["cpu"] = "no error"
except ValueError as e:
    res["cpu"] = str(e)
print(json.dumps(res))
'''


def check_stream(python):
    p = subprocess.run([python, "-c", STREAM_CASE % RUNNER], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check(False, "the stream case gave no answer: %s" % p.stderr[-2000:])
        return
    if res.get("skip"):
        print("note: no GPU: the stream parameter is not checked here")
        return
    check(res["default"][0] == res["default"][1], "the default stream: %s" % res["default"])
    check(res["side"][0] == res["side"][1] != res["default"][1],
          "a side stream made current: %s" % res["side"])
    check("is a tensor on cpu, not cuda" in res["cpu"], "a CPU tensor: %s" % res["cpu"])


def main():
    python = torch_python()
    if python is None:
        print("SKIP: no Python that imports torch")
        return 77
    tmp = scratch_dir("feedback_raw")
    env = Env(python, tmp)
    check_parser(python)
    check_stream(python)

    # A build well under a second, no torch header anywhere, reused by the execute step.
    res, log, rc, _ = env.run("precompile", candidate="cand_raw_add.py")
    check(res.get("status") == "ok" and res.get("compiled"), "raw precompile: %s %s"
          % (res.get("status"), res.get("details", {}).get("message")))
    libs = glob.glob(os.path.join(env.build, "kforge_test_raw_add_*", "libkforge_test_raw_add.so"))
    check(len(libs) == 1, "one shared object built: %s" % libs)
    srcs = glob.glob(os.path.join(env.build, "kforge_test_raw_add_*", "*.cpp"))
    check(len(srcs) == 1 and "torch" not in open(srcs[0]).read(), "the source has no torch header")
    mtime = os.stat(libs[0]).st_mtime_ns if libs else 0
    res, log, rc, _ = env.run("execute", candidate="cand_raw_add.py", time_reference=True)
    check(res.get("status") == "ok" and res.get("correct"), "raw execute: %s %s"
          % (res.get("status"), res.get("details", {}).get("message")))
    check((res.get("candidate") or {}).get("details", {}).get("compile_s", 99) < 5,
          "the execute step loaded, not built")
    check(libs and os.stat(libs[0]).st_mtime_ns == mtime, "the build was reused")
    check(isinstance(res.get("speedup"), float) and res["speedup"] > 0, "a speedup: %s"
          % res.get("speedup"))

    # The compiler's own words come back; the build directory holds no half-made library.
    res, log, rc, _ = env.run("precompile", candidate="cand_raw_compile_error.py")
    details = res.get("details", {})
    check(res.get("status") == "compile_error", "raw compile error: %s" % res.get("status"))
    check("undeclared_thing" in details.get("compiler_output", ""),
          "the compiler's error is in compiler_output: %s" % details.get("compiler_output", "")[:500])
    check(details.get("message", "").startswith("Compilation failed: Error building extension"),
          "compile error message: %s" % details.get("message"))
    check(not glob.glob(os.path.join(env.build, "kforge_test_raw_compile_error_*", "*.so")),
          "no library left by the failed build")

    # int* for float32 tensors: refused at the call, named.
    res, log, rc, _ = env.run("execute", candidate="cand_raw_bad_type.py")
    msg = res.get("details", {}).get("message", "")
    check(res.get("status") == "runtime_error" and "needs a torch.int32 tensor, got torch.float32" in msg,
          "a dtype mismatch is refused: %s %s" % (res.get("status"), msg))
    return finish(tmp, "feedback_raw: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
