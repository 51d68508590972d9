#!/usr/bin/env python3
"""Storage faults: a corrupt or torn trajectory line, an unwritable run directory, and a
full disk.

- A log corrupted in the middle (bit rot) and one torn at the tail are repaired on
  resume with a warning in the supervisor log, the dropped bytes kept in
  trajectory.jsonl.dropped; the tasks finish with every turn and no request repeated.
- An unwritable run directory (chmod 0555; as root, where modes do not bind, a read-only
  bind mount, else chattr +i): `kforge resume` and `kforge run` fail at once with one
  line naming the path, and nothing in the run changes.
- A full disk (root: the run on a small tmpfs, filled by a filler file mid-run): the
  worker that cannot write stops without failing its task or spending a turn, the run
  stops with one message naming the run directory and "no space left on device" (stderr
  and supervisor.log), a resume while still full is refused at once, and after the
  filler is deleted a resume finishes every task. Once while writing the model's reply,
  once while the compiler writes its object file (its failure is not cached as a
  compile error).
Parts this host cannot do (not root, no mount) are skipped with a reason.
"""
import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
started = time.time()
work = scratch("e2e-storage")
problems = copy_problems(os.path.join(work, "problems"), ["level1/2_LeakyReLU.py"])
TASKS = ["L1_2_LeakyReLU_s0", "L1_2_LeakyReLU_s1"]
NOCODE = reply("leaky_1.md")
skipped = []


def config_for(name, mock, samples=2, turns=3, extra=""):
    return write_config(os.path.join(work, name + ".yaml"), """
name: %s
problems: {dir: %s, levels: [1], samples: %d}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1}
refinement: {turns: %d, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1}
runner: {python: %s}
workers: 2
%s""" % (name, problems, samples, mock.base_url, turns, py, extra))


def tree(root):
    """path -> (mode, sha256) of every file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (os.stat(p).st_mode, hashlib.sha256(fh.read()).hexdigest())
    return out


def sh(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True)


def one_line(p):
    lines = p.stderr.strip().split("\n")
    return len(lines) == 1 and lines[0].startswith("kforge: ")


def no_process_in(path):
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.readlink("/proc/%s/cwd" % d).startswith(path + "/"):
                    return False
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if path.encode() in f.read():
                        return False
            except OSError:
                pass
    return True


def wait_requests(mock, n, sup, timeout=300):
    deadline = time.time() + timeout
    while len(mock.requests()) < n:
        check(sup.poll() is None, "the run ended before %d requests" % n)
        check(time.time() < deadline, "the run made no progress")
        time.sleep(0.05)


def fill(path):
    """Writes the filler until the filesystem refuses: ENOSPC at the granularity of a page."""
    with open(path, "ab", buffering=0) as f:
        for chunk in (1 << 20, 1 << 12, 1 << 9):
            while True:
                try:
                    f.write(b"\0" * chunk)
                except OSError as e:
                    check(e.errno == errno.ENOSPC, "filler: %s" % e)
                    break
    check(os.statvfs(path).f_bavail == 0, "the disk is not full after the filler")


# ------------------------------------------------- 1. a corrupt and a torn trajectory line

mock = MockLLM(work, {"default": NOCODE})
run1 = os.path.join(work, "run1")
kforge("run", config_for("corrupt", mock), "--run-dir", run1)
reqs = len(mock.requests())
check(reqs == 6, "6 turns, %d requests" % reqs)
log_a = os.path.join(run1, "tasks", TASKS[0], "trajectory.jsonl")
log_b = os.path.join(run1, "tasks", TASKS[1], "trajectory.jsonl")
lines = open(log_a, "rb").read().split(b"\n")
bad = bytearray(lines[2])
bad[len(bad) // 2: len(bad) // 2 + 6] = b"\x00\xffrot\x01"   # bit rot inside record 3
lines[2] = bytes(bad)
open(log_a, "wb").write(b"\n".join(lines))
dropped_a = b"\n".join(lines[2:])
data_b = open(log_b, "rb").read()
open(log_b, "wb").write(data_b[:-25])   # the last record torn, as a crash mid-write leaves it
kforge("resume", run1)
log = open(os.path.join(run1, "supervisor.log")).read()
check("%s: dropping %d bytes" % (log_a, len(dropped_a)) in log and "line 3 is not JSON" in log,
      "the corrupt record's repair is not in the supervisor log:\n" + log[-3000:])
check("%s: dropping" % log_b in log and "has no newline (a torn write)" in log,
      "the torn line's repair is not in the supervisor log:\n" + log[-3000:])
check(open(log_a + ".dropped", "rb").read() == dropped_a, "the dropped records were not kept aside")
for t in TASKS:
    recs = records(run1, t)
    check([r["turn"] for r in feedback_records(recs)] == [1, 2, 3] and recs[-1]["to"] == "DONE",
          "%s after repair: %s" % (t, [(r["turn"], r["from"], r["to"]) for r in recs]))
    check_artifacts(run1, t, recs)
check(len(mock.requests()) == reqs, "the repair asked the model again (%d requests)" % len(mock.requests()))
print("ok corrupt and torn lines repaired (%.0f s)" % (time.time() - started), flush=True)


# ------------------------------------------------------ 2. an unwritable run directory

os.makedirs(os.path.join(work, "mock2"))
slow = MockLLM(os.path.join(work, "mock2"), {"default": reply("leaky_1.md", delay_s=0.4)})
run2 = os.path.join(work, "run2")
config2 = config_for("unwritable", slow)
sup = subprocess.Popen([BIN, "run", config2, "--run-dir", run2], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, start_new_session=True)
wait_requests(slow, 2, sup)
sup.send_signal(signal.SIGTERM)
check(sup.wait(STARTUP_WAIT_S) == 0, "a stopped run should exit 0")
before = tree(run2)
undo = None
if os.geteuid() != 0:
    os.chmod(run2, 0o555)
    undo, how = (lambda: os.chmod(run2, 0o755)), "chmod 0555"
elif sh("mount", "--bind", run2, run2).returncode == 0:
    if sh("mount", "-o", "remount,ro,bind", run2).returncode == 0:
        undo, how = (lambda: sh("umount", run2)), "a read-only bind mount"
    else:
        sh("umount", run2)
if undo is None and os.geteuid() == 0 and sh("chattr", "+i", run2).returncode == 0:
    undo, how = (lambda: sh("chattr", "-i", run2)), "chattr +i"
if undo is None:
    skipped.append("unwritable run directory: root here, and neither a read-only bind mount nor chattr +i works")
else:
    try:
        asked = len(slow.requests())
        p = kforge("resume", run2, check_rc=False, timeout=120)
        check(p.returncode != 0 and one_line(p) and run2 in p.stderr,
              "resume in an unwritable run dir (%s): rc %d, stderr %r" % (how, p.returncode, p.stderr))
        # at once: before any work, so the model was not asked (not judged by the clock)
        check(len(slow.requests()) == asked, "the refused resume asked the model")
        p = kforge("run", config2, "--run-dir", os.path.join(run2, "inner"), check_rc=False, timeout=120)
        check(p.returncode != 0 and one_line(p) and os.path.join(run2, "inner") in p.stderr,
              "run into an unwritable dir (%s): rc %d, stderr %r" % (how, p.returncode, p.stderr))
    finally:
        undo()
    check(tree(run2) == before, "a refused resume changed the run directory")
    kforge("resume", run2)
    for t in TASKS:
        recs = records(run2, t)
        check([r["turn"] for r in feedback_records(recs)] == [1, 2, 3] and recs[-1]["to"] == "DONE",
              "%s did not finish after the directory became writable" % t)
    check(len(slow.requests()) == 6, "%d requests for 6 turns" % len(slow.requests()))
    print("ok unwritable run directory (%s) refused at once: %s" % (how, p.stderr.strip()), flush=True)
slow.stop()
mock.stop()


# ---------------------------------------------------------------------- 3. a full disk

fs = os.path.join(work, "fs")
os.makedirs(fs)
if os.geteuid() != 0:
    skipped.append("full disk: needs root to mount a small tmpfs")
elif sh("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", fs).returncode != 0:
    skipped.append("full disk: mount -t tmpfs is not permitted here")
else:
    def full_disk_case(name, script, samples, turns, when, want_lost, cache=False):
        """Runs on the tmpfs, fills it at when(mock, sup), checks the stop, a refused resume,
        then frees the space and resumes to the end. cache: the builds go to the tmpfs too
        (a cache of the run's own there, without the fast build's precompiled headers,
        which would not fit), so that a compile meets the full disk; and no selftest,
        whose known-good extension would be one more build of all of torch/extension.h
        (15 s of CPU on the 2-core machine) before the one under test."""
        mdir = os.path.join(work, "mock-" + name)
        os.makedirs(mdir)
        m = MockLLM(mdir, script)
        run = os.path.join(fs, name)
        filler = os.path.join(fs, "filler")
        errp = os.path.join(work, name + ".err")
        env = dict(os.environ, KFORGE_CACHE_DIR=os.path.join(fs, "cache")) if cache else None
        conf = config_for(name, m, samples, turns)
        if cache:
            with open(conf) as f:
                text = f.read().replace("runner: {python: %s}" % py,
                                        "runner: {python: %s, fast_build: false, "
                                        "selftest: false}" % py)
            with open(conf, "w") as f:
                f.write(text)
        sup = subprocess.Popen([BIN, "run", conf, "--run-dir", run], env=env,
                               stdout=subprocess.DEVNULL, stderr=open(errp, "w"), start_new_session=True)
        try:
            when(m, sup, run)
            fill(filler)
            with open(release, "w"):    # replies held until now may come (hold_until)
                pass
            rc = sup.wait(600)
            err = open(errp).read()
            msg = "stopping: no space left on device in %s" % run
            check(rc == 1, "%s: the run exited %d on a full disk, want 1:\n%s" % (name, rc, err[-3000:]))
            check(err.count(msg) == 1, "%s: stderr should say once %r:\n%s" % (name, msg, err[-3000:]))
            check("no space left on device" in err and ("cannot write '%s/" % run in err or
                  "for want of disk space under" in err), "%s: no line names what could not be written" % name)
            slog = open(os.path.join(run, "supervisor.log")).read()
            check(slog.count(msg) == 1, "%s: supervisor.log should say once %r" % (name, msg))
            info = json.load(open(os.path.join(run, "run.json")))
            check(info["status"] == "stopped" and "no space left on device" in (info.get("stop_reason") or ""),
                  "%s: run.json %s" % (name, info))
            check("restarting" not in err and "giving up" not in err, "%s: a worker was restarted on a full disk" % name)
            done_turns, saved = 0, 0
            for t in ["L1_2_LeakyReLU_s%d" % i for i in range(samples)]:
                recs = records(run, t)
                check(all(r["to"] != "FAILED" for r in recs), "%s: %s FAILED on a full disk" % (name, t))
                check_artifacts(run, t, recs)
                done_turns += len(feedback_records(recs))
                saved += sum(os.path.exists(os.path.join(run, "tasks", t, "turns", str(k), "response.md"))
                             for k in range(1, turns + 1))
            check(done_turns < samples * turns, "%s: every turn finished before the disk filled" % name)
            lost = len(m.requests()) - saved
            check(want_lost(lost), "%s: %d replies lost to the full disk" % (name, lost))
            # still full: refused at once, naming the directory; nothing changes
            fill(filler)
            before = tree(os.path.join(run, "tasks"))
            p = kforge("resume", run, check_rc=False, timeout=60, env=env)
            check(p.returncode == 1 and one_line(p) and "no space left on device in %s" % run in p.stderr,
                  "%s: resume on a full disk: rc %d %r" % (name, p.returncode, p.stderr))
            check(tree(os.path.join(run, "tasks")) == before, "%s: a refused resume changed the tasks" % name)
            st = kforge("status", run).stdout
            check("stopped: no space left on device" in st, "%s: status does not say why:\n%s" % (name, st))
            os.unlink(filler)
            kforge("resume", run, timeout=600, env=env)
            for t in ["L1_2_LeakyReLU_s%d" % i for i in range(samples)]:
                recs = records(run, t)
                check([r["turn"] for r in feedback_records(recs)] == list(range(1, turns + 1))
                      and recs[-1]["to"] == "DONE", "%s: %s after resume: %s" % (name, t, recs[-1]))
                check_artifacts(run, t, recs)
            check(len(m.requests()) == samples * turns + lost,
                  "%s: %d requests, want %d turns + %d lost" % (name, len(m.requests()), samples * turns, lost))
            left = [os.path.join(d, f) for d, _, fs_ in os.walk(run) for f in fs_ if ".tmp." in f]
            check(not left, "%s: temporary files left: %s" % (name, left))
            return run, lost
        finally:
            if sup.poll() is None:
                os.killpg(sup.pid, signal.SIGKILL)
                sup.wait()
            m.stop()
            if os.path.exists(filler):
                os.unlink(filler)

    def while_replies_in_flight(m, sup, run):
        # both tasks' turn-2 requests are held by the mock until the disk is full
        wait_requests(m, 4, sup)

    def while_compiling(m, sup, run):
        # the compiler is running: its object file will not fit
        deadline = time.time() + 300
        while True:
            check(sup.poll() is None and time.time() < deadline, "no compiler ever ran")
            for d in os.listdir("/proc"):
                try:
                    if d.isdigit() and os.readlink("/proc/%s/cwd" % d).startswith(
                            (run + "/build/", fs + "/cache/builds/")) and \
                            b"cc1plus" in open("/proc/%s/cmdline" % d, "rb").read():
                        return
                except OSError:
                    pass
            time.sleep(0.05)

    release = os.path.join(work, "replies.release")
    try:
        held = reply("leaky_1.md", hold_until=release)
        full_disk_case("full-reply", {"rules": [{"match": "I would start by profiling",
                                                  "replies": [held, held, NOCODE]}],
                                      "default": NOCODE},
                       2, 3, while_replies_in_flight, lambda lost: lost >= 1)
        print("ok full disk while saving replies (%.0f s)" % (time.time() - started), flush=True)
        run, _ = full_disk_case("full-compile", {"rules": [{"match": "e2e_leaky", "replies": [NOCODE]}],
                                                 "default": reply("leaky_2.md", fresh=True)},
                                1, 2, while_compiling, lambda lost: lost == 0, cache=True)
        st = [r["data"]["status"] for r in feedback_records(records(run, "L1_2_LeakyReLU_s0"))]
        check(st == ["ok", "no_code"], "the compile that met the full disk was fed back or cached: %s" % st)
        print("ok full disk while compiling (%.0f s)" % (time.time() - started), flush=True)
    finally:
        deadline = time.time() + 30
        while not no_process_in(fs) and time.time() < deadline:
            time.sleep(0.2)
        if sh("umount", fs).returncode != 0:
            sh("umount", "-l", fs)

for s in skipped:
    print("skipped: " + s)
print("ok: storage faults (%.0f s)" % (time.time() - started))
