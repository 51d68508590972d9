#!/usr/bin/env python3
"""feedback_hardware.py: feedback/kforge_hardware.py, the device facts of the prompt's
hardware block.

- a GPU's peak bandwidth from the memory clock and bus width when torch gives both, else
  the vendor's figure for a known model, else none; which source, said;
- architecture names from the compute capability;
- gpu_facts from a device-properties object that lacks the newer attributes (older torch);
- the CPU's facts from a /proc/cpuinfo and a cache directory written here, and from this
  machine (a model name, the data caches, only known SIMD flags).

Needs only the standard library (no torch, no GPU). Exit 0 on success, 1 naming what failed.
"""
import os
import sys
import tempfile
import types

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "feedback"))
import kforge_hardware as hw  # noqa: E402

FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL: " + what, file=sys.stderr)


# H100 SXM as torch 2.6 reports it: 2619 MHz, 5120 bits -> 3352 GB/s (datasheet: 3.35 TB/s)
gbps, source = hw.bandwidth("NVIDIA H100 80GB HBM3", 2619000, 5120)
check(gbps == 3352 and "memory clock (2619 MHz)" in source and "5120 bits" in source,
      "derived bandwidth: %r %r" % (gbps, source))
for name, want in (("NVIDIA H100 80GB HBM3", 3350), ("NVIDIA H100 PCIe", 2000),
                   ("NVIDIA H100 NVL", 3900), ("NVIDIA H200", 4800),
                   ("NVIDIA A100-SXM4-80GB", 2039), ("NVIDIA A100-SXM4-40GB", 1555),
                   ("NVIDIA A100-PCIE-40GB", 1555), ("NVIDIA A100 80GB PCIe", 1935),
                   ("NVIDIA L40S", 864), ("NVIDIA GeForce RTX 4090", 1008)):
    gbps, source = hw.bandwidth(name, 0, 0)
    check(gbps == want and ("datasheet" in source or "specifications" in source),
          "%s: %r GB/s (%r), want %d from the vendor's figure" % (name, gbps, source, want))
check(hw.bandwidth("NVIDIA T4", 0, 0) == (None, None), "an unknown GPU has no bandwidth")
check(hw.bandwidth("NVIDIA H100 PCIe", 0, 5120)[0] == 2000, "half the inputs: the table")

check(hw.architecture(9, 0) == "compute capability 9.0 (Hopper), sm_90", hw.architecture(9, 0))
check(hw.architecture(8, 9) == "compute capability 8.9 (Ada Lovelace), sm_89", hw.architecture(8, 9))
check(hw.architecture(7, 5) == "compute capability 7.5 (Turing), sm_75", hw.architecture(7, 5))
check(hw.architecture(6, 1) == "compute capability 6.1, sm_61", hw.architecture(6, 1))

# an older torch: no L2, no memory clock or bus width, no opt-in shared memory
props = types.SimpleNamespace(name="NVIDIA A100-SXM4-80GB", major=8, minor=0,
                              multi_processor_count=108, total_memory=85899345920,
                              shared_memory_per_block=49152)
fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_properties=lambda i: props))
f = hw.gpu_facts(fake_torch, 3)
check(f["index"] == 3 and f["gpu"] is True and f["units"] == 108 and f["capability"] == "8.0" and
      f["arch"].endswith("(Ampere), sm_80") and f["smem_per_block"] == 49152 and
      f["smem_per_sm"] == 0 and f["l2_bytes"] == 0, "gpu_facts of an older torch: %s" % f)
check(f["bandwidth_gbps"] == 2039 and "A100 80GB SXM" in f["bandwidth_source"],
      "the table when torch lacks the clock: %s" % f)

with tempfile.TemporaryDirectory() as d:
    info = os.path.join(d, "cpuinfo")
    with open(info, "w") as fp:
        fp.write("processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu sse4_2 avx2 fma "
                 "avx512f made_up\n\nprocessor\t: 1\nmodel name\t: Test CPU 9000\n")
    cache = os.path.join(d, "cache")
    for idx, (level, kind, size) in enumerate((("1", "Data", "32K"), ("1", "Instruction", "32K"),
                                               ("2", "Unified", "1024K"), ("3", "Unified", "32M"))):
        os.makedirs(os.path.join(cache, "index%d" % idx))
        for name, value in (("level", level), ("type", kind), ("size", size)):
            with open(os.path.join(cache, "index%d" % idx, name), "w") as fp:
                fp.write(value + "\n")
    f = hw.cpu_facts(info, cache)
    check(f["name"] == "Test CPU 9000" and f["gpu"] is False and f["index"] == -1, "cpu name: %s" % f)
    check(f["simd"] == ["sse4_2", "avx2", "fma", "avx512f"], "cpu simd: %s" % f["simd"])
    check(f["caches"] == "L1d 32 KiB, L2 1024 KiB, L3 32 MiB", "cpu caches: %r" % f["caches"])

f = hw.cpu_facts()
check(f["name"] and f["arch"] and f["memory_bytes"] > 0, "this machine's CPU: %s" % f)
check(all(s in hw.SIMD_FLAGS for s in f["simd"]), "only known SIMD flags: %s" % f["simd"])

if FAILURES:
    sys.exit(1)
print("feedback_hardware: all checks passed")
