#!/usr/bin/env python3
"""report --csv, --svg and --html on hand-built run directories with known records.

- the CSV has one row per task and turn, and every column equals what the trajectory
  records say (the FEEDBACK outcome, the lease waits and holds summed per stage, the
  GENERATE tokens), for one run and for two;
- the plots' points are the report's numbers: fast_p per p and level and fast_1 by turn
  equal `report --json` (with --accept too), the speedup histogram holds each task's best
  speedup of `status --json`, the status bars count the CSV's turns, the slot-use steps
  are the lease records' counts; two runs are overlaid, each with its own numbers;
- the HTML page has a row per task and a section per turn, and text from the run (a
  reply with markup) is escaped, never injected; its slot plot is titled by what the runs
  executed on (a CPU run's never says GPU);
- bad input gets one clear line and a nonzero exit.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from kfe2e import *  # noqa: E402,F401

SVG = "{http://www.w3.org/2000/svg}"
work = scratch("report-files")
EVIL = "</pre><script>alert('pwned')</script><img src=x onerror=alert(1)> & \"q\""


def turn(outcome, compiled=True, files=None, tokens=(100, 50), attempts=1, leases=None,
         extra=None):
    return dict({"outcome": outcome, "compiled": compiled, "files": files or {}, "tokens": tokens,
                 "attempts": attempts,
                 "leases": leases if leases is not None else
                 {"GENERATE": (0, 5), "PRECOMPILE": (40, 900), "EXECUTE": (10, 300)}},
                **(extra or {}))


def ok(speedup, ci=None, verdict="correct", reasons=(), correct=True):
    d = {"verdict": verdict, "reasons": list(reasons), "status": "ok", "compiled": True,
         "correct": correct, "speedup": speedup, "runtime_ms": 2.0 / speedup,
         "ref_runtime_ms": 2.0}
    if ci:
        d["speedup_ci95"] = list(ci)
    return d


def bad(status, compiled=True):
    return {"verdict": "incorrect", "reasons": [status], "status": status, "compiled": compiled,
            "correct": False}


def kernel(n):
    return "import torch\n# kernel version %d\ndef f(x):\n    return x * %d\n" % (n, n)


tasks = [
    {"id": "A", "level": 1, "turns": [
        turn(bad("compile_error", False), compiled=False,
             files={"prompt": "p1", "response": EVIL, "kernel": kernel(1), "compile_log": "error: <x>"},
             leases={"GENERATE": (0, 5), "PRECOMPILE": (100, 2000)}),
        turn(ok(1.6, (1.2, 2.1)), files={"prompt": "p2", "response": "r2", "kernel": kernel(2),
                                          "result": "{}", "feedback": "faster please"}),
        turn(ok(0.7), files={"kernel": kernel(3)}, tokens=(300, 70), attempts=3,
             extra={"reasoning_tokens": 40, "cost_usd": 0.00195})]},
    {"id": "B", "level": 1, "turns": [
        turn(bad("value_mismatch"), files={"kernel": kernel(4)}),
        turn(ok(12.0, (9.0, 15.0), verdict="suspect", reasons=["excessive_speedup"]),
             files={"kernel": kernel(5)}),
        turn(None, files={"prompt": "p3", "kernel": kernel(6)})]},
    {"id": "C", "level": 2, "turns": [
        turn(ok(2.5)), turn(ok(3.1, (2.9, 3.3))), turn(ok(0.4), leases={"EXECUTE": (7, 11)})]},
    {"id": "D", "level": 2, "turns": [], "fail": "worker died 3 times"},
]
run1 = os.path.join(work, "run1")
recs1 = fake_run(run1, "one", tasks, turns=3)
# a second run: other numbers, its leases later, to overlay
tasks2 = [{"id": "A", "level": 1, "turns": [turn(ok(0.9)), turn(ok(1.1))]},
          {"id": "E", "level": 1, "turns": [turn(ok(4.0), leases={"EXECUTE": (0, 5000)}), turn(bad("timeout"))]}]
run2 = os.path.join(work, "run2")
recs2 = fake_run(run2, "two", tasks2, turns=2, t0_ms=1_800_000_500_000)


def report_json(run, *extra):
    return json.loads(kforge("report", run, "--json", *extra).stdout)


# ---- CSV: a row per task and turn, every column from the records
STAGES = ("GENERATE", "PRECOMPILE", "EXECUTE", "PROFILE")


def expected_rows(run_name, task_defs, recs_by_task):
    rows = []
    for t in task_defs:
        recs = recs_by_task[t["id"]]
        for k in sorted({r["turn"] for r in recs}):
            mine = [r for r in recs if r["turn"] == k]
            row = {"run": run_name, "task": t["id"], "level": str(t["level"]),
                   "problem": "L%d_%s" % (t["level"], t["id"]), "turn": str(k)}
            fb = [r for r in mine if r["from"] == "FEEDBACK"]
            out = fb[-1]["data"] if fb else {}
            row["status"] = out.get("status", "")
            row["verdict"] = out.get("verdict", "")
            row["reasons"] = ";".join(out["reasons"]) if "reasons" in out else ""
            for key in ("compiled", "correct"):
                row[key] = "" if key not in out else ("true" if out[key] else "false")
            for key in ("speedup", "runtime_ms", "ref_runtime_ms"):
                row[key] = out.get(key)
            ci = out.get("speedup_ci95")
            row["speedup_ci95_lo"], row["speedup_ci95_hi"] = (ci[0], ci[1]) if ci else (None, None)
            for st in STAGES:
                leased = [r["data"]["lease"] for r in mine if r["from"] == st and r["event"] != "start"
                          and "lease" in r["data"]]
                row[st.lower() + "_wait_ms"] = str(sum(l["wait_ms"] for l in leased)) if leased else ""
                row[st.lower() + "_hold_ms"] = str(sum(l["released_ms"] - l["acquired_ms"] for l in leased)) \
                    if leased else ""
            gen = [r["data"] for r in mine if r["from"] == "GENERATE" and "attempts" in r["data"]]
            row["llm_requests"] = str(sum(d["attempts"] for d in gen)) if gen else ""
            row["prompt_tokens"] = str(sum(d["prompt_tokens"] for d in gen)) if gen else ""
            row["completion_tokens"] = str(sum(d["completion_tokens"] for d in gen)) if gen else ""
            reasoned = [d["reasoning_tokens"] for d in gen if "reasoning_tokens" in d]
            row["reasoning_tokens"] = str(sum(reasoned)) if reasoned else ""
            priced = [d["cost_usd"] for d in gen if "cost_usd" in d]
            row["cost_usd"] = sum(priced, 0.0) if priced else None
            # the search's columns: the node's parent where the log names it, and the
            # task's spend through this turn's FEEDBACK record (rundir's rd_spend_add)
            row["parent"] = str(out["parent"]) if "parent" in out else ""
            row["spent_requests"] = row["spent_tokens"] = row["spent_gpu_s"] = None
            if fb:
                upto = [r for r in recs if r["seq"] <= fb[-1]["seq"]]
                g = [r["data"] for r in upto if r["from"] == "GENERATE" and "attempts" in r["data"]]
                held = [r["data"]["lease"] for r in upto if r["from"] in ("EXECUTE", "PROFILE")
                        and r["data"].get("lease", {}).get("class") == "exec"]
                row["spent_requests"] = str(sum(d["attempts"] for d in g))
                row["spent_tokens"] = str(sum(d.get("prompt_tokens", 0) + d.get("completion_tokens", 0) for d in g))
                row["spent_gpu_s"] = sum((l["released_ms"] - l["acquired_ms"]) / 1000.0 for l in held) + 0.0
            rows.append(row)
    return rows


def check_csv(text, want):
    check(text.endswith("\n"), "the CSV does not end with a line break")
    got = list(csv.DictReader(io.StringIO(text)))
    check(len(got) == len(want), "CSV: %d rows, want %d (one per task and turn)" % (len(got), len(want)))
    for g, w in zip(got, want):
        check(set(g) == set(w), "CSV columns %s, want %s" % (sorted(g), sorted(w)))
        for key, v in w.items():
            if isinstance(v, float):
                check(g[key] != "" and float(g[key]) == v, "CSV %s turn %s %s: %r, want %r"
                      % (w["task"], w["turn"], key, g[key], v))
            else:
                check(g[key] == ("" if v is None else v), "CSV %s turn %s %s: %r, want %r"
                      % (w["task"], w["turn"], key, g[key], v))
    return got


want1 = expected_rows("one", tasks, recs1)
check(len(want1) == 3 + 3 + 3 + 1, "the hand-built run has %d turn rows" % len(want1))
rows1 = check_csv(kforge("report", run1, "--csv").stdout, want1)
check([r for r in rows1 if r["task"] == "B" and r["turn"] == "3"][0]["status"] == "",
      "a turn under way has an empty status")
# report --json's model use: the run's sums and each task's equal the CSV's turn rows
use = report_json(run1)["llm"]
for key, col in (("requests", "llm_requests"), ("prompt_tokens", "prompt_tokens"),
                 ("completion_tokens", "completion_tokens"),
                 ("reasoning_tokens", "reasoning_tokens")):
    check(use[key] == sum(int(r[col] or 0) for r in rows1),
          "report --json llm.%s %r, the CSV sums to %r" % (key, use[key],
                                                          sum(int(r[col] or 0) for r in rows1)))
    for t in use["tasks"]:
        mine = sum(int(r[col] or 0) for r in rows1 if r["task"] == t["id"])
        check(t[key] == mine, "report --json llm task %s %s %r, want %r" % (t["id"], key, t[key], mine))
check(use["reasoning_tokens"] == 40, "reasoning tokens %r, want 40" % use["reasoning_tokens"])
check("cost_usd" not in use, "an unpriced run shows a cost: %r" % use)
want2 = expected_rows("two", tasks2, recs2)
check_csv(kforge("report", run1, run2, "--csv").stdout, want1 + want2)
raw = subprocess.run([BIN, "report", run1, "--csv"], capture_output=True).stdout
check(raw.count(b"\r\n") == len(want1) + 1, "CSV lines do not end in CRLF (RFC 4180)")
header = raw.decode().split("\r\n", 1)[0]
check(header.startswith("run,task,level,problem,turn,status,verdict"), "CSV header: %s" % header)


# ---- plots: the points are the report's numbers
def svgs(runs, *extra):
    d = os.path.join(work, "svg-%d-%d" % (len(runs), len(extra)))
    p = kforge("report", *runs, "--svg", d, *extra)
    check("wrote the plots to" in p.stderr and p.stdout == "", "report --svg: %r %r" % (p.stdout, p.stderr))
    out = {}
    for name in ("fast_p", "fast1_by_turn", "fast1_by_requests", "fast1_by_gpu_s", "speedups",
                 "turn_status", "slot_use"):
        path = os.path.join(d, name + ".svg")
        check(os.path.exists(path), "no %s" % path)
        out[name] = ET.parse(path).getroot()
        check(out[name].tag == SVG + "svg", "%s is not SVG" % path)
    return out


def series_points(root):
    pts = {}
    for c in root.iter(SVG + "circle"):
        if c.get("class") == "pt":
            pts.setdefault(c.get("data-series"), []).append((float(c.get("data-x")), float(c.get("data-y"))))
    return pts


def fast_p_want(rep, prefix):
    want = {}
    tallies = [("L" + lv, t) for lv, t in rep["levels"].items()] + [("overall", rep["overall"])]
    for label, t in tallies:
        want[prefix + label] = [(0.0, t["fast_0"])] + [(float(p), v) for p, v in t["fast_p"].items()]
    return want


def check_close(got, want, what):
    check(sorted(got) == sorted(want), "%s: series %s, want %s" % (what, sorted(got), sorted(want)))
    for k in want:
        check(len(got[k]) == len(want[k]) and all(abs(a[0] - b[0]) < 1e-12 and abs(a[1] - b[1]) < 1e-12
                                                  for a, b in zip(got[k], want[k])),
              "%s %s: points %s, want %s" % (what, k, got[k], want[k]))


def lease_steps(recs_by_task, cls):
    leases = [r["data"]["lease"] for recs in recs_by_task.values() for r in recs
              if "lease" in r["data"] and r["event"] != "start"]
    t0 = min(l["acquired_ms"] for l in leases)
    ev = sorted([(l["acquired_ms"], 1) for l in leases if l["class"] == cls] +
                [(l["released_ms"], -1) for l in leases if l["class"] == cls])
    steps, held = [], 0
    for i, (ms, d) in enumerate(ev):
        held += d
        if i + 1 < len(ev) and ev[i + 1][0] == ms:
            continue
        steps.append(((ms - t0) / 1000.0, float(held)))
    return steps


def best_speedups(recs_by_task, accepted):
    """Each task's best counted speedup: a correct verdict, or a suspect one whose every
    reason is accepted."""
    best = []
    for recs in recs_by_task.values():
        counted = [r["data"]["speedup"] for r in recs if r["from"] == "FEEDBACK" and r["data"].get("correct")
                   and r["data"].get("speedup", 0) > 0 and
                   (r["data"]["verdict"] == "correct" or
                    (r["data"]["verdict"] == "suspect" and r["data"]["reasons"] and
                     all(x in accepted for x in r["data"]["reasons"])))]
        if counted:
            best.append(max(counted))
    return best


def fast1_by_requests(recs_by_task, accepted):
    """(steps, most): the requests at which each task's search first counted a kernel
    above 1.0x, as the report's by_spend steps [spend, share of tasks], and the most
    requests a task made; read from the records alone."""
    firsts, most = [], 0
    for recs in recs_by_task.values():
        spent, found = 0, None
        for r in recs:
            d = r["data"]
            if r["from"] == "GENERATE" and "attempts" in d:
                spent += d["attempts"]
            if found is None and r["from"] == "FEEDBACK" and d.get("correct") and d.get("speedup", 0) > 1 and \
                    (d.get("verdict", "correct") == "correct" or
                     (d["verdict"] == "suspect" and d["reasons"] and all(x in accepted for x in d["reasons"]))):
                found = spent
        most = max(most, spent)
        if found is not None:
            firsts.append(found)
    firsts.sort()
    n = len(recs_by_task)
    return [(float(v), (j + 1) / n) for j, v in enumerate(firsts) if j + 1 == len(firsts) or firsts[j + 1] != v], most


def check_plots(runs, recs_list, csv_rows, *extra):
    plots = svgs(runs, *extra)
    reps = [report_json(r, *extra) for r in runs]
    sts = [json.loads(kforge("status", r, "--json").stdout) for r in runs]
    names = [rep["run"] for rep in reps]
    prefix = ["%d:%s " % (i + 1, n) if len(runs) > 1 else "" for i, n in enumerate(names)]
    want = {}
    for rep, pf in zip(reps, prefix):
        want.update(fast_p_want(rep, pf))
    check_close(series_points(plots["fast_p"]), want, "fast_p.svg")
    want = {(pf.strip() if pf else rep["run"]): [(float(k + 1), v) for k, v in enumerate(rep["overall"]["fast_1_at_turn"])]
            for rep, pf in zip(reps, prefix)}
    check_close(series_points(plots["fast1_by_turn"]), want, "fast1_by_turn.svg")
    # fast_1 against requests spent: the report's by_spend, from the records, drawn as steps
    want = {}
    for i, (rep, pf) in enumerate(zip(reps, prefix)):
        steps, most = fast1_by_requests(recs_list[i], extra[1:] if extra else ())
        by = rep["by_spend"]["requests"]
        check([tuple(x) for x in by["fast_1"]] == steps and by["max"] == most,
              "%s: by_spend requests %s, want %s up to %d" % (rep["run"], by, steps, most))
        pts, y = [(0.0, 0.0)], 0.0
        for x, share in steps:
            pts += [(x, y), (x, share)]
            y = share
        pts.append((float(most), y))
        want[pf + rep["search"]["strategy"]] = pts
    check(any(len(v) > 2 for v in want.values()), "no task of the runs is fast_1: the plot says nothing")
    check_close(series_points(plots["fast1_by_requests"]), want, "fast1_by_requests.svg")
    # speedups: each task's best correct speedup falls in exactly one bar of its run
    for i, (rep, st) in enumerate(zip(reps, sts)):
        label = prefix[i].strip() if prefix[i] else rep["run"]
        bars = [(float(b.get("data-lo")), float(b.get("data-hi")), int(b.get("data-count")))
                for b in plots["speedups"].iter(SVG + "rect")
                if b.get("class") == "bar" and b.get("data-series") == label]
        best = best_speedups(recs_list[i], extra[1:] if extra else ())
        if not extra:
            check(sorted(best) == sorted(t["best_speedup"] for t in st["tasks"] if t["best_speedup"]),
                  "best speedups %s, status --json says %s" % (best, st["tasks"]))
        check(sum(n for _, _, n in bars) == len(best) == rep["overall"]["counts"]["correct"],
              "speedups.svg %s: %d in bars, %d best speedups, %d correct" %
              (label, sum(n for _, _, n in bars), len(best), rep["overall"]["counts"]["correct"]))
        for lo, hi, n in bars:
            check(n == sum(lo < s <= hi for s in best), "speedups.svg %s bar (%g, %g]: %d" % (label, lo, hi, n))
        above = sum(n for lo, _, n in bars if lo >= 1)
        check(above == round(rep["overall"]["fast_p"]["1"] * rep["overall"]["tasks"]),
              "speedups.svg %s: %d above 1, fast_1 counts %g" % (label, above, rep["overall"]["fast_p"]["1"]))
    # status of every turn: the CSV's turns by category
    for i, rows in enumerate(csv_rows):
        label = prefix[i].strip() if prefix[i] else names[i]
        want = {}
        for r in rows:
            cat = "in progress" if r["status"] == "" else \
                r["verdict"] if r["status"] == "ok" and r["verdict"] else r["status"]
            want[(int(r["turn"]), cat)] = want.get((int(r["turn"]), cat), 0) + 1
        got = {(int(b.get("data-turn")), b.get("data-category")): int(b.get("data-count"))
               for b in plots["turn_status"].iter(SVG + "rect")
               if b.get("class") == "bar" and b.get("data-series") == label}
        check(got == want, "turn_status.svg %s: %s, want %s" % (label, got, want))
    # slot use: the lease records' counts over time
    for i, recs in enumerate(recs_list):
        for cls, name in (("exec", "cpu-exec slots"), ("compile", "compile slots")):
            label = prefix[i] + name
            g = [s for s in plots["slot_use"].iter(SVG + "g") if s.get("data-series") == label]
            check(len(g) == 1, "slot_use.svg: no series %r" % label)
            got = [tuple(float(x) for x in p.split(",")) for p in g[0].get("data-points").split()]
            want = lease_steps(recs, cls)
            check(len(got) == len(want) and all(abs(a[0] - b[0]) < 1e-9 and a[1] == b[1] for a, b in zip(got, want)),
                  "slot_use.svg %s: %s, want %s" % (label, got, want))
    return plots


csv1 = list(csv.DictReader(io.StringIO(kforge("report", run1, "--csv").stdout)))
csv2 = list(csv.DictReader(io.StringIO(kforge("report", run2, "--csv").stdout)))
check_plots([run1], [recs1], [csv1])
check_plots([run1, run2], [recs1, recs2], [csv1, csv2])
# --accept counts B's suspect turn: the plots follow the report
acc = report_json(run1, "--accept", "excessive_speedup")
check(acc["overall"]["fast_p"]["2"] != report_json(run1)["overall"]["fast_p"]["2"],
      "--accept should change fast_2 of the hand-built run")
check_plots([run1], [recs1], [csv1], "--accept", "excessive_speedup")

# ---- HTML: a row per task, a section per turn, the run's text escaped
page_path = os.path.join(work, "report.html")
kforge("report", run1, "--html", page_path)
page = open(page_path, encoding="utf-8").read()
check(page.count('<tr class="task-row"') == len(tasks), "the page's task table has %d rows, want %d"
      % (page.count('<tr class="task-row"'), len(tasks)))
for i, t in enumerate(tasks):
    for k in sorted({r["turn"] for r in recs1[t["id"]]}):
        check('id="turn-0-%d-%d"' % (i, k) in page, "no section for %s turn %d" % (t["id"], k))
check(EVIL not in page and "<script>alert" not in page and "<img src=x" not in page,
      "text from the run reached the page unescaped")
check("&lt;/pre&gt;&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in page, "the reply is not shown escaped")
check(page.count("<script>") == 1, "the page has %d scripts, want its own one" % page.count("<script>"))
for bad_ref in ('src="http', "href=\"http", "@import", "url("):
    check(bad_ref not in page, "the page refers to an outside resource: %s" % bad_ref)
check('class="diff" data-added="2" data-removed="2"' in page, "turn 2 of A: no diff of its kernel against turn 1's")

# ---- the slot plot's title names what the runs executed on (a CPU run's says no GPU)
def slot_title(page_text):
    svg = page_text[page_text.index('id="plot-slot_use"'):]
    return re.search(r'font-weight="bold">([^<]*)</text>', svg).group(1)


gpu_run = os.path.join(work, "gpu-run")
fake_run(gpu_run, "gpu", tasks[:1], turns=3, device="cuda")
for runs, want in (([run1], "CPU execution and compile slot use over time"),
                   ([gpu_run], "GPU and compile slot use over time"),
                   ([run1, gpu_run], "GPU, CPU execution and compile slot use over time")):
    html = os.path.join(work, "slots-%d.html" % len(runs) if runs[0] == run1 else "slots-gpu.html")
    kforge("report", *runs, "--html", html)
    got = slot_title(open(html, encoding="utf-8").read())
    check(got == want, "the slot plot of %s is titled %r, want %r" % (runs, got, want))
check("GPU" not in slot_title(page), "a CPU run's slot plot says GPU: %r" % slot_title(page))

# ---- a run not started yet: a header alone, plots that say they have nothing, a row per task
fresh = os.path.join(work, "fresh")
fake_run(fresh, "fresh", [{"id": "A", "level": 1, "turns": []}, {"id": "B", "level": 2, "turns": []}], turns=2)
for t in ("A", "B"):
    os.unlink(os.path.join(fresh, "tasks", t, "trajectory.jsonl"))
check(kforge("report", fresh, "--csv").stdout.count("\n") == 1, "the CSV of a fresh run is not a header alone")
kforge("report", fresh, "--svg", os.path.join(work, "fresh-svg"), "--html", os.path.join(work, "fresh.html"))
for name, words in (("speedups", "no correct kernel"), ("turn_status", "no turn has started"),
                    ("slot_use", "no slot was leased")):
    check(words in open(os.path.join(work, "fresh-svg", name + ".svg")).read(), "%s.svg of a fresh run" % name)
check(open(os.path.join(work, "fresh.html")).read().count('<tr class="task-row"') == 2, "fresh.html task rows")

# ---- bad input: one line, nonzero
def refused(args, rc, words):
    p = kforge(*args, check_rc=False)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == rc and lines and words in lines[0], "kforge %s: rc %d, stderr %r (want rc %d, %r)"
          % (" ".join(args), p.returncode, p.stderr, rc, words))


refused(["report", os.path.join(work, "missing"), "--csv"], 1, "not a kforge run directory")
refused(["report", run1, os.path.join(work, "missing"), "--html", os.path.join(work, "x.html")], 1,
        "not a kforge run directory")
refused(["report", run1, "--html", os.path.join(work, "no", "such", "dir", "x.html")], 1, "cannot write")
refused(["report", run1, "--json", "--csv"], 2, "--json")
refused(["report", run1, os.path.join(work, "missing")], 1, "not a kforge run directory")
refused(["view", run1, "--port", "70000"], 2, "--port wants")
refused(["view", run1, "--port", "http"], 2, "--port wants")
refused(["view", run1, "--bind", "example.com"], 2, "--bind wants")
refused(["view", os.path.join(work, "missing")], 1, "not a kforge run directory")
check(not os.path.exists(os.path.join(work, "x.html")), "a failed report wrote its page")
# status of a run large enough that its logs are read by several threads (256 tasks or
# more): every task's state, turn and best speedup, and the stage times (the per-thread
# counts and waits put together) equal what the records say.
many = []
for i in range(300):
    many.append({"id": "M%03d" % i, "level": 1 + i % 2, "turns": [
        turn(bad("compile_error", False), compiled=False) if i % 3 == 0 else turn(ok(1.0 + i / 100.0)),
        turn(ok(0.5 + i / 200.0))] if i % 7 else [turn(ok(2.0)), turn(bad("value_mismatch"))]})
big = os.path.join(work, "many")
big_recs = fake_run(big, "many", many, turns=2)
st = json.loads(kforge("status", big, "--json").stdout)
check(len(st["tasks"]) == 300, "status lists %d of 300 tasks" % len(st["tasks"]))
for t in st["tasks"]:
    recs = big_recs[t["id"]]
    speeds = [r["data"]["speedup"] for r in recs
              if r["from"] == "FEEDBACK" and r["data"].get("verdict") == "correct"]
    check(t["state"] == recs[-1]["to"] and t["turn"] == recs[-1]["turn"] and
          (t["best_speedup"] or None) == (max(speeds) if speeds else None),
          "status of %s: %s, records end %s turn %s best %s" % (
              t["id"], t, recs[-1]["to"], recs[-1]["turn"], max(speeds) if speeds else None))
for stage, got in st["stages"].items():
    leaving = [r for recs in big_recs.values() for r in recs if r["from"] == stage and r["event"] != "start"]
    leased = [r["data"]["lease"] for r in leaving if "lease" in r.get("data", {})]
    check(got["steps"] == len(leaving) and got["held_slot"] == len(leased) and
          got["wait_ms"]["total"] == sum(l["wait_ms"] for l in leased) and
          got["hold_ms"]["total"] == sum(l["released_ms"] - l["acquired_ms"] for l in leased),
          "status stages %s: %s; the records: %d steps, %d leased" % (stage, got, len(leaving), len(leased)))
check(st["stages"], "status --json of the large run has no stage times")
print("ok: status of 300 tasks (read by several threads) equals the records")

for cmd, words in (("view", "--port N"), ("report", "--html FILE")):
    p = kforge(cmd, "--help")
    check(p.stdout.startswith("usage: kforge " + cmd) and words in p.stdout, "%s --help: %r" % (cmd, p.stdout[:200]))
print("ok: CSV rows and columns equal the records; plot points equal report --json, status --json, "
      "the CSV and the leases, for one run and two; the page escapes the run's text; bad input refused")
