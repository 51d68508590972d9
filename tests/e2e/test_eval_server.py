#!/usr/bin/env python3
"""test_eval_server: the fork server `kforge eval` leaves for the next eval
(runner.server_idle_s; shared fork servers in feedback/warm.c, the watcher in
feedback/kforge_runner.py, kb_spawn_fork_watched in base/spawn.c).

- evals of a built candidate fork their runners from one server that outlives each eval:
  consecutive evals name the same server, alive between them, as a process of its own
  session
- a candidate's setsid daemon is killed and counted by its runner's watcher
  (stray_processes, as a worker's subreaper counts it)
- an eval killed with SIGKILL while its candidate hangs: the runner dies with it, and
  the next eval removes the scratch directory it left
- the server killed: the next eval starts another and is judged as before
- its socket file removed: the server ends
- runner.server_idle_s=N: the server ends N seconds after its last runner ended, never
  while one runs; 0: no server outlives the eval, whose cached execute then starts a
  runner of its own

The evals here carry an LC_ variable of their own, which runners get, so their server is
this test's and no other test's (killing it must not reach theirs).
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kfe2e import BIN, HOME, check, kforge, reply_code, scratch, torch_python  # noqa: E402

torch_python()
work = scratch("eval_server")
problem = os.path.join(HOME, "problems", "level1", "2_LeakyReLU.py")
kernel = os.path.join(work, "kernel.py")
with open(kernel, "w") as f:
    f.write(reply_code("leaky_2"))
faults = os.path.join(HOME, "tests", "data", "faults")
add = os.path.join(HOME, "tests", "data", "feedback", "problem_add.py")
# A TMPDIR of this test's own, to look for the evals' scratch directories in.
TMP = os.path.join(work, "tmp")
os.makedirs(TMP)
ENV = {"LC_KFORGE_TEST": "eval_server %d %f" % (os.getpid(), time.time()), "TMPDIR": TMP}
SETS = ["--set", "eval.perf_trials=3", "--set", "eval.warmup=1"]
# A bound on waiting for a process to go, for a machine shared with other work; the
# server looks at its socket and clock every 2 s.
GONE_S = 60


def evaluate(kern=kernel, prob=problem, sets=(), expect_rc=0):
    p = kforge("eval", "--problem", prob, "--kernel", kern, "--device", "cpu", "--json",
               *SETS, *sets, timeout=1200, env=ENV, check_rc=False)
    check(p.returncode == expect_rc, "kforge eval exited %d (expected %d): %s%s"
          % (p.returncode, expect_rc, p.stderr[-3000:], p.stdout[-3000:]))
    return json.loads(p.stdout)


def stat_of(pid):
    """(state, ppid, session) of a live process, None for a zombie or none."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in (b"Z", b"X") else (fields[0], int(fields[1]), int(fields[3]))


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def children(pid):
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            s = stat_of(int(name))
            if s is not None and s[1] == pid:
                out.append(int(name))
    return out


def wait_gone(pid, what):
    end = time.time() + GONE_S
    while stat_of(pid) is not None and time.time() < end:
        time.sleep(0.2)
    check(stat_of(pid) is None, "%s (pid %d) still runs %d s on" % (what, pid, GONE_S))


def server_of(r):
    pid = r["result"]["details"].get("server")
    check(r["result"]["details"].get("start") == "forked" and isinstance(pid, int),
          "the execute was not forked from a server: %s" % r["result"]["details"])
    return pid


# One server for consecutive evals, left running between them in a session of its own.
a = evaluate()
check(a["verdict"] == "correct", "the first eval: %s" % a["verdict"])
server = server_of(a)
st = stat_of(server)
check(st is not None, "the server %d did not outlive its eval" % server)
check(st[2] == server, "the server %d is not in a session of its own: %s" % (server, st))
argv = cmdline(server)
check(b"--zygote" in argv and b"--listen" in argv, "pid %d is no listening server: %s"
      % (server, argv))
sock = argv[argv.index(b"--listen") + 1].decode()
check(os.path.exists(sock) and (os.stat(sock).st_mode & 0o777) == 0o600,
      "the server's socket %s is missing or not its owner's alone" % sock)
b = evaluate()
c = evaluate()
check(b["steps"]["precompile"]["cache_hit"] and c["steps"]["precompile"]["cache_hit"],
      "the built candidate was built again: %s %s" % (b["steps"], c["steps"]))
check(server_of(b) == server and server_of(c) == server,
      "consecutive evals forked from servers %d, %d, %d" % (server, server_of(b), server_of(c)))
print("ok: three evals, one server (%d), which outlives them; the cached evals took %.2f s "
      "and %.2f s to execute" % (server, b["steps"]["execute"]["wall_s"],
                                  c["steps"]["execute"]["wall_s"]))

# A setsid daemon outlives its runner: the watcher, its subreaper, kills and counts it.
d = evaluate(os.path.join(faults, "daemonize.py"), add, ["--set", "eval.static_checks=false"],
             expect_rc=3)
check("stray_processes" in d["flags"] and d["result"]["details"].get("stray_processes") == 1,
      "the daemon was not counted: flags %s, details %s" % (d["flags"], d["result"]["details"]))
check(server_of(d) == server, "the daemon's eval used server %d" % server_of(d))
print("ok: a candidate's daemon killed and counted by its watcher (verdict %s)" % d["verdict"])

# An eval killed while its candidate hangs: its runner (a grandchild of the server, under
# its watcher) goes with it.
p = subprocess.Popen([BIN, "eval", "--problem", add, "--kernel", os.path.join(faults, "py_hang.py"),
                      "--device", "cpu", "--set", "eval.static_checks=false", *SETS],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     env=dict(os.environ, **ENV))
runners, end = [], time.time() + 600
while not runners and time.time() < end and p.poll() is None:
    time.sleep(0.2)
    runners = [r for w in children(server) for r in children(w)]
check(runners, "no runner of the hanging eval appeared under the server")
time.sleep(1)
p.kill()
p.wait()
for r in runners:
    wait_gone(r, "the killed eval's runner")
print("ok: an eval killed with SIGKILL took its runner (%s) with it" % runners)
left = [n for n in os.listdir(TMP) if n.startswith("kforge-eval-")]
check(len(left) == 1, "the killed eval's scratch directory: %s in TMPDIR" % os.listdir(TMP))

# The server killed: the next eval starts another (and removes the killed eval's scratch).
os.kill(server, signal.SIGKILL)
wait_gone(server, "the killed server")
e = evaluate()
check(os.listdir(TMP) == [], "after the next eval, TMPDIR holds %s" % os.listdir(TMP))
check(e["verdict"] == "correct", "the eval after the server's death: %s" % e["verdict"])
second = server_of(e)
check(second != server and stat_of(second) is not None,
      "no new server after the first was killed: %d" % second)

# Its socket file removed: it ends (`rm` of the cache's servers/ ends every one).
os.unlink(sock)
wait_gone(second, "the server whose socket was removed")
print("ok: a killed server replaced by the next eval, which a removed socket ends")

# Idle time: runner.server_idle_s=1 ends it a second after its last runner ended, never
# while one runs: a candidate that takes seconds (half a second a call) is judged as any
# other (a server that ended under it left its watcher to the eval, a subreaper, which
# killed it as a stray: rejected).
slow = os.path.join(work, "slow.py")
with open(slow, "w") as f:
    f.write("import time\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
            "    def forward(self, a, b):\n        time.sleep(0.5)\n        return a + b\n")
f = evaluate(slow, add, ["--set", "runner.server_idle_s=1", "--set", "eval.static_checks=false"])
check(f["verdict"] == "correct" and f["steps"]["execute"]["wall_s"] > 3,
      "a slow candidate with runner.server_idle_s=1: %s, execute %s s, reasons %s"
      % (f["verdict"], f["steps"]["execute"]["wall_s"], f["reasons"]))
third = server_of(f)
check(third not in (server, second), "server %d again" % third)
wait_gone(third, "the server with an idle time of 1 s")
# 0: none is left; the cached execute's runner is then started for itself, cold or forked
# from the eval's own server (started ahead of the step, as a run's worker does), which
# ends with the eval.
g = evaluate(sets=["--set", "runner.server_idle_s=0"])
gd = g["result"]["details"]
check(g["verdict"] == "correct" and (gd.get("start") == "cold" or (
          gd.get("start") == "forked" and isinstance(gd.get("server"), int) and
          gd["server"] not in (server, second, third))),
      "runner.server_idle_s=0: %s, start %s, server %s" % (g["verdict"], gd.get("start"), gd.get("server")))
if gd.get("start") == "forked":
    wait_gone(gd["server"], "the eval's own server (runner.server_idle_s=0)")
left = [pid for pid in (int(n) for n in os.listdir("/proc") if n.isdigit())
        if sock.encode() in b"\0".join(cmdline(pid))]
check(left == [], "runner.server_idle_s=0 left a server: %s" % left)
print("ok: the idle time ends a server; 0 leaves none")
