#!/usr/bin/env python3
"""kforge view serves nothing outside the run directory, over real HTTP on loopback.

A hand-built run directory holds links that lead out of it (to a directory, to a file,
one deep inside a task's turn) and a secret lies beside it. Every way of reaching out —
"..", percent-encoded dots and slashes (also doubly encoded), absolute paths, backslashes,
the links — is refused with 403 or 404 and never returns the secret; what is inside is
served as it is. The viewer listens on 127.0.0.1 only (by /proc/net/tcp), answers a
foreign Host with 403 and a POST with 405, and stops on SIGTERM with status 0.
"""
import atexit
import http.client
import json
import os
import secrets
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from kfe2e import *  # noqa: E402,F401

work = scratch("viewer-paths")
run = os.path.join(work, "run")
fake_run(run, "paths", [{"id": "A", "level": 1, "turns": [
    {"outcome": {"verdict": "correct", "reasons": [], "status": "ok", "compiled": True, "correct": True,
                 "speedup": 1.5}, "files": {"kernel": "print('inside')\n"},
     "leases": {"EXECUTE": (1, 2)}}]}], turns=1)
outside = os.path.join(work, "outside")
os.makedirs(outside)
SECRET = "SECRET-" + secrets.token_hex(8)
with open(os.path.join(outside, "secret.txt"), "w") as f:
    f.write(SECRET + "\n")
os.symlink(outside, os.path.join(run, "link-out"))
os.symlink(os.path.join(outside, "secret.txt"), os.path.join(run, "link-file"))
os.symlink("../../../../outside/secret.txt", os.path.join(run, "tasks", "A", "turns", "1", "evil.txt"))
os.symlink("/etc", os.path.join(run, "etc"))
os.symlink(outside, os.path.join(run, "tasks", "A", "turns", "9"))
# records that name those links as a turn's artifacts: the page must not show them either
log = os.path.join(run, "tasks", "A", "trajectory.jsonl")
recs = [json.loads(l) for l in open(log)]
gen = [r for r in recs if r["from"] == "GENERATE" and r["event"] == "ok"][0]
for key, rel in (("leak_file", "turns/1/evil.txt"), ("leak_dir", "turns/9/secret.txt"),
                 ("leak_abs", os.path.join(outside, "secret.txt")), ("leak_up", "../../../outside/secret.txt")):
    gen["data"][key] = {"path": rel, "sha256": "0" * 64}
with open(log, "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in recs)

view = subprocess.Popen([BIN, "view", run, "--port", "0"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
# a failed check exits at once: the viewers it started must not outlive it
started = [view]
atexit.register(lambda: [p.kill() for p in started if p.poll() is None])
line = ""
deadline = time.time() + STARTUP_WAIT_S
while "http://" not in line:
    check(view.poll() is None and time.time() < deadline, "kforge view did not start: %r %s"
          % (line, view.stderr.read() if view.poll() is not None else ""))
    line = view.stdout.readline()
url = line.split("http://", 1)[1].split("/", 1)[0]
host, port = url.rsplit(":", 1)
port = int(port)
check(host == "127.0.0.1", "the viewer serves on %s, want 127.0.0.1" % host)


def listening_addresses(port):
    """The local addresses with a listening TCP socket on port (IPv4 and IPv6)."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(name):
            continue
        for row in open(name).read().splitlines()[1:]:
            f = row.split()
            addr, p = f[1].rsplit(":", 1)
            if int(p, 16) == port and f[3] == "0A":
                found.append(addr)
    return found


check(listening_addresses(port) == ["0100007F"], "the viewer listens on %s, want 127.0.0.1 only"
      % listening_addresses(port))


def get(path, method="GET", headers=None):
    """One request with the path sent byte for byte as given."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in (headers or {"Host": "127.0.0.1:%d" % port}).items():
        c.putheader(k, v)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


status, body = get("/files/tasks.json")
check(status == 200 and body == open(os.path.join(run, "tasks.json"), "rb").read(),
      "/files/tasks.json: %d" % status)
status, body = get("/files/tasks/A/turns/1/kernel.txt")
check(status == 200 and body == b"print('inside')\n", "a turn's kernel: %d %r" % (status, body))
status, body = get("/")
check(status == 200 and b"<table class=\"sortable tasks\"" in body, "the page: %d" % status)
check(SECRET.encode() not in body, "the page shows a file outside the run that a record names")
check(body.count(b"(cannot be read)") == 2, "the page should show the two linked artifacts as unreadable")
status, body = get("/stamp")
check(status == 200 and len(body.strip()) == 16, "/stamp: %d %r" % (status, body))

attempts = [
    "/files/../outside/secret.txt",
    "/files/../../outside/secret.txt",
    "/files/%2e%2e/outside/secret.txt",
    "/files/%2E%2E%2Foutside%2Fsecret.txt",
    "/files/tasks/..%2f..%2foutside%2fsecret.txt",
    "/files/tasks/A/../../../outside/secret.txt",
    "/files/%252e%252e/outside/secret.txt",
    "/files/.%2e/outside/secret.txt",
    "/files/..%5coutside%5csecret.txt",
    "/files/..\\outside\\secret.txt",
    "/files/" + os.path.join(outside, "secret.txt"),
    "/files/%2f" + os.path.join(outside, "secret.txt").lstrip("/").replace("/", "%2f"),
    "/files//etc/passwd",
    "/files/link-out/secret.txt",
    "/files/link-file",
    "/files/tasks/A/turns/1/evil.txt",
    "/files/etc/passwd",
    "/files/./tasks.json/../../outside/secret.txt",
    "/../outside/secret.txt",
    "/%2e%2e/outside/secret.txt",
    "/files/tasks",
    "/files/",
    "/outside/secret.txt",
    "/etc/passwd",
]
for path in attempts:
    status, body = get(path)
    check(status in (403, 404), "%s: status %d, want 403 or 404" % (path, status))
    check(SECRET.encode() not in body and b"root:" not in body, "%s served something from outside" % path)

status, _ = get("/", headers={"Host": "attacker.example:%d" % port})
check(status == 403, "a foreign Host: %d, want 403" % status)
status, _ = get("/", method="POST")
check(status == 405, "POST: %d, want 405" % status)
status, _ = get("/files/tasks.json", method="DELETE")
check(status == 405, "DELETE: %d, want 405" % status)

# a second viewer on the port in use: one line, nonzero
p = kforge("view", run, "--port", str(port), check_rc=False, timeout=120)
check(p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "cannot listen" in p.stderr,
      "a viewer on a port in use: rc %d, %r" % (p.returncode, p.stderr))

# told to bind every address: it does, and a numeric Host passes, a DNS name does not
wide = subprocess.Popen([BIN, "view", run, "--port", "0", "--bind", "0.0.0.0"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
started.append(wide)
wline = wide.stdout.readline()
check("http://0.0.0.0:" in wline, "kforge view --bind 0.0.0.0 printed %r" % wline)
wport = int(wline.split("http://0.0.0.0:", 1)[1].split("/", 1)[0])
check(listening_addresses(wport) == ["00000000"], "--bind 0.0.0.0 listens on %s" % listening_addresses(wport))
saved, port = port, wport
for h, want in (("127.0.0.1:%d" % wport, 200), ("10.1.2.3:%d" % wport, 200), ("[::1]:%d" % wport, 200),
                ("rebound.example:%d" % wport, 403), ("10.1.2.3:%d" % (wport + 1), 403)):
    status, _ = get("/stamp", headers={"Host": h})
    check(status == want, "--bind 0.0.0.0, Host %s: %d, want %d" % (h, status, want))
port = saved
wide.send_signal(signal.SIGTERM)
check(wide.wait(timeout=120) == 0, "kforge view --bind 0.0.0.0 did not stop cleanly")

view.send_signal(signal.SIGTERM)
try:
    rc = view.wait(timeout=120)
except subprocess.TimeoutExpired:
    view.kill()
    fail("kforge view did not stop on SIGTERM")
check(rc == 0, "kforge view exited %d on SIGTERM" % rc)
print("ok: %d ways out of the run directory refused, nothing outside served; loopback only; "
      "foreign Host 403, POST 405; a port in use refused" % len(attempts))
