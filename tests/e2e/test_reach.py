#!/usr/bin/env python3
"""As root with containment on (runner.user: the default, nobody), a run whose problems,
run directory, TMPDIR and even kforge's own files (KFORGE_HOME: the runner script, the
prompts) sit under a 0700 directory made by mktemp -d (as a container's /root would, or a
benchmark's temporary directory) works: the runner's user can reach none of them, so
kforge gives it a staging directory of its own with read-only copies of what it reads
(and its scratch as TMPDIR), and touches nothing of the user's.

Part 1: one task, one turn, a real C++ load_inline build. The turn compiled and ran
(status ok), the runners worked in a staging directory (supervisor.log, run.json) that is
gone once the run finished, nothing under the 0700 directory changed mode or owner, and
nothing there belongs to the runner's user (no build or scratch was made there).

Part 2: resume after a reboot. A run is cut (supervisor and worker SIGKILLed) while its
worker is held just before the execute runner (crash point with a delay; the test waits
for the point's token file, not for time). Its staging directory is then removed, as a
reboot cleaning /tmp would, and a symlink to a decoy directory (owned by nobody, with a
forged marker naming this run) is planted in its place. `kforge resume` must not use the
decoy, must make a fresh staging directory, and the execute must find its build gone and
have it made again (a plain PyTorch candidate: the point is the build directory the
runner's user must be able to write, not a compile) and finish with status ok."""
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

if os.geteuid() != 0:
    print("SKIP: the runner's user is switched only when kforge runs as root")
    sys.exit(SKIP)
try:
    NOBODY = pwd.getpwnam("nobody")
except KeyError:
    print("SKIP: no user nobody on this host")
    sys.exit(SKIP)
py = torch_python()
TASK = "L1_2_LeakyReLU_s0"

work = scratch("e2e-reach")
closed = subprocess.run(["mktemp", "-d", "-p", work], capture_output=True, text=True,
                        check=True).stdout.strip()
check(os.stat(closed).st_mode & 0o777 == 0o700, "mktemp -d did not make a 0700 directory")
problems = copy_problems(os.path.join(closed, "problems"), ["level1/2_LeakyReLU.py"])
home = os.path.join(closed, "checkout")
os.makedirs(os.path.join(home, "feedback"))
for f in ("kforge_runner.py", "kforge_check.py"):
    shutil.copy(os.path.join(HOME, "feedback", f), os.path.join(home, "feedback"))
shutil.copytree(os.path.join(HOME, "llm", "prompts"), os.path.join(home, "llm", "prompts"))
# A TMPDIR of root's alone, as some hosts set it: the runner's compiler cannot use it.
tmpdir = os.path.join(closed, "tmp")
os.mkdir(tmpdir, 0o700)
ENV = {"KFORGE_HOME": home, "TMPDIR": tmpdir}

PLAIN = '''import torch
import torch.nn as nn
# a plain PyTorch candidate, nothing compiles: the static checks would reject it, so the
# runs that use it turn them off (their subject is where runners work, not the gate)


class ModelNew(nn.Module):
    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)
'''


def config(name, mock, static_checks=True):
    return write_config(os.path.join(closed, name + ".yaml"), """
name: %s
problems: {dir: %s, levels: [1]}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1}
refinement: {turns: 1, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 1, perf_trials: 3, warmup: 1, static_checks: %s}
runner: {python: %s}
workers: 1
""" % (name, problems, mock.base_url, "true" if static_checks else "false", py))


def snapshot(top):
    """{path: (mode, uid, gid)} of top and everything below it, links not followed."""
    out = {}
    for d, dirs, files in os.walk(top):
        links = [n for n in dirs if os.path.islink(os.path.join(d, n))]
        for p in [d] + [os.path.join(d, n) for n in files + links]:
            st = os.lstat(p)
            out[p] = (st.st_mode, st.st_uid, st.st_gid)
    return out


def check_untouched(before, what):
    after = snapshot(closed)
    for p, v in before.items():
        check(p in after, "%s: %s is gone" % (what, p))
        check(after[p] == v, "%s: %s changed mode or owner: %s -> %s" % (
            what, p, (oct(v[0]), v[1], v[2]), (oct(after[p][0]), after[p][1], after[p][2])))
    theirs = [p for p, v in after.items() if v[1] == NOBODY.pw_uid or v[2] == NOBODY.pw_gid]
    check(not theirs, "%s: the runner's user owns something under the 0700 directory: %s" % (what, theirs[:5]))


CACHE_PREFIXES = tuple(p for p in (os.environ.get("KFORGE_CACHE_DIR"),
                                   "/var/tmp/kforge-cache-%d/builds/" % os.geteuid()) if p)


def staged_dirs(log):
    """The staging directories the supervisor log says the runners worked in."""
    mark = "files: runners work in "
    return [line.split(mark, 1)[1].split(",", 1)[0] for line in log.splitlines() if mark in line]


def turn_status(run_dir):
    recs = records(run_dir, TASK)
    check_artifacts(run_dir, TASK, recs)
    check(recs[-1]["to"] == "DONE", "%s ended in %s" % (TASK, recs[-1]["to"]))
    fb = feedback_records(recs)
    check(len(fb) == 1, "%d turns recorded, want 1" % len(fb))
    with open(os.path.join(run_dir, "tasks", TASK, "turns", "1", "compile.json")) as f:
        check(json.load(f)["status"] == "ok", "turn 1 did not compile")
    with open(os.path.join(run_dir, "tasks", TASK, "turns", "1", "result.json")) as f:
        res = json.load(f)
    check(res["compiled"] and res["status"] in ("ok", "value_mismatch"),
          "turn 1 did not run: %s" % json.dumps(res)[:2000])
    return fb[0]["data"]["status"], recs


# ---------------------------------------------------------------- part 1
before = snapshot(closed)
os.makedirs(os.path.join(work, "mock1"))
mock = MockLLM(os.path.join(work, "mock1"), {"rules": [], "default": reply("leaky_2.md")})
run1 = os.path.join(closed, "run1")
try:
    kforge("run", config("reach1", mock), "--run-dir", run1, env=ENV, timeout=1200)
finally:
    mock.stop()
status, recs = turn_status(run1)
check(status == "ok", "turn 1 status %s, want ok (a correct C++ kernel)" % status)
check(len(mock.requests()) == 1, "%d model requests, want 1" % len(mock.requests()))
pre = [r for r in recs if r["from"] == "PRECOMPILE"][0]["data"]
# Builds live in the shared cache (KFORGE_CACHE_DIR, else /var/tmp/kforge-cache-<uid>),
# within the runner's reach; another test may have built this code already.
check(pre.get("build_dir", "").startswith(CACHE_PREFIXES) and
      os.path.isfile(os.path.join(pre["build_dir"], "compile.json")),
      "the build is not in the shared cache: %s" % pre)
log = open(os.path.join(run1, "supervisor.log")).read()
stages = staged_dirs(log)
check(len(stages) == 1 and stages[0].startswith(("/var/tmp/kforge-stage-", "/tmp/kforge-stage-")),
      "the supervisor log names no staging directory: %s" % stages)
check("cannot reach %s (mode 0700" % closed in log, "the log does not say why the runners work apart")
check("files: removed the staging directory %s" % stages[0] in log and not os.path.exists(stages[0]),
      "the staging directory %s is left after the run finished" % stages[0])
check(json.load(open(os.path.join(run1, "run.json"))).get("stage_dir") is None,
      "run.json still names a staging directory")
check_untouched(before, "part 1")
check(not os.path.exists(os.path.join(run1, "build")) and
      not os.path.exists(os.path.join(run1, "tasks", TASK, "work")),
      "a build or scratch directory was made in the run directory")
print("part 1 ok: compiled and ran in %s, removed at the end" % stages[0])

# ---------------------------------------------------------------- part 2
before = snapshot(closed)
os.makedirs(os.path.join(work, "mock2"))
mock = MockLLM(os.path.join(work, "mock2"), {"rules": [], "default": {
    "content": "Here it is.\n```python\n" + PLAIN + "```\n",
    "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}})
run2 = os.path.join(closed, "run2")
token = os.path.join(work, "crash-token")
decoy = os.path.join(work, "decoy")
cfg2 = config("reach2", mock, static_checks=False)
planted = None
try:
    e = dict(os.environ, **ENV)
    e.update({"KFORGE_CRASHPOINT": "execute-before-runner", "KFORGE_CRASHONCE": token,
              "KFORGE_CRASHDELAY_MS": "600000"})
    sup = subprocess.Popen([BIN, "run", cfg2, "--run-dir", run2], env=e,
                           stdout=open(os.path.join(work, "run2.out"), "w"), stderr=subprocess.STDOUT)
    deadline = time.time() + 900
    while not (os.path.exists(token) and open(token).read().endswith("\n")):
        check(sup.poll() is None, "the run ended (%s) before its worker reached the execute" % sup.returncode)
        check(time.time() < deadline, "the worker never reached the execute")
        time.sleep(0.1)
    worker = int(open(token).read())
    # The power cut: the supervisor first, so that it cannot restart the worker.
    sup.kill()
    sup.wait()
    try:
        os.kill(worker, signal.SIGKILL)
    except ProcessLookupError:
        pass
    deadline = time.time() + 120
    while True:
        try:
            with open("/proc/%d/stat" % worker) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    break
        except OSError:
            break
        check(time.time() < deadline, "the killed worker %d is still alive" % worker)
        time.sleep(0.05)
    old = json.load(open(os.path.join(run2, "run.json"))).get("stage_dir")
    check(old and os.path.isdir(os.path.join(old, "build")), "run.json names no staging directory: %s" % old)
    # The reboot cleaned it; someone put a link to a look-alike in its place.
    shutil.rmtree(old)
    os.makedirs(os.path.join(decoy, "build"))
    with open(os.path.join(decoy, ".kforge-stage"), "w") as f:
        f.write(run2 + "\n")
    for d, _, fs in os.walk(decoy):
        for p in [d] + [os.path.join(d, n) for n in fs]:
            os.chown(p, NOBODY.pw_uid, NOBODY.pw_gid)
    os.symlink(decoy, old)
    planted = old
    # The reboot cleaned the build too (builds live in the shared cache, not the
    # staging directory): the execute must find it gone and build it again.
    gone = [r for r in records(run2, TASK) if r["from"] == "PRECOMPILE"][0]["data"]["build_dir"]
    shutil.rmtree(gone)
    decoy_before = snapshot(decoy)
    kforge("resume", run2, env=ENV, timeout=900)
finally:
    mock.stop()
    if planted:
        os.unlink(planted)
status, recs = turn_status(run2)
check(status == "ok", "turn 1 status %s after the resume, want ok" % status)
check(len(mock.requests()) == 1, "%d model requests, want 1 (the resume asked again?)" % len(mock.requests()))
log = open(os.path.join(run2, "supervisor.log")).read()
stages = staged_dirs(log)
check(len(stages) == 2 and stages[0] == old and stages[1] != old,
      "staging directories %s: the resume did not make a fresh one" % stages)
check("%s, is not reused (not a directory)" % old in log, "the log does not say why %s was not reused" % old)
check("the build %s is gone; the runner builds it again" % gone in log,
      "the execute did not find its build gone")
check(snapshot(decoy) == decoy_before and os.listdir(os.path.join(decoy, "build")) == [],
      "the decoy behind the planted link was used")
check(not os.path.exists(stages[1]), "the staging directory %s is left after the run finished" % stages[1])
check_untouched(before, "part 2")
print("ok: a run under a 0700 directory (%s) compiled and ran as %s, and resumed after its "
      "staging directory was replaced by a link" % (closed, NOBODY.pw_name))
