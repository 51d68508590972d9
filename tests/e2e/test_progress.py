#!/usr/bin/env python3
"""The progress display of a foreground run, seen as a user sees it.

Through a pseudo-terminal (everything the child writes, read until it exits): the block
redraws in place (cursor-up and erase escapes, more than once), shows the tasks by state,
turns, slots, LLM use and best speedups, every log line (the supervisor's and the
workers') comes out whole above it, and the run ends with the final summary, whose
numbers are the run's own `kforge status --json`; a run stopped with SIGINT (twice, the
model never answering) ends with a "stopped" summary. With standard output a pipe: plain
one-line summaries (the first at once) and the same final summary, no escape sequence,
the log lines on stderr only. `--quiet`: nothing on standard output. A resume of a
finished run prints its final summary too.

One real run of 2 tasks x 2 turns (a correct C++ kernel, then a reply without code) on
the CPU, from the mock LLM server, in the terminal; the pipe and quiet runs replay
replies without code (no build: the display's text is the same, and a build costs
minutes on a loaded machine)."""
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

LOG_LINE = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z \[(sup|task [^\]]+)\] .*")

py = torch_python()
work = scratch("e2e-progress")
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py"])
no_code = {"content": "This kernel is as fast as I can make it; no change.",
           "usage": {"prompt_tokens": 70, "completion_tokens": 11, "total_tokens": 81}}
# turn 1: a correct kernel; turn 2 (its prompt holds turn 1's kernel): no code
mock = MockLLM(work, {"rules": [{"match": "e2e_relu_t3", "replies": [no_code]}],
                      "default": reply("relu_3.md")})
config = write_config(os.path.join(work, "progress.yaml"), """
name: progress
problems: {dir: %s, levels: [1], samples: 2}
llm: {provider: openai, base_url: "%s", model: mock-model, retries: 1, concurrency: 2}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1}
runner: {python: %s}
workers: 2
""" % (problems, mock.base_url, py))
env = dict(os.environ, TERM="xterm")


def run_in_pty(args, timeout=1500, on_output=None):
    """Runs kforge with stdin, stdout and stderr on a pseudo-terminal of 40x160 and
    returns (exit status, everything it wrote). on_output(text so far, process) is
    called after each read."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen([BIN] + args, stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    out = bytearray()
    deadline = time.time() + timeout

    def read_some(wait_s):
        """Appends what the terminal has within wait_s; False once there is no more to
        come (Linux answers EIO when no process holds the terminal)."""
        if not select.select([master], [], [], wait_s)[0]:
            return None
        try:
            data = os.read(master, 65536)
        except OSError:
            return False
        out.extend(data)
        return len(data) > 0

    while True:
        check(time.time() < deadline, "kforge %s did not end in %d s" % (" ".join(args), timeout))
        got = read_some(1.0)
        if got is False:
            break
        if got and on_output is not None:
            on_output(out.decode("utf-8", "replace"), proc)
        if got is None and proc.poll() is not None:
            # It has exited, so all it wrote is in the terminal's buffer: take that and
            # stop, even if a process it left behind (none should) still holds the
            # terminal.
            while read_some(0):
                pass
            break
    os.close(master)
    return proc.wait(), out.decode("utf-8", "replace").replace("\r\n", "\n")


def status_of(run_dir):
    return json.loads(kforge("status", run_dir, "--json").stdout)


def check_final(text, run_dir, outcome="finished"):
    """The final summary is the last thing on the output and says what status says."""
    st = status_of(run_dir)
    tasks = st["tasks"]
    done = sum(t["state"] == "DONE" for t in tasks)
    failed = sum(t["state"] == "FAILED" for t in tasks)
    turns_done = sum(t["turn"] for t in tasks if t["state"] in ("DONE", "FAILED"))
    turns_total = sum(t["turns"] for t in tasks)
    speedups = sorted((t["best_speedup"] for t in tasks if t["best_speedup"] is not None), reverse=True)
    llm = st["llm"]
    check(outcome != "finished" or done == len(tasks), "not every task is DONE: %s" % [t["state"] for t in tasks])
    m = re.search(r"kforge run progress (\w+) in (\S+)\n((?:  .*\n)+)$", text)
    check(m is not None, "no final summary at the end of:\n%s" % text[-3000:])
    check(m.group(1) == outcome, "the run %s, want %s" % (m.group(1), outcome))
    want = ["  tasks       %d: %d done, %d failed, %d unfinished" % (len(tasks), done, failed,
                                                              len(tasks) - done - failed),
            "  turns       %d/%d" % (turns_done, turns_total),
            "  llm         %d requests, %d tokens (%d prompt + %d completion)" % (
                llm["requests"], llm["prompt_tokens"] + llm["completion_tokens"],
                llm["prompt_tokens"], llm["completion_tokens"])]
    if speedups:
        want.append("  best        %.2fx " % speedups[0])
    want.append("correct kernels in %d/%d tasks" % (len(speedups), len(tasks)))
    for w in want:
        check(w in m.group(3), "final summary lacks %r:\n%s" % (w, m.group(0)))
    return st


def check_layout(out):
    """The terminal's transcript, cut at each erase of the block: every piece is whole
    log lines, then the whole block that the next erase removes (as many lines as it
    moves up), or at the very end the final summary. A log line written into the block,
    or a block drawn twice without an erase, breaks this."""
    pieces = re.split(r"\r\x1b\[(\d+)A\x1b\[J", out)
    texts, ups = pieces[0::2], [int(n) for n in pieces[1::2]]
    for i, text in enumerate(texts):
        check(text.endswith("\n") or (text == "" and i > 0), "piece %d ends mid-line: %r" % (i, text[-200:]))
        lines = text.split("\n")[:-1]
        k = 0
        while k < len(lines) and LOG_LINE.fullmatch(lines[k]):
            k += 1
        rest = lines[k:]
        if i < len(ups):
            check(len(rest) == ups[i] and rest[0].startswith("kforge run progress: elapsed ") and
                  all(line.startswith("  ") for line in rest[1:]),
                  "piece %d is not log lines then a block of %d lines: %r" % (i, ups[i], text[-1500:]))
        else:
            check(rest and re.match(r"kforge run progress (finished|stopped|paused) in ", rest[0]) and
                  all(line.startswith("  ") for line in rest[1:]),
                  "the last piece is not log lines then the final summary: %r" % text[-1500:])


try:
    # ------------------------------------------------------------- a terminal
    run_tty = os.path.join(work, "run-tty")
    rc, out = run_in_pty(["run", config, "--run-dir", run_tty])
    with open(os.path.join(work, "tty.out"), "w") as f:
        f.write(out)
    check(rc == 0, "kforge run in a terminal exited %d:\n%s" % (rc, out[-4000:]))
    ups, erases = len(re.findall(r"\x1b\[\d+A", out)), out.count("\x1b[J")
    check(ups >= 2 and erases >= 2, "no redraw in place: %d cursor-ups, %d erases" % (ups, erases))
    check(re.search(r"kforge run progress: elapsed \S+, left \S+\n  tasks       2: GENERATE \d+, "
                    r"PRECOMPILE \d+, EXECUTE \d+, PROFILE \d+, FEEDBACK \d+, DONE \d+, FAILED \d+, "
                    r"pending \d+\n  turns       \d/4\n  builds      \d+/\d+ busy, \d+ waiting\n"
                    r"(?:  runners     \d+ starting \(importing torch\), in no slot\n)?"
                    r"  executions  \d+/\d+ busy, \d+ waiting\n  llm         \d in flight, \d waiting, "
                    r"\d+ done, \d+ tokens", out), "no whole progress block in:\n%s" % out[-4000:])
    check("  turns       4/4\n  builds" in out, "the block never showed the last turn done")
    # A worker's first PRECOMPILE waits for its runner (its fork server imports torch, a
    # second or more) before asking for a compile slot: the block names that wait. The
    # block is redrawn each second, so a start the records say outlasted three redraws
    # must have been drawn (a quicker one may fall between two: presence, not timing).
    starts = [r["data"]["runner_start_ms"] for t in ("L1_1_ReLU_s0", "L1_1_ReLU_s1")
              for r in records(run_tty, t) if "runner_start_ms" in r.get("data", {})]
    check(starts, "no PRECOMPILE record of the terminal run says how long its runner's start took")
    if max(starts) >= 3000:
        check(re.search(r"\n  builds      \d+/\d+ busy, \d+ waiting\n  runners     [12] starting "
                        r"\(importing torch\), in no slot\n  executions", out),
              "a runner start of %d ms, and the block never named the runners starting:\n%s" % (
                  max(starts), out[-4000:]))
    st = check_final(out, run_tty)
    check(any(t["best_speedup"] is not None for t in st["tasks"]), "no correct kernel: nothing to show as best")
    check_layout(out)
    # Every log line (supervisor and workers: supervisor.log has both) reached the terminal.
    log_lines = open(os.path.join(run_tty, "supervisor.log")).read().splitlines()
    check(any("[task " in line for line in log_lines) and any("[sup]" in line for line in log_lines),
          "supervisor.log lacks worker or supervisor lines")
    for line in log_lines:
        check(line + "\n" in out, "log line missing or broken on the terminal: %r" % line)

finally:
    mock.stop()

# ------------------------------------------------- a terminal, stopped with ^C
# The model never answers in time; once the block shows both requests in flight, SIGINT
# (twice: the second abandons the requests) stops the run, and the summary says so.
os.makedirs(os.path.join(work, "slow"))
slow = MockLLM(os.path.join(work, "slow"), {"default": {"content": "late", "delay_s": 600}})
signals = []


def interrupt(text, proc):
    if (len(signals) == 0 and "llm         2 in flight" in text) or \
            (len(signals) == 1 and "[sup] stopping: " in text):
        signals.append(text.count("\n"))
        os.killpg(proc.pid, signal.SIGINT)


try:
    run_stop = os.path.join(work, "run-stop")
    rc, out = run_in_pty(["run", config, "--run-dir", run_stop, "--set", "llm.base_url=" + slow.base_url,
                          "--set", "llm.timeout_s=900"], on_output=interrupt)
finally:
    slow.stop()
check(rc == 0 and len(signals) == 2, "the interrupted run exited %d after %d SIGINTs:\n%s" % (rc, len(signals), out[-3000:]))
check_layout(out)
check_final(out, run_stop, "stopped")
check("  tasks       2: 0 done, 0 failed, 2 unfinished\n  turns       0/4\n" in out,
      "the stopped run's summary: %r" % out[-600:])

# Replies without code for the runs below: no build, the same display.
replies = os.path.join(work, "replies", "L1_1_ReLU")
os.makedirs(replies)
for k in (1, 2):
    with open(os.path.join(replies, "%d.md" % k), "w") as f:
        f.write("No code this time.\n")
replay_config = write_config(os.path.join(work, "replay.yaml"), """
name: progress
problems: {dir: %s, levels: [1], samples: 2}
llm: {provider: replay, replay_dir: %s}
refinement: {turns: 2}
eval: {device: cpu}
runner: {python: %s}
""" % (problems, os.path.join(work, "replies"), py))

# ------------------------------------------------------------------ a pipe
run_pipe = os.path.join(work, "run-pipe")
p = kforge("run", replay_config, "--run-dir", run_pipe, "--progress-interval", "1")
check("\x1b" not in p.stdout, "escape sequences in a pipe: %r" % p.stdout[:400])
check("[sup]" not in p.stdout and "[sup]" in p.stderr and "[task " in p.stderr,
      "the log lines belong on stderr")
final_at = p.stdout.find("kforge run progress finished in ")
lines = p.stdout[:final_at].splitlines()
check(len(lines) >= 1, "no summary line before the final summary:\n%s" % p.stdout)
for line in lines:
    check(re.fullmatch(r"kforge run progress: elapsed \S+, left \S+; tasks 2: GENERATE \d+, PRECOMPILE \d+, "
                       r"EXECUTE \d+, PROFILE \d+, FEEDBACK \d+, DONE \d+, FAILED \d+, pending \d+; "
                       r"turns \d/4; builds \d+/\d+ busy, \d+ waiting; "
                       r"(?:runners \d+ starting \(importing torch\), in no slot; )?executions \d+/\d+ busy, \d+ waiting; "
                       r"llm \d in flight, \d waiting, \d+ done, \d+ tokens \(\d+ prompt \+ \d+ completion\); "
                       r"best none yet; correct kernels in 0/2 tasks", line),
          "not a summary line: %r" % line)
check_final(p.stdout, run_pipe)

# ---------------------------------------------------------------- --quiet
run_quiet = os.path.join(work, "run-quiet")
p = kforge("run", replay_config, "--run-dir", run_quiet, "--quiet", "--progress-interval", "1")
check(p.stdout == "", "--quiet printed %r" % p.stdout[:400])
check("[sup]" in p.stderr, "--quiet must leave the log lines alone")
check(all(t["state"] == "DONE" for t in status_of(run_quiet)["tasks"]), "the quiet run did not finish")
rc, out = run_in_pty(["resume", run_quiet, "--quiet"])
check(rc == 0 and "[sup]" in out and "kforge run progress" not in out and "\x1b[" not in out,
      "--quiet in a terminal printed %r" % out[:400])
# A resume of the finished run: one summary line, then the final summary.
p = kforge("resume", run_quiet)
check(re.match(r"kforge run progress: elapsed \S+, left \S+; tasks 2: ", p.stdout), "resume: %r" % p.stdout)
check_final(p.stdout, run_quiet)
print("ok: progress in a terminal (%d redraws), in a pipe (%d lines), quiet" % (ups, len(lines)))
