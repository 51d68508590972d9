#!/usr/bin/env python3
"""The command line as a script sees it: --help everywhere, usage errors, a bad config
refused with file:line:column before anything starts, a missing problems directory, an
unset API-key variable and a bad runner.python each refused with one line before the run
directory is created (so the same command then simply runs), --set recorded in the
frozen config, an existing run directory refused, and `kforge eval --json` on a real
kernel (correct, and wrong) with the documented keys; eval's exit statuses (0 correct, 1
wrong, 3 not compiled, 4 failed when run, 5 no Python with torch) and its --help, which
lists them with every runner status and the evaluation's defaults as the config and the
runner define them."""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

py = torch_python()
work = scratch("e2e-cli")
for cmd in ("run", "resume", "status", "tail", "report", "stop", "eval"):
    p = kforge(cmd, "--help")
    check(p.stdout.startswith("usage: kforge " + cmd), "%s --help: %r" % (cmd, p.stdout[:80]))
p = kforge("--help")
check(all(c in p.stdout for c in ("run", "resume", "status", "tail", "report", "stop", "eval")), "overview")

# --version says the version of CMake's project(), its one home; the manual page the build
# made (build/kforge.1) has a section per command --help lists, holding every line of that
# command's --help, and is what `kforge --man` writes now (not a stale copy).
version = re.search(r"^project\(kforge VERSION (\S+) ", open(os.path.join(HOME, "CMakeLists.txt")).read(), re.M)
check(version is not None, "CMakeLists.txt's project() names no VERSION")
p = kforge("--version")
check(p.stdout == "kforge %s\n" % version.group(1) and p.stderr == "", "--version: %r %r" % (p.stdout, p.stderr))
man_path = os.path.join(os.path.dirname(BIN), "kforge.1")
check(os.path.exists(man_path), "the build made no manual page %s" % man_path)
man = open(man_path).read()
check(man == kforge("--man").stdout, "%s differs from what 'kforge --man' writes" % man_path)
check('.TH KFORGE 1 "" "kforge %s"' % version.group(1) in man, "the manual page's version: %r" % man[:300])
listed = re.findall(r"^  kforge (\S+)", kforge("--help").stdout, re.M)
sections = re.findall(r"^\.SS (\S+)$", man, re.M)
check(len(listed) >= 10 and sections == listed, "--help lists %s, the manual page %s" % (listed, sections))
man_lines = set(man.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "").splitlines())
for cmd in listed:
    help_body = kforge(cmd, "--help").stdout.split("\n\n", 1)[1]
    missing = [l for l in help_body.splitlines() if l.strip() and l not in man_lines]
    check(not missing, "the manual page's %s lacks lines of its --help: %s" % (cmd, missing[:3]))
if shutil.which("groff"):
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", man_path], capture_output=True, text=True)
    check(p.returncode == 0 and p.stderr == "", "groff warns of the manual page: %r" % p.stderr[-2000:])
p = kforge("--man", "a", "b", check_rc=False)
check(p.returncode == 2 and "usage: kforge --man [FILE]" in p.stderr, "--man with two files: %r" % p.stderr)

p = kforge("frobnicate", check_rc=False)
check(p.returncode == 2 and "unknown command 'frobnicate'" in p.stderr, "unknown command")
p = kforge("status", check_rc=False)
check(p.returncode == 2 and "usage: kforge status" in p.stderr, "missing argument")
p = kforge("run", "x.yaml", "--bogus", check_rc=False)
check(p.returncode == 2 and "--bogus" in p.stderr, "unknown option")

problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py"])
bad = write_config(os.path.join(work, "bad.yaml"), "name: cli\nproblems: {dir: %s}\nllm:\n  provider: replay\n  replay_dir: .\n  temprature: 0.5\n" % problems)
run_dir = os.path.join(work, "run-bad")
p = kforge("run", bad, "--run-dir", run_dir, check_rc=False)
check(p.returncode == 2, "a bad config must exit 2")
check(re.fullmatch(r"kforge: .*bad\.yaml:6:3: llm\.temprature: unknown key \(did you mean 'temperature'\?\)\n", p.stderr),
      "one line naming file:line:column and the key, got %r" % p.stderr)
check(not os.path.exists(run_dir), "nothing may be created for a bad config")

# Everything that can fail is checked before the run directory is created.
replies = os.path.join(work, "replies", "L1_1_ReLU")
os.makedirs(replies)
for k in (1, 2):
    with open(os.path.join(replies, "%d.md" % k), "w") as f:
        f.write("No code this time.\n")
good = write_config(os.path.join(work, "good.yaml"), "name: cli\nproblems: {dir: %s}\nllm: {provider: replay, replay_dir: %s}\nrunner: {python: %s}\n"
                    % (problems, os.path.join(work, "replies"), py))
p = kforge("run", good, "--run-dir", run_dir, "--set", "problems.dir=%s/nowhere" % work, check_rc=False)
check(p.returncode == 2 and p.stderr == "kforge: --set problems.dir=%s/nowhere: problems.dir: cannot open '%s/nowhere': "
      "No such file or directory\n" % (work, work), "a missing problems directory, named where it was set: %r" % p.stderr)
check(not os.path.exists(run_dir), "a missing problems directory left %s behind" % run_dir)

mock_dir = os.path.join(work, "mock")
os.makedirs(mock_dir)
mock = MockLLM(mock_dir, {"rules": [], "default": {"content": "No code this time."}})
try:
    keyed = write_config(os.path.join(work, "keyed.yaml"),
                         "name: cli-key\nproblems: {dir: %s}\nllm: {provider: openai, base_url: \"%s\", model: mock-model, "
                         "api_key_env: KFORGE_CLI_TEST_KEY}\nrefinement: {turns: 1}\neval: {device: cpu}\nrunner: {python: %s}\n"
                         % (problems, mock.base_url, py))
    key_run = os.path.join(work, "run-key")
    check("KFORGE_CLI_TEST_KEY" not in os.environ, "the key variable must start unset")
    p = kforge("run", keyed, "--run-dir", key_run, check_rc=False)
    key_err = p.stderr
    check(p.returncode == 2 and re.fullmatch(r"kforge: llm\.api_key_env: environment variable KFORGE_CLI_TEST_KEY is not set[^\n]*\n",
                                             p.stderr), "an unset key: one line naming the variable, got %d %r" % (p.returncode, p.stderr))
    check(not os.path.exists(key_run), "an unset key left %s behind" % key_run)
    check(mock.requests() == [], "a run refused for its key asked the model")
    # the same command, with the key set: no "already holds a run"
    kforge("run", keyed, "--run-dir", key_run, env={"KFORGE_CLI_TEST_KEY": "sk-cli-test"})
    st = json.loads(kforge("status", key_run, "--json").stdout)
    check([(t["state"], t["turn"]) for t in st["tasks"]] == [("DONE", 1)], "the keyed run: %s" % st["tasks"])
    check(len(mock.requests()) == 1, "the keyed run made %d requests, want 1" % len(mock.requests()))
finally:
    mock.stop()

# kforge config: the frozen config a run would write, the same text as the run's own
key_env = {"KFORGE_CLI_TEST_KEY": "sk-cli-test"}
frozen = open(os.path.join(key_run, "config.yaml")).read()
p = kforge("config", keyed, env=key_env)
check(p.stdout == frozen, "kforge config differs from the run's config.yaml:\n%s\n---\n%s" % (p.stdout, frozen))
p = kforge("config", keyed, "--set", "refinement.turns=7", "--set", "eval.precision=bf16", env=key_env)
check("\n  turns: 7\n" in p.stdout and "\n  precision: bf16\n" in p.stdout and "\n  turns: 1\n" not in p.stdout,
      "--set applied to the printed config: %r" % p.stdout)
p = kforge("config", bad, check_rc=False)
check(p.returncode == 2 and re.fullmatch(r"kforge: .*bad\.yaml:6:3: llm\.temprature: unknown key \(did you mean 'temperature'\?\)\n", p.stderr)
      and p.stdout == "", "kforge config on a bad config: file:line:column, exit 2, got %d %r" % (p.returncode, p.stderr))
# ... and what run refuses before it starts, config refuses with the same line: an unset
# key variable, a problems directory that is not there (in the file: its line and column;
# by --set: the --set named), a runner.python that is no Python
p = kforge("config", keyed, check_rc=False)
check(p.returncode == 2 and p.stderr == key_err and p.stdout == "",
      "kforge config with the key unset: exit %d, %r; run said %r" % (p.returncode, p.stderr, key_err))
nowhere = write_config(os.path.join(work, "nowhere.yaml"), "name: cli\nproblems:\n  dir: %s/nowhere\n"
                       "llm: {provider: replay, replay_dir: %s}\nrunner: {python: %s}\n" % (work, work, py))
for args in ((nowhere,), (good, "--set", "problems.dir=%s/nowhere" % work),
             (good, "--set", "runner.python=/nonexistent/python3")):
    r = kforge("run", *args, "--run-dir", run_dir, check_rc=False)
    c = kforge("config", *args, check_rc=False)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and not os.path.exists(run_dir),
          "run %s: exit %d, %r" % (args, r.returncode, r.stderr))
    check(c.returncode == 2 and c.stderr == r.stderr and c.stdout == "",
          "config %s: exit %d, %r; run said %r" % (args, c.returncode, c.stderr, r.stderr))
check(re.fullmatch(r"kforge: .*nowhere\.yaml:3:8: problems\.dir: cannot open '%s/nowhere': No such file or directory\n"
                   % re.escape(work), kforge("config", nowhere, check_rc=False).stderr),
      "a missing problems directory in the file: file:line:column")
p = kforge("config", keyed, "--set", "eval.device=gpu", check_rc=False)
check(p.returncode == 2 and "--set eval.device=gpu: eval.device: expected one of" in p.stderr, "a bad --set: %r" % p.stderr)
p = kforge("config", check_rc=False)
check(p.returncode == 2 and "usage: kforge config" in p.stderr, "config without CONFIG")

# kforge config --reference: exactly the keys a frozen config has, each with a type, a
# default and one line of meaning
frozen_keys, sections = [], []	# the sections open, two spaces a level (llm.agent)
for line in frozen.splitlines():
    if line.startswith("#") or not line.strip():
        continue
    key = line.strip().split(":", 1)[0]
    depth = (len(line) - len(line.lstrip(" "))) // 2
    sections = sections[:depth]
    if line.rstrip().endswith(":"):
        sections.append(key)
    else:
        frozen_keys.append(".".join(sections + [key]))
ref = kforge("config", "--reference").stdout
blocks = {}
for block in ref.split("\n\n")[1:]:
    lines = block.strip("\n").split("\n")
    check(lines[0] and not lines[0].startswith(" ") and all(l.startswith("    ") for l in lines[1:]),
          "a reference block is a key and indented lines: %r" % block)
    blocks[lines[0]] = [l.strip() for l in lines[1:]]
check(list(blocks) == frozen_keys, "the reference's keys differ from the frozen config's:\n%s\n%s" % (list(blocks), frozen_keys))
for key, lines in blocks.items():
    fields = [l for l in lines if l.startswith(("type: ", "default: ", "required when: "))]
    meaning = [l for l in lines if l not in fields]
    check(lines[0].startswith("type: ") and len(lines[0]) > 6, "%s: no type" % key)
    check(lines[1].startswith("default: "), "%s: no default" % key)
    check(len(meaning) == 1 and len(meaning[0]) >= 10, "%s: wants one line of meaning, got %r" % (key, meaning))
check(blocks["eval.precision"][0] == "type: one of fp32 | fp16 | bf16" and blocks["eval.precision"][1] == "default: fp32",
      "eval.precision's entry: %r" % blocks["eval.precision"])
check(blocks["refinement.turns"][0] == "type: integer in 1..256", "bounds of refinement.turns: %r" % blocks["refinement.turns"])
check("required when: llm.provider is openai" in blocks["llm.model"], "llm.model's condition: %r" % blocks["llm.model"])
check(blocks["name"][1] == "default: none (required)", "name is required: %r" % blocks["name"])

# eval.backend triton: only on a GPU, and only where Triton imports (kforge doctor says which)
p = kforge("run", good, "--run-dir", run_dir, "--set", "eval.device=cpu", "--set", "eval.backend=triton", check_rc=False)
check(p.returncode == 2 and p.stderr == "kforge: eval.backend: triton runs only with eval.device cuda (the device is cpu)\n",
      "triton on the CPU: one line, exit 2, got %d %r" % (p.returncode, p.stderr))
check(not os.path.exists(run_dir), "a refused triton run left %s behind" % run_dir)
has_triton = subprocess.run([py, "-c", "import triton"], capture_output=True).returncode == 0
for backend in ("triton", "cuda"):
    doctor_config = write_config(os.path.join(work, "doctor-%s.yaml" % backend),
                                 open(good).read() + "eval: {backend: %s}\n" % backend)
    p = kforge("doctor", doctor_config, "--device", "cuda", "--json", check_rc=False)
    items = {i["item"]: i for i in json.loads(p.stdout)}
    t = items.get("triton")
    check(t is not None and t["ok"] == has_triton and t["required"] == (backend == "triton"),
          "doctor's triton line with backend %s: %s" % (backend, t))
    if t is not None and not has_triton:
        check("pip install triton" in (t.get("fix") or "") and "import" in t["detail"], "doctor's triton fix: %s" % t)

p = kforge("run", good, "--run-dir", run_dir, "--set", "runner.python=/nonexistent/python3", check_rc=False)
check(p.returncode == 2 and p.stderr.count("\n") == 1 and "runner.python=/nonexistent/python3: no executable Python there" in p.stderr,
      "a bad runner.python: one line naming it, got %d %r" % (p.returncode, p.stderr))
check(not os.path.exists(run_dir), "a bad runner.python left %s behind" % run_dir)

# --set is validated, applied and frozen; the run directory is never reused.
p = kforge("run", good, "--run-dir", run_dir, "--set", "eval.device=gpu", check_rc=False)
check(p.returncode == 2 and "--set eval.device=gpu: eval.device:" in p.stderr, "bad --set: %r" % p.stderr)
p = kforge("run", good, "--run-dir", run_dir, "--set", "refinement.turns=2", "--set", "eval.device=cpu")
check(re.search(r"\[task L1_1_ReLU_s0\] DONE after 2 turns: no correct kernel\n", p.stderr),
      "a task whose replies had no code: its DONE line %r" % [l for l in p.stderr.splitlines() if "DONE" in l])
frozen = open(os.path.join(run_dir, "config.yaml")).read()
check(re.search(r"turns: 2\b", frozen) and "device: cpu" in frozen, "--set not frozen")
check(all(t["state"] == "DONE" and t["turn"] == 2 for t in json.loads(kforge("status", run_dir, "--json").stdout)["tasks"]),
      "the replay run did not finish its two turns")
p = kforge("run", good, "--run-dir", run_dir, check_rc=False)
check(p.returncode == 2 and "already holds a run" in p.stderr, "an existing run directory must be refused")

# kforge eval: a correct C++ kernel and a wrong one.
def kernel_from(reply_name, path):
    text = open(os.path.join(REPLIES, reply_name)).read()
    code = text.split("```python\n", 1)[1].rsplit("```", 1)[0]
    with open(path, "w") as f:
        f.write(code)
    return path


prob = os.path.join(problems, "level1", "1_ReLU.py")
env = {"KFORGE_PYTHON": py}
for name, want_correct, want_status, want_rc in (("relu_3.md", True, "ok", 0),
                                                 ("relu_2.md", False, "value_mismatch", 1)):
    k = kernel_from(name, os.path.join(work, name + ".py"))
    p = kforge("eval", "--problem", prob, "--kernel", k, "--device", "cpu", "--json",
               "--set", "eval.perf_trials=5", env=env, timeout=900, check_rc=False)
    out = json.loads(p.stdout) if p.stdout.startswith("{") else {}
    # A speedup above 10x makes a correct kernel suspect (exit 6). Against a reference
    # timed on a loaded machine, a correct kernel can measure so: that alone is no error
    # of the exit statuses, which are under test here.
    timing_only = p.returncode == 6 and [r.get("rule") for r in out.get("reasons", [])] == \
        ["excessive_speedup"]
    check(p.returncode == want_rc or (want_rc == 0 and timing_only),
          "eval %s exited %d, want %d: %s %s" % (name, p.returncode, want_rc, p.stderr[-2000:],
                                                  p.stdout[:400]))
    for key in ("status", "correct", "flags", "runtime_ms", "ref_runtime_ms", "speedup"):
        check(key in out, "eval --json lacks %s" % key)
    check(out["status"] == want_status and out["correct"] is want_correct, "%s: %s" % (name, out["status"]))
    if want_correct:
        check(out["runtime_ms"] > 0 and out["ref_runtime_ms"] > 0 and
              abs(out["speedup"] - out["ref_runtime_ms"] / out["runtime_ms"]) < 1e-9, "eval timings")
    else:
        check(out["speedup"] is None, "a wrong kernel has no speedup")

# Failures without a C++ build: a module that does not load is a compile error (3), a
# forward that raises a runtime error (4), a Python without torch the environment (5).
# These plain-Python candidates build no kernel, which the static checks reject (exit 3,
# verdict rejected): they are off here, where the runner's statuses are under test.
data = os.path.join(HOME, "tests", "data", "feedback")
add = os.path.join(data, "problem_add.py")
NO_GATE = ("--set", "eval.static_checks=false")
p = kforge("eval", "--problem", add, "--kernel", os.path.join(data, "cand_raise.py"), "--device",
           "cpu", "--json", env=env, timeout=900, check_rc=False)
check(p.returncode == 3 and json.loads(p.stdout)["verdict"] == "rejected" and
      any(r["rule"] == "no_custom_kernel" for r in json.loads(p.stdout)["reasons"]),
      "eval of a candidate that builds no kernel, static checks on: exit %d, %r"
      % (p.returncode, p.stdout[-500:]))
# A syntax error is a failed build, not a broken rule: compile_error with the gate on.
for cand, want_status, want_rc, sets in (("cand_syntax_error.py", "compile_error", 3, ()),
                                         ("cand_raise.py", "runtime_error", 4, NO_GATE)):
    p = kforge("eval", "--problem", add, "--kernel", os.path.join(data, cand), "--device", "cpu",
               "--json", *sets, env=env, timeout=900, check_rc=False)
    check(p.returncode == want_rc and json.loads(p.stdout)["status"] == want_status,
          "eval %s: exit %d, %r; want %d, %s" % (cand, p.returncode, p.stdout[-500:], want_rc, want_status))
# A reference that fails by itself: the environment's error (5), as a run's turn has it,
# with the reference's own message; the candidate is never executed.
p = kforge("eval", "--problem", os.path.join(data, "problem_broken.py"), "--kernel",
           os.path.join(data, "cand_globals.py"), "--device", "cpu", "--json", *NO_GATE, env=env,
           timeout=900, check_rc=False)
out = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
check(p.returncode == 5 and out.get("status") == "env_error" and out.get("speedup") is None and
      "broken on purpose" in out.get("result", {}).get("details", {}).get("message", "") and
      out.get("steps", {}).get("execute") is None,
      "eval against a broken reference: exit %d, %r" % (p.returncode, p.stdout[-800:]))
no_torch = bare_python(work)
p = kforge("eval", "--problem", add, "--kernel", os.path.join(data, "cand_raise.py"), "--device", "cpu",
           *NO_GATE, env={"KFORGE_PYTHON": no_torch}, check_rc=False)
# Stopped by the environment check a run makes too (the selftest), before any step: the
# Python named, torch named, and the fix.
check(p.returncode == 5 and no_torch in p.stderr and "cannot import torch" in p.stderr and
      "kforge: environment error (torch): " in p.stderr and "; fix: install PyTorch" in p.stderr,
      "eval without torch: exit %d, %r %r" % (p.returncode, p.stdout[-1000:], p.stderr[-1000:]))
p = kforge("eval", "--problem", add, "--kernel", os.path.join(work, "missing.py"), check_rc=False)
check(p.returncode == 2 and "missing.py" in p.stderr, "eval of a missing file: exit %d, %r" % (p.returncode, p.stderr))

# eval --help: each exit status, every status the runner can report under one of them,
# and the defaults as orchestrator/config.c and the runner's TOLERANCE define them.
helptext = kforge("eval", "--help").stdout
rows = dict(re.findall(r"^  (\d)  .*\n     status: (.*)$", helptext, re.M))
check(sorted(rows) == ["0", "1", "3", "4", "5"] and re.search(r"^  2  usage error", helptext, re.M),
      "eval --help exit statuses:\n" + helptext)
listed = " ".join(rows.values()).split()
sys.path.insert(0, os.path.join(HOME, "feedback"))
import kforge_runner  # noqa: E402  (standard library at import time)
check(all(st in listed for st in kforge_runner.STATUSES) and "env_error" in rows["5"],
      "eval --help leaves out a runner status: %s vs %s" % (listed, kforge_runner.STATUSES))
check("compile_error" in rows["3"] and "value_mismatch" in rows["1"] and "timeout" in rows["4"],
      "eval --help maps statuses to the wrong exit codes:\n" + helptext)
tol_line = [l for l in helptext.splitlines() if "eval.atol and eval.rtol" in l]
check(len(tol_line) == 1 and all(re.search(r"\b%s %g\b" % (prec, v), tol_line[0]) for prec, v in
                                 kforge_runner.TOLERANCE.items()),
      "eval --help lacks the runner's tolerances %s:\n%s" % (kforge_runner.TOLERANCE, helptext))
# the defaults, as the frozen config of the run above has them (nothing set there but
# refinement.turns and eval.device)
eval_section = re.search(r"^eval:\n((?:  .*\n)*)", frozen, re.M).group(1)
for key in ("correctness_trials", "perf_trials", "warmup", "seed", "timeout_s", "compile_timeout_s", "precision"):
    m = re.search(r"^  %s: (\S+)$" % key, eval_section, re.M)
    check(m is not None, "the frozen config lacks eval.%s:\n%s" % (key, frozen))
    check(re.search(r"eval\.%s %s\b" % (key, re.escape(m.group(1))), helptext),
          "eval --help lacks eval.%s %s:\n%s" % (key, m.group(1), helptext))
print("ok: cli")
