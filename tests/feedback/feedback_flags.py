#!/usr/bin/env python3
"""feedback_flags.py: every flag a result can carry is in the flags' table.

The table is feedback/verdict.c's (flag, verdict, meaning), read through
`kforge --list flags`. The flags raised are found in the sources: the Python runner's
(feedback/kforge_runner.py: self.flag("x"), r.flag("x"), flags=["x", ...]) and the C
side's (fb_flag(res, "x") under feedback/). A flag raised and not in the table fails
the test, naming where it is raised; so does a row no source raises (a dead row), and a
verdict other than rejected, suspect or none.

Needs $KFORGE_BIN (else build/kforge) and the standard library. Exit 0 or 1.
"""
import glob
import os
import re
import subprocess
import sys

HOME = os.environ.get("KFORGE_HOME", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN = os.environ.get("KFORGE_BIN", os.path.join(HOME, "build", "kforge"))

PY_FLAG = re.compile(r'\.flag\(\s*"([A-Za-z0-9_]+)"\s*\)')
PY_FLAGS = re.compile(r'flags\s*=\s*\[([^\]]*)\]')
C_FLAG = re.compile(r'fb_flag\(\s*[^,]+,\s*"([A-Za-z0-9_]+)"\s*\)')
NAME = re.compile(r'"([A-Za-z0-9_]+)"')


def raised():
    found = {}
    for path, patterns in ((os.path.join(HOME, "feedback", "kforge_runner.py"), "py"),) + \
            tuple((p, "c") for p in sorted(glob.glob(os.path.join(HOME, "feedback", "*.c")))):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                names = []
                if patterns == "py":
                    names += PY_FLAG.findall(line)
                    for group in PY_FLAGS.findall(line):
                        names += NAME.findall(group)
                else:
                    names += C_FLAG.findall(line)
                for name in names:
                    found.setdefault(name, "%s:%d" % (os.path.relpath(path, HOME), n))
    return found


def table():
    p = subprocess.run([BIN, "--list", "flags"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit("feedback_flags: kforge --list flags failed: %s" % p.stderr.strip())
    rows = {}
    for line in p.stdout.splitlines():
        flag, verdict, meaning = line.split("\t")
        rows[flag] = (verdict, meaning)
    return rows


def main():
    found, rows, problems = raised(), table(), []
    if len(found) < 20:
        problems.append("only %d flags found in the sources: has the way flags are raised "
                        "changed? (this test's patterns)" % len(found))
    for flag, where in sorted(found.items()):
        if flag not in rows:
            problems.append("%s: raises flag %s, which feedback/verdict.c's flag_rules "
                            "does not list" % (where, flag))
    for flag, (verdict, meaning) in sorted(rows.items()):
        if verdict not in ("rejected", "suspect", "none"):
            problems.append("flag %s: verdict %s (rejected, suspect or none)" % (flag, verdict))
        if not meaning:
            problems.append("flag %s: no meaning" % flag)
        if flag not in found:
            problems.append("flag %s is in flag_rules, but no source raises it" % flag)
    for p in problems:
        print("feedback_flags: " + p)
    if problems:
        return 1
    print("feedback_flags: ok, %d flags, each in the table" % len(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
