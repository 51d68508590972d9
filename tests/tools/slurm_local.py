#!/usr/bin/env python3
"""tools/slurm/local.sh: the one-host Slurm the Slurm engine's tests and benches run on.

In a state directory and on ports of this test's own: `start` brings up munged,
slurmctld and slurmd and the node reports idle; a job array of three elements, one fake
GPU each (gres gpu:1 of the node's four), runs each element with a CUDA_VISIBLE_DEVICES of
its own; a running job killed with `scancel --signal=KILL` ends; `status` answers while up;
`stop` ends the three daemons and `status` then fails. Skips (77) without root or Slurm,
as the script does."""
import glob
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from kfe2e import SKIP, SLURM_PORTS, check  # noqa: E402

SCRIPT = os.path.join(ROOT, "tools", "slurm", "local.sh")
WAIT_S = 180   # a bound on waiting for the daemons and jobs on a loaded machine


base = os.environ.get("KFORGE_TEST_TMP") or tempfile.gettempdir()
os.makedirs(base, exist_ok=True)
state = tempfile.mkdtemp(prefix="slurm-local-", dir=base)
first, pairs = SLURM_PORTS["tools_slurm_local"]
env = dict(os.environ, KFORGE_SLURM_DIR=state, KFORGE_SLURM_GPUS="4",
           KFORGE_SLURM_PORT=str(first + os.getpid() % pairs * 2))
p = subprocess.run([SCRIPT, "start"], env=env, capture_output=True, text=True, timeout=WAIT_S)
if p.returncode == SKIP:
    print("SKIP: " + p.stdout.strip())
    sys.exit(SKIP)


def pids():
    out = {}
    for name in ("munged", "slurmctld", "slurmd"):
        try:
            with open(os.path.join(state, "run", name + ".pid")) as f:
                out[name] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


try:
    check(p.returncode == 0, "start exited %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    conf = os.path.join(state, "etc", "slurm.conf")
    check(p.stdout.strip() == "export SLURM_CONF=%s" % conf, "start printed %r" % p.stdout)
    env["SLURM_CONF"] = conf
    started = pids()
    check(sorted(started) == ["munged", "slurmctld", "slurmd"] and all(map(alive, started.values())),
          "daemons after start: %s" % started)
    out = os.path.join(state, "job-%a.out")
    sub = subprocess.run(["sbatch", "--parsable", "--array=0-2", "--gres=gpu:1", "-c", "1",
                          "--mem=64", "-o", out, "--wrap",
                          "echo $SLURM_ARRAY_TASK_ID $CUDA_VISIBLE_DEVICES"],
                         env=env, capture_output=True, text=True, cwd=state)
    check(sub.returncode == 0, "sbatch: %s" % sub.stderr)
    job = sub.stdout.strip().split(";")[0]
    end = time.time() + WAIT_S
    while time.time() < end:
        q = subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True)
        if q.returncode == 0 and not q.stdout.strip():
            break
        time.sleep(1)
    lines = {}
    for f in glob.glob(os.path.join(state, "job-*.out")):
        with open(f) as fh:
            k, _, gpu = fh.read().strip().partition(" ")
            lines[k] = gpu
    check(sorted(lines) == ["0", "1", "2"], "array outputs: %s" % lines)
    check(all(g.isdigit() and int(g) < 4 for g in lines.values()),
          "each element one fake GPU of four: %s" % lines)

    sleeper = subprocess.run(["sbatch", "--parsable", "-c", "1", "--mem=64", "-o", "/dev/null",
                              "--wrap", "sleep 600"], env=env, capture_output=True, text=True, cwd=state)
    check(sleeper.returncode == 0, "sbatch sleeper: %s" % sleeper.stderr)
    sid = sleeper.stdout.strip()
    end = time.time() + WAIT_S
    while time.time() < end:
        st = subprocess.run(["squeue", "-h", "-j", sid, "-o", "%T"], env=env, capture_output=True, text=True)
        if st.stdout.strip() == "RUNNING":
            break
        time.sleep(1)
    check(st.stdout.strip() == "RUNNING", "the sleeper never ran: %r" % st.stdout)
    subprocess.run(["scancel", "--signal=KILL", sid], env=env, check=True)
    end = time.time() + WAIT_S
    while time.time() < end:
        st = subprocess.run(["squeue", "-h", "-j", sid], env=env, capture_output=True, text=True)
        if not st.stdout.strip():
            break
        time.sleep(1)
    check(not st.stdout.strip(), "the killed job is still queued: %r" % st.stdout)
    s = subprocess.run([SCRIPT, "status"], env=env, capture_output=True, text=True)
    check(s.returncode == 0 and "idle" in s.stdout, "status while up: %s" % s.stdout)
finally:
    subprocess.run([SCRIPT, "stop"], env=env, capture_output=True, text=True, timeout=WAIT_S)
stopped = pids()
check(not any(alive(p) for p in stopped.values()), "daemons after stop: %s" % stopped)
s = subprocess.run([SCRIPT, "status"], env=env, capture_output=True, text=True)
check(s.returncode != 0, "status after stop exited 0: %s" % s.stdout)
print("ok: local slurm up, an array of 3 on fake GPUs, a job killed, down")
