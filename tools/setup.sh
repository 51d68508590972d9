#!/usr/bin/env bash
# Installs what kforge needs on a Debian machine, and nothing that is already there: a C
# toolchain, clang, CMake, libyaml, jansson, libcurl, libcrypto, libmicrohttpd, libseccomp,
# ninja, ccache, Slurm (slurmctld, slurmd, munge: a one-host cluster for the tests,
# tools/slurm/local.sh), and a Python that
# imports torch *and can build a torch extension* (torch's C++ headers and pybind11:
# Debian's python3-torch ships neither, libtorch-dev and pybind11-dev do; GPU hosts bring
# a pip torch that has its own), and what the tests use (python3, python3-venv, chromium). Says what
# it installed, builds kforge (tools/build.sh, given this script's arguments, so that the
# build after it is a no-op) and ends with `kforge doctor`, so that a machine that cannot
# run kforge fails here, loudly, naming the fix.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have_pc() { pkg-config --exists "$1" 2>/dev/null; }

command -v cc >/dev/null && command -v c++ >/dev/null && command -v make >/dev/null \
  || need+=(build-essential)
command -v cmake >/dev/null || need+=(cmake)
command -v pkg-config >/dev/null || need+=(pkg-config)
have_pc yaml-0.1 || need+=(libyaml-dev)
have_pc jansson || need+=(libjansson-dev)
have_pc libcurl || need+=(libcurl4-openssl-dev)
have_pc libcrypto || need+=(libssl-dev)
# kforge view serves the run's HTML page through libmicrohttpd (no hand-written HTTP).
have_pc libmicrohttpd || need+=(libmicrohttpd-dev)
# The runners' seccomp filter (sandbox/); Landlock's header comes with the kernel headers.
have_pc libseccomp || need+=(libseccomp-dev)
command -v ninja >/dev/null || need+=(ninja-build)
command -v ccache >/dev/null || need+=(ccache)
# clang++ builds a candidate's binding file through a precompiled header of torch's in
# seconds (kforge_runner.py's fast builds); without it kforge falls back to c++'s slower one.
command -v clang++ >/dev/null || need+=(clang)
command -v python3 >/dev/null || need+=(python3)
# A one-host Slurm for the Slurm engine's tests and benches (tools/slurm/local.sh).
command -v slurmctld >/dev/null || need+=(slurmctld)
command -v slurmd >/dev/null || need+=(slurmd)
command -v sbatch >/dev/null || need+=(slurm-client)
command -v munged >/dev/null || need+=(munge)
# The report and viewer tests open the pages in a real headless browser.
command -v chromium >/dev/null || need+=(chromium)
# The tests make a bare venv (a Python without torch) with Debian's python3.
[ ! -x /usr/bin/python3 ] || /usr/bin/python3 -c "import ensurepip" >/dev/null 2>&1 \
  || need+=(python3-venv)

# The runner's Python: the first that imports torch, as kforge itself probes.
torch_python=""
for py in "${KFORGE_PYTHON:-}" /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3 || true)"; do
  [ -n "$py" ] && [ -x "$py" ] || continue
  if "$py" -c "import torch" >/dev/null 2>&1; then torch_python=$py; break; fi
done
if [ -z "$torch_python" ]; then
  need+=(python3-torch libtorch-dev pybind11-dev python3-dev)
else
  # torch imports; can it build an extension? (headers, pybind11, Python.h)
  "$torch_python" - <<'PY' >/dev/null 2>&1 || need+=(libtorch-dev pybind11-dev python3-dev)
import os, sysconfig
from torch.utils.cpp_extension import include_paths
assert any(os.path.exists(os.path.join(p, "torch", "extension.h")) for p in include_paths())
# pip's torch bundles pybind11's headers; Debian's relies on pybind11-dev's /usr/include
assert any(os.path.exists(os.path.join(p, "pybind11", "pybind11.h"))
           for p in include_paths() + ["/usr/include", sysconfig.get_paths()["include"]])
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
PY
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q >/dev/null
  $sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
  echo "setup: installed ${need[*]}"
else
  echo "setup: everything is installed (Python with torch: $torch_python)"
fi

tools/build.sh "$@"
"${KFORGE_BUILD_DIR:-build}/kforge" doctor
