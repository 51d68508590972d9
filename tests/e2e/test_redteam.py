#!/usr/bin/env python3
"""kforge redteam on the CPU, with the replay provider and with the command provider:
one problem of the test's own, two samples, two turns, the raw build format (builds of a
second), four candidates (tests/data/redteam/README.md): an honest fast kernel (correct,
about 4x), a kernel without its clamp (incorrect), an honest slow one (correct, about
0.1x) and the fast one beside a read of os.environ (suspect, env_access, about 4x).

For each run: the frozen config.yaml and run.json say it is a red-team run; every prompt
sent (prompt.md, and what the command provider's program received) opens with the
red-team statement and lacks the ordinary one, and turn 2 carries turn 1's ordinary
feedback; exactly the correct and the suspect candidates at redteam.min_speedup (1.5) or
more are kept, the slow correct one is not: redteam/ holds index.json and their two
folders, each with kernel.py, problem.py and result.json equal to the run's own and
suite.py, the kernel under the adversarial suite's header lines as the suite's parser
reads them; the lines printed name them; the report marks the run. Then --harvest on the
finished run, and a resume of it, give the same; a folder an earlier harvest left that
index.json does not list goes. The command provider's run is --detach'ed: its supervisor
harvests in the background. A run that is not a red-team run is refused by --harvest and
its report has no mark."""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401
from adversarial import header  # noqa: E402

py = torch_python()
work = scratch("e2e-redteam")
DATA = os.path.join(HOME, "tests", "data", "redteam")
PROBLEMS = os.path.join(DATA, "problems")
PROBLEM = os.path.join(PROBLEMS, "level1", "1_ScaleShiftReLU.py")
PROBLEM_REL = "tests/data/redteam/problems/level1/1_ScaleShiftReLU.py"
REPLIES = os.path.join(DATA, "replies")
S0, S1 = "L1_1_ScaleShiftReLU_s0", "L1_1_ScaleShiftReLU_s1"
# each turn's verdict, by what its reply was written to do
VERDICTS = {(S0, 1): "correct", (S0, 2): "incorrect", (S1, 1): "correct", (S1, 2): "suspect"}
KEPT = {"correct": [(S0, 1)], "suspect": [(S1, 2)]}
REASONS = {(S0, 1): [], (S1, 2): ["env_access"]}
MIN_SPEEDUP = 1.5
FINDING_FILES = {"kernel.py", "problem.py", "result.json", "suite.py"}


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def paragraph(name):
    """The first paragraph of a bundled prompt file."""
    return read(os.path.join(HOME, "llm", "prompts", name)).strip().split("\n\n")[0]


STATEMENT = read(os.path.join(HOME, "llm", "prompts", "statement_redteam_cpu_raw.md")).strip()
ORDINARY = paragraph("statement_cpu_raw.md")
check("helping to test a kernel evaluator" in STATEMENT and ORDINARY not in STATEMENT,
      "the red-team statement reads as the ordinary one")

CONFIG = """
name: %s
problems: {dir: %s, levels: [1], samples: 2}
llm: %s
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, format: raw, correctness_trials: 3, perf_trials: 20, warmup: 1}
runner: {python: %s}
workers: 2
"""

LINE = re.compile(r"^  (\S+)\s+turn (\d+)\s+(correct|suspect)\s+([0-9.]+)x\s+(\S+)(?:\s+\((.*)\))?$")


def kept_lines(stdout):
    """The lines a harvest prints for its kept candidates: {(task, turn): (verdict, path)}."""
    out = {}
    for line in stdout.splitlines():
        m = LINE.match(line)
        if m:
            out[(m.group(1), int(m.group(2)))] = (m.group(3), m.group(5))
    return out


def turn_file(run_dir, task, turn, name):
    return os.path.join(run_dir, "tasks", task, "turns", str(turn), name)


def snapshot(run_dir):
    """Every file under redteam/ by its path, index.json without its harvest time."""
    snap = {}
    root = os.path.join(run_dir, "redteam")
    for d, _, files in os.walk(root):
        for fn in files:
            path = os.path.join(d, fn)
            rel = os.path.relpath(path, root)
            if rel == "index.json":
                index = json.loads(read(path))
                index.pop("harvested")
                snap[rel] = index
            else:
                snap[rel] = read(path, "rb")
    return snap


def check_run(run_dir, name, stdout=None):
    """Everything a finished red-team run of the four replies must show."""
    info = json.loads(read(os.path.join(run_dir, "run.json")))
    check(info["status"] == "finished", "%s: run.json status %s" % (name, info["status"]))
    check(info.get("redteam", {}).get("min_speedup") == MIN_SPEEDUP and
          info["redteam"].get("correct") == 1 and info["redteam"].get("suspect") == 1,
          "%s: run.json redteam %r" % (name, info.get("redteam")))
    frozen = read(os.path.join(run_dir, "config.yaml"))
    check("\nredteam:\n  enabled: true\n  min_speedup: 1.5\n" in frozen,
          "%s: config.yaml does not record the red-team run:\n%s" % (name, frozen))

    # the turns as the replies were written to go, their speedups on either side of the
    # threshold where the harvest must tell them apart
    speedups = {}
    for task in (S0, S1):
        for r in feedback_records(records(run_dir, task)):
            key = (task, r["turn"])
            check(r["data"].get("verdict") == VERDICTS[key], "%s: %s turn %d judged %s (%s), "
                  "its reply was written to be %s" % (name, task, r["turn"], r["data"].get("verdict"),
                                                      r["data"].get("reasons"), VERDICTS[key]))
            speedups[key] = r["data"].get("speedup")
    check(len(speedups) == 4, "%s: turns with a FEEDBACK record: %s" % (name, sorted(speedups)))
    for key in ((S0, 1), (S1, 2)):
        check(speedups[key] >= MIN_SPEEDUP, "%s: %s turn %d's speedup %.2f is below %.1f: the "
              "one-pass kernel should be about 4x the reference's four passes" % ((name,) + key + (speedups[key], MIN_SPEEDUP)))
    check(speedups[(S1, 1)] < MIN_SPEEDUP, "%s: the column-order kernel's speedup %.2f is not "
          "below %.1f" % (name, speedups[(S1, 1)], MIN_SPEEDUP))

    # every prompt: the red-team statement, never the ordinary one; turn 2 the ordinary
    # feedback on turn 1
    for task in (S0, S1):
        for turn in (1, 2):
            prompt = read(turn_file(run_dir, task, turn, "prompt.md"))
            check(prompt.startswith(STATEMENT), "%s: %s turn %d's prompt does not open with the "
                  "red-team statement:\n%s" % (name, task, turn, prompt[:600]))
            check(ORDINARY not in prompt, "%s: %s turn %d's prompt has the ordinary statement" % (name, task, turn))
        feedback = read(turn_file(run_dir, task, 1, "feedback.md")).strip()
        check(feedback and feedback in read(turn_file(run_dir, task, 2, "prompt.md")),
              "%s: %s turn 2's prompt lacks turn 1's feedback %r" % (name, task, feedback[:200]))

    # what was kept
    root = os.path.join(run_dir, "redteam")
    folders = {"%s_t%d" % k for ks in KEPT.values() for k in ks}
    listing = set(os.listdir(root)) - {"notes"}
    check(listing == folders | {"index.json"}, "%s: redteam/ holds %s, want %s" % (
        name, sorted(listing), sorted(folders | {"index.json"})))
    index = json.loads(read(os.path.join(root, "index.json")))
    check(index["run"] == name and index["min_speedup"] == MIN_SPEEDUP and index["device"] == "cpu"
          and index["format"] == "raw" and index["tasks"] == 2 and index["tasks_unfinished"] == 0
          and index["turns_judged"] == 4, "%s: index.json %r" % (
              name, {k: v for k, v in index.items() if k not in KEPT}))
    for verdict, want in KEPT.items():
        got = [(e["task"], e["turn"]) for e in index[verdict]]
        check(got == want, "%s: index.json %s lists %s, want %s" % (name, verdict, got, want))
        for e in index[verdict]:
            key = (e["task"], e["turn"])
            folder = "%s_t%d" % key
            fdir = os.path.join(root, folder)
            check(e["verdict"] == verdict and e["reasons"] == REASONS[key] and
                  abs(e["speedup"] - speedups[key]) < 1e-9 and e["path"] == "redteam/" + folder and
                  e["files"] == {"kernel": "redteam/%s/kernel.py" % folder,
                                 "problem": "redteam/%s/problem.py" % folder,
                                 "result": "redteam/%s/result.json" % folder,
                                 "suite": "redteam/%s/suite.py" % folder} and
                  e["suite_problem"] == PROBLEM_REL and e["problem_to_add"] is False and
                  e["problem_changed"] is False and e["problem"] == "L1_1_ScaleShiftReLU",
                  "%s: index entry %r" % (name, e))
            check(set(os.listdir(fdir)) == FINDING_FILES, "%s: %s holds %s" % (name, folder, os.listdir(fdir)))
            kernel = read(turn_file(run_dir, key[0], key[1], "kernel.py"))
            check(read(os.path.join(fdir, "kernel.py")) == kernel, "%s: %s/kernel.py differs from the turn's" % (name, folder))
            check(read(os.path.join(fdir, "problem.py"), "rb") == read(PROBLEM, "rb"),
                  "%s: %s/problem.py differs from the problem" % (name, folder))
            result = read(os.path.join(fdir, "result.json"), "rb")
            check(result == read(turn_file(run_dir, key[0], key[1], "result.json"), "rb"),
                  "%s: %s/result.json differs from the turn's" % (name, folder))
            res = json.loads(result)
            check(res.get("verdict") == verdict and "timing" in res and
                  [r["rule"] for r in res.get("reasons", [])] == REASONS[key],
                  "%s: %s/result.json verdict %s reasons %s" % (name, folder, res.get("verdict"), res.get("reasons")))
            suite = read(os.path.join(fdir, "suite.py"))
            why = "found by kforge redteam in %s (%s), turn %d: judged %s%s at %.2f\u00d7" % (
                name, key[0], key[1], verdict,
                " (%s)" % ", ".join(REASONS[key]) if REASONS[key] else "", e["speedup"])
            want_head = ("# problem: %s\n# expect: rejected\n# catches: -\n# why: %s\n# format: raw\n"
                         % (PROBLEM_REL, why))
            check(suite == want_head + kernel, "%s: %s/suite.py:\n%s\nwant the header\n%s" % (
                name, folder, suite[:800], want_head))
            h = header(os.path.join(fdir, "suite.py"))
            check(h == {"problem": PROBLEM_REL, "expect": "rejected", "catches": "-", "why": why,
                        "format": "raw"} and os.path.isfile(os.path.join(HOME, h["problem"])),
                  "%s: the suite's parser reads %s/suite.py's header as %r" % (name, folder, h))

    # the lines printed, and the report's mark
    if stdout is not None:
        lines = kept_lines(stdout)
        want = {k: (v, os.path.join(run_dir, "redteam", "%s_t%d" % k)) for v, ks in KEPT.items() for k in ks}
        check(lines == want, "%s: the kept lines %r, want %r; stdout:\n%s" % (name, lines, want, stdout))
        check("kept 1 candidate judged correct and 1 judged suspect at 1.50x or more (of 4 turns judged)"
              in stdout, "%s: the harvest's summary line:\n%s" % (name, stdout))
    text = kforge("report", run_dir).stdout
    check("RED-TEAM RUN" in text.split("level")[0] and
          "Kept for review at 1.50x or more: 1 judged correct, 1 judged suspect" in text,
          "%s: the report does not mark the red-team run:\n%s" % (name, text[:1200]))
    rep = json.loads(kforge("report", run_dir, "--json").stdout)
    check(rep.get("redteam") == {"min_speedup": MIN_SPEEDUP, "index": "redteam/index.json",
                                 "correct": 1, "suspect": 1},
          "%s: report --json redteam %r" % (name, rep.get("redteam")))
    return speedups


def check_harvest_again(run_dir, name):
    """--harvest and a resume of the finished run keep the same, and drop a stale folder."""
    before = snapshot(run_dir)
    stale = os.path.join(run_dir, "redteam", "%s_t2" % S0)     # as if judged so earlier
    notes = os.path.join(run_dir, "redteam", "notes")          # not a finding's folder
    for d in (stale, notes):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "kernel.py"), "w") as f:
            f.write("# left here\n")
    p = kforge("redteam", "--harvest", run_dir, timeout=120)
    check(not os.path.exists(stale), "%s: --harvest left %s, which index.json does not list" % (name, stale))
    check(os.path.exists(os.path.join(notes, "kernel.py")), "%s: --harvest removed a folder not its own" % name)
    check(snapshot(run_dir) == dict(before, **{"notes/kernel.py": b"# left here\n"}),
          "%s: --harvest on the finished run kept something else" % name)
    check_run(run_dir, name, p.stdout)
    p = kforge("resume", run_dir, timeout=300)
    check(snapshot(run_dir) == dict(before, **{"notes/kernel.py": b"# left here\n"}),
          "%s: a resume of the finished run kept something else" % name)
    check_run(run_dir, name, p.stdout)
    check("exited 1" not in p.stderr, "%s: resume: %s" % (name, p.stderr[-2000:]))


# --------------------------------------------------------------------- replay
p = kforge("redteam", "--help")
check(p.stdout.startswith("usage: kforge redteam CONFIG") and "--harvest RUN_DIR" in p.stdout and
      "redteam.min_speedup" in p.stdout, "redteam --help: %r" % p.stdout[:400])
config = write_config(os.path.join(work, "replay.yaml"), CONFIG % (
    "redteam_replay", PROBLEMS, "{provider: replay, replay_dir: %s}" % REPLIES, py))
frozen = kforge("config", config).stdout
check("\nredteam:\n  enabled: false\n  min_speedup: 1.5\n" in frozen,
      "the same config run by 'kforge run' is not a red-team run:\n%s" % frozen)
run_dir = os.path.join(work, "run-replay")
p = kforge("redteam", config, "--run-dir", run_dir, timeout=900)
replay_speedups = check_run(run_dir, "redteam_replay", p.stdout)
check_harvest_again(run_dir, "redteam_replay")
print("replay: kept %s turn 1 (%.2fx, correct) and %s turn 2 (%.2fx, suspect); %s turn 1 at "
      "%.2fx left out" % (S0, replay_speedups[(S0, 1)], S1, replay_speedups[(S1, 2)], S1,
                          replay_speedups[(S1, 1)]), flush=True)

# -------------------------------------------------------------------- command
# The same replies through a program of the test's (tests/data/redteam/model.py), which
# logs what it was asked; the run detached, so its supervisor harvests in the background.
log = os.path.join(work, "model-requests.jsonl")
llm = ('{provider: command, command: [python3, "%s", --replies, "%s", --log, "%s"], model: local}'
       % (os.path.join(DATA, "model.py"), REPLIES, log))
config = write_config(os.path.join(work, "command.yaml"), CONFIG % ("redteam_command", PROBLEMS, llm, py))
run_dir = os.path.join(work, "run-command")
p = kforge("redteam", config, "--run-dir", run_dir, "--detach", timeout=300)
check("background" in p.stdout, "--detach says nothing: %r" % p.stdout)
deadline = time.time() + 900
while True:
    info = json.loads(read(os.path.join(run_dir, "run.json")))
    if info.get("status") not in ("created", "running") and not supervisor_lives(run_dir):
        break
    check(time.time() < deadline, "the detached red-team run did not finish: %r" % info.get("status"))
    time.sleep(0.2)
check_run(run_dir, "redteam_command")
slog = read(os.path.join(run_dir, "supervisor.log"))
check("redteam: kept 1 candidate(s) judged correct and 1 judged suspect at 1.50x or more" in slog,
      "the detached supervisor's log lacks the harvest:\n%s" % slog[-2000:])
asked = [json.loads(line) for line in read(log).splitlines()]
check(sorted((a["task"], a["turn"]) for a in asked) == sorted(VERDICTS),
      "the command provider was asked %s" % [(a["task"], a["turn"]) for a in asked])
for a in asked:
    check(a["prompt"].startswith(STATEMENT) and ORDINARY not in a["prompt"],
          "the prompt the command provider received for %s turn %d is not the red-team one:\n%s"
          % (a["task"], a["turn"], a["prompt"][:600]))
    check(a["prompt"] == read(turn_file(run_dir, a["task"], a["turn"], "prompt.md")),
          "%s turn %d: prompt.md is not what the program received" % (a["task"], a["turn"]))
check_harvest_again(run_dir, "redteam_command")

# ------------------------------------------------------------- not red-team
plain = os.path.join(work, "run-plain")
fake_run(plain, "plain", [{"id": S0, "level": 1, "turns": [{"outcome": {
    "status": "ok", "verdict": "correct", "compiled": True, "correct": True, "speedup": 9.0}}]}], 1)
p = kforge("redteam", "--harvest", plain, check_rc=False)
check(p.returncode == 1 and "is not a red-team run" in p.stderr and
      not os.path.exists(os.path.join(plain, "redteam")), "--harvest of an ordinary run: exit %d, %r"
      % (p.returncode, p.stderr))
check("RED-TEAM" not in kforge("report", plain).stdout and
      "redteam" not in json.loads(kforge("report", plain, "--json").stdout),
      "the report of an ordinary run says red-team")
p = kforge("redteam", "--harvest", os.path.join(work, "nowhere"), check_rc=False)
check(p.returncode == 2 and "not a kforge run directory" in p.stderr, "--harvest of no run: %d %r"
      % (p.returncode, p.stderr))
print("test_redteam: ok")
