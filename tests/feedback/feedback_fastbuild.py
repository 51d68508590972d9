#!/usr/bin/env python3
"""feedback_fastbuild.py: the runner's fast builds (kforge_runner.py install_fast_cxx and
its compiler wrapper), driven directly on the CPU with real compilers and torch.

- a selftest with a writable pch_dir leaves the wrapper and precompiled headers there
- a candidate then builds through the precompiled header (the fast compiler is a shim
  that records each call and runs the real clang++, or the real c++ where clang++ is
  absent) and is correct
- with the fast compiler failing, the same candidate still builds (the original command)
- a candidate with an error gets the original compiler's message, not the fast one's
- a pch_dir it may not write is only read: nothing is added to it
Skips (77) without a Python that imports torch.
"""
import json
import os
import shutil
import stat
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from feedback_runner import DATA, Env, check, finish, scratch_dir, torch_python  # noqa: E402

SHIM = """#!/bin/sh
echo "$@" >> %(log)s
exec %(real)s "$@"
"""


def shim(path, log, real):
    with open(path, "w") as f:
        f.write(SHIM % {"log": log, "real": real})
    os.chmod(path, 0o755)


NVCC_SHIM = """#!/bin/sh
for a in "$@"; do case "$a" in *.cu) echo "$a" >> %(log)s; cat "$a" >> %(log)s;; esac; done
if [ -n "$FAIL_SLIM" ]; then for a in "$@"; do case "$a" in *.cu)
  grep -q 'torch/types.h' "$a" && exit 1;; esac; done; fi
exit 0
"""


def test_nvcc_wrapper(wrapper, tmp):
    import subprocess
    log, shim_path = os.path.join(tmp, "nvcc.log"), os.path.join(tmp, "nvcc-shim")
    with open(shim_path, "w") as f:
        f.write(NVCC_SHIM % {"log": log})
    os.chmod(shim_path, 0o755)
    cu = os.path.join(tmp, "cuda.cu")
    with open(cu, "w") as f:
        f.write("// line 1\n#include <torch/extension.h>\n__global__ void k() {}\n")

    def nvcc(fail_slim=False, src=cu):
        open(log, "w").close()
        env = dict(os.environ, KFORGE_NVCC_REAL=shim_path)
        if fail_slim:
            env["FAIL_SLIM"] = "1"
        rc = subprocess.run([wrapper, "-O3", "-c", src, "-o", src + ".o"], env=env).returncode
        with open(log) as f:
            return rc, f.read()
    rc, seen = nvcc()
    check(rc == 0 and seen.count(".cu\n") == 1 and ".kforge-slim.cu" in seen,
          "nvcc wrapper: one compile, of the slim copy (%r)" % seen)
    check(seen.splitlines()[2:4] == ["#include <torch/types.h>", "__global__ void k() {}"],
          "nvcc wrapper: torch/types.h on the include's own line (%r)" % seen)
    rc, seen = nvcc(fail_slim=True)
    check(rc == 0 and seen.count(".cu\n") == 2 and seen.rstrip().endswith("__global__ void k() {}")
          and "%s\n// line 1\n#include <torch/extension.h>" % cu in seen,
          "nvcc wrapper: the slim compile failed, the original command ran (%r)" % seen)
    plain = os.path.join(tmp, "plain.cu")
    with open(plain, "w") as f:
        f.write("__global__ void k() {}\n")
    rc, seen = nvcc(src=plain)
    check(rc == 0 and seen.count(".cu\n") == 1 and "kforge-slim" not in seen,
          "nvcc wrapper: a .cu without torch/extension.h goes straight through (%r)" % seen)


def pch_files(d):
    out = []
    for root, _, files in os.walk(d):
        out += [os.path.join(root, f) for f in files if f.endswith((".pch", ".gch"))]
    return out


def main():
    python = torch_python()
    if python is None:
        print("SKIP: no Python that imports torch")
        return 77
    tmp = scratch_dir("feedback_fastbuild")
    e = Env(python, tmp)
    pch = os.path.join(tmp, "pch")
    os.makedirs(pch)
    fast = shutil.which("clang++") or shutil.which("c++")
    log = os.path.join(tmp, "fast.log")
    ok_shim, bad_shim = os.path.join(tmp, "fast-ok"), os.path.join(tmp, "fast-bad")
    shim(ok_shim, log, fast)
    shim(bad_shim, log, "/bin/false")
    print("scratch %s, fast compiler %s" % (tmp, fast), flush=True)

    def run(mode, candidate=None, build=None, fast_cxx=ok_shim, pch_dir=pch):
        return e.run(mode, candidate=candidate, build=build, pch_dir=pch_dir,
                     extra_env={"KFORGE_FAST_CXX": fast_cxx})

    r, logtext, _, _ = run("selftest")
    check(r.get("status") == "ok", "selftest: ok (%s)" % r.get("details", {}).get("message"))
    wrappers = [f for f in os.listdir(pch) if f.startswith("kforge-") and f.endswith("-g++")]
    check(len(wrappers) == 1, "selftest: the wrapper is in pch_dir (%s)" % os.listdir(pch))
    # Three warmed flag sets (none, -O2, -O3), two headers: -O3 shares -O2's
    # (PCH_SAME_LEVEL in the runner).
    check(len(pch_files(pch)) == 2, "selftest: a precompiled header per warmed flag set, "
          "-O3's shared with -O2 (%s)" % pch_files(pch))
    made = set(pch_files(pch))

    # fast path: a -O2 candidate (a warmed flag set), through the recording shim
    open(log, "w").close()
    r, logtext, _, _ = run("execute", candidate="cand_ext_add.py",
                           build=os.path.join(tmp, "b1"))
    check(r.get("status") == "ok" and r.get("correct") is True,
          "fast path: built and correct (%s)" % r.get("details", {}).get("message"))
    with open(log) as f:
        calls = f.read()
    check("-include" in calls and "main.kforge-slim.cpp" in calls,
          "fast path: the fast compiler compiled main.cpp's slim copy with the header (%r)"
          % calls[:300])
    check(set(pch_files(pch)) == made, "fast path: no new precompiled header for -O2")
    used = [c.split("-include-pch ")[1].split()[0] for c in calls.splitlines()
            if "-include-pch " in c]
    check(len(set(used)) == 1 and used[0] in made, "fast path: one of the selftest's headers "
          "(%s)" % used)

    def at_level(level):
        """cand_ext_add.py built at another level, through the recording shim: the fast
        compiler's calls on main.cpp's slim copy."""
        path = os.path.join(tmp, "cand_ext_add_%s.py" % level[1:])
        with open(os.path.join(DATA, "cand_ext_add.py")) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace('extra_cflags=["-O2"]', 'extra_cflags=["%s"]' % level)
                        .replace('name="kforge_test_ext"', 'name="kforge_test_ext_%s"' % level[1:]))
        open(log, "w").close()
        r, _, _, _ = run("execute", candidate=path, build=os.path.join(tmp, "b1-" + level[1:]))
        check(r.get("status") == "ok" and r.get("correct") is True,
              "%s: built and correct (%s)" % (level, r.get("details", {}).get("message")))
        check(set(pch_files(pch)) == made, "%s: no new precompiled header" % level)
        with open(log) as f:
            return [c for c in f.read().splitlines() if "main.kforge-slim.cpp" in c]

    # an -O3 candidate: the -O2 header, no new one, and correct
    calls = at_level("-O3")
    check(len(calls) == 1 and " -O3 " in calls[0] and "-include-pch %s " % used[0] in calls[0],
          "-O3: compiled at -O3 with the -O2 header %s (%r)" % (used[0], calls))
    # flags no selftest warmed (-O1): the slim copy with the header's text included
    # beside it, no precompiled header made or used, and correct
    calls = at_level("-O1")
    check(len(calls) == 1 and " -O1 " in calls[0] and "-include-pch" not in calls[0] and
          "main.kforge-slim.h" in calls[0].split("-include ")[1].split()[0],
          "-O1: the fast compiler on the slim copy with the header's text, no precompiled "
          "header (%r)" % calls)
    slim = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(tmp, "b1")) for f in fs
            if f == "main.kforge-slim.cpp"]
    check(len(slim) == 1, "fast path: one slim copy of main.cpp (%s)" % slim)
    with open(slim[0]) as f:
        text = f.read()
    with open(os.path.join(os.path.dirname(slim[0]), "main.cpp")) as f:
        orig = f.read()
    check("torch/extension.h" not in text and text.count("\n") == orig.count("\n") and
          os.path.getmtime(slim[0]) == os.path.getmtime(slim[0][:-len(".kforge-slim.cpp")] + ".cpp"),
          "fast path: the slim copy has torch/types.h for torch/extension.h, the same lines, "
          "its source's date")

    # The load memo: a precompile records each load_inline call's module; an execute with
    # the same build loads it without torch's extension machinery, and a record that does
    # not match the call (other arguments) leaves the call to torch.
    memo_build = os.path.join(tmp, "b1")  # cand_ext_add.py's build: the same call
    r, _, _, _ = run("precompile", candidate="cand_ext_memo.py", build=memo_build)
    check(r.get("status") == "ok", "memo precompile: %s" % r.get("status"))
    with open(os.path.join(memo_build, ".kforge-loads.json")) as f:
        memo = json.load(f)
    check(len(memo) == 1 and list(memo.values())[0]["name"] == "kforge_test_ext" and
          os.path.isfile(os.path.join(memo_build, list(memo.values())[0]["file"])),
          "memo precompile: one load recorded, its module's file beside the build: %s" % memo)
    r, _, _, _ = run("execute", candidate="cand_ext_memo.py", build=memo_build)
    # What the candidate's import printed is in its own runner's result (the judge's is
    # the execute's).
    out = (r.get("candidate") or {}).get("details", {}).get("compiler_output", "")
    check(r.get("status") == "ok" and r.get("correct"), "memo execute: %s" % r.get("status"))
    check("memo-probe cpp_extension=LazyCppExtension setuptools=False" in out,
          "memo execute: loaded without torch's extension machinery: %r" % out[-300:])
    with open(os.path.join(memo_build, ".kforge-loads.json"), "w") as f:
        json.dump({"0" * 64: list(memo.values())[0]}, f)
    r, _, _, _ = run("execute", candidate="cand_ext_memo.py", build=memo_build)
    out = (r.get("candidate") or {}).get("details", {}).get("compiler_output", "")
    check(r.get("status") == "ok" and r.get("correct"), "memo miss: %s" % r.get("status"))
    check("memo-probe cpp_extension=module setuptools=True" in out,
          "memo miss: torch's own load_inline: %r" % out[-300:])

    # code that needs torch's C++ frontend: the slim file fails, the original builds it
    open(log, "w").close()
    r, _, _, _ = run("execute", candidate="cand_ext_frontend.py", build=os.path.join(tmp, "b4"))
    check(r.get("status") == "ok" and r.get("correct") is True,
          "frontend: built by the original compiler and correct (%s)"
          % r.get("details", {}).get("message"))
    with open(log) as f:
        check("main.kforge-slim.cpp" in f.read(), "frontend: the slim path was tried first")

    # the fast compiler fails: the original command builds it all the same
    r, _, _, _ = run("execute", candidate="cand_ext_add.py", build=os.path.join(tmp, "b2"),
                     fast_cxx=bad_shim)
    check(r.get("status") == "ok" and r.get("correct") is True,
          "fallback: built by the original compiler and correct (%s)"
          % r.get("details", {}).get("message"))

    # a compile error is the original compiler's
    r, _, _, _ = run("precompile", candidate="cand_compile_error.py",
                     build=os.path.join(tmp, "b3"))
    out = r.get("details", {}).get("compiler_output", "")
    check(r.get("status") == "compile_error", "compile error: compile_error")
    check("was not declared in this scope" in out and "use of undeclared identifier" not in out,
          "compile error: g++'s message, not the fast compiler's (%r)" % out[-400:])

    # the nvcc wrapper (PYTORCH_NVCC on cuda), with a stand-in nvcc that records what it
    # compiled and fails on the slim header when told to
    nvccs = [f for f in os.listdir(pch) if f.startswith("kforge-") and f.endswith("-nvcc")]
    check(len(nvccs) == 1, "selftest: the nvcc wrapper is in pch_dir (%s)" % os.listdir(pch))
    if nvccs:
        test_nvcc_wrapper(os.path.join(pch, nvccs[0]), tmp)

    # a pch_dir this process may not write is only read (as a sealed one is, for nobody)
    if os.geteuid() != 0:
        os.chmod(pch, stat.S_IRUSR | stat.S_IXUSR)
        before = sorted(os.listdir(pch))
        r, _, _, _ = run("execute", candidate="cand_ext_add.py", build=os.path.join(tmp, "b4"))
        check(r.get("status") == "ok", "read-only pch_dir: still builds")
        check(sorted(os.listdir(pch)) == before, "read-only pch_dir: nothing added")
        os.chmod(pch, 0o755)

    return finish(tmp, "ok")


if __name__ == "__main__":
    sys.exit(main())
