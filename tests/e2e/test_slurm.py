#!/usr/bin/env python3
"""cluster.engine slurm on a real one-host Slurm (tools/slurm/local.sh, in a state directory
and on ports of this test's own).

The CPU demo (configs/demo.yaml, its recorded replies) runs as one `kforge run --set
cluster.engine=slurm` of two shards of one worker each, followed in the background. Mid-run:
- every process of a shard is SIGKILLed (a node dying) while one of its tasks is past
  GENERATE; once its heartbeat has stopped for cluster.claim_timeout_s another shard takes
  that task over, and the dead element is requeued (`scontrol requeue`): it comes back
  under the same shard id, says it was requeued, and works on;
- the follower is killed (SIGKILL), and `kforge resume DIR --add-shards 1` follows the run
  again and adds a third shard, which claims a task nobody held.
Then a run of two tasks on one shard, detached, is stopped mid-turn with `kforge stop` (the
shard ends "stopped" and lets its unfinished tasks go) and `kforge resume` submits a new
array that finishes them. At the end of the first every turn is as recorded (tools/demo_check.py: statuses, no gap or duplicate
in any log), every task started once, no reply was requested twice (the requests the
trajectories record: one per turn), every task is claimed by a shard, at least two shards
worked, and `kforge status --json` lists the shards with Slurm's word on each. Skips (77)
where Slurm cannot start here (no root, no Slurm), as tools/slurm/local.sh does."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

WAIT_S = 900   # a bound on any one wait on a loaded 2-core machine

py = torch_python()
work = scratch("e2e-slurm")
slurm_env, env = local_slurm(work, 2, "e2e_test_slurm")


def slurm(*args):
    return subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=120)


def run_json(run_dir):
    try:
        with open(os.path.join(run_dir, "run.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def wait_for(what, cond, proc=None):
    deadline = time.time() + WAIT_S
    while not cond():
        check(time.time() < deadline, "waited %d s for %s" % (WAIT_S, what))
        check(proc is None or proc.poll() is None, "the follower ended while waiting for %s" % what)
        time.sleep(0.5)


def claims(run_dir):
    out = {}
    d = os.path.join(run_dir, "claims")
    for name in os.listdir(d) if os.path.isdir(d) else []:
        if not name.startswith("."):
            try:
                with open(os.path.join(d, name)) as f:
                    out[name] = json.load(f)["shard"]
            except (OSError, ValueError, KeyError):
                pass
    return out


def descendants(root):
    """Every process under root, from /proc's parent links."""
    children = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


try:
    run_dir = os.path.join(work, "run")
    sets = ["--set", "eval.device=cpu", "--set", "runner.python=" + py,
            "--set", "cluster.engine=slurm", "--set", "cluster.shards=2", "--set", "workers=1",
            "--set", "cluster.mem=1G", "--set", "cluster.cpus_per_shard=1",
            "--set", "cluster.claim_timeout_s=15"]
    follower = subprocess.Popen([BIN, "run", os.path.join(HOME, "configs", "demo.yaml"), "--run-dir",
                                 run_dir, "--progress-interval", "10"] + sets, env=env,
                                stdout=open(os.path.join(work, "follow1.out"), "w"),
                                stderr=subprocess.STDOUT, start_new_session=True)
    wait_for("the job id in run.json", lambda: run_json(run_dir).get("cluster", {}).get("jobs"),
             follower)
    job = run_json(run_dir)["cluster"]["jobs"][0]["job"]
    victim = job + "_0"

    # A task of shard 0 past GENERATE (so mid-turn, no request in flight): kill the shard.
    def victim_mid_turn():
        return [t for t, s in claims(run_dir).items()
                if s == victim and last_to(run_dir, t) in ("PRECOMPILE", "EXECUTE", "PROFILE")]
    wait_for("a task of shard %s mid-turn" % victim, victim_mid_turn, follower)
    held = victim_mid_turn()
    # As a node that dies: every process of the shard SIGKILLed at once, nothing graceful
    # (scancel --signal=KILL is a cancel to Slurm: SIGTERM first, which a shard obeys).
    with open(os.path.join(run_dir, "shards", victim, "run.json")) as f:
        shard_pid = json.load(f)["pid"]
    tree = descendants(shard_pid) + [shard_pid]
    for pid in tree:
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            pass
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

    def victim_ended():
        q = slurm("squeue", "-h", "-r", "-o", "%i %T", "-j", job)
        return q.returncode == 0 and not any(l.split()[0] == victim and l.split()[1] in ("RUNNING", "COMPLETING")
                                             for l in q.stdout.splitlines() if l.strip())
    wait_for("the killed shard to end", victim_ended, follower)
    # Its heartbeat stopped: after cluster.claim_timeout_s another shard takes its task over.
    wait_for("another shard to take over %s" % held[0],
             lambda: claims(run_dir).get(held[0]) not in (None, victim), follower)
    taker = claims(run_dir)[held[0]]
    with open(os.path.join(run_dir, "shards", taker, "supervisor.log")) as f:
        check(any("%s: taken over from shard %s" % (held[0], victim) in line for line in f),
              "shard %s's log does not say it took %s over" % (taker, held[0]))
    rq = slurm("scontrol", "requeue", victim)
    check(rq.returncode == 0, "scontrol requeue: %s %s" % (rq.stdout, rq.stderr))
    # Slurm holds a requeued job about two minutes before it may start again: not here.
    slurm("scontrol", "update", "JobId=" + victim, "StartTime=now")

    # The follower killed; a resume follows again and adds a third shard.
    follower.send_signal(signal.SIGKILL)
    follower.wait()
    r = subprocess.run([BIN, "resume", run_dir, "--add-shards", "1", "--progress-interval", "10"],
                       env=env, capture_output=True, text=True, timeout=WAIT_S * 2)
    with open(os.path.join(work, "follow2.out"), "w") as f:
        f.write(r.stdout + r.stderr)
    check(r.returncode == 0, "kforge resume exited %d: %s" % (r.returncode, (r.stdout + r.stderr)[-3000:]))

    # Every turn as recorded, and no task lost, repeated or asked twice.
    d = demo_check(run_dir, "cpu")
    check(d.returncode == 0, "demo_check: %s%s" % (d.stdout, d.stderr))
    tasks = [t["id"] for t in json.load(open(os.path.join(run_dir, "tasks.json")))]
    st = json.loads(kforge("status", run_dir, "--json", env=env).stdout)
    check(all(t["state"] == "DONE" for t in st["tasks"]), "not every task is DONE: %s" %
          [(t["id"], t["state"]) for t in st["tasks"]])
    for t in st["tasks"]:
        check(t["llm"]["requests"] == t["turns"],
              "%s: %d requests for %d turns: a reply was requested twice" % (t["id"], t["llm"]["requests"], t["turns"]))
    for task in tasks:
        recs = records(run_dir, task)
        check(sum(r["event"] == "start" for r in recs) == 1, "%s: started %d times" %
              (task, sum(r["event"] == "start" for r in recs)))
        check_artifacts(run_dir, task, recs)
    owners = claims(run_dir)
    check(sorted(owners) == sorted(tasks), "claimed: %s, tasks: %s" % (sorted(owners), sorted(tasks)))
    jobs = run_json(run_dir)["cluster"]["jobs"]
    check(len(jobs) == 2 and jobs[1]["shards"] == 1, "run.json's jobs: %s" % jobs)
    added = jobs[1]["job"] + "_0"
    check(added in owners.values(), "the shard added mid-run (%s) claimed nothing: %s" % (added, owners))
    check(len(set(owners.values())) >= 2, "one shard did everything: %s" % owners)
    # The requeued shard is the same shard: its log shows two starts, the second after the
    # kill, and Slurm's output file keeps both lives.
    with open(os.path.join(run_dir, "shards", victim, "supervisor.log")) as f:
        starts = sum("run demo in" in line for line in f)
    check(starts == 2, "shard %s started %d times (killed once, requeued once)" % (victim, starts))
    with open(os.path.join(run_dir, "shards", "slurm-%s.out" % victim)) as f:
        starts = sum("run demo in" in line for line in f)
    check(starts == 2, "slurm-%s.out holds %d starts, not both lives" % (victim, starts))
    with open(os.path.join(run_dir, "shards", victim, "run.json")) as f:
        check(json.load(f).get("restarts") == 1, "shard %s does not say it was requeued" % victim)
    shards = {s["shard"]: s for s in st.get("shards", [])}
    check(set(shards) >= {victim, job + "_1", added}, "status lists shards %s" % sorted(shards))
    check(all(s["status"] == "finished" and s["slurm_state"] for s in shards.values()),
          "shards at the end: %s" % shards)
    text = kforge("status", run_dir, env=env).stdout
    check("shards (Slurm):" in text and victim in text, "status text has no shards table:\n%s" % text)
    print("ok: demo on 2 shards + 1 added, one killed mid-turn (%s) and requeued, the follower "
          "killed and resumed; every turn as recorded, %d requests for %d turns" %
          (held[0], sum(t["llm"]["requests"] for t in st["tasks"]), sum(t["turns"] for t in st["tasks"])))

    # kforge stop of a run nobody follows: Slurm stops the shard at a turn's boundary, its
    # unfinished tasks let go; kforge resume then submits a new array for what is left.
    run2 = os.path.join(work, "run2")
    r = subprocess.run([BIN, "run", os.path.join(HOME, "configs", "demo.yaml"), "--run-dir", run2,
                        "--detach"] + sets + ["--set", "cluster.shards=1", "--set", "problems.levels=[1]",
                                              "--set", "problems.ids=1-2", "--set", "cluster.partition=debug",
                                              "--set", "cluster.gres=gpu:1", "--set", "cluster.time_limit=30:00",
                                              "--set", "cluster.sbatch_args=[--comment=kforge-run2]"],
                       env=env, capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "kforge run --detach: %s" % r.stderr)
    job2 = run_json(run2)["cluster"]["jobs"][0]["job"]
    # Every cluster key reached sbatch: Slurm's record of the job says so.
    shown = slurm("scontrol", "show", "job", job2).stdout
    for want in ("Partition=debug", "TimeLimit=00:30:00", "gpu:1", "Comment=kforge-run2",
                 "MinMemoryNode=1G", "NumCPUs=1", "Requeue=1", "JobName=kforge-demo"):
        check(want in shown, "scontrol show job %s lacks %s:\n%s" % (job2, want, shown))
    wait_for("a task of run2 mid-turn", lambda: [t for t in claims(run2)
                                                 if last_to(run2, t) in ("PRECOMPILE", "EXECUTE", "PROFILE")])
    s2 = kforge("stop", run2, env=env)
    check("asked Slurm" in s2.stdout, "kforge stop: %s %s" % (s2.stdout, s2.stderr))
    wait_for("the stopped shard to leave Slurm",
             lambda: slurm("squeue", "-h", "-j", job2).stdout.strip() == "")
    with open(os.path.join(run2, "shards", job2 + "_0", "run.json")) as f:
        sh = json.load(f)
    check(sh["status"] == "stopped", "the stopped shard says %s" % sh["status"])
    st2 = json.loads(kforge("status", run2, "--json", env=env).stdout)
    left = [t["id"] for t in st2["tasks"] if t["state"] != "DONE"]
    check(left, "the run finished before the stop could matter")
    check(not any(t in claims(run2) for t in left), "a stopped shard kept claims: %s" % claims(run2))
    r = subprocess.run([BIN, "resume", run2, "--quiet"], env=env, capture_output=True, text=True,
                       timeout=WAIT_S)
    check(r.returncode == 0, "kforge resume of a stopped Slurm run: %s" % (r.stdout + r.stderr)[-2000:])
    jobs2 = run_json(run2)["cluster"]["jobs"]
    check(len(jobs2) == 2 and jobs2[1]["shards"] == 1, "resume submitted %s" % jobs2)
    st2 = json.loads(kforge("status", run2, "--json", env=env).stdout)
    check(all(t["state"] == "DONE" and t["llm"]["requests"] == t["turns"] for t in st2["tasks"]),
          "after resume: %s" % [(t["id"], t["state"], t["llm"]["requests"]) for t in st2["tasks"]])
    print("ok: kforge stop stopped the shard mid-run (%d task(s) let go), resume submitted a new "
          "array and finished them" % len(left))
finally:
    local_slurm_stop(slurm_env)
