#!/usr/bin/env python3
"""test_run_server: a run's one fork server (feedback/warm.c, fb_warm_serve; the watcher in
feedback/kforge_runner.py; the supervisor's side in orchestrator/supervisor.c).

A run of two tasks, two turns each: turn 1 a correct candidate whose forward waits while a
file of the test's is there, turn 2 a correct one. Seen from outside:

- every runner of the run is a fork of one server, the supervisor's child, listening on
  the cache's servers/run-HOST-PID.sock: the runner's parent is a watcher named for its
  worker ("kfw-PID"), whose parent is that server; as root, the server and the watcher
  stay root and the runner runs as runner.user (nobody), so no candidate can signal or
  trace the process that watches it, whatever sandbox layer the host lacks;
- a worker SIGKILLed while its runner waits: the supervisor starts no worker again before
  that runner and everything it started are gone (the watchers hold a pipe the
  supervisor waits on), and the restarted worker finishes the task;
- the server SIGKILLed while both tasks' runners wait: their watchers live on, and once
  the files go each turn is judged correct as if nothing happened (the runner of the
  server that died among them), the supervisor says the server ended, and the next
  steps fork from the workers' own servers;
- at the end: both tasks DONE with the reference statuses, one request per turn, no
  server or watcher left, the socket file gone, the pool released.
"""
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kfe2e import (BIN, HOME, STARTUP_WAIT_S, MockLLM, check, check_pool_released,  # noqa: E402
                   feedback_records, records, scratch, torch_python, write_config)

py = torch_python()
ROOT = os.geteuid() == 0
work = scratch("e2e-run-server")
RUN = os.path.join(work, "run")
# The suite's cache (its builds of the add shared with the fault tests), where the run's
# socket is looked for.
CACHE = os.environ.get("KFORGE_CACHE_DIR") or os.path.join(work, "cache")
FAULTS = os.path.join(HOME, "tests", "data", "faults")
PROBLEM = os.path.join(HOME, "tests", "data", "feedback", "problem_add.py")
# A bound, never reached: the runners wait for the test, which lets them go.
DEADLINE_S = 900
TASKS = {"L1_1_KillWorker_s0": "KillWorker", "L1_2_KillServer_s0": "KillServer"}
HOLD = {t: os.path.join(work, "hold-" + n) for t, n in TASKS.items()}


def fenced(candidate, hold=None):
    with open(os.path.join(FAULTS, candidate)) as f:
        code = f.read()
    if hold:    # forward waits while the file is there
        code = code.replace("    def forward(self, a, b):\n", "    def forward(self, a, b):\n"
                            "        import os, time\n        while os.path.exists(%r):\n"
                            "            time.sleep(0.02)\n" % hold)
        check("while os.path.exists" in code, "the waiting candidate was not made")
    return {"content": "Here is the kernel.\n```python\n%s```\n" % code,
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}


def procs():
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                rest = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%s/comm" % d) as f:
                comm = f.read().strip()
            with open("/proc/%s/status" % d) as f:
                uid = int([ln for ln in f if ln.startswith("Uid:")][0].split()[1])
            try:
                cwd = os.readlink("/proc/%s/cwd" % d)
            except OSError:
                cwd = ""
        except (OSError, ValueError, IndexError):
            continue
        if rest[0] in "ZX":
            continue
        out[int(d)] = {"pid": int(d), "ppid": int(rest[1]), "pgid": int(rest[2]), "cmd": cmd,
                       "comm": comm, "uid": uid, "cwd": cwd}
    return out


def last_to(task):
    try:
        with open(os.path.join(RUN, "tasks", task, "trajectory.jsonl")) as f:
            lines = [line for line in f.read().split("\n") if line]
        return json.loads(lines[-1])["to"]
    except (OSError, ValueError, IndexError):
        return None


def hanging_runner(task):
    """The runner of task's execute that runs the candidate (its working directory is the
    task's turn; a PID namespace beneath ours), once its task's log says EXECUTE."""
    if last_to(task) != "EXECUTE":
        return None
    for p in procs().values():
        if "kforge_runner.py" in p["cmd"] and p["cwd"].startswith(os.path.join(RUN, "tasks", task) + "/"):
            try:
                with open("/proc/%d/status" % p["pid"]) as f:
                    if any(ln.startswith("NSpid:") and len(ln.split()) > 2 for ln in f):
                        return p
            except OSError:
                continue
    return None


def wait_for(what, cond, sup, timeout=STARTUP_WAIT_S * 2):
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        check(sup is None or sup.poll() is None, "the run ended before " + what)
        check(time.time() < deadline, "timed out waiting for " + what)
        time.sleep(0.05)


def watcher_of(ps, runner):
    """The watcher above a candidate's runner: its namespace's init, then the waiter
    outside (the pid kforge knows), then the watcher."""
    chain, p = [], ps.get(runner["ppid"])
    while p is not None and not p["comm"].startswith("kfw-") and len(chain) < 3:
        chain.append(p["comm"])
        p = ps.get(p["ppid"])
    check(p is not None and p["comm"].startswith("kfw-"),
          "no watcher above the runner: %s, then %s" % (chain, p and p["comm"]))
    return p


def tree_groups(ps, root):
    tree, grew = {root}, True
    while grew:
        more = {p["pid"] for p in ps.values() if p["ppid"] in tree} - tree
        tree |= more
        grew = bool(more)
    return {ps[p]["pgid"] for p in tree if p in ps} | {root}


def workers(sup):
    return {p["pid"] for p in procs().values() if p["ppid"] == sup.pid and p["pgid"] == sup.pid}


problems = os.path.join(work, "problems", "level1")
os.makedirs(problems)
with open(PROBLEM) as f:
    src = f.read()
rules = []
for i, (task, name) in enumerate(TASKS.items(), 1):
    marker = "[run server task %s]" % name
    with open(os.path.join(problems, "%d_%s.py" % (i, name)), "w") as f:
        f.write("# %s\n%s" % (marker, src))
    rules.append({"match": marker, "replies": [fenced("cpu_good_add.py", HOLD[task]),
                                               fenced("cpu_good_add.py")]})
    with open(HOLD[task], "w"):
        pass
mock = MockLLM(work, {"rules": rules, "default": {"status": 500, "content": "unexpected prompt"}})
config = write_config(os.path.join(work, "run_server.yaml"), """
name: run-server
problems: {dir: %s, levels: [1], samples: 1}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 1, perf_trials: 3, warmup: 1, timeout_s: %d,
       compile_timeout_s: 1200, static_checks: false}
runner: {python: %s, selftest: false, cpu_exec_slots: 2}
workers: 2
""" % (os.path.dirname(problems), mock.base_url, DEADLINE_S, py))
errlog = os.path.join(work, "run.err")
env = dict(os.environ, KFORGE_CACHE_DIR=CACHE)
sup = subprocess.Popen([BIN, "run", config,
                        "--run-dir", RUN, "--quiet"], env=env, stdout=subprocess.DEVNULL,
                       stderr=open(errlog, "w"), start_new_session=True)
server = None
try:
    # ---- the tree: supervisor > server > watcher "kfw-<worker>" > runner
    kill_worker, kill_server = list(TASKS)
    r = wait_for("the first task's waiting runner", lambda: hanging_runner(kill_worker), sup)
    ps = procs()
    watcher = watcher_of(ps, r)
    worker = int(watcher["comm"][4:])
    server = ps.get(watcher["ppid"])
    sock = "run-%s-%d.sock" % (socket.gethostname().replace("/", "_"), sup.pid)
    check(server is not None and "--zygote" in server["cmd"] and "--listen" in server["cmd"] and
          sock in server["cmd"] and server["ppid"] == sup.pid,
          "the watcher's parent is not the run's server under the supervisor %d: %s" % (
              sup.pid, server and (server["ppid"], server["cmd"][:300])))
    check(os.path.exists(os.path.join(CACHE, "servers", sock)), "no socket %s in the cache" % sock)
    check(worker in workers(sup), "the watcher is named for %d, no worker of the run" % worker)
    if ROOT:
        nobody = pwd.getpwnam("nobody").pw_uid
        check(server["uid"] == 0 and watcher["uid"] == 0 and r["uid"] == nobody,
              "uids: server %d, watcher %d, runner %d (want 0, 0, %d)" % (
                  server["uid"], watcher["uid"], r["uid"], nobody))
    else:
        check(server["uid"] == watcher["uid"] == r["uid"] == os.getuid(), "uids differ as a user")
    print("ok: the runner's parent is watcher %s of worker %d, a fork of the run's server %d "
          "(uids %d/%d/%d)" % (watcher["comm"], worker, server["pid"], server["uid"], watcher["uid"], r["uid"]))

    # ---- a worker killed while its runner waits: no restart before the runner's groups end
    before = workers(sup)
    pgids = tree_groups(ps, r["pid"])
    os.kill(worker, signal.SIGKILL)
    deadline = time.time() + STARTUP_WAIT_S
    while True:
        restarted = workers(sup) - before
        left = [p for p in procs().values() if p["pgid"] in pgids]
        if not left:
            break
        check(not restarted, "worker %s started while the dead worker's runner group runs: %s" % (
            sorted(restarted), [p["cmd"][:80] for p in left]))
        check(time.time() < deadline, "the dead worker's runner never ended: %s" % [p["cmd"][:80] for p in left])
        time.sleep(0.02)
    print("ok: the dead worker's runner was gone before its worker was started again")

    # ---- the server killed while both tasks' runners wait (the first task's restarted)
    waiting = [wait_for("%s's waiting runner" % t, lambda t=t: hanging_runner(t), sup) for t in TASKS]
    watchers = [watcher_of(procs(), x)["pid"] for x in waiting]
    os.kill(server["pid"], signal.SIGKILL)
    wait_for("the server's end", lambda: server["pid"] not in procs(), sup)
    time.sleep(1)
    check(all(w in procs() for w in watchers), "a watcher died with the server: %s of %s" % (
        [w for w in watchers if w not in procs()], watchers))
    for f in HOLD.values():
        os.unlink(f)
    rc = sup.wait(timeout=1800)
    check(rc == 0, "kforge run exited %d: %s" % (rc, open(errlog).read()[-3000:]))
finally:
    if sup.poll() is None:
        os.killpg(sup.pid, signal.SIGKILL)
    mock.stop()

# ---- the run whole, the server gone
for task in TASKS:
    recs = records(RUN, task)
    check(recs[-1]["to"] == "DONE", "%s did not finish: %s" % (task, recs[-1]))
    st = [x["data"].get("status") for x in feedback_records(recs)]
    check(st == ["ok", "ok"], "%s: statuses %s, want ok twice" % (task, st))
check(len(mock.requests()) == 4, "the model was asked %d times for 4 turns" % len(mock.requests()))
with open(os.path.join(RUN, "supervisor.log")) as f:
    log = f.read()
check("the run's fork server %d ended" % server["pid"] in log, "the supervisor did not say the server ended")
with open(os.path.join(RUN, "tasks", kill_server, "turns", "1", "result.json")) as f:
    d1 = json.load(f)["details"]
check(d1.get("server") == server["pid"], "the judged turn's runner was not the dead server's: %s"
      % d1.get("server"))
with open(os.path.join(RUN, "tasks", kill_server, "turns", "2", "result.json")) as f:
    d2 = json.load(f)["details"]
check(d2.get("start") in ("forked", "warm", "cold") and d2.get("server") != server["pid"],
      "a step after the server's end came from it: %s" % {k: d2.get(k) for k in ("start", "server")})
# Its server, and any watcher whose worker is gone (this run's, or any other's).
ps = procs()
left = [p for p in ps.values() if sock in p["cmd"] or
        (p["comm"].startswith("kfw-") and p["comm"][4:].isdigit() and int(p["comm"][4:]) not in ps)]
check(not left, "processes of the run's server left: %s" % [(p["pid"], p["comm"]) for p in left])
check(not os.path.exists(os.path.join(CACHE, "servers", sock)), "the run's socket file is left")
check_pool_released(RUN)
print("ok: the server's death cost no turn (its runner judged correct, then %s from server %s); nothing left"
      % (d2.get("start"), d2.get("server")))
