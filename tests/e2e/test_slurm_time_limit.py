#!/usr/bin/env python3
"""A shard's Slurm time limit, for real, on a one-host Slurm (tools/slurm/local.sh, in a
state directory and on ports of this test's own).

Two tasks of five turns run detached on one shard with cluster.time_limit 1 (a minute,
Slurm's shortest), against the real mock LLM server on loopback answering each request
after 10 s with a reply without code (so each task takes at least 50 s, whatever the
machine, and compiles nothing; the raw format's selftest, cached after the first, takes
a second where load_inline's takes a minute of this one-minute limit). kforge asks Slurm for SIGUSR1 120 s before the limit
(sbatch --signal=B:USR1@120), which with a one-minute limit comes at Slurm's first look at
its time limits, within 30 s of the start: this Slurm looks every 30 s (PERIODIC_TIMEOUT),
and with OverTimeLimit 0 and KillWait 10 (local.sh) ends the job 60-90 s in. Then:
- the shard stops at a safe point: its log says the time limit is near and how many
  workers finish their step, a reply in flight is awaited and saved, it ends "stopped",
  every trajectory is whole (no torn line, seq without gap, every artifact a record names
  there with its hash) and tasks are left unfinished;
- it requeues itself (scontrol requeue of its own job): the element comes back as the
  same shard (SLURM_RESTART_COUNT 1), takes the tasks it let go, and finishes them. The
  test lifts the requeued element's time limit (so that its second life is not warned
  again), which is not kforge's doing; Slurm starts it again once the credential of its
  first life has expired (tools/slurm/local.sh sets cred_expire to 20 s);
- at the end every task is DONE with its five turns, started once, and the mock served
  exactly one request per turn (its own log: nothing asked twice across the two lives),
  and `kforge status --json` shows the ended element's final state from Slurm's job
  completion log (sacct -c; local.sh keeps jobcomp/filetxt), COMPLETED, where squeue no
  longer lists it.
About a minute and a half, most of it Slurm's (its start, a first life of up to half a
minute, 20 s for the credential to expire, a second life of the turns left): 87 s on the
loaded 2-core machine. Skips (77) where Slurm cannot start here (no root, no Slurm), as
tools/slurm/local.sh does."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from kfe2e import *  # noqa: E402,F401

WAIT_S = 900   # a bound on any one wait on a loaded 2-core machine

py = torch_python()
work = scratch("e2e-slurm-tl")
slurm_env, env = local_slurm(work, 1, "e2e_test_slurm_time_limit")


def slurm(*args):
    return subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=120)


def wait_for(what, cond):
    deadline = time.time() + WAIT_S
    while not cond():
        check(time.time() < deadline, "waited %d s for %s" % (WAIT_S, what))
        time.sleep(0.5)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def element_state(element):
    q = slurm("squeue", "-h", "-r", "-o", "%i %T %r", "-j", element.split("_")[0])
    if q.returncode != 0:
        return "unknown", q.stderr.strip()     # Slurm busy: nothing learnt
    for line in q.stdout.splitlines():
        f = line.split()
        if f and f[0] == element:
            return f[1], (f[2] if len(f) > 2 else "")
    return None, ""


REPLY_S = 10    # each reply's delay: a turn's least duration
TURNS = 5
problems = copy_problems(os.path.join(work, "problems"), ["level1/1_ReLU.py", "level1/2_LeakyReLU.py"])
mock = MockLLM(work, {"rules": [{"replies": [reply("leaky_1.md", delay_s=REPLY_S)] * (4 * TURNS)}]})
config = write_config(os.path.join(work, "tl.yaml"), """
name: tl
problems: {dir: %s, levels: [1], samples: 1}
llm: {provider: openai, base_url: "%s", model: mock-model, concurrency: 2}
refinement: {turns: %d}
eval: {device: cpu, format: raw}
runner: {python: %s}
workers: 2
cluster: {engine: slurm, shards: 1, time_limit: "1", mem: 1G, cpus_per_shard: 1}
""" % (problems, mock.base_url, TURNS, py))

try:
    run_dir = os.path.join(work, "run")
    r = subprocess.run([BIN, "run", config, "--run-dir", run_dir, "--detach"],
                       env=env, capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "kforge run --detach: %s %s" % (r.stdout, r.stderr))
    with open(os.path.join(run_dir, "run.json")) as f:
        job = json.load(f)["cluster"]["jobs"][0]["job"]
    shard = job + "_0"
    shown = slurm("scontrol", "show", "job", job).stdout
    check("TimeLimit=00:01:00" in shown, "the shard's time limit is not a minute:\n%s" % shown)
    sup_log = os.path.join(run_dir, "shards", shard, "supervisor.log")
    out_log = os.path.join(run_dir, "shards", "slurm-%s.out" % shard)

    # The first life: warned, stopped at a safe point, requeued by itself.
    def requeued():
        done = "requeueing job" in read(out_log)
        check(done or element_state(shard)[0] is not None,
              "the shard ended without requeueing itself:\n%s" % (read(sup_log) + read(out_log))[-3000:])
        return done
    wait_for("the shard to requeue itself", requeued)
    text = read(sup_log)
    check("Slurm's time limit for this shard is near" in text, "no warning in %s:\n%s" % (sup_log, text[-2000:]))
    check("stopped before this shard's Slurm time limit" in text, "no closing line in %s" % sup_log)
    busy = [int(l.split("stopping: ")[1].split()[0]) for l in text.splitlines() if "stopping: " in l and "workers finish" in l]
    check(busy and busy[0] >= 1, "the warning found no worker at work: %s" % busy)
    with open(os.path.join(run_dir, "shards", shard, "run.json")) as f:
        first = json.load(f)
    check(first["status"] == "stopped" and first.get("restarts") == 0,
          "after its first life the shard says %s, restarts %s" % (first["status"], first.get("restarts")))
    # No half-written turn: every log whole, every artifact it names in place.
    tasks = [t["id"] for t in json.load(open(os.path.join(run_dir, "tasks.json")))]
    left = 0
    for task in tasks:
        if os.path.exists(os.path.join(run_dir, "tasks", task, "trajectory.jsonl")):
            recs = records(run_dir, task)
            check_artifacts(run_dir, task, recs)
            left += recs[-1]["to"] != "DONE"
        else:
            left += 1
    check(left > 0, "every task finished in the first life: the time limit proved nothing")
    served = len(mock.requests())
    check(served < len(tasks) * TURNS, "every reply was served in the first life")

    # The element back in Slurm's queue, its second life unhurried. It starts once its old
    # credential has expired (local.sh: cred_expire 20 s; Slurm's default 120 s): started
    # sooner, Slurm kills it as "non-startable, credential revoked".
    wait_for("the requeued element to pend", lambda: element_state(shard)[0] == "PENDING")
    u = slurm("scontrol", "update", "JobId=" + shard, "TimeLimit=30")
    check(u.returncode == 0, "scontrol update: %s %s" % (u.stdout, u.stderr))
    wait_for("the second life to end", lambda: element_state(shard)[0] is None and
             json.load(open(os.path.join(run_dir, "shards", shard, "run.json"))).get("restarts") == 1
             and json.load(open(os.path.join(run_dir, "shards", shard, "run.json")))["status"] != "running")

    st = json.loads(kforge("status", run_dir, "--json", env=env).stdout)
    check(all(t["state"] == "DONE" and t["turns"] == TURNS for t in st["tasks"]),
          "after the requeue: %s" % [(t["id"], t["state"], t["turns"]) for t in st["tasks"]])
    for t in st["tasks"]:
        check(t["llm"]["requests"] == t["turns"],
              "%s: %d requests for %d turns: a reply was requested twice" % (t["id"], t["llm"]["requests"], t["turns"]))
    check(len(mock.requests()) == len(tasks) * TURNS, "the mock served %d requests for %d turns" %
          (len(mock.requests()), len(tasks) * TURNS))
    for task in tasks:
        recs = records(run_dir, task)
        check(sum(r["event"] == "start" for r in recs) == 1, "%s: started more than once" % task)
        check_artifacts(run_dir, task, recs)
    starts = sum("run tl in" in line for line in read(sup_log).splitlines())
    check(starts == 2, "shard %s started %d times, not twice" % (shard, starts))
    shards = {s["shard"]: s for s in st.get("shards", [])}
    check(shard in shards and shards[shard]["status"] == "finished" and shards[shard]["restarts"] == 1,
          "status's shards: %s" % shards)
    # squeue has forgotten the element (an ended job is not listed); sacct -c has not.
    check(shards[shard]["slurm_state"] == "COMPLETED",
          "the ended shard's Slurm state is %r, not sacct's COMPLETED" % shards[shard]["slurm_state"])
    print("ok: shard %s warned of its time limit stopped with %d worker(s) at work, %d of %d "
          "replies served, requeued itself and finished; %d requests for %d turns; sacct: %s" % (
              shard, busy[0], served, len(tasks) * TURNS, len(mock.requests()),
              sum(t["turns"] for t in st["tasks"]), shards[shard]["slurm_state"]))
finally:
    mock.stop()
    local_slurm_stop(slurm_env)
