"""browser.py: headless Chromium (Debian's package) driven over the DevTools protocol, for
the tests that open kforge's pages in a real browser. Standard library only: a minimal
websocket client (RFC 6455 text frames, masked as a client must) is enough for the
protocol's JSON messages.

    b = Chromium(scratch_dir)          # fails, naming tools/setup.sh, without chromium
    page = b.open(url)                 # a fresh tab, its console and errors recorded
    page.eval("document.title")        # a JS expression's value
    page.errors()                      # console errors, uncaught exceptions, failed loads
    page.screenshot(path)
    b.close()
"""
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.request

from kfe2e import check, fail

WAIT_S = 300    # a bound on waiting for the browser on a loaded machine, never a measurement
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-port=0",
         "--window-size=1280,1800"]


def chromium_path():
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    fail("chromium is not installed: tools/setup.sh installs it (Debian package 'chromium'); "
         "this test opens the pages in a real browser and cannot run without one")


class WebSocket:
    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=WAIT_S)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            check(chunk, "the DevTools websocket closed during the handshake")
            head += chunk
        head, self.pending = head.split(b"\r\n\r\n", 1)
        check(head.startswith(b"HTTP/1.1 101"), "DevTools websocket handshake: %r" % head[:200])

    def _read(self, n):
        while len(self.pending) < n:
            chunk = self.sock.recv(1 << 20)
            check(chunk, "the DevTools websocket closed")
            self.pending += chunk
        data, self.pending = self.pending[:n], self.pending[n:]
        return data

    def send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            op = b0 & 0x0F
            if op == 0x8:
                fail("the browser closed the DevTools connection")
            if op == 0x9:       # ping: pong (masked, as a client's frames are)
                m = os.urandom(4)
                self.sock.sendall(bytes([0x8A, 0x80 | len(data)]) + m +
                                  bytes(b ^ m[i % 4] for i, b in enumerate(data)))
                continue
            if op in (0x1, 0x2, 0x0):
                message += data
                if b0 & 0x80:
                    return message.decode()

    def close(self):
        self.sock.close()


class Page:
    def __init__(self, ws_url):
        self.ws = WebSocket(ws_url)
        self.next_id = 0
        self.events = []
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride", width=1280, height=1800,
                  deviceScaleFactor=1, mobile=False)

    def call(self, method, **params):
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mine:
                check("error" not in msg, "DevTools %s: %s" % (method, msg.get("error")))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def navigate(self, url):
        """Loads url and waits for its load event."""
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        self.call("Page.navigate", url=url)
        deadline = time.time() + WAIT_S
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            check(time.time() < deadline, "%s did not load" % url)
            self.eval("1")      # reads events while waiting
            time.sleep(0.1)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        check("exceptionDetails" not in r, "JS %r threw: %s" % (expr, r.get("exceptionDetails")))
        return r["result"].get("value")

    def wait_for(self, expr, what, timeout=WAIT_S):
        """Polls a JS expression until it is truthy."""
        deadline = time.time() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            check(time.time() < deadline, "the page never showed %s" % what)
            time.sleep(0.5)

    def errors(self):
        """Console errors, uncaught exceptions, failed requests: what a user would see in
        the console."""
        self.eval("1")
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.%s: %s" % (p["type"], [a.get("value", a.get("description")) for a in p["args"]]))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: %s" % p["exceptionDetails"].get("exception", {}).get("description",
                                                                                            p["exceptionDetails"]))
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append("log: %s %s" % (p["entry"].get("text"), p["entry"].get("url", "")))
            elif m == "Network.loadingFailed" and not p.get("canceled"):
                out.append("request failed: %s" % p.get("errorText"))
        return out

    def requests(self):
        """The URLs the page asked for, in order."""
        self.eval("1")
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
        check(os.path.getsize(path) > 1000, "the screenshot %s is empty" % path)

    def close(self):
        self.ws.close()


class Chromium:
    def __init__(self, work):
        exe = chromium_path()
        profile = os.path.join(work, "chromium-profile")
        shutil.rmtree(profile, ignore_errors=True)
        os.makedirs(profile)
        self.log = os.path.join(work, "chromium.log")
        self.proc = subprocess.Popen([exe] + FLAGS + ["--user-data-dir=" + profile, "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "w"),
                                     start_new_session=True)
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + WAIT_S
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            check(self.proc.poll() is None, "chromium exited %s: %s" % (self.proc.returncode,
                                                                        open(self.log).read()[-3000:]))
            check(time.time() < deadline, "chromium did not open its DevTools port")
            time.sleep(0.1)
        self.port = int(open(port_file).read().split("\n")[0])

    def open(self, url):
        req = urllib.request.Request("http://127.0.0.1:%d/json/new?about:blank" % self.port, method="PUT")
        with urllib.request.urlopen(req, timeout=WAIT_S) as r:
            target = json.loads(r.read())
        page = Page(target["webSocketDebuggerUrl"])
        page.navigate(url)
        return page

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
