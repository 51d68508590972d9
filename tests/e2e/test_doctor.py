#!/usr/bin/env python3
"""kforge doctor as a new user meets it: on this machine every item of the cpu device has
its line and doctor exits 0; --json lists the same items, and its ok fields agree with the
exit status (and the tiny extension, built with --fresh, is not built again); with
KFORGE_PYTHON pointing at a Python that cannot import torch (a bare venv) doctor names
that Python and torch, and exits 1; --device cuda without a GPU names
the missing driver and GPU and exits 1 (on a GPU host it lists each GPU instead); a bad
config is refused with file:line:column.

Doctor builds a tiny C++ extension (the self-test), so this test needs the real Python with
torch and the headers a build needs: a machine that lacks them fails it, as it should."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

ITEM_KEYS = {"item", "ok", "required", "detail", "version", "path", "fix"}
COMMON = ["cc", "c++", "python", "torch", "torch-headers", "pybind11", "python-headers", "ninja"]
CONTAIN = ["runner-user", "network", "sandbox", "disk", "cache"]
CPU_ITEMS = COMMON + ["cpu-extension"] + CONTAIN
CUDA_ITEMS = COMMON + ["torch-cuda", "nvcc", "driver", "gpu", "cuda-extension", "triton",
                       "cupti", "perf-counters"] + CONTAIN
LINE = re.compile(r"^(ok|FAIL|warn) +(\S+(?: \d+)?) +(.*)$")

work = scratch("e2e-doctor")
# The user's own choice of Python must not leak in: doctor chooses as a run would. The
# self-test's pass records are this test's own: another test that makes kforge forget
# them (an env_error run) may run beside it.
base_env = {k: v for k, v in os.environ.items() if k != "KFORGE_PYTHON"}
base_env["XDG_CACHE_HOME"] = os.path.join(work, "cache")


def doctor(*args, env=None):
    e = dict(base_env)
    e.update(env or {})
    p = subprocess.run([BIN, "doctor"] + list(args), capture_output=True, text=True,
                       timeout=900, env=e)
    return p


def show(p):
    return "exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr[-4000:])


def item_lines(p):
    """{item: (status, detail)} from doctor's text lines, in order."""
    lines = {}
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if m:
            check(m.group(2) not in lines, "item %s twice:\n%s" % (m.group(2), show(p)))
            lines[m.group(2)] = (m.group(1), m.group(3))
    return lines


def base_name(item):
    return "gpu" if re.fullmatch(r"gpu( \d+)?", item) else item


def check_json(p, want_items):
    """--json: an array of items with the documented keys, the same items as the text
    output, and ok fields that agree with the exit status."""
    try:
        items = json.loads(p.stdout)
    except ValueError as e:
        fail("doctor --json is not JSON (%s):\n%s" % (e, show(p)))
    check(isinstance(items, list) and items, "doctor --json: not a non-empty array")
    for it in items:
        check(set(it) == ITEM_KEYS, "doctor --json item keys %s" % sorted(it))
        check(isinstance(it["ok"], bool) and isinstance(it["required"], bool), "ok/required not booleans: %s" % it)
        check(it["ok"] or it["fix"], "a failed item without a fix: %s" % it)
    names = [base_name(it["item"]) for it in items]
    check(sorted(set(names)) == sorted(want_items),
          "doctor --json items %s, want %s" % (names, want_items))
    broken = [it["item"] for it in items if it["required"] and not it["ok"]]
    check(p.returncode == (1 if broken else 0),
          "exit %d but required items that failed: %s" % (p.returncode, broken))
    return {it["item"]: it for it in items}


# --help, and the overview lists the command.
p = kforge("doctor", "--help")
check(p.stdout.startswith("usage: kforge doctor"), "doctor --help: %r" % p.stdout[:80])
check("kforge doctor" in kforge("--help").stdout, "the overview does not list doctor")

# This machine, device cpu: every item has its line, each required one ok, exit 0. --fresh
# builds the tiny extension even where a pass is remembered.
p = doctor("--device", "cpu", "--fresh")
lines = item_lines(p)
check(p.returncode == 0, "doctor --device cpu on this machine:\n" + show(p))
check(list(lines) == CPU_ITEMS, "doctor --device cpu items %s, want %s" % (list(lines), CPU_ITEMS))
for item in CPU_ITEMS:
    if item != "network":  # not isolated is a warning: runs go on
        check(lines[item][0] == "ok", "%s: %s\n%s" % (item, lines[item], show(p)))
check(re.search(r"\d+\.\d+", lines["torch"][1]), "the torch line has no version: %s" % (lines["torch"],))
check(re.search(r"^/\S+python\S* \(Python \d", lines["python"][1]), "python line: %s" % (lines["python"],))
check(lines["torch-headers"][1].endswith("torch/extension.h"), "torch-headers: %s" % (lines["torch-headers"],))
check(lines["pybind11"][1].endswith("pybind11/pybind11.h"), "pybind11: %s" % (lines["pybind11"],))
check(re.search(r"builds in \d+\.\d s and runs in \d+\.\d+ s$", lines["cpu-extension"][1]),
      "cpu-extension with --fresh: %s" % (lines["cpu-extension"],))
check(re.search(r"GiB free", lines["disk"][1]), "disk: %s" % (lines["disk"],))
check(re.search(r"^runners: strict: landlock ABI \d+, scope (on|off), seccomp (on|off)", lines["sandbox"][1]),
      "sandbox: %s" % (lines["sandbox"],))
check(re.search(r"^\d+ builds, \d+\.\d\d GiB \(a run's start trims to runner.cache_max_gb 20\)$",
                lines["cache"][1]), "cache: %s" % (lines["cache"],))
check("can run kforge" in p.stdout.splitlines()[-1], "no verdict line:\n" + show(p))

p = doctor("--device", "cpu", "--json")
items = check_json(p, CPU_ITEMS)
check(p.returncode == 0 and list(items) == CPU_ITEMS, "doctor --json: %s" % list(items))
check(items["python"]["path"] and os.path.isabs(items["python"]["path"]), "python path: %s" % items["python"])
check(items["torch"]["version"], "torch version: %s" % items["torch"])
check("passed before" in items["cpu-extension"]["detail"],
      "the second doctor must reuse the pass: %s" % items["cpu-extension"])

# A Python that cannot import torch, named by KFORGE_PYTHON: doctor says which and why.
bare = bare_python(work)
env = {"KFORGE_PYTHON": bare}
p = doctor("--device", "cpu", env=env)
lines = item_lines(p)
check(p.returncode == 1, "doctor with a Python without torch must exit 1:\n" + show(p))
check(lines.get("python", ("",))[0] == "FAIL" and bare in lines["python"][1] and "torch" in lines["python"][1],
      "the python line must name %s and torch: %s" % (bare, lines.get("python")))
check(lines.get("torch", ("",))[0] == "FAIL" and "No module named 'torch'" in lines["torch"][1],
      "the torch line must say why: %s" % (lines.get("torch"),))
check(lines.get("cpu-extension", ("",))[0] == "FAIL", "cpu-extension passed without torch:\n" + show(p))
check(re.search(r"cannot work: .*python", p.stdout.splitlines()[-1]), "verdict:\n" + show(p))
items = check_json(doctor("--device", "cpu", "--json", env=env), CPU_ITEMS)
check(not items["python"]["ok"] and items["python"]["path"] == bare, "json python item: %s" % items["python"])
# kforge eval checks the environment as a run does before its first request: with that
# Python, the selftest's environment error and its fix, and the environment's exit status.
p = subprocess.run([BIN, "eval", "--problem", os.path.join(HOME, "problems", "level1", "4_SumReduction.py"),
                    "--kernel", os.path.join(HOME, "tests", "data", "honest", "cpu", "own_sum_reshape.py"),
                    "--device", "cpu"], capture_output=True, text=True, timeout=900,
                   env=dict(base_env, **env))
check(p.returncode == 5 and re.search(r"kforge: environment error \((python|torch)\): .*; fix: ", p.stderr),
      "kforge eval with a Python without torch: exit %d, stderr %r" % (p.returncode, p.stderr[-2000:]))

# --device cuda: no GPU here names the driver and GPU; a GPU host lists each GPU.
has_gpu = subprocess.run(["sh", "-c", "command -v nvidia-smi >/dev/null && nvidia-smi -L"],
                         capture_output=True).returncode == 0
p = doctor("--device", "cuda")
lines = item_lines(p)
names = [base_name(i) for i in lines]
check([n for k, n in enumerate(names) if k == 0 or names[k - 1] != n] == CUDA_ITEMS,
      "doctor --device cuda items %s, want %s" % (names, CUDA_ITEMS))
if not has_gpu:
    check(p.returncode == 1, "doctor --device cuda without a GPU must exit 1:\n" + show(p))
    check(lines["driver"][0] == "FAIL" and "driver" in lines["driver"][1], "driver: %s" % (lines["driver"],))
    check(lines["gpu"][0] == "FAIL" and "no NVIDIA GPU" in lines["gpu"][1], "gpu: %s" % (lines["gpu"],))
    check(re.search(r"cannot work: .*driver.*gpu", p.stdout.splitlines()[-1]), "verdict:\n" + show(p))
else:
    check("gpu 0" in lines and lines["gpu 0"][0] == "ok", "a GPU host lists gpu 0:\n" + show(p))
check_json(doctor("--device", "cuda", "--json"), CUDA_ITEMS)

# A config that does not load: one line with file:line:column, exit 2, no checks.
bad = write_config(os.path.join(work, "bad.yaml"),
                   "name: doc\nproblems: {dir: .}\nllm: {provider: replay, replay_dir: .}\n"
                   "runner:\n  pyhton: /usr/bin/python3\n")
p = doctor(bad)
check(p.returncode == 2 and re.fullmatch(r"kforge: .*bad\.yaml:5:3: runner\.pyhton: unknown key.*\n", p.stderr)
      and p.stdout == "", "a bad config:\n" + show(p))
p = doctor("--device", "gpu")
check(p.returncode == 2 and "--device is cpu, cuda or auto" in p.stderr, "bad --device:\n" + show(p))
print("ok: doctor")
