#!/usr/bin/env python3
"""tools/check_modules.py: the tree as it is keeps to the module graph; a copy of its
module folders with a violation of each kind planted is refused, each named with its file
and line, and nothing else is: the graph's, and base/banned.h not a .c file's last include
or included by a header."""
import os
import shutil
import subprocess
import sys
import tempfile

HOME = os.environ.get("KFORGE_HOME", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
CHECK = os.path.join(HOME, "tools", "check_modules.py")
failed = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what), flush=True)
    if not cond:
        failed.append(what)


def run(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


p = run(HOME)
check(p.returncode == 0, "the tree keeps to the graph: %s" % (p.stdout + p.stderr).strip())

tmp = tempfile.mkdtemp(prefix="kforge-module-graph-", dir=os.environ.get("KFORGE_TEST_TMP"))
try:
    for mod in ("base", "rundir", "gpu_pool", "llm", "feedback", "fsm", "orchestrator"):
        shutil.copytree(os.path.join(HOME, mod), os.path.join(tmp, mod),
                        ignore=shutil.ignore_patterns("*.py", "*.md", "prompts"))
    check(run(tmp).returncode == 0, "the copy keeps to the graph before anything is planted")

    BANNED = '#include "base/banned.h"'

    def plant(rel, line, last=False):
        """line into rel: before its include of base/banned.h, where it has one and last is
        not asked for, else at its end; rel:N: of the planted line."""
        path = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = open(path).read() if os.path.exists(path) else ""
        lines = text.split("\n")
        if BANNED in lines and not last:
            at = lines.index(BANNED)
        else:
            lines.append("")
            at = len(lines)
        lines.insert(at, line)
        with open(path, "w") as f:
            f.write("\n".join(lines))
        return "%s:%d:" % (rel, at + 1)

    def unban(rel):
        path = os.path.join(tmp, rel)
        text = open(path).read()
        with open(path, "w") as f:
            f.write(text.replace(BANNED + "\n", ""))
        return "%s:" % rel

    want = {
        plant("llm/prompt.c", '#include "feedback/feedback.h"'): "llm uses feedback",
        plant("base/util.c", '#include "llm/llm.h"'): "base uses llm",
        plant("gpu_pool/pool.c", '#include "fsm/fsm.h"'): "gpu_pool uses fsm",
        plant("rundir/rundir.c", '#include "feedback/feedback.h"'): "rundir uses feedback",
        plant("fsm/worker.c", '#include "gpu_pool/gpu_pool_int.h"'): "an internal of gpu_pool",
        plant("orchestrator/cli.c", '#include "nowhere/x.h"'): "of no module",
        plant("llm/extract.c", "#include <stdio.h>", last=True): "the last include is <stdio.h>",
        unban("fsm/table.c"): "the last include is ",
        plant("gpu_pool/gpu_pool_int.h", BANNED): "a header includes base/banned.h",
    }
    plant("extra/thing.c", "int thing;")
    p = run(tmp)
    lines = p.stdout.splitlines()
    check(p.returncode == 1, "planted violations: exit 1 (%d)" % p.returncode)
    for where, what in want.items():
        check(any(l.startswith(where) and what in l for l in lines), "named: %s %s" % (where, what))
    check(any(l.startswith("extra/:") for l in lines), "named: a folder of C sources outside the graph")
    check(len(lines) == len(want) + 2, "nothing else named: %s" % lines)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("%s: %d failed" % ("FAIL" if failed else "ok", len(failed)))
sys.exit(1 if failed else 0)
