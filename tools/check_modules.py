#!/usr/bin/env python3
"""The module graph of docs/DESIGN.md §8, held to the C sources' include lines.

Each folder is a module with one public header; a module may use only the modules the
graph gives it, and of those only their public headers (internals stay inside their own
folder). The graph is the table below, its one home: base is a leaf, rundir (the run
directory's layout) uses only base, the pool hands out slots and steers nothing, llm knows
nothing of evaluation, kprof (the CUPTI library the runner loads) uses nothing and nothing
uses it, fsm uses feedback, llm and gpu_pool, report reads a run directory knowing nothing
of the pool, the model or evaluation (base and rundir alone), the orchestrator may use
every other module; whoever writes or reads a run directory (llm's replay reads an earlier
run's) asks rundir for its paths and the words its logs are written in. A folder of C
sources that the table
does not name is an error too, so that a new module is placed in the graph.

base/banned.h (the C library's functions kforge does not call, as macros that make a call
a compile error) is the one header every module may include, and every .c file of a
module includes it as its last include, after every system and library header, whose
declarations its macros would otherwise break; for that reason no header includes it.

Usage: tools/check_modules.py [ROOT]   (default: the tree this script is in)
Prints one line per violation, file:line: what and why, and exits 1; 0 when none."""
import os
import re
import sys

# module: (its public header, the modules it may use)
GRAPH = {
    "base": ("base/base.h", set()),
    "sandbox": ("sandbox/sandbox.h", set()),
    "rundir": ("rundir/rundir.h", {"base"}),
    "gpu_pool": ("gpu_pool/gpu_pool.h", {"base"}),
    "llm": ("llm/llm.h", {"base", "rundir"}),
    "kprof": ("kprof/kprof.h", set()),
    "feedback": ("feedback/feedback.h", {"base", "rundir", "sandbox"}),
    "fsm": ("fsm/fsm.h", {"base", "rundir", "feedback", "llm", "gpu_pool"}),
    "report": ("report/report.h", {"base", "rundir"}),
    "orchestrator": ("orchestrator/orchestrator.h",
                     {"base", "sandbox", "rundir", "gpu_pool", "llm", "feedback", "fsm",
                      "report"}),
}
# Folders with C sources that are not modules of kforge itself.
NOT_MODULES = {"tests", "tools", "build", ".devdeps", ".git"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/([^"]+)"')
ANY_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"][^>"]*[>"])')
BANNED = "base/banned.h"


def c_files(root, top):
    for d, dirs, files in os.walk(os.path.join(root, top)):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(d, f)


def check(root):
    problems = []
    for top in sorted(os.listdir(root)):
        path = os.path.join(root, top)
        if not os.path.isdir(path) or top in NOT_MODULES or top.startswith(("build", ".")):
            continue
        files = list(c_files(root, top))
        if not files:
            continue
        if top not in GRAPH:
            problems.append("%s/: C sources in a folder that is not a module of the graph "
                            "(tools/check_modules.py GRAPH, docs/DESIGN.md §8)" % top)
            continue
        allowed = GRAPH[top][1]
        for f in files:
            rel = os.path.relpath(f, root)
            last = None
            with open(f, errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = ANY_INCLUDE.match(line)
                    if m:
                        last = (n, m.group(1))
                    m = INCLUDE.match(line)
                    if m and "%s/%s" % m.groups() == BANNED and rel.endswith(".h") \
                            and rel != BANNED:
                        problems.append("%s:%d: a header includes %s, which only a .c file "
                                        "may, as its last include" % (rel, n, BANNED))
                    if not m or m.group(1) == top or "%s/%s" % m.groups() == BANNED:
                        continue
                    mod, header = m.group(1), "%s/%s" % m.groups()
                    if mod not in GRAPH:
                        problems.append("%s:%d: includes %s, of no module" % (rel, n, header))
                    elif mod not in allowed:
                        problems.append("%s:%d: %s uses %s (%s), which the graph does not "
                                        "allow: %s may use %s" % (
                                            rel, n, top, mod, header, top,
                                            ", ".join(sorted(allowed)) or "nothing"))
                    elif header != GRAPH[mod][0]:
                        problems.append("%s:%d: includes %s, an internal of %s (its public "
                                        "header is %s)" % (rel, n, header, mod, GRAPH[mod][0]))
            if rel.endswith(".c") and (last is None or last[1] != '"%s"' % BANNED):
                problems.append("%s:%d: the last include is %s, not %s (the banned functions' "
                                "macros, after every other header)" % (
                                    rel, last[0] if last else 1,
                                    last[1] if last else "none", BANNED))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("check_modules: %d violation(s) of the module graph" % len(problems))
        return 1
    print("check_modules: %d modules, every include within the graph, every .c file's "
          "last include %s" % (len(GRAPH), BANNED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
