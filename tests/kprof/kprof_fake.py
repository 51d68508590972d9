#!/usr/bin/env python3
"""The CUPTI injection library's refusals, without a GPU: the built libkforge_kprof.so is
loaded into a Python process (ctypes) whose libcupti.so.13 and libcuda.so.1 are fakes
built here, and its InitializeInjection is called as the driver would call it. Each case
makes the fake CUPTI answer one way, and the JSON the library leaves must say so, in one
line, with the library returning 1 (the process goes on):

  version   the process's CUPTI is 12.8 (record layouts differ): status version_mismatch,
            both versions in the message, nothing collected
  busy      another subscriber holds CUPTI (cuptiSubscribe_v2 answers
            MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and names it): status cupti_busy, the
            holder named
  noversion cuptiGetVersion itself fails: status error, the call named

Every other CUPTI and driver function the library imports is a stub that fails; none
may be reached on these paths without the status showing it.

Usage: kprof_fake.py LIBRARY CUPTI_INCLUDE_DIR"""
import glob
import json
import os
import subprocess
import sys
import tempfile

# cuptiGetVersion and cuptiSubscribe_v2 per case; the header gives their real types.
CASES = {
    "version": """
CUptiResult cuptiGetVersion(uint32_t *v) { *v = 120800; return CUPTI_SUCCESS; }
CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud,
                              CUpti_SubscriberParams *p)
{ (void)h; (void)cb; (void)ud; (void)p; return CUPTI_ERROR_UNKNOWN; }
""",
    "busy": """
#include <string.h>
CUptiResult cuptiGetVersion(uint32_t *v) { *v = CUPTI_API_VERSION; return CUPTI_SUCCESS; }
CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud,
                              CUpti_SubscriberParams *p)
{
    (void)h; (void)cb; (void)ud;
    if (p != NULL && p->oldSubscriberName != NULL && p->oldSubscriberSize > 0) {
        strncpy(p->oldSubscriberName, "CUPTI for nsys-fake", p->oldSubscriberSize - 1);
        p->oldSubscriberName[p->oldSubscriberSize - 1] = '\\0';
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}
""",
    "noversion": """
CUptiResult cuptiGetVersion(uint32_t *v) { (void)v; return CUPTI_ERROR_NOT_INITIALIZED; }
CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud,
                              CUpti_SubscriberParams *p)
{ (void)h; (void)cb; (void)ud; (void)p; return CUPTI_ERROR_UNKNOWN; }
""",
}
SPECIAL = ("cuptiGetVersion", "cuptiSubscribe_v2")
EXPECT = {
    "version": ("version_mismatch", ("12.8", "13.0")),
    "busy": ("cupti_busy", ("nsys-fake",)),
    "noversion": ("error", ("cuptiGetVersion",)),
}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: %s" % what, flush=True)


def imports(lib):
    out = subprocess.run(["nm", "-D", "--undefined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = [line.split()[-1].split("@")[0] for line in out.splitlines() if line.split()]
    return ([n for n in names if n.startswith("cupti")],
            [n for n in names if n.startswith("cu") and not n.startswith("cupti")])


def cc(args):
    p = subprocess.run(["cc"] + args, capture_output=True, text=True)
    if p.returncode != 0:
        print("cc %s failed:\n%s" % (" ".join(args), p.stderr[-3000:]))
        sys.exit(1)


def fakes(d, case, cupti_names, cuda_names, include):
    # The stubs have no prototypes of their own: a file apart from cupti.h.
    with open(os.path.join(d, "stubs.c"), "w") as f:
        for n in cupti_names:
            if n not in SPECIAL:
                f.write("int %s(void) { return 999; }\n" % n)
    with open(os.path.join(d, "case.c"), "w") as f:
        f.write("#include <cupti.h>\n" + CASES[case])
    # The library's references carry the version node libcupti.so.13.
    with open(os.path.join(d, "cupti.map"), "w") as f:
        f.write("libcupti.so.13 { global: *; };\n")
    cc(["-shared", "-fPIC", "-I", include, "-o", os.path.join(d, "libcupti.so.13"),
        "-Wl,-soname,libcupti.so.13", "-Wl,--version-script=" + os.path.join(d, "cupti.map"),
        os.path.join(d, "stubs.c"), os.path.join(d, "case.c")])
    with open(os.path.join(d, "cuda.c"), "w") as f:
        for n in cuda_names:
            f.write("int %s(void) { return 999; }\n" % n)
    cc(["-shared", "-fPIC", "-o", os.path.join(d, "libcuda.so.1"), "-Wl,-soname,libcuda.so.1",
        os.path.join(d, "cuda.c")])


def main():
    lib, include = os.path.abspath(sys.argv[1]), sys.argv[2]
    cupti_names, cuda_names = imports(lib)
    check("cuptiGetVersion" in cupti_names and "cuptiSubscribe_v2" in cupti_names,
          "the library imports neither cuptiGetVersion nor cuptiSubscribe_v2: %s" % cupti_names)
    for case, (status, words) in EXPECT.items():
        with tempfile.TemporaryDirectory(prefix="kprof-fake-") as d:
            fakes(d, case, cupti_names, cuda_names, include)
            env = dict(os.environ, LD_LIBRARY_PATH=d, KPROF_OUT=os.path.join(d, "out.%p.json"))
            p = subprocess.run([sys.executable, "-c",
                                "import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); "
                                "print('init', l.InitializeInjection())", lib],
                               env=env, capture_output=True, text=True, timeout=60)
            check(p.returncode == 0 and "init 1" in p.stdout,
                  "%s: InitializeInjection: exit %d, %r %r"
                  % (case, p.returncode, p.stdout, p.stderr[-2000:]))
            outs = glob.glob(os.path.join(d, "out.*.json"))
            check(len(outs) == 1, "%s: %d profiles written" % (case, len(outs)))
            if len(outs) != 1:
                continue
            with open(outs[0]) as f:
                prof = json.load(f)
            msg = prof.get("message") or ""
            print("%s: status %s, message %r" % (case, prof.get("status"), msg))
            check(prof.get("status") == status, "%s: status %s, expected %s"
                  % (case, prof.get("status"), status))
            check("\n" not in msg and all(w in msg for w in words),
                  "%s: the message does not name %s: %r" % (case, words, msg))
            check(prof.get("kernels") == [] and prof.get("launches") == 0,
                  "%s: something was collected: %s" % (case, prof.get("kernels")))
            if case == "busy":
                check("nsys-fake" in (prof.get("holder") or ""),
                      "busy: holder %r" % prof.get("holder"))
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("ok: version mismatch, CUPTI held by another subscriber and a failing "
          "cuptiGetVersion are each reported, and the process goes on")
    return 0


if __name__ == "__main__":
    sys.exit(main())
