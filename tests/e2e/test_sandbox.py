#!/usr/bin/env python3
"""The runners' sandbox (sandbox/, feedback/contain.c), end to end on the CPU, with no
user switch to lean on: a hostile candidate, served by the mock model through the real
supervisor, worker and runner, tries every escape of a candidate that runs as the user
who started kforge (the usual case on a cluster), and each must be refused with nothing
changed. Run twice where the host allows: as root with runner.user '' (the sandbox alone,
no nobody), and as an ordinary user this test creates (useradd; runuser). Not root: the
one run is already an ordinary user's.

The candidate tries, from its module's top level (so in the precompile and the execute):
  - writes: the run's run.json, supervisor.log and its own trajectory; a baseline of the
    shared cache (a decoy the test puts there), a new build directory there; a file in
    /tmp and one at the top of the run directory; and reads of run.json and the decoy;
  - /proc/<pid>/environ of every process it can see, looking for a secret the test puts
    in kforge's own environment (the allow-list keeps it from the runner's);
  - ptrace(PTRACE_ATTACH) of its parent and of a victim process of the same user;
  - SIGKILL to its parent and to that victim;
  - a TCP connect to a listener of the test on 127.0.0.1;
  - a runner of its own from the fork server a `kforge eval` before the run left in the
    cache (its socket's path given), and from the run's own server (its socket's name
    found by trying the pids the supervisor's may have): connected, it asks for a fork,
    which would be a process under no sandbox that runs the request it is handed;
  - what it sees of the host's processes (its pid, its parent's, /proc), and a daemon
    (setsid, then a grandchild) left behind.
It writes what each attempt met to its scratch directory (the one place it may write),
and then behaves, so the turn is judged. The test checks each refusal from the outside:
files unchanged, no new file, the secret nowhere in the run, the victim alive, the
listener untouched, the run finished; the candidate was pid 2 of a PID namespace of its own
whose /proc showed it and its init alone, and its daemon was counted (stray_processes), no
process of the test's user left alive by it; and run.json says the sandbox was strict and
whole.
First, a layer the host lacks (KFORGE_SANDBOX_DENY, as a kernel without it): strict refuses
the run before making anything, best_effort runs and records what is missing. Skips (77)
where the kernel has no Landlock with scoping or no seccomp."""
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

ROOT = os.geteuid() == 0
py = torch_python()
probe = subprocess.run([BIN, "doctor", "--json"], capture_output=True, text=True)
try:
    items = {i.get("item"): i for i in json.loads(probe.stdout)}
except ValueError:
    fail("kforge doctor --json printed no JSON: %s" % probe.stdout[-500:])
sbx = items.get("sandbox")
check(sbx is not None, "kforge doctor has no sandbox line")
if not sbx.get("ok"):
    print("SKIP: this host lacks a sandbox layer: %s" % sbx.get("detail"))
    sys.exit(SKIP)


HOSTILE = r'''import torch
import torch.nn as nn


def _attack():
    import array, ctypes, errno, json, os, signal, socket
    def err(e):
        return errno.errorcode.get(e.errno, str(e))
    rep = {"pid": os.getpid(), "ppid": os.getppid(), "uid": os.getuid(), "write": {},
           "read": {}, "ptrace": {}, "kill": {}, "environ_readable": [], "secret_found": False,
           "server": {}, "proc": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
    for t in WRITE_TARGETS:
        try:
            if t.endswith("/"):
                os.mkdir(t + "evil-%d" % os.getpid())
            else:
                with open(t, "a") as f:
                    f.write("tam" "pered\n")  # the word the test looks for, not in this text
            rep["write"][t] = "written"
        except OSError as e:
            rep["write"][t] = err(e)
    for t in READ_TARGETS:
        try:
            with open(t) as f:
                f.read()
            rep["read"][t] = "read"
        except OSError as e:
            rep["read"][t] = err(e)
    mine = {os.getpid()}
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) in mine:
            continue
        try:
            with open("/proc/%s/environ" % p, "rb") as f:
                data = f.read()
            rep["environ_readable"].append(int(p))
            for var in data.split(b"\0"):
                if var.startswith(b"KFORGE_SBX_SECRET="):
                    rep["secret_found"] = var.split(b"=", 1)[1].decode()
        except OSError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    for name, pid in (("parent", os.getppid()), ("victim", VICTIM)):
        if libc.ptrace(16, pid, None, None) == 0:   # PTRACE_ATTACH
            rep["ptrace"][name] = "attached"
            libc.ptrace(17, pid, None, None)        # PTRACE_DETACH
        else:
            rep["ptrace"][name] = errno.errorcode.get(ctypes.get_errno(), "?")
    for name, pid in (("victim", VICTIM), ("parent", os.getppid())):
        try:
            os.kill(pid, signal.SIGKILL)
            rep["kill"][name] = "killed"
        except OSError as e:
            rep["kill"][name] = err(e)
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
        rep["connect"] = "connected"
    except OSError as e:
        rep["connect"] = err(e)
    def ask(path):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(20)
            if len(path) < 108:
                s.connect(path)
            else:   # the way kforge reaches a socket under a deep directory
                d = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY)
                s.connect("/proc/self/fd/%d/%s" % (d, os.path.basename(path)))
            r0, w0 = os.pipe()
            r1, w1 = os.pipe()
            msg = json.dumps({"parent": 0, "idle": False, "visible": None}).encode()
            s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r0, w1, w1]))])
            os.close(w0)
            answer = s.recv(64).strip()
            rep["server"][path] = "forked " + answer.decode() if answer.isdigit() and int(answer) > 0 \
                else "refused %r" % answer
        except OSError as e:
            rep["server"][path] = err(e)
    for path in SERVERS:
        ask(path)
    # The run's own server: servers/run-HOST-PID.sock, PID its supervisor's, which is
    # found by trying the pids from where the test says the run began.
    try:
        d = os.open(SERVERS_DIR, os.O_PATH | os.O_DIRECTORY)
        host = socket.gethostname().replace("/", "_")
        for k in range(20000):
            name = "run-%s-%d.sock" % (host, (PID_FROM + k) % PID_MAX)
            try:
                os.stat(name, dir_fd=d)
            except FileNotFoundError:
                continue
            ask(os.path.join(SERVERS_DIR, name))
            break
    except OSError as e:
        rep["server"]["run"] = err(e)
    with open("hostile-%s.json" % os.urandom(6).hex(), "w") as f:   # pid 2 in each step
        json.dump(rep, f)
    # A daemon left behind: it must end with the runner's namespace, and be counted.
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                os.execvp("sleep", ["sleep", "DAEMON_S"])
            finally:
                os._exit(0)
        os._exit(0)


_attack()


class ModelNew(nn.Module):
    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)
'''


def read_cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def tree_digest(root):
    """Every file under root and its content's hash: what 'nothing changed' compares."""
    out = {}
    for d, _, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            try:
                with open(p, "rb") as f:
                    out[p] = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                pass
    return out


def attempt(label, user):
    uid, gid, prefix = as_user(user)
    work = scratch("e2e-sandbox-" + label)
    problems = copy_problems(os.path.join(work, "problems"), ["level1/2_LeakyReLU.py"])
    run_dir = os.path.join(work, "run")
    # Deep enough that its sockets' paths overflow sun_path (108 bytes), as under CI's checkout.
    cache = os.path.join(work, "cache-" + "d" * max(0, 120 - len(work) - 50))
    decoy = os.path.join(cache, "baselines", "decoy.json")
    os.makedirs(os.path.dirname(decoy))
    os.makedirs(os.path.join(cache, "builds"))
    with open(decoy, "w") as f:
        json.dump({"runtime_ms": 1.0}, f)
    tmp_target = "/tmp/kforge-sbx-%s" % secrets.token_hex(6)
    daemon_s = 4000 + secrets.randbelow(4000)    # the daemon's sleep, found by its cmdline
    secret = "sbx-secret-" + secrets.token_hex(8)
    listener = Listener("127.0.0.1")
    socket.create_connection(("127.0.0.1", listener.port), timeout=STARTUP_WAIT_S).close()
    # The victim runs as kforge's user itself (not under runuser, which stays root).
    victim = subprocess.Popen(["sleep", "3600"], user=uid, group=gid, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    task = os.path.join(run_dir, "tasks", "L1_2_LeakyReLU_s0")
    writes = [os.path.join(run_dir, "run.json"), os.path.join(run_dir, "supervisor.log"),
              os.path.join(task, "trajectory.jsonl"), os.path.join(run_dir, "ESCAPED"),
              decoy, os.path.join(cache, "builds") + "/", tmp_target]
    reads = [os.path.join(run_dir, "run.json"), decoy]
    code = HOSTILE.replace("WRITE_TARGETS", repr(writes)).replace(
        "READ_TARGETS", repr(reads)).replace(
        "VICTIM", str(victim.pid)).replace("PORT", str(listener.port)).replace(
        "DAEMON_S", str(daemon_s))
    # A kforge eval first: its fork server stays, listening in the cache, for the next.
    plain = os.path.join(work, "plain.py")
    with open(plain, "w") as f:
        f.write(HOSTILE[HOSTILE.index("class ModelNew"):].replace("class ModelNew", "import torch\nimport torch.nn as nn\n\n\nclass ModelNew"))
    chown_tree(work, uid, gid)
    env = dict(os.environ, OPENAI_API_KEY="sk-" + secrets.token_hex(8),
               KFORGE_SBX_SECRET=secret, KFORGE_CACHE_DIR=cache, HOME=work)
    r = subprocess.run(prefix + [BIN, "eval", "--problem", os.path.join(problems, "level1", "2_LeakyReLU.py"),
                                 "--kernel", plain, "--device", "cpu", "--set", "runner.user=''",
                                 "--set", "runner.selftest=false", "--set", "eval.static_checks=false"],
                       env=env, capture_output=True, text=True, timeout=1700)
    check(r.returncode == 0, "%s: kforge eval exited %d: %s" % (label, r.returncode, r.stderr[-2000:]))
    servers = [os.path.join(cache, "servers", n) for n in os.listdir(os.path.join(cache, "servers"))
               if n.endswith(".sock")] if os.path.isdir(os.path.join(cache, "servers")) else []
    check(servers, "%s: kforge eval left no fork server in %s" % (label, cache))
    code = code.replace("SERVERS_DIR", repr(os.path.join(cache, "servers"))).replace(
        "SERVERS", repr(servers))
    with open("/proc/sys/kernel/ns_last_pid") as f:   # the run's supervisor comes after it
        code = code.replace("PID_FROM", f.read().strip())
    with open("/proc/sys/kernel/pid_max") as f:         # where pids wrap
        code = code.replace("PID_MAX", f.read().strip())
    script = {"rules": [{"match": "Elementwise leaky ReLU",
                         "replies": [{"content": "```python\n" + code + "```\n"}]}],
              "default": {"status": 500, "content": "unexpected prompt"}}
    mock = MockLLM(work, script)
    config = write_config(os.path.join(work, "sandbox.yaml"), """
name: sandbox
problems: {dir: %s, levels: [1]}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: OPENAI_API_KEY, retries: 1}
refinement: {turns: 1, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 1, perf_trials: 3, warmup: 1, timeout_s: 600,
       compile_timeout_s: 600, static_checks: false}
runner: {python: %s, user: '', sandbox: strict, selftest: false}
workers: 1
""" % (problems, mock.base_url, py))
    chown_tree(work, uid, gid)
    before = tree_digest(cache)
    try:
        r = subprocess.run(prefix + [BIN, "run", config, "--run-dir", run_dir, "--quiet"],
                           env=env, capture_output=True, text=True, timeout=1700)
    finally:
        mock.stop()
    check(r.returncode == 0, "%s: kforge run exited %d: %s" % (label, r.returncode, r.stderr[-2000:]))
    alive = victim.poll() is None
    daemons = [p for p in os.listdir("/proc") if p.isdigit() and
               read_cmdline(p) == b"sleep\0%d\0" % daemon_s]
    check(not daemons, "%s: the candidate's daemon outlived its runner: %s" % (label, daemons))
    victim.kill()
    victim.wait()

    # ---- the run is whole and says how it was sandboxed
    with open(os.path.join(run_dir, "run.json")) as f:
        info = json.load(f)
    check(info["status"] == "finished", "%s: the run did not finish" % label)
    check(info.get("sandbox", {}).get("mode") == "strict" and not info["sandbox"].get("missing"),
          "%s: run.json's sandbox: %s" % (label, info.get("sandbox")))
    recs = records(run_dir, "L1_2_LeakyReLU_s0")
    check_artifacts(run_dir, "L1_2_LeakyReLU_s0", recs)
    fb = feedback_records(recs)
    check([x["data"].get("status") for x in fb] == ["ok"],
          "%s: the hostile turn was not judged: %s" % (label, [x["data"] for x in fb]))
    with open(os.path.join(task, "turns", "1", "result.json")) as f:
        res = json.load(f)
    check("scope=1" in res["details"].get("sandbox", ""),
          "%s: the candidate's runner reports no scoped sandbox: %s" % (label, res["details"].get("sandbox")))
    check(res["details"].get("namespaces", "").startswith("pid=1 mount=1 proc=1"),
          "%s: the candidate's runner has no namespaces of its own: %s" % (
              label, res["details"].get("namespaces")))
    check(res["details"].get("stray_processes", 0) >= 1 and "stray_processes" in res.get("flags", []),
          "%s: the daemon the candidate left was not counted: %s %s" % (
              label, res["details"].get("stray_processes"), res.get("flags")))

    # ---- each escape refused, seen from the outside
    reps = []
    for d, _, files in os.walk(run_dir):
        for n in files:
            if n.startswith("hostile-") and n.endswith(".json"):
                with open(os.path.join(d, n)) as f:
                    reps.append(json.load(f))
    check(len(reps) == 2, "%s: the hostile candidate reported %d times, want 2 (precompile "
          "and execute)" % (label, len(reps)))
    for rep in reps:
        check(rep["uid"] == uid, "%s: the candidate ran as uid %d, not %d" % (label, rep["uid"], uid))
        # Its own PID namespace: pid 2 beneath its init, and a /proc that shows no more.
        check(rep["pid"] == 2 and rep["ppid"] == 1 and rep["proc"] == [1, 2],
              "%s: the candidate saw pid %d, parent %d, /proc %s" % (
                  label, rep["pid"], rep["ppid"], rep["proc"][:20]))
        check(all(v in ("EACCES", "EPERM") for v in rep["write"].values()),
              "%s: the candidate wrote: %s" % (label, rep["write"]))
        check(all(v in ("EACCES", "EPERM") for v in rep["read"].values()),
              "%s: the candidate read: %s" % (label, rep["read"]))
        check(not rep["secret_found"] and not rep["environ_readable"],
              "%s: the candidate read the environ of %s" % (label, rep["environ_readable"]))
        check(all(v == "EPERM" for v in rep["ptrace"].values()),
              "%s: ptrace: %s" % (label, rep["ptrace"]))
        # Its parent (the namespace's init) is out of its sandbox's reach; the victim is
        # not even in its namespace.
        check(rep["kill"].get("parent") == "EPERM" and rep["kill"].get("victim") in ("EPERM", "ESRCH"),
              "%s: signals: %s" % (label, rep["kill"]))
        check(rep.get("connect") not in (None, "connected"),
              "%s: the candidate connected: %s" % (label, rep.get("connect")))
        # The eval's server and the run's own, each reached and each refusing (an answer
        # of no child, or the connection closed on it).
        check(len(rep["server"]) == len(servers) + 1 and
              any("/run-" in k and (v.startswith("refused") or v in ("ECONNRESET", "EPIPE"))
                  for k, v in rep["server"].items()) and
              not any(v.startswith("forked") for v in rep["server"].values()),
              "%s: the fork servers: %s" % (label, rep["server"]))
    check(alive, "%s: the victim process was killed" % label)
    check(listener.accepted == 1, "%s: the listener accepted %d connections" % (label, listener.accepted))
    check(not os.path.exists(tmp_target), "%s: the candidate wrote %s" % (label, tmp_target))
    check(not os.path.exists(os.path.join(run_dir, "ESCAPED")), "%s: the candidate wrote in the run" % label)
    after = tree_digest(cache)
    check(after.get(decoy) == before.get(decoy), "%s: the cached baseline changed" % label)
    check(not any("evil-" in d for d, _, _ in os.walk(cache)), "%s: a build dir was made" % label)
    for d, _, files in os.walk(run_dir):
        for n in files:
            with open(os.path.join(d, n), "rb") as f:
                data = f.read()
            check(secret.encode() not in data, "%s: the secret is in %s" % (label, n))
            check(b"tampered" not in data, "%s: %s was written to" % (label, n))
    # The server the candidate was refused by still serves kforge: an eval's runner
    # forked from it, which outlives that eval.
    r = subprocess.run(prefix + [BIN, "eval", "--problem", os.path.join(problems, "level1", "2_LeakyReLU.py"),
                                 "--kernel", plain, "--device", "cpu", "--json", "--set", "runner.user=''",
                                 "--set", "runner.selftest=false", "--set", "eval.static_checks=false"],
                       env=env, capture_output=True, text=True, timeout=1700)
    check(r.returncode == 0, "%s: the second kforge eval exited %d" % (label, r.returncode))
    d = json.loads(r.stdout)["result"]["details"]
    check(d.get("start") == "forked" and isinstance(d.get("server"), int) and
          os.path.exists("/proc/%d" % d["server"]) and "made no runner" not in r.stderr,
          "%s: the eval after the run had no runner of the shared server: %s %s" % (
              label, {k: d.get(k) for k in ("start", "server")}, r.stderr[-500:]))
    for sock in servers:   # ends the eval's server (its socket gone)
        os.unlink(sock)
    shutil.rmtree(work, ignore_errors=True)
    print("ok: %s: writes %d, reads %d, environ, ptrace, signals, network, fork server refused" % (
        label, len(writes), len(reads)))


def modes():
    """A layer the host lacks (KFORGE_SANDBOX_DENY takes one away from kforge's probe, as a
    kernel without it would): strict refuses the run before making anything, naming the
    layer and best_effort; best_effort runs, warns in the supervisor log and records what
    is missing in run.json."""
    work = scratch("e2e-sandbox-modes")
    problems = copy_problems(os.path.join(work, "problems"), ["level1/2_LeakyReLU.py"])
    plain = "import torch\nimport torch.nn as nn\n\n\n" + HOSTILE[HOSTILE.index("class ModelNew"):]
    mock = MockLLM(work, {"rules": [{"match": "Elementwise leaky ReLU",
                                     "replies": [{"content": "```python\n" + plain + "```\n"}]}],
                          "default": {"status": 500, "content": "unexpected prompt"}})
    env = dict(os.environ, OPENAI_API_KEY="sk-" + secrets.token_hex(8), KFORGE_SANDBOX_DENY="scope",
               KFORGE_CACHE_DIR=os.path.join(work, "cache"))
    try:
        for mode in ("strict", "best_effort"):
            config = write_config(os.path.join(work, mode + ".yaml"), """
name: sandbox-%s
problems: {dir: %s, levels: [1]}
llm: {provider: openai, base_url: "%s", model: mock-model, api_key_env: OPENAI_API_KEY, retries: 1}
refinement: {turns: 1, feedback: [G, E]}
eval: {device: cpu, correctness_trials: 1, perf_trials: 3, warmup: 1, static_checks: false}
runner: {python: %s, sandbox: %s, selftest: false}
workers: 1
""" % (mode, problems, mock.base_url, py, mode))
            run_dir = os.path.join(work, "run-" + mode)
            r = subprocess.run([BIN, "run", config, "--run-dir", run_dir, "--quiet"], env=env,
                               capture_output=True, text=True, timeout=1700)
            if mode == "strict":
                check(r.returncode == 2 and not os.path.exists(run_dir),
                      "strict without scope: exit %d, run dir made: %s" % (r.returncode, os.path.exists(run_dir)))
                check("runner.sandbox is strict" in r.stderr and "lacks scope" in r.stderr and
                      "best_effort" in r.stderr, "strict's refusal: %s" % r.stderr[-500:])
                continue
            check(r.returncode == 0, "best_effort without scope: exit %d: %s" % (r.returncode, r.stderr[-1000:]))
            with open(os.path.join(run_dir, "run.json")) as f:
                info = json.load(f)
            sb = info.get("sandbox") or {}
            check(info["status"] == "finished" and sb.get("mode") == "best_effort" and
                  [m.get("layer") for m in sb.get("missing", [])] == ["scope"],
                  "best_effort's run.json: %s %s" % (info["status"], sb))
            with open(os.path.join(run_dir, "supervisor.log")) as f:
                log = f.read()
            check("warning: sandbox: best_effort" in log and "missing: scope" in log,
                  "best_effort's supervisor log does not warn")
    finally:
        mock.stop()
    shutil.rmtree(work, ignore_errors=True)
    print("ok: a missing layer: strict refused, best_effort ran and said so")


modes()
if ROOT:
    attempt("root", None)
    user = ordinary_user(py)
    if user is not None:
        attempt("user", user)
else:
    attempt("user", None)
    print("note: not root: the run as root is not proven here")
