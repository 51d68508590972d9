"""kforge_hardware.py: the facts of the device a run's code runs on, for the prompt's
hardware block (refinement.hardware). Run once per run by the supervisor, in the
runner's Python and environment (fb_python_snippet), before gpus.json is written; the
answer, one JSON object on fd 3, is {"devices": [{"index": N, "gpu": bool, ...}]}.

A GPU's facts come from torch.cuda.get_device_properties (every attribute read with
getattr: torch versions differ in what they expose); its peak memory bandwidth from the
memory clock and bus width where torch gives both, else from the vendor's figure for a
known model (KNOWN_BANDWIDTH), and "bandwidth_source" says which. The CPU's come from
/proc/cpuinfo and /sys (model name, SIMD extensions, data caches) and the machine's RAM;
the cores an execution gets are the supervisor's to fill in (fb_cpu_threads).

Usage: python kforge_hardware.py cpu|cuda
"""
import json
import os
import platform
import sys

# Peak memory bandwidth in GB/s as each vendor's datasheet states it, for GPUs whose
# torch does not report the memory clock and bus width. Matched against the device name
# in order: the first entry whose every word is in the name wins.
KNOWN_BANDWIDTH = [
    (("H100", "PCIe"), 2000, "NVIDIA H100 PCIe datasheet: 2 TB/s"),
    (("H100", "NVL"), 3900, "NVIDIA H100 NVL datasheet: 3.9 TB/s"),
    (("H100",), 3350, "NVIDIA H100 SXM datasheet: 3.35 TB/s"),
    (("H200",), 4800, "NVIDIA H200 datasheet: 4.8 TB/s"),
    (("A100", "PCIE", "40GB"), 1555, "NVIDIA A100 40GB PCIe datasheet: 1,555 GB/s"),
    (("A100", "SXM4", "40GB"), 1555, "NVIDIA A100 40GB SXM datasheet: 1,555 GB/s"),
    (("A100", "PCIe"), 1935, "NVIDIA A100 80GB PCIe datasheet: 1,935 GB/s"),
    (("A100",), 2039, "NVIDIA A100 80GB SXM datasheet: 2,039 GB/s"),
    (("L40S",), 864, "NVIDIA L40S datasheet: 864 GB/s"),
    (("RTX", "4090"), 1008, "NVIDIA GeForce RTX 4090 specifications: 1,008 GB/s"),
]

ARCHITECTURES = {7: "Volta", 8: "Ampere", 9: "Hopper", 10: "Blackwell", 12: "Blackwell"}

# The SIMD extensions a kernel writer picks between, as /proc/cpuinfo names them.
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
              "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
              "asimd", "asimdhp", "sve", "sve2")


def architecture(major, minor):
    name = {(7, 5): "Turing", (8, 9): "Ada Lovelace"}.get((major, minor), ARCHITECTURES.get(major))
    text = "compute capability %d.%d" % (major, minor)
    return "%s (%s), sm_%d%d" % (text, name, major, minor) if name else "%s, sm_%d%d" % (text, major, minor)


def bandwidth(name, memory_clock_khz, bus_width_bits):
    """(GB/s, how it was found), or (None, None)."""
    if memory_clock_khz and bus_width_bits:
        # double data rate: two transfers per clock, bus_width_bits / 8 bytes each
        gbps = 2.0 * memory_clock_khz * 1e3 * bus_width_bits / 8 / 1e9
        return round(gbps), "from the memory clock (%d MHz) and bus width (%d bits)" % (
            memory_clock_khz // 1000, bus_width_bits)
    words = name.upper().replace("-", " ").split()
    for needed, gbps, source in KNOWN_BANDWIDTH:
        if all(any(w.upper() in word for word in words) for w in needed):
            return gbps, source
    return None, None


def gpu_facts(torch, index):
    p = torch.cuda.get_device_properties(index)
    name = getattr(p, "name", "") or ""
    major, minor = getattr(p, "major", None), getattr(p, "minor", None)
    facts = {"index": index, "gpu": True, "name": name,
             "arch": architecture(major, minor) if major is not None else "",
             "units": getattr(p, "multi_processor_count", 0) or 0,
             "memory_bytes": getattr(p, "total_memory", 0) or 0,
             "smem_per_block": getattr(p, "shared_memory_per_block", 0) or 0,
             "smem_per_block_optin": getattr(p, "shared_memory_per_block_optin", 0) or 0,
             "smem_per_sm": getattr(p, "shared_memory_per_multiprocessor", 0) or 0,
             "l2_bytes": getattr(p, "L2_cache_size", 0) or getattr(p, "l2_cache_size", 0) or 0,
             "memory_clock_khz": getattr(p, "memory_clock_rate", 0) or 0,
             "bus_width_bits": getattr(p, "memory_bus_width", 0) or 0}
    if major is not None:
        facts["capability"] = "%d.%d" % (major, minor)
    gbps, source = bandwidth(name, facts["memory_clock_khz"], facts["bus_width_bits"])
    if gbps:
        facts["bandwidth_gbps"] = gbps
        facts["bandwidth_source"] = source
    return facts


def cpu_facts(cpuinfo="/proc/cpuinfo", cache_dir="/sys/devices/system/cpu/cpu0/cache"):
    name, flags = "", []
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key == "model name" and not name:
                    name = value.strip()
                elif key in ("flags", "features") and not flags:
                    flags = value.split()
    except OSError:
        pass
    caches = []
    for entry in sorted(os.listdir(cache_dir)) if os.path.isdir(cache_dir) else []:
        try:
            level, kind, size = (open(os.path.join(cache_dir, entry, f)).read().strip()
                                 for f in ("level", "type", "size"))
        except OSError:
            continue
        if kind == "Instruction":
            continue
        size = size.replace("K", " KiB").replace("M", " MiB")
        caches.append("L%s%s %s" % (level, "d" if kind == "Data" else "", size))
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = 0
    return {"index": -1, "gpu": False, "name": name or platform.processor() or platform.machine(),
            "arch": platform.machine(), "memory_bytes": memory,
            "simd": [f for f in SIMD_FLAGS if f in flags], "caches": ", ".join(caches)}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "cuda":
        # torch's index N is nvidia-smi's (gpus.json's) only in PCI bus order
        os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        import torch
        devices = [gpu_facts(torch, i) for i in range(torch.cuda.device_count())]
    else:
        devices = [cpu_facts()]
    answer = json.dumps({"devices": devices}).encode()
    try:
        os.write(3, answer)
    except OSError:
        sys.stdout.write(answer.decode() + "\n")


if __name__ == "__main__":
    main()
