#!/usr/bin/env python3
"""Process faults at chosen moments, then recovery. Each scenario runs the same small run
(2 tasks x 2 turns: a kernel that compiles and is correct, then a reply without code)
and crashes it once: a worker dies at a named crash point (KFORGE_CRASHPOINT, once per
run with KFORGE_CRASHONCE) and is restarted by the supervisor, or the whole run is cut
(supervisor, workers, runners all SIGKILLed, as a power cut would) and `kforge resume`d;
or a runner, a worker or the supervisor is SIGKILLed while a runner works. Afterwards:
every task has the turns and statuses of an uncrashed reference run (a killed runner's
turn is 'crashed'), the mock server saw no request twice, no log has a gap or a duplicate
seq, every artifact a log names exists with its hash, no lease is held, no process of
the run is left, and a final `kforge resume` redoes nothing. A worker orphaning its
compiling runner must not leave the compiler running either.

Every scenario reuses one run path, so the torch build of the reference run, copied in,
stays valid (ninja has nothing to do): each runner costs a Python start, not a compile.
"""
import glob
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
started = time.time()
work = scratch("e2e-crash")
problems = copy_problems(os.path.join(work, "problems"), ["level1/2_LeakyReLU.py"])
# turn 1: a kernel (compile + execute); turn 2 (its prompt holds turn 1's kernel): no code
SCRIPT = {"rules": [{"match": "e2e_leaky", "replies": [reply("leaky_1.md")]}],
          "default": reply("leaky_2.md")}
TASKS = ["L1_2_LeakyReLU_s0", "L1_2_LeakyReLU_s1"]
RUN = os.path.join(work, "run")
CACHE = os.path.join(work, "cache")
# Builds live in the cache that runs share (feedback/cache.c): this test's own, so that
# what it removes between scenarios is its own and no other test's build serves it.
SHARED = os.path.join(work, "shared-cache")
os.environ["KFORGE_CACHE_DIR"] = SHARED
TURNS_TOTAL = 2 * len(TASKS)
CRASH_HOLD_MS = 600000  # KFORGE_CRASHDELAY_MS's largest value: "until killed"


def config_for(mock, name):
    return write_config(os.path.join(work, name + ".yaml"), """
name: crash
problems: {dir: %s, levels: [1], samples: 2}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1}
runner: {python: %s, compile_slots: 1}
workers: 2
""" % (problems, mock.base_url, py))


# ------------------------------------------------------------------ processes

def runners_of(worker):
    """The runners a worker started: its children where it started them or forked them
    from a server of its own, else the children of watchers named for it (the run's fork
    server forks each runner under a watcher: kfe2e.watched_for)."""
    ps = procs()
    watchers = {p["pid"] for p in ps if watched_for(p) == worker}
    return [p["pid"] for p in ps if p["ppid"] == worker or p["ppid"] in watchers]


def worker_above(pid, workers):
    """The worker whose runner pid is, or whose runner's descendant: the nearest worker
    among its ancestors, or the one a watcher among them is named for."""
    ps = {p["pid"]: p for p in procs()}
    while pid > 1 and pid not in workers and pid in ps:
        if watched_for(ps[pid]) is not None:
            return watched_for(ps[pid])
        pid = ps[pid]["ppid"]
    return pid


def of_the_run(p):
    """A live process of the run: supervisor, worker, runner or what a runner started."""
    return alive(p) and (RUN + " " in p["cmd"] + " " or p["cwd"] == RUN or p["cwd"].startswith(RUN + "/"))


def pid_dead(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2] in "ZX"
    except OSError:
        return True


def runners():
    """Live runners of the run, with their task (from their working directory)."""
    out = []
    for p in procs():
        if alive(p) and "kforge_runner.py" in p["cmd"] and p["cwd"].startswith(RUN + "/tasks/"):
            p["task"] = p["cwd"][len(RUN) + 7:].split("/")[0]
            out.append(p)
    return out


def runner_in(state, candidate=False):
    """A runner whose task's log says it is in state (candidate: one that runs candidate
    code, not an execute's judge)."""
    for r in runners():
        if last_to(RUN, r["task"]) == state and (not candidate or own_pid_namespace(r["pid"])):
            return r
    return None


def power_cut(sup):
    """SIGKILL every process of the run at once: supervisor, workers, runners, compilers."""
    try:
        os.killpg(sup.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for p in procs():
        if of_the_run(p):
            try:
                os.kill(p["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
    sup.wait()
    wait_for("the run's processes to die", lambda: not any(of_the_run(p) for p in procs()), None,
             STARTUP_WAIT_S)


def groups_of_tree(root):
    """The process groups of root and of every process descended from it: a runner's,
    and those its ninja gives each compiler (ninja runs every command in a group of its
    own, which a kill of the runner's group does not reach)."""
    ps = [p for p in procs() if alive(p)]
    tree, grew = {root}, True
    while grew:
        more = {p["pid"] for p in ps if p["ppid"] in tree} - tree
        tree |= more
        grew = bool(more)
    return {p["pgid"] for p in ps if p["pid"] in tree} | {root}


def groups_left(pgids):
    return [p for p in procs() if p["pgid"] in pgids and alive(p)]


def compiling_runner():
    """A compile runner whose compiler runs: ninja, in the runner's process group, has
    started a command, in a group of its own."""
    r = runner_in("PRECOMPILE")
    return r if r is not None and len(groups_of_tree(r["pid"])) > 1 else None


def workers_of(sup):
    """The supervisor's live workers: its forked children in its own process group (an
    orphaned runner, and what it started, are in the runner's group)."""
    return {p["pid"] for p in procs() if alive(p) and p["ppid"] == sup.pid and p["pgid"] == sup.pid}


def check_group_ends(name, pgids, sup, workers_before):
    """A runner orphaned by its worker's death goes, and everything in its groups with it
    (pgids: groups_of_tree of the runner, taken before the kill; a compiler left running
    would write into a build directory the restarted worker uses), before the restarted
    worker starts. Judged by order, not by a clock: each look first asks whether a worker
    newer than workers_before is up, then whether a group is still there; both at once
    is the failure."""
    deadline = time.time() + STARTUP_WAIT_S
    while True:
        restarted = workers_of(sup) - workers_before
        left = groups_left(pgids)
        if not left:
            return
        check(not restarted, "%s: the orphaned runner's group still runs after worker %s started: %s"
              % (name, sorted(restarted), [p["cmd"][:100] for p in left]))
        check(time.time() < deadline, "%s: the orphaned runner's group never ended: %s"
              % (name, [p["cmd"][:100] for p in left]))
        time.sleep(0.02)


# -------------------------------------------------------------------- checks

def task_statuses():
    return {t: [(r["turn"], r["data"].get("status")) for r in feedback_records(records(RUN, t))]
            for t in TASKS}


def replies_saved():
    n = 0
    for d, _, files in os.walk(os.path.join(RUN, "tasks")):
        n += sum(1 for f in files if f in ("response.md", "reply_refused.md"))
    return n


def lost_to_cut(cut_tally):
    """Requests a power cut interrupted: asked before the cut, their reply never saved
    (another task's worker was waiting on the model when everything was killed). Those,
    and only those, may be asked again after the resume. cut_tally: (requests the server
    logged, replies saved), counted once the run was dead and that server stopped, so a
    request the server logged late still counts as asked before the cut."""
    if cut_tally is None:
        return 0
    asked, saved = cut_tally
    check(0 <= asked - saved <= len(TASKS) - 1, "%d requests before the cut but %d replies saved"
          % (asked, saved))
    return asked - saved


def verify(name, mock, ref, crashed_task=None, cut_tally=None):
    for task in TASKS:
        recs = records(RUN, task)   # seq from 1, no gap, no duplicate, no torn line
        check(recs[-1]["to"] == "DONE", "%s: %s ends in %s" % (name, task, recs[-1]["to"]))
        check(sum(r["event"] == "start" for r in recs) == 1, "%s: %s started twice" % (name, task))
        check(check_artifacts(RUN, task, recs) > 0, "%s: %s names no artifact" % (name, task))
    got, want = task_statuses(), {t: list(v) for t, v in ref.items()}
    if crashed_task is not None:
        want[crashed_task][0] = (1, "crashed")
    check(got == want, "%s: turns and statuses %s, want %s" % (name, got, want))
    n, lost = len(mock.requests()), lost_to_cut(cut_tally)
    check(n == TURNS_TOTAL + lost, "%s: the mock saw %d requests for %d turns (%d lost to the cut)"
          % (name, n, TURNS_TOTAL, lost))
    # no temporary file of an interrupted atomic write is left (build/ is torch's)
    debris = [os.path.join(d, f) for d, dirs, files in os.walk(RUN) if not d.startswith(os.path.join(RUN, "build"))
              for f in files if re.search(r"\.tmp\.\d+$", f)]
    check(not debris, "%s: temporary files left behind: %s" % (name, debris))
    st = json.loads(kforge("status", RUN, "--json").stdout)
    check(all(t["state"] == "DONE" for t in st["tasks"]), "%s: status: %s" % (name, st["tasks"]))
    for cls in ("exec", "compile", "llm"):
        check(st["resources"][cls]["used"] == 0, "%s: a %s lease leaked: %s" % (name, cls, st["resources"][cls]))
    wait_for("%s: stray processes to go" % name, lambda: not any(of_the_run(p) for p in procs()), None,
             STARTUP_WAIT_S)
    # resume of a finished run redoes nothing
    lines = {t: len(records(RUN, t)) for t in TASKS}
    kforge("resume", RUN, timeout=120)
    check({t: len(records(RUN, t)) for t in TASKS} == lines, "%s: resume of a finished run logged more" % name)
    check(len(mock.requests()) == n, "%s: resume of a finished run asked the model" % name)


# ----------------------------------------------------------------- scenarios

def prepare(fresh_build):
    if os.path.exists(RUN):
        shutil.rmtree(RUN)
    os.makedirs(RUN)
    builds = os.path.join(SHARED, "builds")
    if fresh_build:
        shutil.rmtree(builds, ignore_errors=True)
    else:
        # The reference's builds stay, their outcomes go: each precompile runs its
        # runner again (ninja finds the build done), so its crash points are reached.
        for cached in glob.glob(os.path.join(builds, "*", "compile.json")):
            os.remove(cached)
        shutil.copytree(os.path.join(CACHE, "baselines"), os.path.join(RUN, "baselines"))


def scenario(name, ref, crash=None, task=TASKS[0], skip=0, hold=False, cut=False, kill=None,
             fresh_build=False):
    """hold: the worker waits at the crash point (as long as KFORGE_CRASHDELAY_MS allows)
    until the test, having seen its runner, kills it: the moment of death is an event,
    not a delay the test must win a race against."""
    t0 = time.time()
    prepare(fresh_build)
    mock_dir = os.path.join(work, "mock-" + name)
    os.makedirs(mock_dir)
    mock = MockLLM(mock_dir, SCRIPT)
    config = config_for(mock, name)
    env = dict(os.environ)
    marker = os.path.join(work, name + ".crashed")
    if crash:
        env.update(KFORGE_CRASHPOINT=crash, KFORGE_CRASHONCE=marker, KFORGE_CRASHTASK=task,
                   KFORGE_CRASHSKIP=str(skip), KFORGE_CRASHDELAY_MS=str(CRASH_HOLD_MS if hold else 0))
    errlog = os.path.join(work, name + ".err")
    sup = subprocess.Popen([BIN, "run", config, "--run-dir", RUN], env=env, stdout=subprocess.DEVNULL,
                           stderr=open(errlog, "w"), start_new_session=True)
    crashed_task, resumed, cut_tally = None, False, None
    try:
        if crash:
            def fired():
                return os.path.exists(marker) and open(marker).read().endswith("\n")
            wait_for("%s: %s" % (name, crash), lambda: fired() or sup.poll() is not None, None)
            check(fired(), "%s: the run ended without reaching %s" % (name, crash))
            worker = int(open(marker).read())
            if hold:
                # The worker waits at the crash point, its runner spawned; the orphan
                # check: that runner's group, once its worker is killed there.
                runner = wait_for("%s: the runner of the held worker" % name,
                                  lambda: runners_of(worker), sup)[0]
                workers_before = workers_of(sup)
                pgids = groups_of_tree(runner)
                os.kill(worker, signal.SIGKILL)
            wait_for("%s: the worker to die" % name, lambda: pid_dead(worker), None)
            if hold:
                check_group_ends(name, pgids, sup, workers_before)
            if cut:
                power_cut(sup)
                # What the dead run asked and saved, from a server that has stopped (it
                # logs no more); the resume gets a fresh one on the same port and log.
                mock.stop()
                cut_tally = (len(mock.requests()), replies_saved())
                mock = MockLLM(mock_dir, SCRIPT, port=mock.port)
        elif kill == "runner":
            # Killed as soon as it is seen: it must still import torch and run the
            # trials, so it cannot have reported, however fast or slow the machine.
            r = wait_for("an executing runner", lambda: runner_in("EXECUTE", candidate=True), sup)
            os.kill(r["pid"], signal.SIGKILL)
            crashed_task = r["task"]
        elif kill == "worker":
            # while the runner's group holds the compiler: what the worker leaves behind
            # is a runner mid-build, its compiler and its compile lease
            r = wait_for("a runner running the compiler", lambda: compiling_runner(), sup)
            workers_before = workers_of(sup)
            pgids = groups_of_tree(r["pid"])
            # Its worker: the nearest of its ancestors that is one (between them, where
            # the runner has namespaces of its own, its init and its waiter), or the one
            # its watcher is named for.
            w = worker_above(r["pid"], workers_before)
            check(w in workers_before, "%s: no worker above the compiling runner %d" % (name, r["pid"]))
            os.kill(w, signal.SIGKILL)
            check_group_ends(name, pgids, sup, workers_before)
        elif kill == "supervisor":
            wait_for("a compiling runner", lambda: runner_in("PRECOMPILE"), sup)
            os.kill(sup.pid, signal.SIGKILL)
            sup.wait()
            # the workers stop on their own (parent-death signal), killing their runners
            wait_for("the orphaned workers to stop", lambda: not any(of_the_run(p) for p in procs()), None,
                     STARTUP_WAIT_S)
        if cut or kill == "supervisor":
            resumed = True
            kforge("resume", RUN, timeout=300)
        else:
            rc = sup.wait(timeout=300)
            check(rc == 0, "%s: kforge run exited %d:\n%s" % (name, rc, open(errlog).read()[-3000:]))
        if crash:
            check(os.path.exists(marker), "%s: the crash point did not fire" % name)
        if (crash and not cut) or kill == "worker":
            check("restarting it" in open(os.path.join(RUN, "supervisor.log")).read(),
                  "%s: the supervisor did not restart the dead worker" % name)
        if ref is not None:
            verify(name, mock, ref, crashed_task, cut_tally)
    finally:
        if sup.poll() is None:
            power_cut(sup)
        mock.stop()
    log = open(os.path.join(RUN, "supervisor.log")).read()
    done = os.path.join(work, "done-" + name)
    os.rename(RUN, done)
    print("ok %-28s %5.1f s%s" % (name, time.time() - t0, " (resumed)" if resumed else ""), flush=True)
    return done, log


# The reference: uncrashed. Its build and baseline are what the scenarios reuse.
ref_dir, _ = scenario("reference", None, fresh_build=True)
os.rename(ref_dir, RUN)
REF = task_statuses()
check(all(v == [(1, "ok"), (2, "no_code")] for v in REF.values()),
      "the reference run does not compile, execute and then get no code: %s" % REF)
shutil.copytree(os.path.join(RUN, "baselines"), os.path.join(CACHE, "baselines"))
shutil.rmtree(RUN)

# Worker crash points; the supervisor restarts the worker, which resumes from its log.
scenario("after-response-persisted", REF, crash="after-response-persisted")
# (whichever task compiles first: the other finds the build cached and runs no compile)
scenario("precompile-before-runner", REF, crash="precompile-before-runner", task="")
scenario("mid-compile", REF, crash="mid-compile", task="", hold=True)
scenario("mid-execute", REF, crash="mid-execute", task=TASKS[1], hold=True)
# Crash points that take the whole run down (power cut), then `kforge resume`.
scenario("execute-before-runner", REF, crash="execute-before-runner", cut=True)
# the 2nd append: GENERATE -> PRECOMPILE, after the reply was saved
_, log = scenario("tlog-mid-append", REF, crash="tlog-mid-append", task=TASKS[1], skip=1, cut=True)
check("dropping" in log and "torn" in log and ".dropped" in log,
      "tlog-mid-append: the torn line's repair is not in the supervisor log")
# the 5th atomic write of the worker: after the reply was saved, before kernel.py is
scenario("atomic-before-rename", REF, crash="atomic-before-rename", skip=4, cut=True)
# SIGKILL at chosen moments
scenario("sigkill-runner", REF, kill="runner")
scenario("sigkill-worker-compiling", REF, kill="worker", fresh_build=True)
# A fresh build, so that a runner compiles for as long as the compiler takes: the
# reference's build would make the precompile a ninja no-op, over before the test can
# be sure to see it.
scenario("sigkill-supervisor", REF, kill="supervisor", fresh_build=True)
print("ok: every crash point and SIGKILL recovered with the reference turns, no request "
      "repeated, nothing leaked (%.0f s)" % (time.time() - started))
