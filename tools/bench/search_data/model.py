#!/usr/bin/env python3
"""The search bench's model (llm.provider command), also the search tests': it answers
with the demo's recorded replies (configs/demo_responses/<format>/<device>/<key>/<k>.md,
three steps per problem, each written to fix or speed up the one before) and variations
of them, so that strategies that explore differently find different kernels.

Which step it answers: the prompt shows the parent's kernel (feedback G) or, where that
turn had no code, its reply; the parent is at step d (0 for the problem alone). The
answer is step d + 1, except for a draw from a hash of (task, turn, d): a first prompt
is answered with step 2 or 3 a third of the time (a lucky sample), a refinement repeats
step d a quarter of the time (no progress). A step past the last is the last again.
Standard library only; stdin is the request JSON, stdout the reply as JSON with usage
(prompt and completion tokens estimated as characters / 4).

  model.py --responses DIR [--log FILE] [--hold-after N --release FILE]

--log appends a line per request (task, turn, step) before answering, fsync'd; with
--hold-after, a request after the first N waits until the file --release names exists
(the tests kill a run there)."""
import argparse
import hashlib
import json
import os
import re
import sys
import time

STEPS = 3


def code_block(text):
    m = re.search(r"```python\n(.*?)```", text, re.S)
    return m.group(1) if m else None


def parent_step(prompt, replies):
    """The recorded step whose kernel (or, with no code, whose reply) the prompt shows."""
    for k in range(STEPS, 0, -1):
        code = code_block(replies[k])
        shown = code.strip() if code else replies[k].strip()
        if shown and shown in prompt:
            return k
    return 0


def draw(task, turn, d):
    h = hashlib.sha256(("%s/%d/%d" % (task, turn, d)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--responses", required=True)
    ap.add_argument("--log")
    ap.add_argument("--hold-after", type=int, default=-1)
    ap.add_argument("--release")
    a = ap.parse_args()
    req = json.load(sys.stdin)
    task, turn = req.get("task") or "", int(req.get("turn") or 0)
    prompt = req["messages"][-1]["content"]
    key = re.sub(r"_s\d+$", "", task)
    replies = {k: open(os.path.join(a.responses, key, "%d.md" % k)).read()
               for k in range(1, STEPS + 1)}
    d = parent_step(prompt, replies)
    u = draw(task, turn, d)
    if d == 0:
        step = 1 if u < 2 / 3 else 2 if u < 5 / 6 else 3
    else:
        step = d if u < 0.25 else d + 1
    step = min(step, STEPS)
    if a.log:
        with open(a.log, "a") as f:
            f.write("%s %d %d\n" % (task, turn, step))
            f.flush()
            os.fsync(f.fileno())
        if a.hold_after >= 0 and a.release:
            with open(a.log) as f:
                made = sum(1 for _ in f)
            while made > a.hold_after and not os.path.exists(a.release):
                time.sleep(0.1)
    content = replies[step]
    json.dump({"content": content, "usage": {"prompt_tokens": len(prompt) // 4,
                                             "completion_tokens": len(content) // 4}},
              sys.stdout)


if __name__ == "__main__":
    main()
