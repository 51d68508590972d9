#!/usr/bin/env python3
"""feedback_runner.py: feedback/kforge_runner.py driven directly, one JSON request per
process, the result read from fd 3 — on the CPU with the tiny problems and candidates
in tests/data/feedback/. Run with any python3: the runner itself is started with a
Python that imports torch (KFORGE_PYTHON, /usr/bin/python3, /usr/local/bin/python3, then
PATH); without one the test is skipped (77).

The candidates are plain Python, so nothing is compiled here: this exercises the judge.
Extension builds, crashes and deadlines are feedback_run.c's, through fb_run.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from kfe2e import HAS_TORCH  # noqa: E402  (standard library only)

HOME = os.environ.get("KFORGE_HOME") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(HOME, "feedback", "kforge_runner.py")
DATA = os.path.join(HOME, "tests", "data", "feedback")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: %s" % what, flush=True)


def torch_python():
    cands = [os.environ.get("KFORGE_PYTHON"), "/usr/bin/python3", "/usr/local/bin/python3"]
    cands += [os.path.join(d, "python3") for d in os.environ.get("PATH", "").split(":") if d]
    for py in cands:
        if py and os.access(py, os.X_OK):
            # Found, not imported (kfe2e.HAS_TORCH says why).
            r = subprocess.run([py, "-c", HAS_TORCH], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=120)
            if r.returncode == 0:
                return py
    return None


def fd3(fd):
    """In the child: the result file on fd 3, open across exec."""
    if fd != 3:
        os.dup2(fd, 3)
    os.set_inheritable(3, True)


class Env:
    def __init__(self, python, tmp):
        self.python = python
        self.tmp = tmp
        self.build = os.path.join(tmp, "build")
        self.work = os.path.join(tmp, "work")
        self.judge_dir = os.path.join(tmp, "judge")
        for d in (self.build, self.work, self.judge_dir):
            os.makedirs(d, exist_ok=True)

    def run(self, mode, problem="problem_add.py", candidate=None, build=None, raw=None,
            timeout=300, extra_env=None, warm=False, **over):
        build = build or self.build
        req = {"mode": mode, "problem": os.path.join(DATA, problem),
               "build_dir": build, "device": "cpu", "precision": "fp32", "seed": 42,
               "correctness_trials": 5, "perf_trials": 10, "warmup": 2, "atol": None,
               "rtol": None, "timing": {"method": "cuda_event", "l2_flush": True,
                                        "discard_first": 1},
               "time_reference": False, "baseline_compile": True}
        if candidate:
            req["candidate"] = os.path.join(DATA, candidate)
        req.update(over)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
               "TORCH_EXTENSIONS_DIR": build, "CUDA_VISIBLE_DEVICES": "",
               "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        env.update(extra_env or {})
        judge = None
        if mode == "execute" and raw is None:
            # An execute is the candidate's runner and its judge (the judge's result is
            # what this returns, the candidate's under "candidate").
            req["judge"] = {"socket": os.path.join(self.judge_dir, "kforge-judge.sock"),
                            "token": os.urandom(24).hex()}
            jreq = dict(req, mode="judge", work_dir=self.judge_dir)
            jreq.pop("candidate", None)
            judge = self.start(jreq, env, self.judge_dir, [])
        t0 = time.monotonic()
        p, res, log = self.start(req, env, self.work, warm, raw)
        p.communicate(timeout=timeout)
        wall = time.monotonic() - t0
        result, logtext = self.collect(p, res, log, mode, candidate)
        if judge is not None:
            jp, jres, jlog = judge
            try:
                jp.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                jp.kill()       # its candidate's runner never connected
                jp.communicate()
            jresult, jlogtext = self.collect(jp, jres, jlog, "judge", candidate)
            jresult["candidate"] = result
            return jresult, logtext + jlogtext, p.returncode, wall
        return result, logtext, p.returncode, wall

    def start(self, req, env, cwd, warm, raw=None):
        res, log = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        args = ([warm] if isinstance(warm, str) else list(warm) if isinstance(warm, list)
                else ["--warm"]) if warm else []
        p = subprocess.Popen([self.python, RUNNER] + args, stdin=subprocess.PIPE,
                             stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                             close_fds=False, preexec_fn=lambda: fd3(res.fileno()))
        p.stdin.write((raw if raw is not None else json.dumps(req)).encode())
        p.stdin.close()
        p.stdin = None
        return p, res, log

    @staticmethod
    def collect(p, res, log, mode, candidate):
        res.seek(0)
        log.seek(0)
        text = res.read().decode()
        logtext = log.read().decode(errors="replace")
        res.close()
        log.close()
        try:
            result = json.loads(text)
        except ValueError:
            result = None
        if result is None:
            print("no result from %s %s (rc %d); log:\n%s" % (mode, candidate, p.returncode,
                                                             logtext[-3000:]))
        return result or {}, logtext


def finish(tmp, passed):
    """The end of a runner test's main: its exit status; the scratch directory is kept for
    a look when a check failed, removed otherwise."""
    if failures:
        print("%d failure(s); scratch kept in %s" % (len(failures), tmp))
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print(passed)
    return 0


def scratch_dir(name):
    """A fresh scratch directory under the test tmp dir (kept for a look on failure)."""
    base = os.environ.get("KFORGE_TEST_TMP") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=name + "-", dir=base)


def check_steal_ticks():
    """steal_ticks in the runner itself: a count that only grows, 0 for no cores."""
    kr = runner_module()
    everyone = set(range(os.cpu_count() or 1))
    first = kr.steal_ticks(everyone)
    check(isinstance(first, int) and first >= 0 and kr.steal_ticks(everyone) >= first
          and kr.steal_ticks(set()) == 0, "steal_ticks: a count that only grows")


def runner_module():
    spec = importlib.util.spec_from_file_location("kforge_runner_under_test", RUNNER)
    kr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kr)
    return kr


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def check_peer_memfd():
    """The judge's channel: a large payload crosses in a sealed memfd and arrives whole;
    a descriptor that could still change (an unsealed memfd, a plain file, one of another
    size), a memfd frame without one, and descriptors sent beside an inline payload are
    refused or closed, none kept open."""
    import array
    import socket
    kr = runner_module()
    probe = kr.sealed_memfd([b"x"], 1)
    have_memfd = probe is not None
    if have_memfd:
        os.close(probe)
    else:
        print("peer: no sealed memfd here; the inline path alone is checked")
    big = os.urandom(kr.PEER_MEMFD_MIN + 4097)
    a, b = socket.socketpair()
    pa, pb = kr.Peer(a), kr.Peer(b)
    before = open_fds()
    pa.send({"op": "outputs"}, [big[:1000], big[1000:]])
    head, payload = pb.recv(len(big))
    check(head == {"op": "outputs"} and bytes(payload) == big,
          "peer: a payload of %d bytes arrives whole" % len(big))
    if have_memfd:
        check(not isinstance(payload, (bytes, bytearray)),
              "peer: a large payload came mapped from a memfd: %s" % type(payload).__name__)
    del payload
    pa.memfd = False
    # Inline, the payload is larger than the socket's buffer: sent from a thread.
    sender = threading.Thread(target=pa.send, args=({"op": "outputs"}, [big]))
    sender.start()
    head, payload = pb.recv(len(big))
    sender.join()
    check(isinstance(payload, bytearray) and bytes(payload) == big, "peer: the inline path")
    small = b"abc"
    pa.memfd = True
    pa.send({"op": "x"}, [small])
    check(pb.recv(3)[1] == small, "peer: a small payload inline")
    check(open_fds() == before, "peer: no descriptor left open by good frames")

    a.close()
    b.close()

    def forged(fds, how, size, data=b""):
        """What the judge's side makes of a frame sent by hand (a channel of its own:
        a refused frame ends its channel)."""
        x, y = socket.socketpair()
        head = json.dumps({"op": "outputs"}).encode()
        frame = kr.PEER_FRAME.pack(len(head), size, how)
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        x.sendmsg([frame], anc)
        x.sendall(head + data)
        try:
            return kr.Peer(y).recv(1 << 30)
        except kr.PeerError as e:
            return e
        finally:
            x.close()
            y.close()

    if have_memfd:
        n = kr.PEER_MEMFD_MIN
        unsealed = os.memfd_create("forged", os.MFD_ALLOW_SEALING)
        os.pwrite(unsealed, b"\0" * n, 0)
        got = forged([unsealed], kr.PEER_MEMFD, n)
        check(isinstance(got, kr.PeerError) and "sealed" in str(got),
              "peer: an unsealed memfd refused: %r" % (got,))
        partly = os.memfd_create("forged", os.MFD_ALLOW_SEALING)
        os.pwrite(partly, b"\0" * n, 0)
        fcntl_mod = __import__("fcntl")
        fcntl_mod.fcntl(partly, fcntl_mod.F_ADD_SEALS, fcntl_mod.F_SEAL_SHRINK | fcntl_mod.F_SEAL_GROW)
        got = forged([partly], kr.PEER_MEMFD, n)
        check(isinstance(got, kr.PeerError) and "sealed" in str(got),
              "peer: a memfd still writable refused: %r" % (got,))
        sealed = kr.sealed_memfd([b"\0" * n], n)
        got = forged([sealed], kr.PEER_MEMFD, n + 1)
        check(isinstance(got, kr.PeerError) and "bytes" in str(got),
              "peer: a memfd of another size refused: %r" % (got,))
        with tempfile.TemporaryFile() as f:
            f.write(b"\0" * n)
            f.flush()
            got = forged([f.fileno()], kr.PEER_MEMFD, n)
        check(isinstance(got, kr.PeerError), "peer: a plain file refused: %r" % (got,))
        for fd in (unsealed, partly, sealed):
            os.close(fd)
    got = forged([], kr.PEER_MEMFD, 4096)
    check(isinstance(got, kr.PeerError) and "did not come" in str(got),
          "peer: a memfd frame without its descriptor refused: %r" % (got,))
    with tempfile.TemporaryFile() as f:
        got = forged([f.fileno(), f.fileno()], kr.PEER_INLINE, 3, b"xyz")
    check(not isinstance(got, Exception) and got[1] == b"xyz",
          "peer: descriptors beside an inline payload ignored: %r" % (got,))
    check(not open_fds() - before, "peer: no descriptor kept from forged frames: %s"
          % sorted(open_fds() - before))


DIGEST_CHECK = r"""
import importlib.util, json, sys, torch
spec = importlib.util.spec_from_file_location("kr", sys.argv[1])
kr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kr)
class Judge:
    pass
j = Judge()
j.torch = torch
dig = lambda made: kr.Runner.inputs_digest(j, made)
torch.manual_seed(1)
a = torch.rand(3 * kr.DIGEST_CHUNK + 5)
b = a.clone()
b[-1] += 1e-3
p = torch.randperm(1000)
u = torch.arange(0, 101, dtype=torch.uint8)
print(json.dumps({"same": dig([a, 3]) == dig([a.clone(), 3]), "changed": dig([a]) != dig([b]),
                  "permuted": dig([p]) != dig([p.flip(0)]), "value": dig([a, 3]) != dig([a, 4]),
                  "odd_offset": dig([u[1:97]]) == dig([u[1:97].clone()])}))
"""


def check_inputs_digest(python):
    """The judge's digest of an input set (Runner.inputs_digest): the same for the same
    values, another for one value changed, for the same values in another order (a
    permutation within one chunk, which the chunks' sums alone miss), for another
    plain value, and made for a byte tensor at an offset no 32-bit view takes."""
    r = subprocess.run([python, "-c", DIGEST_CHECK, RUNNER], capture_output=True, text=True,
                       timeout=300)
    try:
        got = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        got = {"error": r.stderr[-500:]}
    check(got == {"same": True, "changed": True, "permuted": True, "value": True,
                  "odd_offset": True}, "inputs digest: %s" % got)


def main():
    python = torch_python()
    if python is None:
        print("SKIP: no Python that imports torch")
        return 77
    tmp = scratch_dir("feedback_runner")
    e = Env(python, tmp)
    print("runner python: %s, scratch: %s" % (python, tmp), flush=True)
    check_steal_ticks()
    check_peer_memfd()
    check_inputs_digest(python)

    # probe
    r, _, rc, _ = e.run("probe")
    check(rc == 0 and r.get("status") == "ok", "probe: ok")
    check(bool(r.get("env", {}).get("torch")), "probe: env.torch")
    check(r.get("env", {}).get("python", "").count(".") == 2, "probe: env.python")

    # a bad request still yields one result
    r, _, rc, _ = e.run("execute", raw="{not json")
    check(r.get("status") == "runtime_error" and "runner_error" in r.get("flags", []),
          "bad request: runtime_error + runner_error")

    # a correct candidate, timed together with the reference (the judge in a process of
    # its own: its result, the candidate runner's under "candidate")
    r, _, _, _ = e.run("execute", candidate="cand_globals.py", time_reference=True)
    cr = r.get("candidate") or {}
    check(r.get("status") == "ok" and r.get("correct") is True and cr.get("compiled") is True
          and cr.get("status") == "ok",
          "execute: correct (and candidate globals did not resize the reference's inputs)")
    check(r.get("mode") == "judge" and cr.get("mode") == "execute", "execute: the judge's and the "
          "candidate's results: %s %s" % (r.get("mode"), cr.get("mode")))
    check(not {"threads_left", "processes_left"} & set(r.get("flags", [])),
          "an honest candidate leaves nothing running: %s" % r.get("flags"))
    trials = r.get("details", {}).get("trials", [])
    check(len(trials) == 5 and all(t["ok"] and t["max_abs_diff"] == 0 for t in trials),
          "execute: 5 trials, exact")
    check(len({t["seed"] for t in trials}) == 5, "execute: 5 distinct trial seeds")
    check(r.get("details", {}).get("second_distribution", "").startswith("ok"),
          "execute: the second input distribution passed: %s"
          % r.get("details", {}).get("second_distribution"))
    # Where each side's time went: each phase's end, in order, from its request.
    jphases = r.get("details", {}).get("phases_s") or {}
    ends = [jphases.get(k) for k in ("torch", "connected", "models", "candidate",
                                     "correctness", "timing")]
    check(None not in ends and ends == sorted(ends) and ends[0] >= 0 and ends[-1] < 300,
          "execute: the judge's phases_s, each phase's end in order: %s" % jphases)
    cphases = cr.get("details", {}).get("phases_s") or {}
    ends = [cphases.get(k) for k in ("torch", "load", "models")]
    check(None not in ends and ends == sorted(ends), "execute: the candidate's phases_s: %s" % cphases)
    cand, ref = r.get("timing", {}).get("candidate"), r.get("timing", {}).get("reference")
    clean = r.get("timing", {}).get("reference_clean")
    pair = r.get("timing", {}).get("pair") or {}
    passes = pair.get("passes") or 0
    plog = pair.get("pass_log") or []
    # Interleaved: a pass is 10 calls of each, one call a block on the CPU (CPU_BLOCK);
    # passes are added while the interval is wide (a loaded machine), at most 3, each
    # logged with its own speedup.
    check(1 <= passes <= 3 and pair.get("rounds") == 10 * passes, "execute: passes and rounds: %s" % pair)
    check(cand and cand["trials"] == 10 * passes and cand["mean_ms"] > 0 and cand["min_ms"] <= cand["mean_ms"]
          <= cand["max_ms"], "execute: candidate timing stats")
    check(ref and ref["trials"] == 10 * passes and ref["mean_ms"] > 0, "execute: reference timing")
    check(not clean and "reference_slowed" not in r.get("details", {}),
          "execute: no clean timing asked for, none compared: %s" % clean)
    tms = (r.get("details", {}).get("judge") or {}).get("trial_ms") or []
    check(len(tms) == 6 and all(len(t) == 4 and min(t) >= 0 for t in tms),
          "execute: the judge's trials timed (5 and the second distribution): %s" % tms)
    pb = (r.get("details", {}).get("judge") or {}).get("payload_bytes") or {}
    check(pb.get("inline", 0) > 0 and pb.get("memfd") == 0,
          "execute: a tiny problem's payloads all inline, counted: %s" % pb)
    check(len(plog) == passes and all(p["speedup"] > 0 and p["nivcsw"] >= 0 and p["steal_ticks"] >= 0
                                      and sorted(p["faults_per_call"]) == ["candidate", "reference"]
                                      and min(p["faults_per_call"].values()) >= 0
                                      for p in plog)
          and (passes > 1 or abs(plog[0]["speedup"] - r["speedup"]) < 1e-9),
          "execute: each pass logged (one pass: the speedup): %s" % pair)
    check(r.get("speedup") and abs(r["speedup"] - ref["mean_ms"] / cand["mean_ms"]) < 1e-9,
          "execute: speedup = reference mean / candidate mean")
    lo, hi = pair.get("ci95") or (None, None)
    check(lo is not None and lo < r["speedup"] < hi and abs(pair["spread"] - (hi / r["speedup"] - 1)) < 1e-9,
          "execute: the speedup's 95%% interval holds it: %s" % pair)
    check(pair.get("median_speedup") and abs(pair["median_speedup"] - ref["median_ms"] / cand["median_ms"]) < 1e-9,
          "execute: the ratio of medians")
    check(passes == 3 or pair["spread"] <= 0.1, "execute: a pass short of 3 left an interval over 10%%: %s" % pair)
    check(pair.get("statistic") == "mean" and abs(pair["mean_speedup"] - r["speedup"]) < 1e-9,
          "execute: no statistic asked for: the means' %s" % pair)
    # The CPU's statistic (FB_SPEEDUP_STATISTIC): the ratio of medians, with an interval
    # from the trials' median absolute deviations.
    # with the reference's clean timing (its baseline) handed over: the interleaved one
    # is held to it (reference_slowed is a GPU's rule; on the CPU the ratio is kept)
    rm, _, _, _ = e.run("execute", candidate="cand_globals.py", time_reference=True,
                        timing={"method": "cuda_event", "l2_flush": True, "discard_first": 1,
                                "statistic": "median"},
                        reference_clean=ref)
    rs = rm.get("details", {}).get("reference_slowed") or {}
    check(rs.get("ratio", 0) > 0 and rs.get("tolerance") and rs.get("judged") is False
          and "reference_slowed" not in rm.get("flags", []),
          "execute: the interleaved reference against its clean timing: %s" % rs)
    pm, cm, refm = (rm.get("timing", {}).get(k) or {} for k in ("pair", "candidate", "reference"))
    lo, hi = pm.get("ci95") or (None, None)
    check(pm.get("statistic") == "median" and cm.get("mad_ms") is not None and rm.get("speedup")
          and abs(rm["speedup"] - refm["median_ms"] / cm["median_ms"]) < 1e-9
          and abs(pm["mean_speedup"] - refm["mean_ms"] / cm["mean_ms"]) < 1e-9
          and lo is not None and lo <= rm["speedup"] <= hi,
          "execute: statistic median: the ratio of medians in its interval: %s %s" % (pm, cm))
    check(r.get("env", {}).get("device_name"), "execute: env.device_name")
    # The runner flags no speedup: fb_judge alone does, from the interval (feedback_verdict).
    check("excessive_speedup" not in r.get("flags", []), "execute: the runner flagged a speedup")
    # Every timed call on inputs of its own; the fingerprints of at least three of the
    # candidate's, chosen once all were made, checked against the reference's.
    vf = r.get("details", {}).get("verify") or {}
    check(vf.get("checks", 0) >= 3 and vf.get("calls") == 10 * passes and "stale_output" not in r["flags"],
          "execute: the timed calls' fingerprints verified: %s" % vf)
    check(set(r.get("details", {}).get("timers") or {}) >= {"excess_ms", "reference_excess_ms"}
          and "timers_disagree" not in r["flags"] and "reference_slowed" not in r["flags"],
          "execute: the judge's clock agrees with the timers: %s %s" % (r.get("details", {}).get("timers"),
                                                                       r.get("details", {}).get("reference_slowed")))
    # A cache that knows when it is checked (right for the correctness trials, its last
    # output after them): its timed calls return stale outputs, which the fingerprints
    # catch.
    r2, _, _, _ = e.run("execute", candidate="cand_replay_memo.py", time_reference=True)
    vf2 = r2.get("details", {}).get("verify") or {}
    check(r2.get("correct") is True and "stale_output" in r2.get("flags", []) and vf2.get("failed_at")
          and "fingerprint" in vf2.get("why", ""), "execute: a cache after the checks is stale: %s %s"
          % (r2.get("flags"), vf2))
    r2, _, _, _ = e.run("execute", problem="problem_symmetric.py", candidate="cand_symmetric.py",
                        time_reference=True)
    vf2 = r2.get("details", {}).get("verify") or {}
    check(r2.get("status") == "ok" and vf2.get("checks", 0) >= 3
          and "stale_output" not in r2.get("flags", []) and r2.get("speedup"),
          "execute: a problem whose inputs keep a structure gets fresh ones that keep it: %s %s"
          % (r2.get("status"), vf2))

    # a step kept on the cores the request names (those this process may use)
    mine = sorted(os.sched_getaffinity(0))
    r2, _, _, _ = e.run("execute", candidate="cand_globals.py", perf_trials=0, cpus=[mine[-1], 4096])
    c2 = (r2.get("candidate") or {}).get("details", {})
    check(c2.get("cpus") == [mine[-1]] and r2.get("details", {}).get("cpus") == [mine[-1]],
          "execute: both sides pinned to core %d of [%d, 4096]: %s" % (mine[-1], mine[-1], c2.get("cpus")))
    check("cpus" not in cr.get("details", {}), "execute without cpus: left where it was: %s"
          % cr.get("details", {}).get("cpus"))

    # the same seeds give the same trial seeds (KernelBench's scheme)
    r2, _, _, _ = e.run("execute", candidate="cand_globals.py", perf_trials=0)
    check([t["seed"] for t in r2.get("details", {}).get("trials", [])] ==
          [t["seed"] for t in trials], "trial seeds are a function of the seed")
    check(r2.get("timing", {}).get("candidate") is None, "perf_trials 0: no timing")
    r2, _, _, _ = e.run("execute", candidate="cand_globals.py", perf_trials=0, seed=7)
    check([t["seed"] for t in r2.get("details", {}).get("trials", [])] !=
          [t["seed"] for t in trials], "another seed, other trial seeds")

    r, _, _, _ = e.run("execute", candidate="cand_reach_reference.py", perf_trials=0)
    check(r.get("status") == "ok", "the reference module is not in sys.modules for candidates")

    # wrong values, with a fake result printed to stdout
    r, log, _, _ = e.run("execute", candidate="cand_wrong_values.py")
    check(r.get("status") == "value_mismatch" and r.get("correct") is False, "wrong values: value_mismatch")
    check('{"status": "ok", "correct": true}' in log, "wrong values: candidate stdout went to the log")
    t = r.get("details", {}).get("trials", [])
    check(len(t) == 5 and all(not x["ok"] and abs(x["max_abs_diff"] - 0.5) < 1e-5 and
                              abs(x["avg_abs_diff"] - 0.5) < 1e-5 for x in t),
          "wrong values: per-trial max/avg diff 0.5")
    check(r.get("details", {}).get("trials_passed") == 0, "wrong values: 0 trials passed")
    check(r.get("timing", {}).get("candidate") is None, "wrong values: not timed")

    r, _, _, _ = e.run("execute", candidate="cand_wrong_shape.py")
    check(r.get("status") == "shape_mismatch" and "[16, 1023]" in r["details"]["message"],
          "wrong shape: shape_mismatch naming the shapes")

    r, _, _, _ = e.run("execute", candidate="cand_raise.py")
    cr = r.get("candidate") or {}
    check(r.get("status") == "runtime_error" and cr.get("status") == "runtime_error" and
          "kernel launch configuration is invalid (test)" in cr["details"]["exception"] and
          "ValueError" in cr["details"]["traceback"], "forward raises: runtime_error + traceback")
    check(cr.get("compiled") is True, "forward raises: compiled")

    r, _, _, _ = e.run("execute", candidate="cand_no_model_new.py")
    check(r.get("status") == "no_model_new", "no ModelNew: no_model_new")

    # Every runner's allocator fixed before torch (fix_allocator): a 4 MiB block comes
    # from the heap, not a mapping of its own, in the candidate's runner (its verdict),
    # and the judge's says it was fixed too (details.judge.allocator).
    r, _, _, _ = e.run("execute", candidate="cand_heap_blocks.py", perf_trials=0)
    check(r.get("status") == "ok" and r.get("correct") is True
          and r.get("details", {}).get("allocator") == "fixed"
          and (r.get("details", {}).get("judge") or {}).get("allocator") == "fixed",
          "the allocator: a 4 MiB block from the heap, the policy fixed on both sides: %s %s %s / %s" % (
              r.get("status"), r.get("correct"), r.get("details", {}).get("allocator"),
              (r.get("details", {}).get("judge") or {}).get("allocator")))

    # Inputs made on the device are made again by the candidate's runner from the seed
    # and proved the same by the judge's digest: none crosses the channel; a problem whose
    # inputs do not repeat from the seed gets the judge's own, sent after all, and is
    # judged on them.
    r, _, _, _ = e.run("execute", candidate="cand_torch_add.py", input_placement="device",
                       perf_trials=0)
    pb = (r.get("details", {}).get("judge") or {}).get("payload_bytes") or {}
    trials = r.get("details", {}).get("trials", [])
    check(r.get("status") == "ok" and r.get("correct") is True and len(trials) == 5
          and all(t["max_abs_diff"] == 0 for t in trials)
          and "inputs_not_reproducible" not in r.get("flags", []),
          "inputs made again: correct, exact, nothing flagged: %s %s" % (r.get("status"), r.get("flags")))
    out_bytes = 16 * 1024 * 4 * 6
    check(pb.get("inline", 0) + pb.get("memfd", 0) == out_bytes,
          "inputs made again: only the 6 trials' outputs crossed (%d bytes): %s" % (out_bytes, pb))
    r, _, _, _ = e.run("execute", problem="problem_add_unseeded.py", candidate="cand_torch_add.py",
                       input_placement="device", perf_trials=0)
    pb = (r.get("details", {}).get("judge") or {}).get("payload_bytes") or {}
    trials = r.get("details", {}).get("trials", [])
    check(r.get("status") == "ok" and r.get("correct") is True and len(trials) == 5
          and all(t["max_abs_diff"] == 0 for t in trials)
          and "inputs_not_reproducible" in r.get("flags", []),
          "inputs that do not repeat: sent, correct, flagged: %s %s %s"
          % (r.get("status"), r.get("flags"), r.get("details", {}).get("message")))
    check(pb.get("inline", 0) + pb.get("memfd", 0) == 3 * out_bytes,
          "inputs that do not repeat: each trial's two inputs crossed too: %s" % pb)

    r, _, _, _ = e.run("execute", candidate="cand_mutates.py")
    check(r.get("status") == "value_mismatch" and "input_mutated" in r.get("flags", []),
          "in-place input write: value_mismatch + input_mutated")

    r, _, _, _ = e.run("execute", candidate="cand_patch_allclose.py")
    check(r.get("status") == "value_mismatch" and "torch_patched" in r.get("flags", []),
          "patched torch.allclose: still value_mismatch, flagged")

    r, _, _, _ = e.run("execute", candidate="cand_thread_left.py")
    check(r.get("status") == "ok" and {"threads_left", "processes_left"} <= set(r.get("flags", [])),
          "a thread and a child left running after forward: flagged (%s)" % r.get("flags"))
    cd = (r.get("candidate") or {}).get("details", {})
    check(cd.get("threads_left") == ["helper"],
          "threads_left names the candidate's thread: %s" % cd.get("threads_left"))

    r, _, _, _ = e.run("execute", candidate="cand_tf32.py")
    check(r.get("status") == "ok" and "tf32_enabled" in r.get("flags", []),
          "TF32 turned on in forward, fp32: flagged (%s)" % r.get("flags"))
    r, _, _, _ = e.run("execute", candidate="cand_tf32.py", allow_tf32=True)
    check("tf32_enabled" not in r.get("flags", []), "TF32 allowed by the request: not flagged")

    r, _, _, _ = e.run("execute", candidate="cand_tf32.py")
    check(r.get("status") == "ok" and "tf32_enabled" in r.get("flags", []),
          "TF32 turned on in forward, fp32: flagged (%s)" % r.get("flags"))
    r, _, _, _ = e.run("execute", candidate="cand_tf32.py", allow_tf32=True)
    check("tf32_enabled" not in r.get("flags", []), "TF32 allowed by the request: not flagged")

    r, _, _, _ = e.run("execute", problem="problem_zero.py", candidate="cand_zeros.py")
    check(r.get("status") == "ok" and "degenerate_output" in r.get("flags", []),
          "all-zero reference: degenerate_output")

    # Output below the tolerance on the problem's inputs: zeros pass the trials, not the
    # check on scaled inputs; the honest kernel passes both.
    r, _, _, _ = e.run("execute", problem="problem_small.py", candidate="cand_zeros.py")
    check(r.get("status") == "value_mismatch" and "degenerate_output" in r.get("flags", []) and
          "scaled" in r.get("details", {}).get("message", ""),
          "zeros on a near-zero problem: value_mismatch on scaled inputs (%s, %s)"
          % (r.get("status"), r.get("details", {}).get("message")))
    r, _, _, _ = e.run("execute", problem="problem_small.py", candidate="cand_small_honest.py")
    check(r.get("status") == "ok" and r.get("details", {}).get("scaled_check", "").startswith("ok"),
          "an honest kernel on a near-zero problem passes the scaled check (%s, %s)"
          % (r.get("status"), r.get("details", {}).get("scaled_check")))
    r, _, _, _ = e.run("execute", problem="problem_zero.py", candidate="cand_zeros.py")
    check("still degenerate" in r.get("details", {}).get("scaled_check", ""),
          "an output that is zero at any scale: said so (%s)" % r.get("details", {}).get("scaled_check"))

    r, _, _, _ = e.run("execute", problem="problem_linear_relu.py", candidate="cand_linear_relu.py")
    check(r.get("status") == "ok" and r.get("correct") is True,
          "parameters seeded alike, dropout off in eval(): correct")
    check("degenerate_output" not in r.get("flags", []), "linear+relu: not degenerate")

    r, _, _, _ = e.run("execute", problem="problem_linear_relu.py", candidate="cand_linear_relu.py",
                       precision="bf16")
    check(r.get("status") == "ok", "bf16: correct within the bf16 tolerance")

    r, _, _, _ = e.run("execute", candidate="cand_wrong_values.py", atol=1.0, rtol=0.0)
    check(r.get("status") == "ok", "explicit atol overrides the precision default")

    # a module that does not load is a compile error (C++ build failures: feedback_run.c)
    r, _, _, _ = e.run("precompile", candidate="cand_syntax_error.py")
    co = r.get("details", {}).get("compiler_output", "")
    check(r.get("status") == "compile_error" and r.get("compiled") is False,
          "syntax error: compile_error")
    check("SyntaxError" in co and "cand_syntax_error.py" in co, "syntax error: reported")

    # long build output: the runner cuts its middle, keeping the first error and the end
    r, _, _, _ = e.run("precompile", candidate="cand_long_build_error.py")
    co = r.get("details", {}).get("compiler_output", "")
    check(r.get("status") == "compile_error", "long build error: compile_error")
    check(co.startswith("RuntimeError: Error building extension 'kforge_long'") and
          "# long_build_first_error" in co and co.endswith("ninja: build stopped: subcommand failed."),
          "long build error: head, first error and tail kept: %r...%r" % (co[:80], co[-80:]))
    check("characters truncated ...]" in co and len(co) < 16384 + 100,
          "long build error: the middle cut out, %d characters kept" % len(co))

    r, _, _, _ = e.run("precompile", candidate="cand_missing.py")
    check(r.get("status") == "compile_error", "missing candidate file: compile_error")

    # baseline and profile
    r, _, _, _ = e.run("baseline")
    check(r.get("status") == "ok" and r["timing"]["reference"]["mean_ms"] > 0, "baseline: reference timed")
    check(r["timing"]["reference_compile"] is not None or
          {"compile_unavailable", "compile_failed"} & set(r.get("flags", [])),
          "baseline: torch.compile timed or its absence flagged")

    r, _, _, _ = e.run("profile", candidate="cand_linear_relu.py", problem="problem_linear_relu.py")
    prof = r.get("profile") or {}
    check(r.get("status") == "ok" and prof.get("kernels"), "profile: kernels listed")
    check(all(set(k) >= {"name", "calls", "total_ms", "mean_ms"} for k in prof.get("kernels", [])),
          "profile: kernel rows have name/calls/total_ms/mean_ms")
    check(prof.get("target") == "candidate", "profile: of the candidate")
    # the reference model's profile (a task's first profiled turn shows it for comparison)
    r, _, _, _ = e.run("profile", problem="problem_linear_relu.py", profile_reference=True)
    prof = r.get("profile") or {}
    check(r.get("status") == "ok" and prof.get("target") == "reference" and prof.get("kernels"),
          "profile of the reference: %s" % r.get("details", {}).get("message"))
    check(any("addmm" in k["name"] or "linear" in k["name"] for k in prof["kernels"]),
          "the reference's profile lists its linear layer: %s" % [k["name"] for k in prof["kernels"]])

    # A warm runner takes the request's environment and working directory, but never other
    # GPUs than it was started with (torch may have fixed the device count at import).
    want = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CUDA_VISIBLE_DEVICES": "",
            "TORCH_EXTENSIONS_DIR": e.build, "KFORGE_TEST_MARK": "warm"}
    r, _, _, _ = e.run("execute", candidate="cand_env_dump.py", warm=True, env=want,
                       work_dir=e.work, rlimit_cpu_s=600)
    check(r.get("status") == "ok" and r.get("correct"), "warm execute: %s" % r.get("status"))
    with open(os.path.join(e.work, "kforge_env.json")) as f:
        got = json.load(f)
    check(got == want, "a warm runner's environment is the request's: %s" % got)
    # --warm-load (torch alone, for a step that loads a build) the same; and a precompile
    # it was not started for imports the extension machinery then.
    os.unlink(os.path.join(e.work, "kforge_env.json"))
    r, _, _, _ = e.run("execute", candidate="cand_env_dump.py", warm="--warm-load", env=want,
                       work_dir=e.work, rlimit_cpu_s=600)
    check(r.get("status") == "ok" and r.get("correct"), "warm-load execute: %s" % r.get("status"))
    with open(os.path.join(e.work, "kforge_env.json")) as f:
        got = json.load(f)
    check(got == want, "a --warm-load runner's environment is the request's: %s" % got)
    check("cuda_ahead" not in (r.get("candidate") or {}).get("details", {}),
          "nothing of CUDA is started ahead unasked: %s" % r.get("details", {}).get("cuda_ahead"))
    # --cuda-ahead (an execute's runner, forked while its precompile builds on a GPU host):
    # where CUDA cannot start (here no GPU is visible) it says so, and the step is judged
    # as in any runner.
    os.unlink(os.path.join(e.work, "kforge_env.json"))
    r, _, _, _ = e.run("execute", candidate="cand_env_dump.py",
                       warm=["--warm-load", "--cuda-ahead"], env=want, work_dir=e.work,
                       rlimit_cpu_s=600)
    ahead = (r.get("candidate") or {}).get("details", {}).get("cuda_ahead") or {}
    check(r.get("status") == "ok" and r.get("correct") and
          str(ahead.get("done", "")).startswith("failed: ") and ahead.get("s", -1) >= 0,
          "a runner told to start CUDA ahead where none is visible: %s %s"
          % (r.get("status"), ahead))
    with open(os.path.join(e.work, "kforge_env.json")) as f:
        got = json.load(f)
    check(got == want, "a --cuda-ahead runner's environment is the request's: %s" % got)
    r, _, _, _ = e.run("precompile", candidate="cand_syntax_error.py", warm="--warm-load",
                       env=want, work_dir=e.work)
    check(r.get("status") == "compile_error" and "runner_error" not in r.get("flags", []),
          "a precompile in a --warm-load runner: %s %s" % (r.get("status"),
                                                          r.get("details", {}).get("message")))
    want["CUDA_VISIBLE_DEVICES"] = "0"
    r, _, _, _ = e.run("execute", candidate="cand_env_dump.py", warm=True, env=want)
    r = r.get("candidate") or {}
    msg = r.get("details", {}).get("message", "")
    check(r.get("status") == "runtime_error" and "runner_error" in r.get("flags", []) and
          "started with CUDA_VISIBLE_DEVICES=''" in msg,
          "a warm runner refuses other GPUs: %s %s" % (r.get("status"), msg))

    return finish(tmp, "all runner checks passed")


if __name__ == "__main__":
    sys.exit(main())
