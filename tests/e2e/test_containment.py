#!/usr/bin/env python3
"""Containment of generated code, end to end on the CPU: candidates the mock model
writes try what they should not, through the real supervisor, worker and runner.

Task L1_1_ReLU_s0 (runs first, workers: 1) is the victim: plain correct turns. Task
L1_2_LeakyReLU_s0 gets, turn by turn:
  1. a hostile candidate: dumps its environment (the LLM key and a random-named secret
     of ours must be absent), connects to TCP listeners this test opens on 127.0.0.1 and
     on a non-loopback address of the host (must fail: own network namespace), opens the
     run's logs, run.json and the victim's trajectory, kernel and sealed build (in the
     cache that runs share) for
     writing, removes them, and SIGKILLs its parent and every process of this run it
     finds in /proc (all must fail: it runs as nobody; the sandbox hides run.json and
     the others' command lines too, test_sandbox has the rest). It then behaves, so
     its turn is classified ok.
  2. a CPU spinner: stopped by RLIMIT_CPU (SIGXCPU), classified timeout;
  3. a writer of a 2 MB file: stopped by RLIMIT_FSIZE (EFBIG), classified compile_error;
  4. an opener of 300 files: stopped by RLIMIT_NOFILE (EMFILE), classified compile_error;
  5. a correct candidate: the task went on and finishes.
The run must finish with every log intact. Where the host cannot prove a point (not
root: no uid drop; no namespaces: no network isolation) that part is skipped and said;
with neither, the test skips (77)."""
import json
import os
import secrets
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

ROOT = os.geteuid() == 0
NETNS = subprocess.run(["unshare", "-n", "true"] if ROOT else ["unshare", "-Urn", "true"],
                       capture_output=True).returncode == 0
if not ROOT and not NETNS:
    print("SKIP: neither root (uid drop) nor a network namespace on this host")
    sys.exit(SKIP)
py = torch_python()


def host_address():
    """A non-loopback IPv4 address of this host (from the kernel's local routes)."""
    try:
        with open("/proc/net/fib_trie") as f:
            lines = f.read().splitlines()
        for prev, line in zip(lines, lines[1:]):
            if "/32 host LOCAL" in line:
                addr = prev.strip().lstrip("|-+ ").strip()
                if not addr.startswith("127."):
                    return addr
    except OSError:
        pass
    return None


work = scratch("e2e-contain")
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py", "level1/2_LeakyReLU.py"])
run_dir = os.path.join(work, "run")
listeners = [Listener("127.0.0.1")]
if host_address():
    listeners.append(Listener(host_address()))
else:
    print("note: no non-loopback address on this host; only loopback is tried")
# The test itself reaches them: a candidate's failure to is the namespace, not the setup.
for li in listeners:
    socket.create_connection((li.addr, li.port), timeout=STARTUP_WAIT_S).close()
key, other = "sk-contain-" + secrets.token_hex(8), "KFORGE_SECRET_" + secrets.token_hex(4).upper()
secret2 = "s2-" + secrets.token_hex(8)

HEADER = '''import torch
import torch.nn as nn
# a plain PyTorch candidate; the static check wants load_inline mentioned, nothing compiles


class ModelNew(nn.Module):
    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)
'''

HOSTILE = HEADER + r'''

def _attack():
    import errno, json, os, signal, socket
    rep = {"pid": os.getpid(), "uid": os.getuid(), "env": dict(os.environ), "connect": {},
           "write": {}, "remove": {}, "kill": {}}
    for addr, port in LISTENERS:
        try:
            socket.create_connection((addr, port), timeout=3).close()
            rep["connect"]["%s:%d" % (addr, port)] = "connected"
        except OSError as e:
            rep["connect"]["%s:%d" % (addr, port)] = errno.errorcode.get(e.errno, str(e))
    if ATTACK_FILES:
        run = RUN_DIR
        victim = os.path.join(run, "tasks", "L1_1_ReLU_s0")
        targets = [os.path.join(run, "tasks", "L1_2_LeakyReLU_s0", "trajectory.jsonl"),
                   os.path.join(victim, "trajectory.jsonl"),
                   os.path.join(victim, "turns", "1", "kernel.py"),
                   os.path.join(run, "supervisor.log"), os.path.join(run, "run.json")]
        try:  # the sandbox hides the cache: no listing either
            for d in os.listdir(BUILDS):
                cj = os.path.join(BUILDS, d, "compile.json")
                if os.path.exists(cj):
                    targets.append(cj)
        except OSError as e:
            rep["write"][BUILDS] = errno.errorcode.get(e.errno, str(e))
        for t in targets:
            try:
                with open(t, "a") as f:
                    f.write("tampered\n")
                rep["write"][t] = "written"
            except OSError as e:
                rep["write"][t] = errno.errorcode.get(e.errno, str(e))
            try:
                os.rename(t, t + ".moved")
                rep["remove"][t] = "renamed"
            except OSError as e:
                rep["remove"][t] = errno.errorcode.get(e.errno, str(e))
        # The supervisor's pid is in run.json, which the sandbox hides; what /proc shows
        # of this run's processes (their command lines) is tried below.
        pids = {"parent": os.getppid()}
        for p in os.listdir("/proc"):
            if p.isdigit() and int(p) != os.getpid():
                try:
                    with open("/proc/%s/cmdline" % p, "rb") as f:
                        argv = f.read().split(b"\0")
                    # this run's kforge processes only (others may share the host)
                    if b"kforge" in argv[0] and run.encode() in argv:
                        pids["proc-" + p] = int(p)
                except OSError:
                    pass
        for name, pid in pids.items():
            try:
                os.kill(pid, signal.SIGKILL)
                rep["kill"][name] = "killed %d" % pid
            except OSError as e:
                rep["kill"][name] = errno.errorcode.get(e.errno, str(e))
    # What an honest Triton kernel does at its first launch: compile into the cache the
    # runner is given (it must be its own to write, as nobody too, and no shared cache).
    tc = os.environ.get("TRITON_CACHE_DIR", "")
    try:
        os.makedirs(os.path.join(tc, "k%d" % os.getpid()), exist_ok=True)
        with open(os.path.join(tc, "k%d" % os.getpid(), "kernel.cubin"), "w") as f:
            f.write("cubin")
        rep["triton_cache"] = [tc, "written"]
    except OSError as e:
        rep["triton_cache"] = [tc, errno.errorcode.get(e.errno, str(e))]
    # Its scratch, the one place a sandboxed runner may write.
    with open("hostile-%s.json" % os.urandom(6).hex(), "w") as f:   # pid 2 in each step
        json.dump(rep, f)


_attack()
'''

CPU_SPIN = HEADER + '''
while True:
    pass
'''
BIG_FILE = HEADER + '''
with open("kforge_big.bin", "wb") as f:
    f.write(b"x" * (2 << 20))
'''
MANY_FILES = HEADER + '''
held = [open("/dev/null") for _ in range(300)]
'''
VICTIM = HEADER.replace("leaky_relu(x, negative_slope=self.negative_slope)", "relu(x)").replace(
    "negative_slope=0.01", "*args")


def fenced(code):
    return {"content": "Here it is.\n```python\n" + code + "```\n"}


hostile = HOSTILE.replace("LISTENERS", repr([(li.addr, li.port) for li in listeners])).replace(
    "ATTACK_FILES", repr(ROOT)).replace("RUN_DIR", repr(run_dir)).replace(
    "BUILDS", repr(os.path.join(os.environ.get("KFORGE_CACHE_DIR") or
                                "/var/tmp/kforge-cache-%d" % os.geteuid(), "builds")))
script = {"rules": [
    {"match": "Elementwise leaky ReLU",
     "replies": [fenced(hostile), fenced(CPU_SPIN), fenced(BIG_FILE), fenced(MANY_FILES), fenced(HEADER)]},
    {"match": "Elementwise rectified linear unit", "replies": [fenced(VICTIM)]},
], "default": {"status": 500, "content": "unexpected prompt"}}
mock = MockLLM(work, script)
# The static checks would reject these candidates before they ran (files, sockets,
# processes); the runtime's containment is under test here, so they run
# (eval.static_checks: false).
# The spinner must meet RLIMIT_CPU (CPU seconds, the same on any machine) and never the
# wall-clock deadlines, which are generous for a loaded machine.
config = write_config(os.path.join(work, "contain.yaml"), """
name: contain
problems: {dir: %s, levels: [1]}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: OPENAI_API_KEY, retries: 1}
refinement: {turns: 5, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 1, perf_trials: 3, warmup: 1, timeout_s: 600,
       compile_timeout_s: 600, static_checks: false}
runner: {python: %s, rlimit_cpu_s: 5, rlimit_fsize_mb: 1, rlimit_nofile: 256}
workers: 1
""" % (problems, mock.base_url, py))
try:
    kforge("run", config, "--run-dir", run_dir, env={"OPENAI_API_KEY": key, other: secret2},
           timeout=1700)
finally:
    mock.stop()

# ---- the run is intact and finished
with open(os.path.join(run_dir, "run.json")) as f:
    check(json.load(f)["status"] == "finished", "the run did not finish")
for task in ("L1_1_ReLU_s0", "L1_2_LeakyReLU_s0"):
    recs = records(run_dir, task)
    check_artifacts(run_dir, task, recs)
    check(recs[-1]["to"] == "DONE", "%s ended in %s" % (task, recs[-1]["to"]))
    check(not any(n.endswith(".moved") for _, _, fs in os.walk(run_dir) for n in fs),
          "a file of the run was renamed")
log = open(os.path.join(run_dir, "supervisor.log")).read()
check("tampered" not in log, "the supervisor log was written to")
check(all(m.get("headers", {}).get("Authorization") == "Bearer " + key for m in mock.requests()),
      "the key did not reach the LLM endpoint (so its absence below would prove nothing)")

# ---- every turn classified, the task went on
fb = feedback_records(records(run_dir, "L1_2_LeakyReLU_s0"))
statuses = [r["data"].get("status") for r in fb]
check(statuses == ["ok", "timeout", "compile_error", "compile_error", "ok"],
      "hostile task statuses %s" % statuses)


def compile_message(turn):
    with open(os.path.join(run_dir, "tasks", "L1_2_LeakyReLU_s0", "turns", str(turn), "compile.json")) as f:
        d = json.load(f)["details"]
    return d.get("message", "") + " " + d.get("compiler_output", "")


check("SIGXCPU" in compile_message(2), "turn 2 not stopped by RLIMIT_CPU: %s" % compile_message(2))
check("File too large" in compile_message(3), "turn 3 not stopped by RLIMIT_FSIZE: %s" % compile_message(3))
check("Too many open files" in compile_message(4), "turn 4 not stopped by RLIMIT_NOFILE: %s" % compile_message(4))

# ---- what the hostile candidate saw (precompile and execute each ran it once)
reps = []
for d, _, files in os.walk(run_dir):
    for name in sorted(files):
        if name.startswith("hostile-") and name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                reps.append(json.load(f))
check(len(reps) == 2, "the hostile candidate reported %d times, want 2" % len(reps))
for rep in reps:
    env_text = json.dumps(rep["env"])
    check(key not in env_text and secret2 not in env_text, "a secret reached the candidate")
    check("OPENAI_API_KEY" not in rep["env"] and other not in rep["env"],
          "a secret's name reached the candidate: %s" % sorted(rep["env"]))
    if NETNS:
        check(all(v != "connected" for v in rep["connect"].values()),
              "the candidate reached a listener: %s" % rep["connect"])
    tc_dir, tc_write = rep["triton_cache"]
    check(tc_write == "written" and
          os.path.realpath(tc_dir).startswith(os.path.realpath(
              os.path.join(run_dir, "tasks", "L1_2_LeakyReLU_s0")) + os.sep),
          "Triton's cache is not the candidate's own to write: %s" % rep["triton_cache"])
    if ROOT:
        check(rep["uid"] == 65534, "the candidate ran as uid %d" % rep["uid"])
        check(len(rep["write"]) >= 6, "too few write targets: %s" % rep["write"])
        check(all(v in ("EACCES", "EPERM") for v in rep["write"].values()),
              "the candidate wrote: %s" % rep["write"])
        check(all(v in ("EACCES", "EPERM") for v in rep["remove"].values()),
              "the candidate moved: %s" % rep["remove"])
        check(len(rep["kill"]) >= 1 and
              rep["kill"]["parent"] == "EPERM" and all(v == "EPERM" for v in rep["kill"].values()),
              "the candidate signalled: %s" % rep["kill"])
if NETNS:
    check(all(li.accepted == 1 for li in listeners),
          "a listener accepted a candidate's connection: %s" % [li.accepted for li in listeners])
    check("network: isolated" in log, "the supervisor log does not say the network is isolated")
else:
    check("network: not isolated (" in log, "the supervisor log does not say why the network is shared")
if ROOT:
    check("user: runners run as nobody" in log, "the supervisor log does not name the runner's user")
proven = ["env allow-list", "CPU/file-size/open-file limits"]
proven += ["network namespace (%s)" % ", ".join(li.addr for li in listeners)] if NETNS else []
proven += ["uid drop: logs, run.json, another task's files and sealed build, kills"] if ROOT else []
print("ok: %s%s" % ("; ".join(proven), "" if ROOT else "; not proven here (needs root): uid drop"))
