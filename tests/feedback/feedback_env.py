#!/usr/bin/env python3
"""feedback_env.py: the runner tells a broken environment from a broken candidate
(env_error versus compile_error), driven directly as in feedback_runner.py.

  - a bare venv (no torch): precompile reports env_error, stage torch, naming that Python;
  - a PATH without a C++ compiler: a real candidate's build fails and the runner's own
    probe confirms it, env_error stage compiler; the selftest says the same;
  - a candidate that prints and raises the words of a missing torch header, and one whose
    own #include is missing (a real failed build): compile_error both, since the
    environment is fine.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from feedback_runner import Env, check, finish, scratch_dir, torch_python  # noqa: E402


def main():
    python = torch_python()
    if python is None:
        print("SKIP: no Python that imports torch")
        return 77
    tmp = scratch_dir("feedback_env")
    print("runner python: %s, scratch: %s" % (python, tmp), flush=True)

    venv = os.path.join(tmp, "venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", venv], check=True)
    bare = Env(os.path.join(venv, "bin", "python"), os.path.join(tmp, "bare"))
    r, _, rc, _ = bare.run("precompile", candidate="cand_ext_add.py")
    d = r.get("details", {})
    check(rc == 0 and r.get("status") == "env_error" and d.get("stage") == "torch",
          "bare venv: env_error stage torch, got %s %s" % (r.get("status"), d.get("stage")))
    check(bare.python in d.get("message", ""), "bare venv: the message names the Python: %s" % d.get("message"))
    check("runner.python" in d.get("fix", ""), "bare venv: the fix: %s" % d.get("fix"))

    # The runner's PATH: ninja and which, but no c++.
    bin_dir = os.path.join(tmp, "bin-without-cxx")
    os.makedirs(bin_dir)
    for tool in ("ninja", "which"):
        os.symlink("/usr/bin/" + tool, os.path.join(bin_dir, tool))
    saved = os.environ["PATH"]
    os.environ["PATH"] = bin_dir
    try:
        e = Env(python, os.path.join(tmp, "nocxx"))
        r, _, rc, _ = e.run("precompile", candidate="cand_ext_add.py")
        d = r.get("details", {})
        check(r.get("status") == "env_error" and d.get("stage") == "compiler",
              "no compiler: env_error stage compiler, got %s %s (%s)" % (r.get("status"), d.get("stage"),
                                                                        d.get("message")))
        check("c++" in d.get("message", "") and "g++" in d.get("fix", ""), "no compiler: message/fix %s" % d)
        r, _, rc, _ = e.run("selftest")
        check(r.get("status") == "env_error" and r["details"].get("stage") == "compiler",
              "selftest without a compiler: %s %s" % (r.get("status"), r.get("details", {}).get("stage")))
    finally:
        os.environ["PATH"] = saved

    e = Env(python, os.path.join(tmp, "fine"))
    r, _, rc, _ = e.run("precompile", candidate="cand_fake_env_marker.py")
    check(r.get("status") == "compile_error", "faked marker: compile_error, got %s" % r.get("status"))
    r, _, rc, _ = e.run("precompile", candidate="cand_missing_own_header.py", timeout=900)
    check(r.get("status") == "compile_error", "own missing header: compile_error, got %s" % r.get("status"))
    check("kforge_no_such_header.h" in r.get("details", {}).get("compiler_output", ""),
          "own missing header: the compiler output names it")

    return finish(tmp, "ok: feedback_env")


if __name__ == "__main__":
    sys.exit(main())
