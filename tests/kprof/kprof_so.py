#!/usr/bin/env python3
"""The CUPTI injection library as built (kprof/CMakeLists.txt): it exists, exports
InitializeInjection and nothing else, and needs nothing a Python process may lack (no
jansson, no sanitizer runtime: only libcupti, libcuda and the C library).

Usage: kprof_so.py LIBRARY"""
import subprocess
import sys

ALLOWED_NEEDED = ("libcupti.so.", "libcuda.so.", "libc.so.", "libm.so.", "libdl.so.",
                  "libpthread.so.", "ld-linux")


def main():
    lib = sys.argv[1]
    failures = []
    try:
        syms = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print("FAIL: nm -D %s: %s" % (lib, e))
        return 1
    exported = sorted(line.split()[-1] for line in syms.splitlines()
                      if len(line.split()) == 3 and line.split()[1] in "TWDBRV")
    if "InitializeInjection" not in exported:
        failures.append("InitializeInjection is not exported: %s" % exported)
    extra = [s for s in exported if s not in ("InitializeInjection", "_init", "_fini")]
    if extra:
        failures.append("exports more than InitializeInjection: %s" % extra[:20])
    dyn = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    needed = [line.split("[")[1].rstrip("]") for line in dyn.splitlines()
              if "(NEEDED)" in line]
    bad = [n for n in needed if not n.startswith(ALLOWED_NEEDED)]
    if bad:
        failures.append("needs libraries an injected process may lack: %s" % bad)
    if not any(n.startswith("libcupti.so.") for n in needed):
        failures.append("does not link libcupti: %s" % needed)
    for f in failures:
        print("FAIL:", f)
    print("exported: %s; needed: %s" % (exported, needed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
