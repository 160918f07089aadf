#!/usr/bin/env python3
"""contract_server.py: a small server for the tests of the verify stage (tests/test_verify.py,
tests/it_servers.sh): the contract (CONTRACT.md) with the users in memory, and one
deliberate breach chosen by --lie, so that a test can check verify names that very case;
--interim adds 1xx interim responses a correct server may send (103 Early Hints, 100 Continue).
Not a server to measure (Python's http.server, a thread per connection); stdlib only.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIES = {
    "none": "keeps the contract",
    "user-email": "the last seeded user has another email",
    "any-token": "any bearer token is accepted",
    "no-location": "a 201 without Location",
    "head-body": "HEAD answers carry the body",
    "close": "every 10th response on a connection says Connection: close and closes",
    "unknown-200": "an unknown id answers 200",
    "list-next": "a page's next is off by one",
    "ping-type": "/ping answers application/json",
    "never-ready": "/ping answers 503",
    "ignore-term": "SIGTERM is ignored",
    "switch-101": "every answer is an unasked-for 101 Switching Protocols",
    "no-request-id": "no X-Request-Id on any answer (a same-work warning, not a failure)",
    "list-open": "GET /users?... answers without the bearer (a same-work warning for s2)",
}
RID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# --interim: 1xx interim responses a correct server may send (RFC 9110 15.2), and still keeps
# the contract; a client must skip them and read the final response.
INTERIM = {
    "none": "no interim responses",
    "hints": "103 Early Hints before every response",
    "continue": "100 Continue before reading a request's body",
}
EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"


def make_handler(opt, users, lock):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes
        served = 0

        def log_message(self, *args):
            pass

        def reply(self, status, ctype, body, extra=None):
            data = body.encode() if isinstance(body, str) else body
            self.served += 1
            if opt.lie == "switch-101":
                self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                 b"Connection: upgrade\r\n\r\n")
                self.close_connection = True
                return
            if opt.interim == "hints":
                self.wfile.write(EARLY_HINTS)
            close = opt.lie == "close" and self.served % 10 == 0
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            if self.path.startswith("/users") and opt.lie != "no-request-id":
                rid = self.headers.get("X-Request-Id", "")
                self.send_header("X-Request-Id", rid if RID_RE.match(rid) else os.urandom(8).hex())
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD" or opt.lie == "head-body":
                self.wfile.write(data)

        def error(self, status, msg, extra=None):
            self.reply(status, "application/json", json.dumps({"error": msg}), extra)

        def authorized(self):
            h = self.headers.get("Authorization", "")
            if opt.lie == "any-token":
                return h.lower().startswith("bearer ")
            return h[:7].lower() == "bearer " and h[7:] == opt.bearer

        def read_body(self):
            n = int(self.headers.get("Content-Length") or 0)
            if n and opt.interim == "continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return self.rfile.read(n) if n else b""

        def route(self):
            path, _, query = self.path.partition("?")
            if path == "/ping":
                if opt.lie == "never-ready":
                    return self.error(503, "not ready")
                return self.reply(200, "application/json" if opt.lie == "ping-type" else "text/plain", "pong")
            if path == "/users" or path.startswith("/users/"):
                body = self.read_body() if self.command == "POST" else b""
                if not self.authorized() and not (opt.lie == "list-open" and path == "/users"
                                                  and self.command == "GET"):
                    return self.error(401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"})
                if path == "/users" and self.command == "POST":
                    doc = json.loads(body)
                    with lock:
                        user = {"id": len(users) + 1, "name": doc["name"], "email": doc["email"]}
                        users.append(user)
                    extra = {} if opt.lie == "no-location" else {"Location": f"/users/{user['id']}"}
                    return self.reply(201, "application/json", json.dumps(user), extra)
                if path == "/users":
                    q = dict(kv.partition("=")[::2] for kv in query.split("&") if kv)
                    limit, after = int(q.get("limit", 10)), int(q.get("after", 0))
                    with lock:
                        page = users[after:after + limit]
                        more = after + limit < len(users)
                    nxt = page[-1]["id"] if more and page else None
                    if opt.lie == "list-next" and nxt is not None:
                        nxt += 1
                    return self.reply(200, "application/json", json.dumps({"users": page, "next": nxt}))
                try:
                    i = int(path[len("/users/"):])
                except ValueError:
                    return self.error(400, "bad id")
                with lock:
                    user = users[i - 1] if 1 <= i <= len(users) else None
                if user is None and opt.lie == "unknown-200":
                    user = {"id": i, "name": f"user-{i}", "email": f"user-{i}@example.com"}
                if user is None:
                    return self.error(404, "user not found")
                if opt.lie == "user-email" and i == opt.seed_users:
                    user = dict(user, email="someone-else@example.com")
                return self.reply(200, "application/json", json.dumps(user))
            return self.error(404, "not found")

        do_GET = do_HEAD = do_POST = route

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--bearer", required=True)
    ap.add_argument("--seed-users", type=int, default=10000)
    ap.add_argument("--lie", choices=sorted(LIES), default="none")
    ap.add_argument("--interim", choices=sorted(INTERIM), default="none")
    opt = ap.parse_args()
    users = [{"id": i, "name": f"user-{i}", "email": f"user-{i}@example.com"}
             for i in range(1, opt.seed_users + 1)]
    srv = ThreadingHTTPServer((opt.host, opt.port), make_handler(opt, users, threading.Lock()))
    srv.daemon_threads = True
    if opt.lie == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=srv.shutdown).start())
    print(f"contract_server: listening on http://{opt.host}:{srv.server_address[1]} (lie: {opt.lie})",
          file=sys.stderr, flush=True)
    srv.serve_forever()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
