#!/usr/bin/env python3
"""adversarial_static.py: the static half of the adversarial suites, without torch or a GPU.

Every candidate of tests/data/{adversarial,honest}/{cpu,cuda} and the demo's correct turns
for each device (the sets test_adversarial and test_adversarial_gpu run), through
feedback/kforge_check.py as kforge runs it (load_inline, fp32, torch ops a warning), must
get findings that agree with its header (tests/e2e/adversarial.py):

- expect rejected, and every rule its `catches` names is a static rule: an error finding
  with one of them;
- expect rejected or suspect with a runtime flag among `catches`: nothing required here
  (the flag is the GPU or CPU test's business), but a suspect one has no error;
- expect suspect with static rules only: a warning with one of them and no error;
- expect correct: no finding at all (a warning would make it suspect); expect incorrect:
  no error (it must reach execution to be found wrong);
- a candidate judged with the static checks off (its `config` says eval.static_checks=
  false: a runtime defence shown on its own): an error finding, whatever it expects, so
  that the checks do stop it where they are on.

So a CUDA cheat whose static verdict changes is caught here, on any machine, before the
GPU test runs. Standard library only. Exit 0 on success, 1 naming what failed.
"""
import os
import sys
import tempfile

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "feedback"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import kforge_check  # noqa: E402
from adversarial import collect  # noqa: E402

STATIC_RULES = {name for name, _, _ in kforge_check.RULES}
failures = []
counts = {}
with tempfile.TemporaryDirectory() as tmp:
    for device, min_adv, min_honest in (("cpu", 27, 10), ("cuda", 25, 10)):
        for c in collect(device, os.path.join(tmp, device), min_adv, min_honest):
            with open(c["path"]) as f, open(c["problem"]) as g:
                found = kforge_check.check(f.read(), g.read(), device, "load_inline", "fp32")
            errors = {x["rule"] for x in found if x["severity"] == "error"}
            warnings = {x["rule"] for x in found if x["severity"] != "error"}
            catches = set(c["catches"].split("|")) - {"-"}
            static_only = bool(catches) and catches <= STATIC_RULES
            want, why = c["expect"], None
            if "eval.static_checks=false" in c["sets"]:
                if not errors:
                    why = "no error: the static checks would let it run"
            elif want == "rejected" and static_only and not errors & catches:
                why = "no error naming %s" % " or ".join(sorted(catches))
            elif want == "suspect" and errors:
                why = "errors %s would reject it" % sorted(errors)
            elif want == "suspect" and static_only and not warnings & catches:
                why = "no warning naming %s" % " or ".join(sorted(catches))
            elif want == "correct" and (errors or warnings):
                why = "findings %s" % sorted(errors | warnings)
            elif want == "incorrect" and errors:
                why = "errors %s would reject it before it runs" % sorted(errors)
            if why:
                failures.append("%s %s (expect %s): %s" % (device, c["name"], want, why))
                print("FAIL: %s" % failures[-1])
            counts[device] = counts.get(device, 0) + 1
if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok: static findings agree with the headers of %s candidates" % counts)
