#!/usr/bin/env python3
"""The HTML report and the live viewer, opened in headless Chromium.

A real CPU run (two samples of ReLU, two turns, the mock LLM server on loopback) is cut
while both tasks wait for their turn-2 reply (SIGKILL of the whole run). Then:

- `kforge view RUN --port 0` serves it; in Chromium the page loads with no console
  error, its task table has one row per task, each task's turn 1 shows its kernel, and
  no turn 2 exists yet;
- the run is resumed and writes turn 2 while the page stays open: the page shows each
  task's turn 2 without being reloaded (a mark set in the page survives), its kernel is
  the file the run wrote, and its diff, read back from the page, rebuilds turn 1's kernel
  and turn 2's exactly; still no console error;
- `kforge report RUN --html FILE` opened from the file: no console error, a row per
  task, the same kernel and diff, and the table sorts by a column when its header is
  clicked; the plots span the window's width, and the slot plot of this CPU run is
  titled so, not by GPUs.

Screenshots of the viewer (before and after the new turn) and of the report are kept in
the test's scratch directory.
"""
import atexit
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401
from browser import Chromium, chromium_path  # noqa: E402

chromium_path()         # fails at once, naming tools/setup.sh, where there is none
py = torch_python()
work = scratch("e2e-report-browser")
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py"])
KEY = "KFORGE_BROWSER_TEST_KEY"
turn1, turn2 = reply("relu_3.md"), reply("relu_1.md")
script = {"rules": [
    # turn 2 (its prompt holds turn 1's kernel, e2e_relu_t3): both hang until the kill,
    # then answer with another kernel
    {"match": "e2e_relu_t3", "replies": [dict(turn2, delay_s=3600), dict(turn2, delay_s=3600), turn2]},
    {"replies": [turn1]},
]}
mock = MockLLM(work, script)
atexit.register(mock.stop)
config = write_config(os.path.join(work, "browser.yaml"), """
name: browser
problems: {dir: %s, levels: [1], samples: 2}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: %s, retries: 0}
refinement: {turns: 2, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 2, perf_trials: 3, warmup: 1}
runner: {python: %s, compile_slots: 1, cpu_exec_slots: 1}
workers: 2
""" % (problems, mock.base_url, KEY, py))
run_dir = os.path.join(work, "run")
tasks = ["L1_1_ReLU_s0", "L1_1_ReLU_s1"]
env_key = dict(os.environ, **{KEY: "sk-browser"})

# ---- the run, killed whole while both tasks wait for their turn-2 reply
sup = subprocess.Popen([BIN, "run", config, "--run-dir", run_dir, "--quiet"], stdout=subprocess.DEVNULL,
                       stderr=open(os.path.join(work, "run.err"), "w"), env=env_key, start_new_session=True)
deadline = time.time() + 1200
while len([r for r in mock.requests() if r["rule"] == 0]) < 2:
    check(sup.poll() is None, "the run ended before both turn-2 requests: %s"
          % open(os.path.join(work, "run.err")).read()[-3000:])
    check(time.time() < deadline, "the run did not reach turn 2")
    time.sleep(0.2)
os.killpg(sup.pid, signal.SIGKILL)
sup.wait()


def kernel_lines(task, turn):
    text = open(os.path.join(run_dir, "tasks", task, "turns", str(turn), "kernel.py")).read()
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


# ---- the viewer
view = subprocess.Popen([BIN, "view", run_dir, "--port", "0"], stdout=subprocess.PIPE,
                        stderr=open(os.path.join(work, "view.err"), "w"), text=True)
atexit.register(lambda: view.poll() is None and view.kill())  # a failed check exits at once
line = view.stdout.readline()
check("http://127.0.0.1:" in line, "kforge view printed %r: %s" % (line, open(os.path.join(work, "view.err")).read()))
url = "http://" + line.split("http://", 1)[1].split()[0]

browser = Chromium(work)
try:
    page = browser.open(url)
    check(page.errors() == [], "the viewer's page logged errors: %s" % page.errors())
    rows = page.eval("Array.from(document.querySelectorAll('#tasks-0 tbody tr')).map(r => r.getAttribute('data-task'))")
    check(rows == tasks, "the task table's rows: %s, want one per task %s" % (rows, tasks))
    for i, t in enumerate(tasks):
        shown = page.eval("document.querySelector('#turn-0-%d-1 pre.artifact.kernel').textContent" % i)
        check(shown.rstrip("\n").split("\n") == kernel_lines(t, 1), "%s turn 1: the page's kernel differs from "
              "kernel.py" % t)
        check(page.eval("document.getElementById('turn-0-%d-2') === null" % i), "%s has a turn 2 before the run wrote one" % t)
    page.eval("document.getElementById('task-0-0').open = true; document.getElementById('turn-0-0-1').open = true; "
              "window.kforgeMark = 42; 1")
    page.screenshot(os.path.join(work, "viewer-before.png"))

    # ---- the run moves on: the open page follows it
    res = subprocess.Popen([BIN, "resume", run_dir, "--quiet"], stdout=subprocess.DEVNULL,
                           stderr=open(os.path.join(work, "resume.err"), "w"), env=env_key)
    check(res.wait(timeout=1500) == 0, "resume failed: %s" % open(os.path.join(work, "resume.err")).read()[-3000:])
    for t in tasks:
        check(records(run_dir, t)[-1]["to"] == "DONE", "%s did not finish" % t)
    # each task's turn-2 outcome as its FEEDBACK record says it, as the page names it
    outcome = {}
    for t in tasks:
        fb = [r["data"] for r in feedback_records(records(run_dir, t)) if r["turn"] == 2][0]
        outcome[t] = fb["verdict"] if fb["status"] == "ok" else fb["status"]
    page.wait_for(" && ".join("(document.querySelector('#turn-0-%d-2 > summary') || {textContent: ''})"
                              ".textContent.startsWith('turn 2: %s')" % (i, outcome[t]) for i, t in enumerate(tasks)),
                  "turn 2 of both tasks with its outcome %s" % outcome, timeout=600)
    check(page.eval("window.kforgeMark") == 42, "the page was reloaded rather than updated in place")
    check(page.eval("document.getElementById('task-0-0').open"), "the update closed an open section")
    check("updated" in page.eval("document.getElementById('live').textContent"), "the live line did not change")

    def check_turn2(page, where):
        for i, t in enumerate(tasks):
            shown = page.eval("document.querySelector('#turn-0-%d-2 pre.artifact.kernel').textContent" % i)
            check(shown.rstrip("\n").split("\n") == kernel_lines(t, 2), "%s: %s turn 2's kernel differs from kernel.py"
                  % (where, t))
            spans = page.eval("Array.from(document.querySelectorAll('#turn-0-%d-2 pre.diff span'))"
                              ".map(s => [s.className, s.textContent])" % i)
            check(any(c == "add" for c, _ in spans) and any(c == "del" for c, _ in spans),
                  "%s: %s turn 2's diff shows no change" % (where, t))
            old = [s[2:] for c, s in spans if c in ("same", "del")]
            new = [s[2:] for c, s in spans if c in ("same", "add")]
            check(old == kernel_lines(t, 1) and new == kernel_lines(t, 2),
                  "%s: %s turn 2's diff does not rebuild the two kernels" % (where, t))

    check_turn2(page, "viewer")
    check(page.errors() == [], "the viewer's page logged errors: %s" % page.errors())
    asked = [u for u in page.requests() if not u.startswith("data:")]
    check(asked and all(u in (url, url + "stamp") for u in asked),
          "the live page asked for something other than the viewer's page and stamp: %s" % sorted(set(asked)))
    page.eval("document.getElementById('turn-0-0-2').open = true; "
              "document.getElementById('turn-0-0-2').scrollIntoView(); 1")
    page.screenshot(os.path.join(work, "viewer-after.png"))
    page.close()

    # ---- the self-contained report, from its file
    html = os.path.join(work, "report.html")
    kforge("report", run_dir, "--html", html)
    page = browser.open("file://" + html)
    check(page.errors() == [], "the report page logged errors: %s" % page.errors())
    rows = page.eval("Array.from(document.querySelectorAll('#tasks-0 tbody tr')).map(r => r.getAttribute('data-task'))")
    check(sorted(rows) == sorted(tasks) and len(rows) == len(tasks), "the report's task table: %s" % rows)
    check_turn2(page, "report")
    check(page.eval("document.querySelectorAll('svg.plot').length") == 7, "the report does not show its seven plots")
    # the plots fill the window's width (columns of at least 560 px, each drawing scaled
    # to its column), and the slot plot of this CPU run names no GPU
    boxes = page.eval("Array.from(document.querySelectorAll('svg.plot')).map(s => {"
                      "const r = s.getBoundingClientRect(); return [r.left, r.right, r.width, r.height]; })")
    inner = page.eval("document.documentElement.clientWidth")
    margin = page.eval("parseFloat(getComputedStyle(document.body).marginLeft)")
    span = max(b[1] for b in boxes) - min(b[0] for b in boxes)
    check(span >= inner - 2 * margin - 2 and all(b[2] >= 560 - 1 for b in boxes),
          "the plots span %.0f px of a %d px window (margins %.0f): %s" % (span, inner, margin, boxes))
    check(all(abs(b[3] / b[2] - 380 / 720) < 0.02 for b in boxes), "a plot drawn out of shape: %s" % boxes)
    title = page.eval("document.querySelector('#plot-slot_use text').textContent")
    check(title == "CPU execution and compile slot use over time", "a CPU run's slot plot is titled %r" % title)
    check(page.eval("document.body.getAttribute('data-live')") == "0", "the file report polls")
    col = page.eval("Array.from(document.querySelectorAll('#tasks-0 thead th')).findIndex(th => th.textContent === 'best speedup')")
    check(col >= 0, "no 'best speedup' column")
    values = "Array.from(document.querySelectorAll('#tasks-0 tbody tr')).map(r => parseFloat(r.cells[%d].getAttribute('data-v')))" % col
    page.eval("document.querySelectorAll('#tasks-0 thead th')[%d].click(); 1" % col)
    up = page.eval(values)
    page.eval("document.querySelectorAll('#tasks-0 thead th')[%d].click(); 1" % col)
    down = page.eval(values)
    check(up == sorted(up) and down == sorted(up, reverse=True) and len(up) == len(tasks),
          "sorting by best speedup: %s then %s" % (up, down))
    page.eval("document.getElementById('task-0-0').open = true; document.getElementById('turn-0-0-2').open = true; 1")
    check(page.errors() == [], "the report page logged errors: %s" % page.errors())
    # self-contained: nothing asked for but the file itself (and inline data)
    asked = [u for u in page.requests() if not u.startswith("data:")]
    check(asked == ["file://" + html], "the report page asked for more than its file: %s" % asked)
    page.screenshot(os.path.join(work, "report.png"))
    page.close()
finally:
    browser.close()
    view.send_signal(signal.SIGTERM)
    view.wait(120)
    mock.stop()
check(view.returncode == 0, "kforge view exited %d on SIGTERM: %s" % (view.returncode,
                                                                 open(os.path.join(work, "view.err")).read()[-3000:]))
print("ok: viewer and report in Chromium: no console errors, a row per task, kernels and diffs equal the "
      "run's files, the live page showed turn 2 in place; screenshots in %s" % work)
