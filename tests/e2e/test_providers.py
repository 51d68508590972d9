#!/usr/bin/env python3
"""The anthropic and command providers in a whole run: `kforge run` for one turn of a
bundled problem on the CPU with each, prices in the config, then the tokens and cost
in `status --json`, `status`, `report --json`, `report`, `report --csv` and `tail`.

anthropic: the real mock server speaking the Messages API (tests/llm/mock_llm_server.py on
a path ending in /messages); the request's headers are checked in its log. command:
tests/data/llm_command/fake_model.py run per request, told by a comment in the problem
("mode=code;") to answer with code and usage. The answers' ModelNew has no custom
operator, so the static check rejects it before any build: the test is about the model
path and stays short."""
import csv
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-providers")
RELU = open(os.path.join(HOME, "problems", "level1", "1_ReLU.py")).read()
CODE = ("```python\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x)\n```\n")


def problems_with(marker):
    d = os.path.join(work, "problems-" + marker.strip(";").replace("=", "-"))
    os.makedirs(os.path.join(d, "level1"), exist_ok=True)
    with open(os.path.join(d, "level1", "1_ReLU.py"), "w") as f:
        f.write("# %s\n%s" % (marker, RELU))
    return d


def near(a, b):
    return abs(a - b) <= 1e-12 + 1e-9 * abs(b)


def check_use(run_dir, ptok, ctok, cost):
    task = "L1_1_ReLU_s0"
    st = json.loads(kforge("status", run_dir, "--json").stdout)
    check(st["run"]["status"] == "finished", "run status %s" % st["run"]["status"])
    for where, use in (("run", st["llm"]), ("task", st["tasks"][0]["llm"])):
        check(use["requests"] == 1, "status %s requests %r" % (where, use["requests"]))
        check(use["prompt_tokens"] == ptok and use["completion_tokens"] == ctok,
              "status %s tokens %r" % (where, use))
        check(near(use["cost_usd"], cost), "status %s cost %r, want %r" % (where, use["cost_usd"], cost))
    text = kforge("status", run_dir).stdout
    check("$%.4f" % cost in text and "%d+%d tokens" % (ptok, ctok) in text,
          "status text lacks the cost or tokens:\n%s" % text)
    rep = json.loads(kforge("report", run_dir, "--json").stdout)["llm"]
    check(rep["prompt_tokens"] == ptok and rep["completion_tokens"] == ctok,
          "report tokens %r" % rep)
    check(near(rep["cost_usd"], cost) and near(rep["tasks"][0]["cost_usd"], cost)
          and rep["tasks"][0]["id"] == task, "report cost %r" % rep)
    check("$%.4f" % cost in kforge("report", run_dir).stdout, "report text lacks the cost")
    check("$%.4f" % cost in kforge("tail", run_dir).stdout, "tail lacks the turn's cost")
    rows = list(csv.DictReader(io.StringIO(kforge("report", run_dir, "--csv").stdout)))
    check(len(rows) == 1 and rows[0]["turn"] == "1", "CSV rows %r" % rows)
    check(rows[0]["prompt_tokens"] == str(ptok) and rows[0]["completion_tokens"] == str(ctok)
          and near(float(rows[0]["cost_usd"]), cost), "CSV row %r" % rows[0])
    gen = [r for r in records(run_dir, task) if r["from"] == "GENERATE" and "attempts" in r["data"]]
    check(len(gen) == 1 and near(gen[0]["data"]["cost_usd"], cost), "GENERATE record %r" % gen)


CONFIG = """
name: %s
problems: {dir: %s, levels: [1], samples: 1}
llm: %s
refinement: {turns: 1, feedback: [G, E]}
eval: {device: cpu}
runner: {python: %s}
workers: 1
"""

# ------------------------------------------------------------------ anthropic
mock = MockLLM(os.path.join(work), {"default": {"content": CODE, "reasoning": "a plan",
                                                "usage": {"input_tokens": 1000, "output_tokens": 200}}})
root = mock.base_url[:-len("/v1")]
llm = ('{provider: anthropic, base_url: "%s", model: claude-mock, api_key_env: KFORGE_ANT_KEY, '
       'price_input_per_mtok: 3, price_output_per_mtok: 15}' % root)
config = write_config(os.path.join(work, "anthropic.yaml"),
                      CONFIG % ("anthropic_run", problems_with("anthropic;"), llm, py))
run_dir = os.path.join(work, "run-anthropic")
try:
    kforge("run", config, "--run-dir", run_dir, env={"KFORGE_ANT_KEY": "sk-ant-e2e"}, timeout=600)
finally:
    mock.stop()
reqs = mock.requests()
check(len(reqs) == 1, "anthropic: %d requests, want 1" % len(reqs))
hdr = {k.lower(): v for k, v in reqs[0]["headers"].items()}
check(reqs[0]["path"] == "/v1/messages", "anthropic path %s" % reqs[0]["path"])
check(hdr.get("x-api-key") == "sk-ant-e2e" and hdr.get("anthropic-version") == "2023-06-01",
      "anthropic headers %r" % hdr)
check(reqs[0]["body"]["model"] == "claude-mock" and reqs[0]["body"]["max_tokens"] == 8192,
      "anthropic body %r" % {k: v for k, v in reqs[0]["body"].items() if k != "messages"})
meta = json.load(open(os.path.join(run_dir, "tasks", "L1_1_ReLU_s0", "turns", "1", "response.json")))
check(meta.get("reasoning") == "a plan" and meta.get("finish_reason") == "end_turn",
      "anthropic response.json %r" % meta)
check_use(run_dir, 1000, 200, (1000 * 3 + 200 * 15) / 1e6)

# ------------------------------------------------------------------ command
fake = os.path.join(HOME, "tests", "data", "llm_command", "fake_model.py")
llm = ('{provider: command, command: [python3, "%s"], model: local, '
       'price_input_per_mtok: 2, price_output_per_mtok: 10}' % fake)
config = write_config(os.path.join(work, "command.yaml"),
                      CONFIG % ("command_run", problems_with("mode=code;"), llm, py))
run_dir = os.path.join(work, "run-command")
kforge("run", config, "--run-dir", run_dir, timeout=600)
check_use(run_dir, 120, 30, (120 * 2 + 30 * 10) / 1e6)

# ------------------------------------------------------------------ command, exit 77
# The program's "credentials refused" pauses the run as an HTTP 401 does: exit 75, no
# task failed, the program and its complaint named.
config = write_config(os.path.join(work, "noperm.yaml"),
                      CONFIG % ("noperm_run", problems_with("mode=noperm;"), llm, py))
run_dir = os.path.join(work, "run-noperm")
p = kforge("run", config, "--run-dir", run_dir, timeout=600, check_rc=False)
check(p.returncode == 75, "exit 77: the run exits %d, want 75 (paused)\n%s" % (p.returncode, p.stderr[-3000:]))
st = json.loads(kforge("status", run_dir, "--json").stdout)
why = st["run"].get("llm_paused") or ""
check(st["run"]["status"] == "paused" and "status 77: no credentials" in why and
      "python3" in why, "exit 77: status %s, llm_paused %r" % (st["run"]["status"], why))
check(all(t["state"] != "FAILED" for t in st["tasks"]), "exit 77 failed a task")
print("test_providers: ok")
