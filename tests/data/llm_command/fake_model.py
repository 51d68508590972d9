#!/usr/bin/env python3
"""fake_model.py: a program for kforge's command provider, for tests. Reads the request
JSON on stdin and acts on the tag "mode=NAME;" in the user message:
  plain     a plain-text answer on stdout (and noise on stderr, which is not the answer)
  json      a JSON answer with reasoning and usage
  echo      answers with the request it got and the names of its environment variables
  tempfail  exits 75 until it has been run twice (counting in the file named by
            "state=PATH;"), then answers
  noperm    exits 77
  fail      says why on stderr and exits 3
  signal    kills itself with SIGKILL
  hang      sleeps far past any test's llm.timeout_s
  big       writes 300000 bytes
  code      a JSON answer with a ModelNew in a python block and usage 120/30 (for a run)
"""
import json
import os
import re
import signal
import sys
import time

req = json.load(sys.stdin)
text = req["messages"][0]["content"]
mode = re.search(r"mode=(\w+);", text).group(1)

if mode == "plain":
    sys.stderr.write("loading weights...\n")
    sys.stdout.write("plain answer\n```python\nprint(2)\n```\n")
elif mode == "json":
    json.dump({"content": "json answer", "reasoning": "because",
               "usage": {"prompt_tokens": 120, "completion_tokens": 30}}, sys.stdout)
elif mode == "echo":
    json.dump({"content": json.dumps({"request": req, "env": sorted(os.environ)})},
              sys.stdout)
elif mode == "tempfail":
    state = re.search(r"state=([^;]+);", text).group(1)
    n = int(open(state).read()) if os.path.exists(state) else 0
    with open(state, "w") as f:
        f.write(str(n + 1))
    if n < 2:
        sys.stderr.write("model busy\n")
        sys.exit(75)
    sys.stdout.write("after tempfail")
elif mode == "noperm":
    sys.stderr.write("no credentials\n")
    sys.exit(77)
elif mode == "fail":
    sys.stderr.write("first line\nCUDA out of memory\n")
    sys.exit(3)
elif mode == "signal":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "hang":
    time.sleep(600)
elif mode == "code":
    json.dump({"content": "```python\nimport torch\nimport torch.nn as nn\n\n\n"
                          "class ModelNew(nn.Module):\n    def forward(self, x):\n"
                          "        return torch.relu(x)\n```\n",
               "usage": {"prompt_tokens": 120, "completion_tokens": 30}}, sys.stdout)
elif mode == "big":
    sys.stdout.write("y" * 300000)
