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
- the server SIGKILLed while both tasks' runners wait: their watchers live on (the
  supervisor's children now); the first task's worker killed again: no restart before its
  runner is gone, and the other task's watcher is spared as a live worker's; once the
  files go each turn is judged correct as if nothing happened (the other task's runner
  from the server that died), the supervisor says the server ended, and the next steps
  fork from the workers' own servers;
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
from kfe2e import (BIN, HOME, STARTUP_WAIT_S, MockLLM, alive, check, check_pool_released,  # noqa: E402
                   feedback_records, last_to, own_pid_namespace, procs, records, scratch,
                   torch_python, wait_for, watched_for, write_config)

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
HOLDING = "kforge-test-holding-"    # made in the runner's working directory as it waits


def fenced(candidate, hold=None):
    with open(os.path.join(FAULTS, candidate)) as f:
        code = f.read()
    if hold:    # forward waits while the file is there
        # It says so in its working directory first, in a file named for its PID
        # namespace (hanging_runner looks there): a runner of the step that has not reached
        # it yet may still end (a retried execute), and a dead worker's runner leaves its
        # file in the directory its successor's runner works in.
        code = code.replace("    def forward(self, a, b):\n", "    def forward(self, a, b):\n"
                            "        import os, time\n"
                            "        open(%r + os.readlink('/proc/self/ns/pid'), 'w').close()\n"
                            "        while os.path.exists(%r):\n"
                            "            time.sleep(0.02)\n" % (HOLDING, hold))
        check("while os.path.exists" in code, "the waiting candidate was not made")
    return {"content": "Here is the kernel.\n```python\n%s```\n" % code,
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}


def live():
    """The live processes by pid."""
    return {p["pid"]: p for p in procs() if alive(p)}


def hanging_runner(task):
    """The runner of task's execute that runs the candidate (its working directory under
    the task's; a PID namespace beneath ours), once its task's log says EXECUTE and the
    candidate says in that directory that it waits."""
    if last_to(RUN, task) != "EXECUTE":
        return None
    for p in live().values():
        if "kforge_runner.py" in p["cmd"] and p["cwd"].startswith(os.path.join(RUN, "tasks", task) + "/") \
                and own_pid_namespace(p["pid"]) and holding(p):
            return p
    return None


def holding(p):
    """Whether the candidate in runner p says it waits (fenced)."""
    try:
        ns = os.readlink("/proc/%d/ns/pid" % p["pid"])
    except OSError:
        return False
    return os.path.exists(os.path.join(p["cwd"], HOLDING + ns))


def story(task):
    """What a failure message shows of task: its last records and the supervisor's last
    lines."""
    try:
        recs = ["%s->%s %s" % (r.get("from"), r.get("to"), r.get("event")) for r in records(RUN, task)[-4:]]
        with open(os.path.join(RUN, "supervisor.log")) as f:
            log = f.read().splitlines()[-8:]
    except (OSError, ValueError, KeyError):
        return "(unreadable)"
    return "%s: %s; supervisor: %s" % (task, recs, log)


def watcher_of(runner):
    """The watcher above a candidate's runner (its namespace's init and the waiter outside,
    the pid kforge knows, between them), looked for until the chain reads whole: a process
    of it caught between fork and exec may not read in one look of /proc."""
    def find():
        ps = live()
        chain, p = [], ps.get(runner["ppid"])
        while p is not None and watched_for(p) is None and len(chain) < 3:
            chain.append(p["comm"])
            p = ps.get(p["ppid"])
        return p if p is not None and watched_for(p) is not None else None
    return wait_for("a watcher above the runner %d" % runner["pid"], find, None, 30)


def tree_groups(ps, root):
    tree, grew = {root}, True
    while grew:
        more = {p["pid"] for p in ps.values() if p["ppid"] in tree} - tree
        tree |= more
        grew = bool(more)
    return {ps[p]["pgid"] for p in tree if p in ps} | {root}


def kill_and_check_order(sup, worker, runner):
    """SIGKILLs worker and checks that no worker starts before the process groups of its
    runner's tree are gone (each look asks first whether a new worker is up, then whether
    a group is left: both at once is the failure)."""
    before = workers(sup)
    pgids = tree_groups(live(), runner["pid"])
    os.kill(worker, signal.SIGKILL)
    deadline = time.time() + STARTUP_WAIT_S
    while True:
        restarted = workers(sup) - before
        left = [p for p in live().values() if p["pgid"] in pgids]
        if not left:
            return
        check(not restarted, "worker %s started while the dead worker's runner group runs: %s" % (
            sorted(restarted), [p["cmd"][:80] for p in left]))
        check(time.time() < deadline, "the dead worker's runner never ended: %s" % [p["cmd"][:80] for p in left])
        time.sleep(0.02)


def workers(sup):
    return {p["pid"] for p in live().values() if p["ppid"] == sup.pid and p["pgid"] == sup.pid}


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
    watcher = watcher_of(r)
    ps = live()
    worker = watched_for(watcher)
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
    kill_and_check_order(sup, worker, r)
    print("ok: the dead worker's runner was gone before its worker was started again")

    # ---- the server killed while both tasks' runners wait (the first task's restarted)
    waiting = [wait_for("%s's waiting runner" % t, lambda t=t: hanging_runner(t), sup) for t in TASKS]
    watchers = [watcher_of(x)["pid"] for x in waiting]
    os.kill(server["pid"], signal.SIGKILL)
    wait_for("the server's end", lambda: server["pid"] not in live(), sup)
    time.sleep(1)
    check(all(w in live() for w in watchers), "a watcher died with the server: %s of %s; %s" % (
        [w for w in watchers if w not in live()], watchers,
        " | ".join(story(t) for t, w in zip(TASKS, watchers) if w not in live())))
    # ---- and the first task's worker killed again: its watcher, the supervisor's now,
    # still holds the pipe (no restart before its runner is gone), and the other task's
    # watcher, the supervisor's too, is spared as the live worker's it is
    kill_and_check_order(sup, watched_for(live()[watchers[0]]), waiting[0])
    # The supervisor kills a dead worker's orphans before it logs the restart.
    wait_for("the second restart", lambda: "death 2 of" in open(os.path.join(RUN, "supervisor.log")).read(), sup)
    check(watchers[1] in live(), "the other task's watcher was killed with the dead worker's orphans")
    print("ok: with the server dead, a worker killed: its runner gone before the restart, "
          "the other task's watcher spared")
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
ps = live()
left = [p for p in ps.values() if sock in p["cmd"] or
        (watched_for(p) is not None and watched_for(p) not in ps)]
check(not left, "processes of the run's server left: %s" % [(p["pid"], p["comm"]) for p in left])
check(not os.path.exists(os.path.join(CACHE, "servers", sock)), "the run's socket file is left")
check_pool_released(RUN)
print("ok: the server's death cost no turn (its runner judged correct, then %s from server %s); nothing left"
      % (d2.get("start"), d2.get("server")))
