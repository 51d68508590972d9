#!/usr/bin/env python3
"""GPU tests of the CUPTI injection library (kprof/): a real CUDA program (or
torch) runs with CUDA_INJECTION64_PATH set, and the JSON it leaves is checked. Exits 77
(skip) without a GPU, without nvcc (probe cases) or without torch (the torch case).

Usage: kprof_gpu.py CASE LIBRARY [NVCC]
  trace    a known kernel's profile: exact grid, block, static shared memory, registers,
           calls, the demangled name; a kernel launched outside the gate is absent
  killed   a process killed with SIGKILL mid-profile leaves a readable JSON with
           complete=false and calls > 0
  metrics  metrics mode on a copy of 256 MiB: DRAM bytes read and written each within 10%,
           or metrics_status not_permitted/unsupported with a message saying so; the
           counter availability image kept only where KPROF_AVAILABILITY_WRITE=1 says,
           read back by the next run, one cut short or damaged queried again
  busy     a program that holds CUPTI itself: status cupti_busy, the holder named, no crash
  torch    a ReLU through torch ops inside the gate: its kernel listed, demangled, and
           randn's kernel (before the gate) absent
  smoke    runs the probe's trace mode and prints the JSON (for pasting into a report)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
COPY_BYTES = 256 << 20

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: %s" % what, flush=True)


def have_gpu():
    if not os.path.exists("/dev/nvidia0"):
        return False
    smi = shutil.which("nvidia-smi") or "/usr/bin/nvidia-smi"
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "GPU" in r.stdout


def torch_python():
    cands = [os.environ.get("KFORGE_PYTHON"), "/usr/bin/python3", "/usr/local/bin/python3"]
    cands += [os.path.join(d, "python3") for d in os.environ.get("PATH", "").split(":") if d]
    for py in cands:
        if py and os.access(py, os.X_OK):
            r = subprocess.run([py, "-c", "import torch"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=120)
            if r.returncode == 0:
                return py
    return None


def build_probe(nvcc, tmp, name="kprof_probe", extra=()):
    src = os.path.join(os.environ.get("KFORGE_HOME", os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))), "tests", "data", "kprof", name + ".cu")
    exe = os.path.join(tmp, name)
    for arch in (["-arch=native"], []):
        r = subprocess.run([nvcc, "-O2", "-lineinfo"] + arch + ["-o", exe, src] + list(extra),
                           capture_output=True, text=True, timeout=600)
        if r.returncode == 0:
            return exe
        print("nvcc %s failed:\n%s" % (" ".join(arch), r.stderr[-2000:]), flush=True)
    return None


def env_for(lib, out, **extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("KPROF_") and k != "KPROF_DEBUG":
            del env[k]
    env["CUDA_INJECTION64_PATH"] = lib
    env["KPROF_OUT"] = out
    env.update({k: str(v) for k, v in extra.items()})
    return env


def load(path):
    with open(path) as f:
        return json.load(f)


def run(argv, env, timeout=300):
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    print("$ %s -> %d\n%s%s" % (" ".join(argv), r.returncode, r.stdout[-2000:],
                                r.stderr[-4000:]), flush=True)
    return r


def kernels_named(doc, short):
    return [k for k in doc.get("kernels", []) if k.get("short") == short]


def case_trace(lib, exe, tmp):
    out = os.path.join(tmp, "kprof.%p.json")
    r = run([exe, "trace"], env_for(lib, out))
    check(r.returncode == 0, "probe trace exited %d" % r.returncode)
    path = os.path.join(tmp, "kprof.%d.json" % find_pid(tmp))
    doc = load(path)
    print(json.dumps(doc, indent=1)[:6000])
    check(doc.get("status") == "ok", "status %s: %s" % (doc.get("status"), doc.get("message")))
    check(doc.get("complete") is True, "complete is not true")
    check(doc.get("source") == "cupti" and doc.get("mode") == "trace", "source/mode")
    known = kernels_named(doc, "known_kernel")
    check(len(known) == 1, "known_kernel listed %d times" % len(known))
    if known:
        k = known[0]
        check(k.get("grid") == [7, 3, 1], "grid %s" % k.get("grid"))
        check(k.get("block") == [128, 2, 1], "block %s" % k.get("block"))
        check(k.get("static_smem") == 4096, "static_smem %s" % k.get("static_smem"))
        check(k.get("dynamic_smem") == 0, "dynamic_smem %s" % k.get("dynamic_smem"))
        check(isinstance(k.get("registers"), int) and 0 < k["registers"] <= 255,
              "registers %s" % k.get("registers"))
        check(k.get("calls") == 5, "calls %s" % k.get("calls"))
        check(0 < k.get("min_ns", 0) <= k.get("mean_ns", 0) <= k.get("max_ns", 0),
              "min/mean/max")
        check(0 <= k.get("total_ns", 0) - 5 * k.get("mean_ns", 0) < 5, "total = 5 x mean")
        check(k.get("name") == "known_kernel(float*, int)", "demangled name %s" % k.get("name"))
        check(k.get("mangled") == "_Z12known_kernelPfi", "mangled %s" % k.get("mangled"))
        check(isinstance(k.get("streams"), list) and len(k["streams"]) == 1, "streams")
        occ = k.get("occupancy")
        check(isinstance(occ, dict) and 0 < occ.get("theoretical", 0) <= 1,
              "occupancy %s" % occ)
    check(not kernels_named(doc, "outside_kernel"), "outside_kernel (outside the gate) listed")
    check(doc.get("launches") == 5, "launches %s" % doc.get("launches"))
    check(isinstance(doc.get("device"), dict) and doc["device"].get("sm_count", 0) > 0,
          "device %s" % doc.get("device"))
    check(doc.get("dropped") == 0, "dropped %s" % doc.get("dropped"))


def find_pid(tmp):
    names = [n for n in os.listdir(tmp) if n.startswith("kprof.") and n.endswith(".json")]
    check(len(names) == 1, "one JSON file expected, found %s" % names)
    return int(names[0].split(".")[1]) if names else 0


def case_killed(lib, exe, tmp):
    out = os.path.join(tmp, "kprof.json")
    # 16 KiB buffers fill after a few dozen launches; CUPTI's periodic flush returns them
    p = subprocess.Popen([exe, "loop"], env=env_for(lib, out, KPROF_BUFFER_KB=16),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    seen = None
    while time.time() < deadline and p.poll() is None:
        try:
            doc = load(out)
            k = kernels_named(doc, "tiny_kernel")
            if k and k[0].get("calls", 0) > 0:
                seen = doc
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    alive = p.poll() is None
    if alive:
        os.kill(p.pid, signal.SIGKILL)
    p.wait()
    print("probe stderr:\n%s" % p.stderr.read()[-3000:])
    check(alive, "the probe ended by itself (rc %s) before it was killed" % p.returncode)
    check(seen is not None, "no JSON with tiny_kernel calls appeared within 120 s")
    try:
        doc = load(out)
    except (OSError, ValueError) as e:
        check(False, "JSON unreadable after SIGKILL: %s" % e)
        return
    print(json.dumps(doc, indent=1)[:3000])
    check(doc.get("complete") is False, "complete is %s after SIGKILL" % doc.get("complete"))
    k = kernels_named(doc, "tiny_kernel")
    check(bool(k) and k[0].get("calls", 0) > 0, "tiny_kernel calls after SIGKILL")
    check(doc.get("status") == "ok", "status %s" % doc.get("status"))


def case_metrics(lib, exe, tmp):
    """Metrics mode, then the counter availability image kept in KPROF_AVAILABILITY_DIR:
    not written without KPROF_AVAILABILITY_WRITE=1, written with it, read by the next
    run (which measures the same), and a damaged one queried again live."""
    avail = os.path.join(tmp, "availability")
    os.makedirs(avail)
    if not metrics_run(lib, exe, tmp, "first", KPROF_AVAILABILITY_DIR=avail):
        return
    kept = lambda: sorted(f for f in os.listdir(avail) if f.endswith(".bin"))  # noqa: E731
    check(kept() == [], "an image was kept without KPROF_AVAILABILITY_WRITE: %s" % kept())
    metrics_run(lib, exe, tmp, "writer", KPROF_AVAILABILITY_DIR=avail,
                KPROF_AVAILABILITY_WRITE="1")
    images = kept()
    check(len(images) == 1 and "cupti" in images[0] and "driver" in images[0],
          "one image per chip, CUPTI and driver: %s" % images)
    metrics_run(lib, exe, tmp, "reader", want="cached", KPROF_AVAILABILITY_DIR=avail)
    # A kept image cut short, then one overwritten: neither reaches CUPTI (whose host
    # initialisation crashed the process on garbage); each run asks the device again.
    for name in images:
        path = os.path.join(avail, name)
        with open(path, "rb") as f:
            whole = f.read()
        with open(path, "wb") as f:
            f.write(whole[:len(whole) // 2])
    metrics_run(lib, exe, tmp, "cut-short", KPROF_AVAILABILITY_DIR=avail)
    for name in images:
        with open(os.path.join(avail, name), "wb") as f:
            f.write(b"not an availability image" * 8)
    metrics_run(lib, exe, tmp, "damaged", KPROF_AVAILABILITY_DIR=avail)


def metrics_run(lib, exe, tmp, label, want="queried", **extra):
    """One metrics-mode run of the copy kernel; False when metrics cannot be measured on
    this machine (said loudly, with the library's reason checked)."""
    out = os.path.join(tmp, "kprof-%s.json" % label)
    r = run([exe, "copy", str(COPY_BYTES)],
            env_for(lib, out, KPROF_MODE="metrics", KPROF_TARGETS="copy_kernel", **extra))
    check(r.returncode == 0, "%s: probe copy exited %d" % (label, r.returncode))
    doc = load(out)
    print("--- %s\n%s" % (label, json.dumps(doc, indent=1)[:6000]))
    ok = check_metrics(doc)
    if ok:
        check(doc.get("counter_availability") == want, "%s: counter_availability %s, want %s"
              % (label, doc.get("counter_availability"), want))
    return ok


def check_metrics(doc):
    check(doc.get("mode") == "metrics", "mode %s" % doc.get("mode"))
    check(doc.get("status") == "ok", "status %s: %s" % (doc.get("status"), doc.get("message")))
    ms = doc.get("metrics_status")
    msg = doc.get("message", "")
    if ms in ("not_permitted", "unsupported"):
        print("!" * 72)
        print("!!! METRICS NOT MEASURED: metrics_status=%s" % ms)
        print("!!! message: %s" % msg)
        print("!" * 72, flush=True)
        words = ("permission", "privilege", "root") if ms == "not_permitted" else \
            ("support",)
        check(any(w in msg.lower() for w in words),
              "metrics_status %s but the message does not say so: %r" % (ms, msg))
        return False
    check(ms == "ok", "metrics_status %s: %s" % (ms, msg))
    check(doc.get("passes", 0) <= 2, "passes %s" % doc.get("passes"))
    copies = kernels_named(doc, "copy_kernel")
    check(len(copies) == 1, "copy_kernel listed %d times" % len(copies))
    if not copies:
        return True
    k = copies[0]
    check(k.get("calls") == 3 and k.get("profiled") == 1,
          "calls %s profiled %s" % (k.get("calls"), k.get("profiled")))
    m = k.get("metrics", {})
    for key in ("dram_read_bytes", "dram_write_bytes"):
        v = m.get(key)
        check(isinstance(v, (int, float)) and abs(v - COPY_BYTES) <= 0.1 * COPY_BYTES,
              "%s = %s, want %d +- 10%%" % (key, v, COPY_BYTES))
    check(m.get("duration_ns", 0) > 0, "duration_ns %s" % m.get("duration_ns"))
    check(0 < m.get("dram_pct", 0) <= 100, "dram_pct %s" % m.get("dram_pct"))
    return True


def case_busy(lib, nvcc, tmp):
    # libcupti where the library finds it (its RUNPATH, or LD_LIBRARY_PATH)
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
    dirs += [p for line in dyn.splitlines() if "RUNPATH" in line or "RPATH" in line
             for p in line.split("[")[1].rstrip("]").split(":")]
    extra = []
    for d in dirs:
        extra += ["-L" + d, "-Xlinker", "-rpath=" + d]
    exe = build_probe(nvcc, tmp, "kprof_busy", extra + ["-lcupti"])
    check(exe is not None, "kprof_busy did not build")
    if not exe:
        return
    out = os.path.join(tmp, "kprof.json")
    r = run([exe], env_for(lib, out))
    check(r.returncode == 0, "busy probe exited %d (it must run on undisturbed)" % r.returncode)
    doc = load(out)
    print(json.dumps(doc, indent=1))
    check(doc.get("status") == "cupti_busy", "status %s" % doc.get("status"))
    # CUPTI reports the holder as "CUPTI for <name>"
    check("kprof-test-holder" in (doc.get("holder") or ""), "holder %r" % doc.get("holder"))
    check("kprof-test-holder" in doc.get("message", ""), "message %r" % doc.get("message"))
    check(doc.get("complete") is True and not doc.get("kernels"), "complete, no kernels")


TORCH_SCRIPT = r"""
import torch
x = torch.randn(1 << 22, device="cuda")
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
for _ in range(10):
    y = torch.relu(x)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print("relu ok", float(y.sum()) >= 0)
"""


def case_torch(lib, tmp):
    py = torch_python()
    if not py:
        print("SKIP: no Python that imports torch")
        return SKIP
    out = os.path.join(tmp, "kprof.json")
    r = run([py, "-c", TORCH_SCRIPT], env_for(lib, out), timeout=600)
    check(r.returncode == 0, "torch script exited %d" % r.returncode)
    doc = load(out)
    print(json.dumps(doc, indent=1)[:6000])
    check(doc.get("status") == "ok", "status %s: %s" % (doc.get("status"), doc.get("message")))
    check(doc.get("complete") is True, "complete")
    ks = doc.get("kernels", [])
    check(len(ks) >= 1, "no kernels")
    check(sum(k.get("calls", 0) for k in ks) >= 10, "fewer than 10 calls")
    for k in ks:
        check(not k.get("name", "").startswith("_Z"), "not demangled: %s" % k.get("name"))
        check(k.get("short") and "<" not in k["short"] and "(" not in k["short"].lstrip("("),
              "short name %s" % k.get("short"))
    check(any("at::native" in k.get("name", "") for k in ks), "no at::native kernel")
    check(not any("normal" in k.get("name", "") or "distribution" in k.get("name", "")
                  for k in ks), "randn's kernel (before the gate) listed")
    return 0


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    case, lib = sys.argv[1], os.path.abspath(sys.argv[2])
    nvcc = sys.argv[3] if len(sys.argv) > 3 else shutil.which("nvcc")
    if not os.path.exists(lib):
        print("FAIL: %s does not exist" % lib)
        return 1
    if not have_gpu():
        print("SKIP: no GPU (/dev/nvidia0, nvidia-smi -L)")
        return SKIP
    base = os.environ.get("KFORGE_TEST_TMP") or None
    if base:
        os.makedirs(base, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="kprof-%s-" % case, dir=base)
    if case == "torch":
        rc = case_torch(lib, tmp)
        if rc == SKIP:
            return SKIP
    else:
        if not nvcc or not os.access(nvcc, os.X_OK):
            print("SKIP: no nvcc to build the probe")
            return SKIP
        exe = build_probe(nvcc, tmp) if case != "busy" else "(unused)"
        if not exe:
            print("FAIL: the probe did not build")
            return 1
        if case == "smoke":
            out = os.path.join(tmp, "kprof.json")
            run([exe, "trace"], env_for(lib, out))
            with open(out) as f:
                print(f.read())
            return 0
        if case == "busy":
            case_busy(lib, nvcc, tmp)
        else:
            {"trace": case_trace, "killed": case_killed, "metrics": case_metrics}[case](
                lib, exe, tmp)
    print("%s: %s" % (case, "FAILED (%d)" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
