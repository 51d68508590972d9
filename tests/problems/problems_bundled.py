#!/usr/bin/env python3
"""The bundled problems and the demo's recorded responses.

Problems (problems/level{N}/{id}_{Name}.py): each loads on its own, builds
Model(*get_init_inputs()), runs forward on get_inputs() (CPU tensors, sizes read from
module globals) within a second, and returns a finite tensor of the expected shape whose
values are not degenerate (an all-zero or constant answer must not pass allclose at the
fp32 tolerance). problems/subsets/demo.txt lists exactly these problems.

Responses (configs/demo_responses/{cpu,cuda}/{key}/{1,2,3}.md in KernelBench's format, and
configs/demo_responses/raw/{cpu,cuda}/... in the raw build format, the same trajectories):
every problem has three turns for each device in each format; each answer has some prose
and exactly one ```python block, or no block at all where expected.json says no_code. The
block is valid Python that defines ModelNew with Model's constructor signature and builds
under a name that is unique per format, device, problem and turn: with load_inline
(cpu answers cpp_sources only, cuda answers cuda_sources with a __global__ kernel), or in
the raw format with load_cpp / load_cuda from sources that include no torch header (cuda
ones with a __global__ kernel). No extension is built here.

Exits 0 on success, 1 on a failure, 77 (skip) when this Python cannot import torch.
"""
import ast
import importlib.util
import json
import math
import os
import re
import sys
import time

HOME = os.environ.get("KFORGE_HOME") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBLEMS = os.path.join(HOME, "problems")
RESPONSES = os.path.join(HOME, "configs", "demo_responses")
DEVICES = ("cpu", "cuda")
TURNS = 3
ATOL = 1e-4
# Reference forward, one call, on a small CPU: CPU seconds (process time), the work
# itself, which other jobs on a busy CI machine do not stretch as they do wall time.
MAX_FORWARD_S = 2.0

EXPECTED_SHAPES = {
    "L1_1_ReLU": (1024, 2048),
    "L1_2_LeakyReLU": (2048, 1024),
    "L1_3_RowSoftmax": (4096, 256),
    "L1_4_SumReduction": (64, 1, 64),
    "L1_5_Matmul": (256, 256),
    "L2_1_Linear_ReLU_Scale": (128, 256),
    "L2_2_Add_Mul_Tanh": (1024, 1024),
    "L3_1_TinyMLP": (64, 128),
}
# The build formats' answer trees (the raw format's beside KernelBench's, the same
# trajectories) and the call that builds each device's operator.
FORMATS = (("load_inline", RESPONSES), ("raw", os.path.join(RESPONSES, "raw")))
LOADERS = {"load_inline": {"cpu": "load_inline", "cuda": "load_inline"},
           "raw": {"cpu": "load_cpp", "cuda": "load_cuda"}}
TORCH_HEADER_ROOTS = ("torch", "ATen", "c10", "pybind11", "Python.h")
STATUSES = {"ok", "compile_error", "value_mismatch", "shape_mismatch", "runtime_error",
            "no_code"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def problem_files():
    out = {}
    for level_dir in sorted(os.listdir(PROBLEMS)):
        m = re.fullmatch(r"level(\d+)", level_dir)
        if not m:
            continue
        for name in sorted(os.listdir(os.path.join(PROBLEMS, level_dir))):
            if not name.endswith(".py"):
                continue
            stem = name[:-3]
            if not re.fullmatch(r"\d+_[A-Za-z0-9_]+", stem):
                fail("%s/%s: file name is not {id}_{Name}.py" % (level_dir, name))
                continue
            out["L%s_%s" % (m.group(1), stem)] = os.path.join(PROBLEMS, level_dir, name)
    return out


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def init_params(tree, cls):
    """Positional parameter names of cls.__init__ (without self), or None."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return [a.arg for a in item.args.args[1:]]
            return []
    return None


def check_problem(torch, key, path):
    mod = load(path, "problem_" + key)
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, attr):
            fail("%s: defines no %s" % (key, attr))
            return
    torch.manual_seed(0)
    init = mod.get_init_inputs()
    if not isinstance(init, list):
        fail("%s: get_init_inputs() returned %s, not a list" % (key, type(init).__name__))
        return
    model = mod.Model(*init)
    inputs = mod.get_inputs()
    if not isinstance(inputs, list) or not inputs:
        fail("%s: get_inputs() returned no list of inputs" % key)
        return
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or x.device.type != "cpu" or x.dtype != torch.float32:
            fail("%s: input %d is not a float32 CPU tensor" % (key, i))
            return
    with torch.no_grad():
        model(*inputs)  # first call pays one-time costs
        t0 = time.process_time()
        out = model(*inputs)
        dt = time.process_time() - t0
    if not isinstance(out, torch.Tensor):
        fail("%s: forward returned %s, not a tensor" % (key, type(out).__name__))
        return
    want = EXPECTED_SHAPES.get(key)
    if want is None:
        fail("%s: no expected shape recorded in this test" % key)
    elif tuple(out.shape) != want:
        fail("%s: output shape %s, expected %s" % (key, tuple(out.shape), want))
    if not bool(torch.isfinite(out).all()):
        fail("%s: output has NaN or inf" % key)
        return
    amax = float(out.abs().max())
    span = float(out.max() - out.min())
    above = float((out.abs() > 10 * ATOL).float().mean())
    if amax <= 100 * ATOL or span <= 100 * ATOL or above < 0.25:
        fail("%s: output is degenerate (max |y| %.3g, span %.3g, %.0f%% above 1e-3)"
             % (key, amax, span, 100 * above))
    # An all-zero answer must fail the harness's allclose.
    if torch.allclose(out, torch.zeros_like(out), atol=ATOL, rtol=ATOL):
        fail("%s: zeros pass allclose against the output" % key)
    if dt > MAX_FORWARD_S:
        fail("%s: reference forward took %.2f CPU s (limit %.1f s)" % (key, dt, MAX_FORWARD_S))
    # Inputs come from module globals read at call time, and a seed fixes them.
    torch.manual_seed(123)
    a = mod.get_inputs()
    torch.manual_seed(123)
    b = mod.get_inputs()
    if not all(torch.equal(x, y) for x, y in zip(a, b)):
        fail("%s: get_inputs() is not determined by the torch seed" % key)
    print("ok: problem %-24s out %-16s max|y| %-8.3g forward %.1f CPU ms"
          % (key, tuple(out.shape), amax, dt * 1e3))
    return init_params(ast.parse(open(path).read()), "Model")


def fences(text):
    """(info, body) for each complete ``` block, and the number of fence lines."""
    lines = text.split("\n")
    blocks, nfence, open_info, body = [], 0, None, []
    for line in lines:
        m = re.match(r" {0,3}(```+|~~~+)\s*(\S*)", line)
        if m:
            nfence += 1
            if open_info is None:
                open_info, body = m.group(2), []
            else:
                blocks.append((open_info, "\n".join(body)))
                open_info = None
            continue
        if open_info is not None:
            body.append(line)
    return blocks, nfence, open_info is not None


def check_response(fmt, key, device, turn, path, expected, model_params, names):
    where = "%s%s/%s/%d.md" % ("raw/" if fmt == "raw" else "", device, key, turn)
    text = open(path, encoding="utf-8").read()
    blocks, nfence, unclosed = fences(text)
    if unclosed:
        fail("%s: a code block is left open" % where)
        return
    if expected == "no_code":
        if nfence:
            fail("%s: expected no code block, found %d fence lines" % (where, nfence))
        elif len(text.strip()) < 200:
            fail("%s: the no-code answer is too short to read as an answer" % where)
        return
    if len(blocks) != 1 or blocks[0][0] != "python":
        fail("%s: expected exactly one ```python block, found %s"
             % (where, [b[0] or "(untagged)" for b in blocks]))
        return
    prose = text.split("```")[0].strip()
    if len(prose) < 40:
        fail("%s: no reasoning before the code block" % where)
    code = blocks[0][1]
    try:
        tree = ast.parse(code, where)
    except SyntaxError as e:
        fail("%s: the code block is not valid Python: %s" % (where, e))
        return
    params = init_params(tree, "ModelNew")
    if params is None:
        fail("%s: defines no class ModelNew" % where)
    elif model_params is not None and params != model_params:
        fail("%s: ModelNew(%s) does not match Model(%s)"
             % (where, ", ".join(params), ", ".join(model_params)))
    loader = LOADERS[fmt][device]
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "id", getattr(n.func, "attr", None)) == loader]
    if len(calls) != 1:
        fail("%s: expected one %s call, found %d" % (where, loader, len(calls)))
        return
    kw = {k.arg: k.value for k in calls[0].keywords}
    name = kw.get("name")
    prefix = "kf_raw_" if fmt == "raw" else "kf_"
    if not isinstance(name, ast.Constant) or not isinstance(name.value, str):
        fail("%s: %s name= is not a string literal" % (where, loader))
    else:
        n = name.value
        if n in names:
            fail("%s: %s name %r already used by %s" % (where, loader, n, names[n]))
        names[n] = where
        if not n.startswith(prefix) or not n.endswith("_%s_t%d" % (device, turn)):
            fail("%s: %s name %r is not %s..._%s_t%d" % (where, loader, n, prefix, device,
                                                         turn))
    if fmt == "raw":
        # The raw format's sources include no torch header (llm/prompts/statement_*_raw.md).
        headers = re.findall(r"#\s*include\s*[<\"]([^>\"]+)", code)
        torch_headers = [h for h in headers if h.split("/")[0] in TORCH_HEADER_ROOTS]
        if torch_headers:
            fail("%s: a raw-format answer includes %s" % (where, torch_headers))
        if "load_inline" in code:
            fail("%s: a raw-format answer calls load_inline" % where)
    elif "functions" not in kw or "cpp_sources" not in kw:
        fail("%s: load_inline needs cpp_sources= and functions=" % where)
    if device == "cpu":
        if "cuda_sources" in kw or "__global__" in code:
            fail("%s: a cpu answer uses CUDA" % where)
    elif "__global__" not in code or (fmt == "load_inline" and "cuda_sources" not in kw):
        fail("%s: a cuda answer has no %s with a __global__ kernel"
             % (where, "source" if fmt == "raw" else "cuda_sources"))


def main():
    try:
        import torch
    except ImportError:
        print("SKIP: %s cannot import torch" % sys.executable)
        return 77
    torch.set_num_threads(1)

    problems = problem_files()
    if len(problems) < 8:
        fail("only %d bundled problems (want at least 8)" % len(problems))
    if set(problems) != set(EXPECTED_SHAPES):
        fail("problems %s differ from this test's list %s"
             % (sorted(problems), sorted(EXPECTED_SHAPES)))
    if not any(k.startswith("L2_") for k in problems) or not any(k.startswith("L3_") for k in problems):
        fail("levels 2 and 3 must both have problems")

    model_params = {}
    for key, path in problems.items():
        try:
            model_params[key] = check_problem(torch, key, path)
        except Exception as e:  # one broken problem must not hide the others
            fail("%s: %s: %s" % (key, type(e).__name__, e))

    subset = os.path.join(PROBLEMS, "subsets", "demo.txt")
    listed = [l.strip() for l in open(subset) if l.strip() and not l.startswith("#")]
    if sorted(listed) != sorted(problems) or len(listed) != len(set(listed)):
        fail("subsets/demo.txt lists %s, the bundled problems are %s" % (listed, sorted(problems)))

    # every bundled subset is a valid problems.subset of the bundled problems
    for name in sorted(os.listdir(os.path.join(PROBLEMS, "subsets"))):
        keys = [l.split("#")[0].strip() for l in open(os.path.join(PROBLEMS, "subsets", name))]
        keys = [k for k in keys if k]
        unknown = [k for k in keys if k not in problems]
        if not keys or unknown or len(keys) != len(set(keys)):
            fail("subsets/%s: unknown %s, %d keys, duplicates %s" % (name, unknown, len(keys),
                                                                    len(keys) != len(set(keys))))

    expected = json.load(open(os.path.join(RESPONSES, "expected.json")))
    names = {}
    outcomes = {s: 0 for s in STATUSES}
    for (fmt, root), device in [(f, d) for f in FORMATS for d in DEVICES]:
        ddir = os.path.join(root, device)
        extra = set(os.listdir(ddir)) - set(problems)
        if extra:
            fail("%s %s: responses for unknown problems %s" % (fmt, device, sorted(extra)))
        for key in sorted(problems):
            exp = expected.get(device, {}).get(key)
            if not isinstance(exp, list) or len(exp) != TURNS or not set(exp) <= STATUSES:
                fail("expected.json: %s/%s must list %d outcomes from %s"
                     % (device, key, TURNS, sorted(STATUSES)))
                continue
            pdir = os.path.join(ddir, key)
            files = sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []
            if files != ["%d.md" % t for t in range(1, TURNS + 1)]:
                fail("%s %s/%s: expected 1.md..%d.md, found %s" % (fmt, device, key, TURNS,
                                                                   files))
                continue
            for turn in range(1, TURNS + 1):
                outcomes[exp[turn - 1]] += 1
                check_response(fmt, key, device, turn, os.path.join(pdir, "%d.md" % turn),
                               exp[turn - 1], model_params.get(key), names)
        # The demo has to exercise the whole loop on each device.
        last = [expected[device][k][-1] for k in problems if k in expected.get(device, {})]
        if "ok" not in last or all(s == "ok" for s in last):
            fail("%s: the demo needs tasks that end correct and at least one that does not" % device)
    for s in ("ok", "compile_error", "value_mismatch", "no_code"):
        if outcomes[s] == 0:
            fail("no recorded turn is meant to end in %s" % s)
    print("ok: %d responses checked, intended outcomes %s" % (len(names), json.dumps(outcomes)))

    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all bundled problems and demo responses are well-formed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
