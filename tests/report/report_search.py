#!/usr/bin/env python3
"""The views of a search (docs/search.md) on a hand-built run directory of known nodes.

Task T grew as a tree: 1 and 2 from the problem, 3 from 1, 4 from 3, 5 from 2, 6 from 4
(verdicts and speedups below; the best correct node is 4), and an agent's tool call
under node 5. Task U is a chain of two turns. The run says refinement.strategy: tree.

- `kforge status` names the nodes, the depth and the best node of each task (text and
  --json), its count column headed NODES;
- `kforge tail` says which node a turn grew from where it is not the turn before;
- the HTML page draws each task's tree: one link per node to that turn's section (which
  exists), each node's parent as recorded, the nodes filled by verdict, the path from the
  problem to the best node (and only it) marked best, the tool call a leaf of its turn;
  a node's kernel diff is against its parent's kernel, not the turn before's.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from kfe2e import *  # noqa: E402,F401

SVG = "{http://www.w3.org/2000/svg}"
work = scratch("report-search")


def outcome(verdict, speedup=None):
    d = {"verdict": verdict, "reasons": [], "status": "ok" if speedup else "value_mismatch",
         "compiled": True, "correct": verdict == "correct"}
    if speedup:
        d.update(speedup=speedup, runtime_ms=1.0 / speedup, ref_runtime_ms=1.0)
    return d


def kernel(k):
    return "import torch\n# node %d\ndef f(x):\n    return x * %d\n" % (k, k)


# node: (parent, verdict, speedup)
NODES = {1: (0, "correct", 1.2), 2: (0, "incorrect", None), 3: (1, "correct", 1.5),
         4: (3, "correct", 2.5), 5: (2, "suspect", 9.0), 6: (4, "correct", 2.0)}
BEST_PATH = {1, 3, 4}
FILL = {"correct": "#4b4", "incorrect": "#e55", "suspect": "#f2a93b"}

tasks = [{"id": "T", "level": 1, "turns": [
             {"outcome": outcome(v, s), "files": {"prompt": "p%d" % k, "kernel": kernel(k)}}
             for k, (_, v, s) in sorted(NODES.items())]},
         {"id": "U", "level": 1, "turns": [
             {"outcome": outcome("correct", 1.1), "files": {"kernel": kernel(10)}},
             {"outcome": outcome("correct", 1.3), "files": {"kernel": kernel(11)}}]}]
run = os.path.join(work, "run")
fake_run(run, "searched", tasks, turns=6)
cfg = os.path.join(run, "config.yaml")
text = open(cfg).read()
check("refinement: {turns: 6}" in text, "fake_run's config changed: %s" % text)
open(cfg, "w").write(text.replace("refinement: {turns: 6}",
                                  "refinement: {turns: 6, strategy: tree}"))

# Each node's GENERATE and FEEDBACK name its parent, as a search's worker writes them; a
# tool call of node 5's agent is a record of its own (GENERATE to GENERATE).
log = os.path.join(run, "tasks", "T", "trajectory.jsonl")
recs = [json.loads(line) for line in open(log)]
out = []
for r in recs:
    if r["from"] in ("GENERATE", "FEEDBACK") and r["event"] != "start":
        r["data"]["parent"] = NODES[r["turn"]][0]
    out.append(r)
    if r["turn"] == 5 and r["from"] == "GENERATE" and r["event"] == "ok":
        out.insert(len(out) - 1, {"seq": 0, "ts": r["ts"], "task": "T", "turn": 5,
                                  "from": "GENERATE", "event": "tool_call", "to": "GENERATE",
                                  "data": {"parent": 5, "call": 1, "verdict": "correct",
                                           "status": "ok", "speedup": 1.7}})
for i, r in enumerate(out, 1):
    r["seq"] = i
with open(log, "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in out))

# status: nodes, depth, best node
st = json.loads(kforge("status", run, "--json").stdout)
by = {t["id"]: t for t in st["tasks"]}
check(by["T"]["search"] == {"nodes": 6, "depth": 4, "best_node": 4},
      "T's search in status --json: %r" % by["T"]["search"])
check(by["U"]["search"] == {"nodes": 2, "depth": 2, "best_node": 2},
      "U's search in status --json: %r" % by["U"]["search"])
text = kforge("status", run).stdout
check(re.search(r"^TASK\s+STATE\s+NODES\s+BEST", text, re.M) is not None,
      "status's header does not count nodes:\n" + text)
check(re.search(r"^T\s.*\[6 nodes, depth 4, best node 4\]", text, re.M) is not None,
      "status's line for T lacks its search:\n" + text)

# tail: where a node grew from, said only where it is not the turn before
tail = kforge("tail", run, "T").stdout
grew = {int(m.group(1)): int(m.group(2)) for m in
        re.finditer(r"turn (\d+)\s+GENERATE\s+--ok--> PRECOMPILE.*from node (\d+)", tail)}
check(grew == {k: p for k, (p, _, _) in NODES.items() if p != k - 1},
      "tail's parents %r:\n%s" % (grew, tail))

# the HTML page's trees
html = os.path.join(work, "report.html")
kforge("report", run, "--html", html)
page = open(html).read()
trees = re.findall(r"<svg class=\"tree\".*?</svg>", page, re.S)
check(len(trees) == 2, "%d search trees on the page, 2 tasks" % len(trees))
tree = ET.fromstring(trees[0])
check(tree.get("data-best") == "4" and tree.get("data-nodes") == "7",
      "T's tree: best %s, %s nodes" % (tree.get("data-best"), tree.get("data-nodes")))
links = tree.findall(SVG + "a")
turns = {}
for a in links:
    href = a.get("href")
    check(re.match(r"#turn-0-0-\d+$", href) and ('id="%s"' % href[1:]) in page,
          "a node links to no turn section: %s" % href)
    if a.get("data-call"):
        check(a.get("data-parent") == "5" and a.find(SVG + "rect") is not None,
              "the tool call is not a leaf of node 5")
        continue
    k = int(a.get("data-node"))
    turns[k] = a
    check(int(a.get("data-parent")) == NODES[k][0], "node %d's parent %s" % (k, a.get("data-parent")))
    check(a.find(SVG + "circle").get("fill") == FILL[NODES[k][1]],
          "node %d filled %s for %s" % (k, a.find(SVG + "circle").get("fill"), NODES[k][1]))
    check(("best" in a.get("class").split()) == (k in BEST_PATH),
          "node %d marked best: %s" % (k, a.get("class")))
check(sorted(turns) == sorted(NODES), "the tree's nodes %r" % sorted(turns))
edges = tree.findall(SVG + "line")
check(len(edges) == 7 and sum("best" in e.get("class").split() for e in edges) == len(BEST_PATH),
      "T's edges: %d, best %d" % (len(edges), sum("best" in e.get("class") for e in edges)))

# a node's diff is against its parent's kernel: node 5 against node 2's, node 3 against 1's
sec5 = page[page.index('id="turn-0-0-5"'):page.index('id="turn-0-0-6"')]
check("Kernel diff against turn 2" in sec5 and "node 2" in sec5 and "node 5" in sec5,
      "node 5's diff is not against node 2's kernel")
sec1 = page[page.index('id="turn-0-0-1"'):page.index('id="turn-0-0-2"')]
sec2 = page[page.index('id="turn-0-0-2"'):page.index('id="turn-0-0-3"')]
check("the first kernel of the task: no diff" in sec1 and
      "grown from the problem alone: no diff" in sec2, "nodes 1 and 2 under the problem")
print("ok: report_search")
