"""kfe2e.py: shared pieces of the end-to-end tests — find the binary and a torch Python,
start the real mock LLM server on loopback, run kforge, and read a run directory back.

Standard library only; the tests run under any python3.
"""
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
HOME = os.environ.get("KFORGE_HOME", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
LOCAL_SLURM = os.path.join(HOME, "tools", "slurm", "local.sh")
BIN = os.environ.get("KFORGE_BIN", os.path.join(HOME, "build", "kforge"))
REPLIES = os.path.join(HOME, "tests", "data", "e2e", "replies")


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


# Whether a Python has torch installed, asked without importing it (10 ms, against 0.8 s
# of CPU an import costs on the 2-core machine, in each of 38 tests). A torch installed but
# broken is not skipped: kforge's selftest then fails the test, loudly.
HAS_TORCH = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"


# The ordinary user the tests that run kforge as one create (root only; useradd).
TEST_USER = "kforge-sbx-test"


def ordinary_user(py):
    """TEST_USER, created where missing, for a test run as root that runs kforge as an
    ordinary user too (runuser); None with a note where it cannot reach kforge, its tree,
    the tests' scratch or the Python py (a checkout under a 0700 /root)."""
    if subprocess.run(["id", TEST_USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        TEST_USER], check=True)
    blocked = [p for p in (BIN, os.path.join(HOME, "feedback", "kforge_runner.py"),
                           os.environ.get("KFORGE_TEST_TMP") or tempfile.gettempdir(), py)
               if subprocess.run(["runuser", "-u", TEST_USER, "--", "test", "-r", p],
                                 capture_output=True).returncode != 0]
    if blocked:
        print("note: the run as an ordinary user is left out: %s cannot reach %s" % (TEST_USER, blocked))
        return None
    return TEST_USER


def as_user(user):
    """(uid, gid, argv prefix) to run kforge as user; None: as this process."""
    if user is None:
        return os.getuid(), os.getgid(), []
    import pwd
    pw = pwd.getpwnam(user)
    return pw.pw_uid, pw.pw_gid, ["runuser", "-u", user, "--"]


def chown_tree(path, uid, gid):
    for d, dirs, files in os.walk(path):
        os.chown(d, uid, gid)
        for n in files:
            os.chown(os.path.join(d, n), uid, gid)


def torch_python():
    for py in [os.environ.get("KFORGE_PYTHON"), "/usr/bin/python3", "/usr/local/bin/python3",
               shutil.which("python3")]:
        if py and os.access(py, os.X_OK) and subprocess.run(
                [py, "-c", HAS_TORCH], capture_output=True).returncode == 0:
            return py
    print("SKIP: no Python with torch")
    sys.exit(SKIP)


def cuda_torch_python():
    """A Python whose torch sees a CUDA device; exits 77 (skip) on a machine without one."""
    if subprocess.run(["sh", "-c", "command -v nvidia-smi >/dev/null && nvidia-smi -L"],
                      capture_output=True).returncode != 0:
        print("SKIP: no NVIDIA GPU")
        sys.exit(SKIP)
    py = torch_python()
    if subprocess.run([py, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"]).returncode:
        print("SKIP: torch sees no CUDA device")
        sys.exit(SKIP)
    return py


def scratch(name):
    base = os.environ.get("KFORGE_TEST_TMP", tempfile.gettempdir())
    os.makedirs(base, exist_ok=True)
    d = tempfile.mkdtemp(prefix=name + "-", dir=base)
    # mkdtemp makes it 0700; run as root, kforge's runners run as runner.user (nobody),
    # which must reach the run dir and the problems inside.
    os.chmod(d, 0o755)
    return d


def bare_python(work):
    """A real Python that cannot import torch: a venv of the system Python, without its
    packages, under the scratch dir work."""
    venv = os.path.join(work, "bare-venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    check(subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0,
          "the bare venv %s imports torch; the test needs one that cannot" % venv)
    return py


def reply(name, fresh=False, **extra):
    """A recorded reply as the mock serves it. fresh: its C++ gets a comment unique to
    this test process, so that its build is made here, never found in the cache that runs
    share (a test that needs real compiles; feedback/cache.c)."""
    with open(os.path.join(REPLIES, name)) as f:
        content = f.read()
    if fresh:
        mark = "#include <torch/extension.h>"
        check(mark in content, "%s has no %s to mark" % (name, mark))
        content = content.replace(mark, "%s\n// kfe2e %d %.6f" % (mark, os.getpid(), time.time()), 1)
    r = {"content": content, "usage": {"prompt_tokens": 100, "completion_tokens": 50,
                                       "total_tokens": 150}}
    r.update(extra)
    return r


# How long a test waits for a helper process to come up: a bound on waiting for a
# condition, never a measurement, so it is generous for a loaded machine.
STARTUP_WAIT_S = 300


class MockLLM:
    """The real mock server (tests/llm/mock_llm_server.py) on 127.0.0.1, on a random port
    unless one is given (a server that comes up later where a run already points).
    refusing=True: the port is bound but refuses connections until listen() is called."""

    def __init__(self, workdir, script, port=0, refusing=False):
        self.dir = workdir
        self.log = os.path.join(workdir, "mock-requests.jsonl")
        port_file = os.path.join(workdir, "mock.port")
        script_path = os.path.join(workdir, "mock-script.json")
        self.listen_file = os.path.join(workdir, "mock.listen")
        with open(script_path, "w") as f:
            json.dump(script, f)
        if os.path.exists(port_file):   # a server restarted in the same directory
            os.unlink(port_file)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HOME, "tests", "llm", "mock_llm_server.py"), "--port", str(port),
             "--port-file", port_file, "--script", script_path, "--log", self.log,
             "--state-file", os.path.join(workdir, "mock-state.json")] +
            (["--listen-when", self.listen_file] if refusing else []),
            stdout=open(os.path.join(workdir, "mock.out"), "w"), stderr=subprocess.STDOUT)
        deadline = time.time() + STARTUP_WAIT_S
        while not os.path.exists(port_file):
            check(time.time() < deadline and self.proc.poll() is None, "mock server did not start")
            time.sleep(0.05)
        with open(port_file) as f:
            self.port = int(f.read().strip())
        self.base_url = "http://127.0.0.1:%d/v1" % self.port

    def listen(self):
        """A refusing server starts accepting connections (within its 20 ms poll)."""
        with open(self.listen_file, "w"):
            pass

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def copy_problems(dest, keys):
    """Copies bundled problems ("level1/1_ReLU.py", ...) into a fresh problems dir."""
    for key in keys:
        os.makedirs(os.path.join(dest, os.path.dirname(key)), exist_ok=True)
        shutil.copy(os.path.join(HOME, "problems", key), os.path.join(dest, key))
    return dest


# The ports of each user of a one-host Slurm (tools/slurm/local.sh): (first, how many
# pairs), so that tests run at once never share one (tools/bench/cluster: 31000-).
SLURM_PORTS = {"tools_slurm_local": (21000, 2000), "e2e_test_slurm": (25000, 2000),
               "e2e_test_slurm_time_limit": (29000, 1000)}


def local_slurm(work, gpus, user):
    """tools/slurm/local.sh started in work/slurm with gpus fake GPUs on user's ports:
    (slurm_env to stop it with, env with SLURM_CONF for its commands); exits the test with
    SKIP where Slurm cannot start here."""
    first, pairs = SLURM_PORTS[user]
    slurm_env = dict(os.environ, KFORGE_SLURM_DIR=os.path.join(work, "slurm"),
                     KFORGE_SLURM_GPUS=str(gpus),
                     KFORGE_SLURM_PORT=str(first + os.getpid() % pairs * 2))
    p = subprocess.run([LOCAL_SLURM, "start"], env=slurm_env, capture_output=True, text=True,
                       timeout=300)
    if p.returncode == SKIP:
        print("SKIP: " + p.stdout.strip())
        sys.exit(SKIP)
    check(p.returncode == 0, "local slurm did not start: %s %s" % (p.stdout, p.stderr))
    return slurm_env, dict(slurm_env, SLURM_CONF=os.path.join(work, "slurm", "etc", "slurm.conf"))


def local_slurm_stop(slurm_env):
    subprocess.run([LOCAL_SLURM, "stop"], env=slurm_env, capture_output=True, text=True,
                   timeout=300)


def write_config(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def kforge(*args, timeout=900, env=None, check_rc=True, prefix=()):
    """kforge args run to its end (prefix: before it, runuser's to run it as a user)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(list(prefix) + [BIN] + list(args), capture_output=True, text=True,
                       timeout=timeout, env=e)
    if check_rc and p.returncode != 0:
        fail("kforge %s exited %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(args), p.returncode,
                                                              p.stdout, p.stderr[-6000:]))
    return p


def records(run_dir, task):
    path = os.path.join(run_dir, "tasks", task, "trajectory.jsonl")
    with open(path) as f:
        data = f.read()
    check(data.endswith("\n"), "%s: the log ends in a torn line" % path)
    recs = [json.loads(line) for line in data.splitlines()]
    for i, r in enumerate(recs):
        check(r["seq"] == i + 1, "%s: seq %d at line %d (gap or duplicate)" % (path, r["seq"], i + 1))
        check(r["task"] == task, "%s: record for another task" % path)
    return recs


def check_artifacts(run_dir, task, recs):
    """Every artifact a record names exists and has the hash the record gives."""
    n = 0
    for r in recs:
        for key, v in r["data"].items():
            if isinstance(v, dict) and "path" in v and "sha256" in v:
                path = os.path.join(run_dir, "tasks", task, v["path"])
                check(os.path.exists(path), "%s seq %d: %s names missing %s" % (task, r["seq"], key, path))
                with open(path, "rb") as f:
                    check(hashlib.sha256(f.read()).hexdigest() == v["sha256"],
                          "%s seq %d: %s hash differs" % (task, r["seq"], path))
                n += 1
    return n


def feedback_records(recs):
    return [r for r in recs if r["from"] == "FEEDBACK"]


def check_pool_released(run_dir):
    """pool.json at the end of a run: no slot of any class held or waited for."""
    pool = json.load(open(os.path.join(run_dir, "pool.json")))
    for cls in ("exec", "compile", "llm"):
        if cls not in pool:
            continue
        check(pool[cls]["used"] == 0 and pool[cls]["waiting"] == 0,
              "pool.json %s at the end: %s" % (cls, {k: v for k, v in pool[cls].items() if k != "slots"}))
        check(all(s.get("owner", 0) == 0 for s in pool[cls].get("slots", [])),
              "pool.json: a %s slot is still owned" % cls)
    return pool


def reply_code(name):
    """The python block of a recorded model reply, tests/data/e2e/replies/<name>.md."""
    with open(os.path.join(HOME, "tests", "data", "e2e", "replies", name + ".md")) as f:
        return f.read().split("```python\n", 1)[1].split("```", 1)[0]


def processes_marked(marker, exclude=()):
    """Live processes (not zombies) whose command line, environment or working directory
    mentions marker, e.g. a scratch directory: what a test's candidates would have left."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in exclude or int(name) == os.getpid():
            continue
        base = os.path.join("/proc", name)
        try:
            with open(os.path.join(base, "stat"), "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue
            with open(os.path.join(base, "cmdline"), "rb") as f:
                text = f.read()
            try:
                with open(os.path.join(base, "environ"), "rb") as f:
                    text += b"\0" + f.read()
                text += b"\0" + os.readlink(os.path.join(base, "cwd")).encode()
            except OSError:
                pass
        except (OSError, IndexError):
            continue
        if marker.encode() in text:
            found.append((int(name), text.split(b"\0")[0].decode(errors="replace")))
    return found


def procs():
    """The host's processes as /proc shows them, each {pid, state, ppid, pgid, cwd, cmd
    (its argv joined by spaces), comm, uid}; one gone while read is left out."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
            rest = stat[stat.rindex(")") + 2:].split()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%s/comm" % d) as f:
                comm = f.read().strip()
            with open("/proc/%s/status" % d) as f:
                uid = int([ln for ln in f if ln.startswith("Uid:")][0].split()[1])
            try:
                cwd = os.readlink("/proc/%s/cwd" % d)
            except OSError:
                cwd = ""
        except (OSError, ValueError, IndexError):
            continue
        out.append({"pid": int(d), "state": rest[0], "ppid": int(rest[1]), "pgid": int(rest[2]),
                    "cwd": cwd, "cmd": cmd, "comm": comm, "uid": uid})
    return out


def alive(p):
    return p["state"] not in ("Z", "X")


def watched_for(p):
    """The worker (or eval) a watcher of a fork server is named for ("kfw-PID": each runner
    such a server forks is that watcher's child, not its worker's: feedback/warm.c), None
    for a process that is no watcher."""
    name = p["comm"]
    return int(name[4:]) if name.startswith("kfw-") and name[4:].isdigit() else None


def own_pid_namespace(pid):
    """Whether pid is in a PID namespace beneath this one (its NSpid names two pids): a
    runner of candidate code is, the judge never is (feedback/policy.c)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return any(line.startswith("NSpid:") and len(line.split()) > 2 for line in f)
    except OSError:
        return False


def last_to(run_dir, task):
    """The state task's last record went to (where it is now), None before its first."""
    try:
        with open(os.path.join(run_dir, "tasks", task, "trajectory.jsonl")) as f:
            lines = [line for line in f.read().split("\n") if line]
        return json.loads(lines[-1])["to"]
    except (OSError, ValueError, IndexError):
        return None


def supervisor_lives(run_dir):
    """Whether a supervisor holds the run, asked as kforge asks it (orch_run_supervisor_pid):
    by its lock, which it keeps until it exits, after supervisor.pid is gone."""
    try:
        fd = os.open(os.path.join(run_dir, "supervisor.lock"), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def wait_for(what, cond, run=None, timeout=2 * STARTUP_WAIT_S):
    """cond()'s first true value, looked for every 50 ms; fails when run (a Popen of kforge,
    or None) ends first, or after timeout seconds (a bound for a loaded machine)."""
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        check(run is None or run.poll() is None, "the run ended before " + what)
        check(time.time() < deadline, "timed out waiting for " + what)
        time.sleep(0.05)


def demo_check(run_dir, device):
    """tools/demo_check.py, the one judge of a demo run (tools/demo.sh uses it too): the
    finished process, whose stderr names every task whose turns differ from expected.json."""
    return subprocess.run([sys.executable, os.path.join(HOME, "tools", "demo_check.py"), run_dir, device],
                          capture_output=True, text=True, timeout=120)


# ---- a hand-built run directory (the report's and the viewer's unit tests)

def fake_run(path, name, tasks, turns, t0_ms=1_800_000_000_000, device="cpu"):
    """Writes a run directory as a run leaves it, without running anything: config.yaml,
    tasks.json and, per task, trajectory.jsonl and the artifacts its records name.
    tasks: [{"id", "level", "turns": [turn, ...], "fail": reason or None}], each turn
    {"outcome": FEEDBACK data or None (the turn is under way after GENERATE),
     "compiled": bool (False: PRECOMPILE goes to FEEDBACK), "files": {key: text},
     "tokens": (prompt, completion), "attempts": n, "leases": {stage: (wait, hold)}}.
    Lease times advance by 1 s per step from t0_ms; device is the config's eval.device.
    Returns the records per task."""
    os.makedirs(os.path.join(path, "tasks"), exist_ok=True)
    with open(os.path.join(path, "config.yaml"), "w") as f:
        f.write("name: %s\nproblems: {dir: %s, levels: [1, 2]}\n"
                "llm: {provider: replay, replay_dir: %s}\nrefinement: {turns: %d}\n"
                "eval: {device: %s}\n" % (name, os.path.join(HOME, "problems"),
                                          os.path.join(HOME, "configs", "demo_responses"), turns,
                                          device))
    manifest = [{"id": t["id"], "level": t["level"], "problem_id": 1,
                 "problem_key": "L%d_%s" % (t["level"], t["id"]), "problem_name": t["id"],
                 "problem_path": "/nonexistent/%s.py" % t["id"], "sample": 0} for t in tasks]
    with open(os.path.join(path, "tasks.json"), "w") as f:
        json.dump(manifest, f)
    clock = [t0_ms]
    out = {}
    for t in tasks:
        tdir = os.path.join(path, "tasks", t["id"])
        os.makedirs(tdir, exist_ok=True)
        recs = []

        def rec(turn, frm, event, to, data):
            recs.append({"seq": len(recs) + 1, "ts": "2026-01-01T00:%02d:%02d.000Z" % divmod(len(recs) % 3600, 60),
                         "task": t["id"], "turn": turn, "from": frm, "event": event, "to": to, "data": data})

        def lease(cls, spec):
            wait, hold = spec
            clock[0] += 1000
            return {"class": cls, "slot": 0, "wait_ms": wait, "acquired_ms": clock[0],
                    "released_ms": clock[0] + hold}

        def artifacts(k, keys, files):
            d = {}
            for key in keys:
                if key in files:
                    rel = "turns/%d/%s.txt" % (k, key)
                    os.makedirs(os.path.join(tdir, "turns", str(k)), exist_ok=True)
                    data = files[key].encode()
                    with open(os.path.join(tdir, rel), "wb") as f:
                        f.write(data)
                    d[key] = {"path": rel, "sha256": hashlib.sha256(data).hexdigest()}
            return d

        rec(1, "GENERATE", "start", "GENERATE", {"level": t["level"]})
        for k, turn in enumerate(t["turns"], 1):
            leases = turn.get("leases", {})
            files = turn.get("files", {})
            g = {"attempts": turn.get("attempts", 1), "prompt_tokens": turn.get("tokens", (0, 0))[0],
                 "completion_tokens": turn.get("tokens", (0, 0))[1]}
            for key in ("reasoning_tokens", "cost_usd"):    # priced runs, reasoning models
                if key in turn:
                    g[key] = turn[key]
            g.update(artifacts(k, ("prompt", "response", "kernel"), files))
            if "GENERATE" in leases:
                g["lease"] = lease("llm", leases["GENERATE"])
            if turn.get("outcome") is None:
                rec(k, "GENERATE", "ok", "PRECOMPILE", g)
                break
            rec(k, "GENERATE", "ok", "PRECOMPILE", g)
            p = artifacts(k, ("compile_log",), files)
            if "PRECOMPILE" in leases:
                p["lease"] = lease("compile", leases["PRECOMPILE"])
            if not turn.get("compiled", True):
                rec(k, "PRECOMPILE", "compile_error", "FEEDBACK", p)
            else:
                rec(k, "PRECOMPILE", "ok", "EXECUTE", p)
                e = artifacts(k, ("result",), files)
                if "EXECUTE" in leases:
                    e["lease"] = lease("exec", leases["EXECUTE"])
                rec(k, "EXECUTE", turn["outcome"].get("verdict", "ok"), "FEEDBACK", e)
            fb = dict(turn["outcome"])
            fb.update(artifacts(k, ("feedback",), files))
            last = k == turns
            rec(k, "FEEDBACK", "done" if last else "next_turn", "DONE" if last else "GENERATE", fb)
        if t.get("fail"):
            rec(recs[-1]["turn"], recs[-1]["to"], "fatal", "FAILED", {"reason": t["fail"]})
        with open(os.path.join(tdir, "trajectory.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        out[t["id"]] = recs
    return out


class Listener:
    """A TCP listener that counts the connections it accepts."""

    def __init__(self, addr):
        self.sock = socket.socket()
        self.sock.bind((addr, 0))
        self.sock.listen(16)
        self.addr, self.port = addr, self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            c.close()
