#!/usr/bin/env python3
"""model.py: a model for kforge's command provider in the red-team tests
(tests/e2e/test_redteam.py). It answers task T's turn K with REPLIES/T/K.md, the replies
the replay provider serves in the same test, so that both providers run the same
candidates, and appends what it was asked to LOG (a JSON line per request: task, turn,
prompt), so the test can read the prompt a red-team run sends.

usage: model.py --replies DIR --log FILE   (the request JSON on stdin)"""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--replies", required=True)
ap.add_argument("--log", required=True)
args = ap.parse_args()

req = json.load(sys.stdin)
task, turn = req["task"], req["turn"]
with open(args.log, "a") as f:
    f.write(json.dumps({"task": task, "turn": turn, "prompt": req["messages"][0]["content"]}) + "\n")
path = os.path.join(args.replies, task, "%d.md" % turn)
if not os.path.exists(path):
    sys.stderr.write("no reply for %s turn %d\n" % (task, turn))
    sys.exit(3)
with open(path) as f:
    json.dump({"content": f.read(), "usage": {"prompt_tokens": 1000, "completion_tokens": 200}},
              sys.stdout)
