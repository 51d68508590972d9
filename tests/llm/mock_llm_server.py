#!/usr/bin/env python3
"""mock_llm_server.py: a scripted OpenAI-compatible chat-completions server for tests,
which also speaks the Anthropic Messages API on paths ending in /messages.

Python standard library only; runs with any python3 >= 3.7.

    mock_llm_server.py [--host 127.0.0.1] [--port 0] [--port-file F] [--script S.json]
                       [--log L.jsonl] [--state-file ST.json] [--listen-when F]

--port 0 binds a random free port; --port-file receives the bound port (written to a
temporary name and renamed, so a reader never sees half of it). --log appends one JSON
line per request received, written before the reply is sent:
    {"time": 1732240000.123, "method": "POST", "path": "/v1/chat/completions",
     "headers": {...all request headers, Authorization included...},
     "body": <parsed JSON body, or the raw text when it is not JSON>,
     "rule": <index of the matching rule, or "default">, "n": <its count, from 1>,
     "tag": <the served REPLY's "tag", only when it has one>}
--state-file keeps the per-rule counters (rewritten atomically after each request) so
a restarted server continues the sequences. --listen-when binds the port (and writes
--port-file) at once but listens only once that file exists: until then a connection to
the port is refused, and a test decides by an event, not a clock, when the server comes
up. SIGTERM or SIGINT stops the server.

Any POST is answered as a chat completion, or, on a path ending in /messages, as an
Anthropic message: {"type": "message", "content": [thinking block (from "reasoning"),
text block (from "content")], "stop_reason", "usage": {"input_tokens", "output_tokens"}},
with errors as {"type": "error", "error": {"type", "message"}} (the type from the
status as Anthropic documents it: 400 invalid_request_error, 401 authentication_error,
403 permission_error, 429 rate_limit_error, 500 api_error, 529 overloaded_error).
GET /health and GET <anything>/models answer too.

Script (JSON; without --script every request gets the default reply):
    {"rules": [{"match": "substring of the last user message",
                "replies": [REPLY, REPLY, ...]}, ...],
     "default": REPLY}
The first rule whose "match" occurs in the last user message serves the request (a rule
without "match" matches every request). The n-th request served by a rule gets its
n-th reply; once the list is spent its last reply repeats. Requests that no rule
matches get "default" (a plain "ok" completion when absent).

A REPLY is an object; every key is optional:
    "content"       the assistant message text (default "ok")
    "reasoning"     sent as message.reasoning_content
    "finish_reason" default "stop"; null leaves it out
    "status"        HTTP status (default 200); a non-200 without raw_body gets an
                    OpenAI-style {"error": {"message": content, ...}} body
    "delay_s"       sleep before answering anything
    "hold_until"    a path: answer only once that file exists (a test's event, where a
                    delay would race the machine's speed)
    "headers"       extra response headers, e.g. {"Retry-After": "1"}
    "raw_body"      sent verbatim instead of a completion (e.g. "not json")
    "stall_s"       send the status line and headers (Content-Length of the full body),
                    then stall this long before the body
    "usage"         the usage object (default computed from lengths)
    "repeat_bytes"  pad content with "x" up to this many bytes, for huge replies
    "no_content"    true: the message has no content key at all
    "stop_reason"   Anthropic only: default "end_turn"
    "blocks"        Anthropic only: the content blocks, verbatim
    "error_type"    Anthropic only: error.type instead of the status's own
    "tag"           any JSON value, not sent: copied into the request's --log record, so
                    a test can tell which scripted reply (or fault) each request got
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Script:
    def __init__(self, spec, state_file):
        self.rules = spec.get("rules", [])
        self.default = spec.get("default", {})
        self.state_file = state_file
        self.lock = threading.Lock()
        self.counts = {}
        if state_file and os.path.exists(state_file):
            with open(state_file) as f:
                self.counts = json.load(f).get("counts", {})

    def pick(self, last_user):
        """Returns (rule key, n, reply) for a request and counts it."""
        for i, rule in enumerate(self.rules):
            m = rule.get("match")
            if m is None or m in last_user:
                key, replies = str(i), rule.get("replies") or [{}]
                break
        else:
            key, replies = "default", [self.default]
        with self.lock:
            n = self.counts.get(key, 0) + 1
            self.counts[key] = n
            if self.state_file:
                tmp = "%s.tmp.%d" % (self.state_file, os.getpid())
                with open(tmp, "w") as f:
                    json.dump({"counts": self.counts}, f)
                os.replace(tmp, self.state_file)
        return (i if key != "default" else "default"), n, replies[min(n, len(replies)) - 1]


def last_user_message(body):
    if not isinstance(body, dict):
        return ""
    for m in reversed(body.get("messages") or []):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return "".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c if isinstance(c, str) else ""
    return ""


def completion(reply, body):
    content = reply.get("content", "ok")
    pad = reply.get("repeat_bytes")
    if pad and len(content.encode()) < pad:
        content += "x" * (pad - len(content.encode()))
    message = {"role": "assistant"}
    if not reply.get("no_content"):
        message["content"] = content
    if "reasoning" in reply:
        message["reasoning_content"] = reply["reasoning"]
    choice = {"index": 0, "message": message}
    if reply.get("finish_reason", "stop") is not None:
        choice["finish_reason"] = reply.get("finish_reason", "stop")
    prompt = last_user_message(body)
    usage = reply.get("usage", {
        "prompt_tokens": max(1, len(prompt) // 4),
        "completion_tokens": max(1, len(content) // 4),
        "total_tokens": max(1, len(prompt) // 4) + max(1, len(content) // 4),
    })
    return {
        "id": "chatcmpl-mock-%d" % int(time.time() * 1000),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "mock") if isinstance(body, dict) else "mock",
        "choices": [choice],
        "usage": usage,
    }


ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error",
                    413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                    529: "overloaded_error"}


def anthropic_message(reply, body):
    content = reply.get("content", "ok")
    pad = reply.get("repeat_bytes")
    if pad and len(content.encode()) < pad:
        content += "x" * (pad - len(content.encode()))
    blocks = reply.get("blocks")
    if blocks is None:
        blocks = []
        if "reasoning" in reply:
            blocks.append({"type": "thinking", "thinking": reply["reasoning"],
                           "signature": "mock-signature"})
        if not reply.get("no_content"):
            blocks.append({"type": "text", "text": content})
    prompt = last_user_message(body)
    usage = reply.get("usage", {"input_tokens": max(1, len(prompt) // 4),
                                "output_tokens": max(1, len(content) // 4)})
    return {
        "id": "msg_mock_%d" % int(time.time() * 1000), "type": "message",
        "role": "assistant",
        "model": body.get("model", "mock") if isinstance(body, dict) else "mock",
        "content": blocks, "stop_reason": reply.get("stop_reason", "end_turn"),
        "stop_sequence": None, "usage": usage,
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-llm/1"

    def log_message(self, fmt, *args):
        pass

    def send_bytes(self, status, data, headers=None, stall_s=0):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.flush()
        if stall_s:
            time.sleep(stall_s)
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_bytes(200, json.dumps({"object": "list", "data": [
                {"id": "mock", "object": "model"}]}).encode())
        else:
            self.send_bytes(200, b'{"status": "ok"}')

    def do_POST(self):
        srv = self.server
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            body = raw.decode("utf-8", "replace")
        rule, n, reply = srv.script.pick(last_user_message(body))
        rec = {
            "time": time.time(), "method": "POST", "path": self.path,
            "headers": {k: v for k, v in self.headers.items()},
            "body": body, "rule": rule, "n": n,
        }
        if "tag" in reply:
            rec["tag"] = reply["tag"]
        srv.write_log(rec)
        while reply.get("hold_until") and not os.path.exists(reply["hold_until"]):
            time.sleep(0.02)
        if reply.get("delay_s"):
            time.sleep(reply["delay_s"])
        status = reply.get("status", 200)
        anthropic = self.path.rstrip("/").endswith("/messages")
        if "raw_body" in reply:
            data = reply["raw_body"].encode()
        elif anthropic and status != 200:
            data = json.dumps({"type": "error", "error": {
                "type": reply.get("error_type", ANTHROPIC_ERRORS.get(status, "api_error")),
                "message": reply.get("content", "mock error %d" % status)}}).encode()
        elif anthropic:
            data = json.dumps(anthropic_message(reply, body)).encode()
        elif status != 200:
            data = json.dumps({"error": {
                "message": reply.get("content", "mock error %d" % status),
                "type": "mock_error", "code": status}}).encode()
        else:
            data = json.dumps(completion(reply, body)).encode()
        try:
            self.send_bytes(status, data, reply.get("headers"), reply.get("stall_s", 0))
        except (BrokenPipeError, ConnectionResetError):
            pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, script, log_path):
        super().__init__(addr, Handler, bind_and_activate=False)
        self.server_bind()
        self.script = script
        self.log_lock = threading.Lock()
        self.log_file = open(log_path, "a") if log_path else None

    def handle_error(self, request, client_address):
        # Clients that give up (timeouts, size caps, stop tests) are expected.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    def write_log(self, rec):
        if self.log_file is None:
            return
        with self.log_lock:
            self.log_file.write(json.dumps(rec) + "\n")
            self.log_file.flush()


def main():
    ap = argparse.ArgumentParser(description="scripted OpenAI-compatible mock server")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--script")
    ap.add_argument("--log")
    ap.add_argument("--state-file")
    ap.add_argument("--listen-when")
    args = ap.parse_args()

    spec = {}
    if args.script:
        with open(args.script) as f:
            spec = json.load(f)
    srv = Server((args.host, args.port), Script(spec, args.state_file), args.log)

    def stop(signo, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    port = srv.server_address[1]
    if args.port_file:
        tmp = "%s.tmp.%d" % (args.port_file, os.getpid())
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    else:
        print(port, flush=True)
    try:
        # Bound but not listening: connections are refused until the file appears.
        while args.listen_when and not os.path.exists(args.listen_when):
            time.sleep(0.02)
        srv.server_activate()
        srv.serve_forever(poll_interval=0.1)
    except SystemExit:
        pass
    finally:
        if srv.log_file:
            srv.log_file.close()
        sys.stdout.flush()
        # Handler threads may be stalling on purpose; do not wait for them.
        os._exit(0)


if __name__ == "__main__":
    main()
