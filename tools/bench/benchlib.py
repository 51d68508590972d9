"""benchlib.py: shared pieces of the kforge benchmarks (tools/bench/duty, footprint).

Standard library only. The benchmarks build nothing: the kforge binary comes from --bin,
$KFORGE_BIN or build/kforge; the LLM is the project's own mock server
(tests/llm/mock_llm_server.py) on loopback.
"""
import atexit
import datetime
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HOME = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MOCK = os.path.join(HOME, "tests", "llm", "mock_llm_server.py")
# The demo's recorded replies: KernelBench's format under <device>/, the same trajectories
# in the raw build format (eval.format raw) under raw/<device>/.
RESPONSES = os.path.join(HOME, "configs", "demo_responses")


def demo_reply(fmt, device, key, turn):
    """The path of the demo's reply for problem key, turn, device, in format fmt
    ("load_inline" or "raw")."""
    root = os.path.join(RESPONSES, "raw") if fmt == "raw" else RESPONSES
    return os.path.join(root, device, key, "%d.md" % turn)


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def die(msg):
    print("bench: error: " + msg, file=sys.stderr, flush=True)
    sys.exit(2)


def find_bin(arg):
    b = arg or os.environ.get("KFORGE_BIN") or os.path.join(HOME, "build", "kforge")
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        die("no kforge binary at %s (build it, then pass --bin or set KFORGE_BIN)" % b)
    return os.path.abspath(b)


def torch_python(arg):
    cands = [arg] if arg else [os.environ.get("KFORGE_PYTHON"), "/usr/bin/python3",
                               "/usr/local/bin/python3", shutil.which("python3")]
    for py in cands:
        if py and os.access(py, os.X_OK) and subprocess.run(
                [py, "-c", "import torch"], capture_output=True).returncode == 0:
            return py
    die("no Python that imports torch (pass --python)")


def workdir(arg, name, keep=False):
    """The benchmark's work directory: arg, made where missing and kept, else a fresh
    temporary one, removed when the benchmark exits unless keep (its builds and caches
    are hundreds of MB: every run of repeat left 300 MB in /tmp)."""
    if arg:
        os.makedirs(arg, exist_ok=True)
        return os.path.abspath(arg)
    wd = tempfile.mkdtemp(prefix="kforge-bench-%s-" % name)
    # mkdtemp makes it 0700: runners that run as another user (runner.user, as root)
    # could not reach the cache or the candidates kept there, and kforge would fall back
    # to the machine's default cache (which a cold build must not find filled).
    os.chmod(wd, 0o755)
    if not keep:
        atexit.register(shutil.rmtree, wd, ignore_errors=True)
    return wd


def ts_ms(ts):
    """Trajectory timestamps: ISO 8601, UTC, milliseconds."""
    d = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
    return d.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000.0


class MockLLM:
    """tests/llm/mock_llm_server.py on 127.0.0.1, a random port, the given script."""

    def __init__(self, wd, script, log_requests=False):
        port_file = os.path.join(wd, "mock.port")
        script_path = os.path.join(wd, "mock-script.json")
        with open(script_path, "w") as f:
            json.dump(script, f)
        self.log = os.path.join(wd, "mock-requests.jsonl") if log_requests else None
        cmd = [sys.executable, MOCK, "--port", "0", "--port-file", port_file,
               "--script", script_path]
        if self.log:
            cmd += ["--log", self.log]
        self.proc = subprocess.Popen(cmd, stdout=open(os.path.join(wd, "mock.out"), "w"),
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while not os.path.exists(port_file):
            if time.time() > deadline or self.proc.poll() is not None:
                die("the mock LLM server did not start (see %s/mock.out)" % wd)
            time.sleep(0.05)
        with open(port_file) as f:
            self.port = int(f.read().strip())
        self.base_url = "http://127.0.0.1:%d/v1" % self.port

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# The run directory's layout, read from outside: rundir/rundir.h is its home in kforge;
# the benchmarks derive a task's or a turn's folder here and nowhere else.
def tasks_dir(run_dir):
    return os.path.join(run_dir, "tasks")


def task_dir(run_dir, task):
    return os.path.join(tasks_dir(run_dir), task)


def trajectory_path(run_dir, task):
    return os.path.join(task_dir(run_dir, task), "trajectory.jsonl")


def turns_dir(run_dir, task):
    return os.path.join(task_dir(run_dir, task), "turns")


def turn_dir(run_dir, task, turn):
    return os.path.join(turns_dir(run_dir, task), str(turn))


def trajectories(run_dir):
    """{task id: [records]} from every tasks/<id>/trajectory.jsonl (torn tails dropped)."""
    out = {}
    tdir = tasks_dir(run_dir)
    for task in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
        path = trajectory_path(run_dir, task)
        if not os.path.exists(path):
            continue
        recs = []
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    recs.append(json.loads(line))
        out[task] = recs
    return out


def stage_intervals(trajs, stage):
    """[(start_ms, end_ms)] of every visit to STAGE: from the record that entered it to
    the record that left it. A visit includes waiting for the stage's slot."""
    iv = []
    for recs in trajs.values():
        for prev, cur in zip(recs, recs[1:]):
            if prev["to"] == stage and cur["from"] == stage:
                iv.append((ts_ms(prev["ts"]), ts_ms(cur["ts"])))
    return iv


def capped_occupancy(intervals, slots, t0, t1):
    """Integral over [t0, t1] of min(visits open at t, slots), in ms: the slot-time the
    stage could have used. An upper bound on busy slot-time (a visit that waits for a
    slot while one is free would count), exact when no visit waits with a slot free."""
    ev = []
    for a, b in intervals:
        a, b = max(a, t0), min(b, t1)
        if b > a:
            ev.append((a, 1))
            ev.append((b, -1))
    ev.sort()
    total, n, last = 0.0, 0, t0
    for t, d in ev:
        total += min(n, slots) * (t - last)
        n += d
        last = t
    return total


def proc_cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def ancestors():
    """This process and the ones above it (the shell that started the benchmark may name
    the work dir or the binary on its command line: it is not a leftover)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def leftover_processes(markers):
    """Command lines of live processes that mention any of MARKERS (run dir, config)."""
    left, mine = [], ancestors()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in mine:
            continue
        cmd = proc_cmdline(pid)
        if not cmd:
            continue
        text = b" ".join(cmd).decode(errors="replace")
        if any(m in text for m in markers):
            left.append("%s: %s" % (pid, text[:200]))
    return left


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def host_line(loads):
    """The machine in one line: cores, memory, mean 1-minute load during the run."""
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // 1024 // 1024
    except (OSError, ValueError, IndexError):
        pass
    return "host: %d cores, %d GiB; 1-min load during the run: mean %.2f, max %.2f" % (
        os.cpu_count() or 0, mem, sum(loads) / len(loads) if loads else float("nan"),
        max(loads) if loads else float("nan"))


class Verdict:
    """A benchmark's verdict, computed here alone. ok: the run did what it should (no
    problem found: kforge exited 0, every task done, nothing left behind). goal_met: ok,
    and every goal holds; a figure measured on a failed run proves nothing, so a failed
    run never meets a goal. exit_code: 0 only when both hold."""

    def __init__(self, problems, goals=()):
        self.problems = list(problems)
        self.ok = not self.problems
        self.goal_met = self.ok and all(met for met in goals)
        self.exit_code = 0 if self.ok and self.goal_met else 1


def median(v):
    v = sorted(v)
    if not v:
        return float("nan")
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0


DONE_LINE = re.compile(r"\[task (\S+)\] DONE after")


def read_records(run_dir, task):
    """The task's trajectory records and what is wrong with the log itself."""
    recs, flaw = [], None
    try:
        with open(trajectory_path(run_dir, task)) as f:
            data = f.read()
    except OSError:
        return [], "no trajectory"
    if data and not data.endswith("\n"):
        flaw = "torn last line"
    for n, line in enumerate(data.splitlines(), 1):
        try:
            rec = json.loads(line)
        except ValueError:
            flaw = flaw or "line %d is not JSON" % n
            continue
        if rec.get("seq") != n:
            flaw = flaw or "seq %s at line %d" % (rec.get("seq"), n)
        recs.append(rec)
    return recs, flaw


def judge_shards(run_dir):
    """What a Slurm run's directory says (tools/bench/cluster, scale): the tasks each shard
    finished ("[task ...] DONE" in shards/<id>/supervisor.log) and holds (claims/), the
    tasks lost (their log does not end in DONE), duplicated (finished by two shards,
    started twice) or whose log is flawed, and the LLM requests beyond one per turn (the
    attempts of the GENERATE records that leave the state, one per reply received)."""
    tasks = [t["id"] for t in read_json(os.path.join(run_dir, "tasks.json")) or []]
    shards_dir = os.path.join(run_dir, "shards")
    shard_ids = sorted(d for d in os.listdir(shards_dir)
                       if os.path.isdir(os.path.join(shards_dir, d))) if os.path.isdir(shards_dir) else []
    finished_by = {}
    for sid in shard_ids:
        try:
            with open(os.path.join(shards_dir, sid, "supervisor.log"), errors="replace") as f:
                for line in f:
                    m = DONE_LINE.search(line)
                    if m:
                        finished_by.setdefault(m.group(1), []).append(sid)
        except OSError:
            pass
    owners = {}
    cdir = os.path.join(run_dir, "claims")
    for name in os.listdir(cdir) if os.path.isdir(cdir) else []:
        c = read_json(os.path.join(cdir, name))
        if isinstance(c, dict) and c.get("shard"):
            owners[name] = c["shard"]
    lost, dup, repeated, flaws = [], [], [], []
    requests = turns = 0
    first = last = None
    for t in tasks:
        recs, flaw = read_records(run_dir, t)
        if flaw:
            flaws.append("%s: %s" % (t, flaw))
        if not recs or recs[-1].get("to") != "DONE":
            lost.append(t)
        if len(finished_by.get(t, [])) > 1:
            dup.append("%s finished by %s" % (t, ",".join(finished_by[t])))
        starts = sum(1 for r in recs if r.get("event") == "start" and r.get("turn") == 1)
        if starts > 1:
            dup.append("%s started %d times" % (t, starts))
        per_turn = {}
        for r in recs:
            if first is None or r["ts"] < first:
                first = r["ts"]
            if last is None or r["ts"] > last:
                last = r["ts"]
            if r.get("from") == "GENERATE" and r.get("event") != "start":
                a = r.get("data", {}).get("attempts", 1)
                per_turn[r["turn"]] = per_turn.get(r["turn"], 0) + (a if isinstance(a, int) else 1)
        done_turns = sum(1 for r in recs if r.get("from") == "FEEDBACK")
        turns += done_turns
        requests += sum(per_turn.values())
        for turn, n in sorted(per_turn.items()):
            if n > 1:
                repeated.append("%s turn %d: %d requests" % (t, turn, n))
    per_shard = {sid: {"finished": 0, "claimed": 0} for sid in shard_ids}
    for t, by in finished_by.items():
        for sid in by:
            per_shard[sid]["finished"] += 1
    for t, sid in owners.items():
        per_shard.setdefault(sid, {"finished": 0, "claimed": 0})["claimed"] += 1
    span = (ts_ms(last) - ts_ms(first)) / 1000.0 if first and last else float("nan")
    return {"tasks": len(tasks), "per_shard": per_shard, "lost": lost, "dup": dup,
            "repeated": repeated, "flaws": flaws, "requests": requests, "turns": turns,
            "span": span}
