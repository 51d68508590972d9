"""faultmatrix.py: the shared half of test_faults.py (CPU) and test_faults_gpu.py (CUDA).

One `kforge run` with one task per fault and two turns each: turn 1 is a fault candidate
from tests/data/faults/, turn 2 a correct kernel. Each task's problem is problem_add.py
with a marker line, so the mock server can tell the tasks apart. check() verifies, per
task, the turn-1 status, flags and feedback text, that this feedback is in the turn-2
prompt the mock server received, that turn 2 ran correct and the task is DONE; then that
no process the run started is alive, the pool holds nothing, and the run's files are
intact.
"""
import json
import os
import time

from kfe2e import (HOME, STARTUP_WAIT_S, MockLLM, check, check_artifacts, check_pool_released, feedback_records,
                   kforge, processes_marked, records, scratch, write_config)

FAULTS = os.path.join(HOME, "tests", "data", "faults")
PROBLEM = os.path.join(HOME, "tests", "data", "feedback", "problem_add.py")
G, P, E, F = "GENERATE", "PRECOMPILE", "EXECUTE", "FEEDBACK"


def fenced(candidate):
    with open(os.path.join(FAULTS, candidate)) as f:
        return {"content": "Here is the kernel.\n```python\n%s```\n" % f.read(),
                "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}


class FaultRun:
    """matrix: [(name, candidate, turn-1 status or tuple of statuses, [flags], [texts])]."""

    def __init__(self, label, matrix, good, config_body, timeout):
        only = os.environ.get("KFORGE_FAULTS_ONLY")
        if only:  # debugging: a subset, by name
            matrix = [m for m in matrix if m[0] in only.split(",")]
        self.matrix = matrix
        self.tasks = {}
        if not matrix:  # nothing selected: no run
            return
        self.work = scratch(label)
        problems = os.path.join(self.work, "problems", "level1")
        os.makedirs(problems)
        with open(PROBLEM) as f:
            src = f.read()
        rules = []
        for i, (name, cand, status, flags, texts) in enumerate(matrix, 1):
            marker = "[fault task %s]" % name
            with open(os.path.join(problems, "%d_%s.py" % (i, name)), "w") as f:
                f.write("# %s\n%s" % (marker, src))
            rules.append({"match": marker, "replies": [fenced(cand), fenced(good)]})
            self.tasks["L1_%d_%s_s0" % (i, name)] = (name, cand, status, flags, texts)
        self.mock = MockLLM(self.work, {"rules": rules,
                                        "default": {"status": 500, "content": "unexpected prompt"}})
        config = write_config(os.path.join(self.work, "faults.yaml"), """
name: %s
problems: {dir: %s, levels: [1], samples: 1}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: KFORGE_FAULTS_KEY,
      retries: 2, concurrency: 4, timeout_s: 60}
refinement: {turns: 2, feedback: [G, E]}
workers: %d
%s""" % (label, os.path.dirname(problems), self.mock.base_url, len(matrix), config_body))
        self.run_dir = os.path.join(self.work, "run")
        t0 = time.time()
        try:
            kforge("run", config, "--run-dir", self.run_dir, env={"KFORGE_FAULTS_KEY": "sk-faults"},
                   timeout=timeout)
        finally:
            self.mock.stop()
        self.wall = time.time() - t0

    def task_of(self, name):
        return [t for t, v in self.tasks.items() if v[0] == name][0]

    def turn_file(self, task, turn, name):
        path = os.path.join(self.run_dir, "tasks", task, "turns", str(turn), name)
        check(os.path.exists(path), "%s turn %d has no %s" % (task, turn, name))
        with open(path) as f:
            return f.read()

    def result(self, name, turn=1):
        return json.loads(self.turn_file(self.task_of(name), turn, "result.json"))

    def check_tasks(self):
        reqs = self.mock.requests()
        sent = [r["body"]["messages"][-1]["content"] for r in reqs]
        check(len(reqs) == 2 * len(self.tasks),
              "the mock server saw %d requests, want %d" % (len(reqs), 2 * len(self.tasks)))
        for task, (name, cand, status, flags, texts) in self.tasks.items():
            statuses = status if isinstance(status, tuple) else (status,)
            recs = records(self.run_dir, task)
            check_artifacts(self.run_dir, task, recs)
            got = [(r["turn"], r["from"], r["event"], r["to"]) for r in recs]
            fb = feedback_records(recs)
            got_status = fb[0]["data"]["status"] if fb else None
            turn1 = "correct" if got_status == "ok" else "timeout" if got_status == "timeout" else "incorrect"
            want = [(1, G, "start", G), (1, G, "ok", P), (1, P, "ok", E), (1, E, turn1, F),
                    (1, F, "next_turn", G), (2, G, "ok", P), (2, P, "ok", E), (2, E, "correct", F),
                    (2, F, "budget_spent", "DONE")]
            check(got == want, "%s transitions:\n got  %s\n want %s" % (task, got, want))
            got_statuses = [r["data"]["status"] for r in fb]
            check(got_statuses[0] in statuses and got_statuses[1] == "ok",
                  "%s: turn statuses %s, want [%s, ok]" % (task, got_statuses, "|".join(statuses)))
            result = json.loads(self.turn_file(task, 1, "result.json"))
            for flag in flags:
                check(flag in result.get("flags", []),
                      "%s: turn-1 result lacks flag %s: %s" % (task, flag, result.get("flags")))
            feedback = self.turn_file(task, 1, "feedback.md")
            for text in texts:
                check(text in feedback, "%s: turn-1 feedback lacks %r:\n%s" % (task, text, feedback[:2000]))
            prompt2 = self.turn_file(task, 2, "prompt.md")
            check(sent.count(prompt2) == 1, "%s: the saved turn-2 prompt is not what the model was sent" % task)
            check(feedback.strip() in prompt2, "%s: the turn-2 prompt lacks the turn-1 feedback" % task)
            check(json.loads(self.turn_file(task, 2, "result.json"))["correct"] is True,
                  "%s: turn 2 is not correct" % task)

    def check_no_survivors(self, pid_files=()):
        """pid_files: [(name, file prefix)] the candidates write in their work dir."""
        pids = []
        for task, (name, *_rest) in self.tasks.items():
            wdir = os.path.join(self.run_dir, "tasks", task, "work")
            for f in sorted(os.listdir(wdir)) if os.path.isdir(wdir) else []:
                if f.endswith(".pid"):
                    with open(os.path.join(wdir, f)) as fp:
                        pids.append((name, f, int(fp.read())))
        got = sorted((n, f.split("-")[0].split(".")[0]) for n, f, _ in pids)
        want = sorted((n, p) for n, p in pid_files if n in [v[0] for v in self.tasks.values()])
        check(got == want, "pid files written by the candidates: %s, want %s" % (got, want))
        # kforge killed them before it exited; a SIGKILLed process may still need the
        # CPU to exit on a loaded machine, so wait for that, with a generous bound (one
        # that sleeps forever is still caught).
        deadline = time.time() + STARTUP_WAIT_S
        while True:
            left = processes_marked(self.work, exclude=(self.mock.proc.pid,))
            alive = [(n, pid) for n, _, pid in pids if pid in {p for p, _ in left}]
            if not left or time.time() > deadline:
                break
            time.sleep(0.2)
        check(not alive, "candidate processes survived the run: %s" % alive)
        check(not left, "processes of this test's run are still alive: %s" % left)

    def check_run_intact(self):
        check_pool_released(self.run_dir)
        st = json.loads(kforge("status", self.run_dir, "--json").stdout)
        check(sorted(t["id"] for t in st["tasks"]) == sorted(self.tasks), "status lists other tasks")
        for t in st["tasks"]:
            check(t["state"] == "DONE" and t["turn"] == 2,
                  "status: %s is %s turn %s" % (t["id"], t["state"], t["turn"]))
        for f in ("config.yaml", "run.json", "supervisor.log"):
            check(os.path.exists(os.path.join(self.run_dir, f)), "the run lost its %s" % f)
        with open(os.path.join(self.run_dir, "supervisor.log")) as f:
            slog = f.read()
        check("restarting it" not in slog, "a worker died during the fault run:\n%s" % slog[-3000:])
        return st
