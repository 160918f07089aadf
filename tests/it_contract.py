#!/usr/bin/env python3
"""it_contract: the server contract (README.md "Running a server by hand": flags and routes;
ARCHITECTURE.md "HTTP handling"; CONTRACT.md), end to end, against the real binary on a free loopback
port. The benchmark contract's cases are runner.sh's own verify stage
(runner/analysis/verify.py), run here unchanged on a server seeded like a run's. Server-agnostic: SERVER picks the binary (default
build/async-server), STORE picks memory or sqlite (both when unset), so the actor server
runs the same checks unchanged. Raw sockets where status and close behaviour matter,
http.client elsewhere. Python 3 stdlib only; prints TAP on stdout, diagnostics as '#'.
"""
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runner"))
from reliability_lib import parse_head  # noqa: E402
from analysis import servers as server_defs, verify  # noqa: E402

SERVER = os.environ.get("SERVER", os.environ.get("BUILD", "build") + "/async-server")
STORES = [os.environ["STORE"]] if os.environ.get("STORE") else ["memory", "sqlite"]
THREADS = os.environ.get("THREADS", "2")
EXTRA_ARGS = os.environ.get("SERVER_ARGS", "").split()  # e.g. "--workers 2" for the actor server
BEARER = "it-token-0123456789abcdef"
SEED = 150
START_TIMEOUT_S = 10.0
IO_TIMEOUT_S = 5.0

AUTH = {"Authorization": "Bearer " + BEARER}
HEX16 = re.compile(r"^[0-9a-f]{16}$")


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, diag=None):
        self.n += 1
        if cond:
            print("ok %d - %s" % (self.n, name))
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, name))
            if diag is not None:
                for line in str(diag).splitlines() or [""]:
                    print("#   " + line)
        sys.stdout.flush()
        return cond

    def eq(self, got, want, name):
        return self.ok(got == want, name, "got:  %r\nwant: %r" % (got, want))

    def skip(self, name, reason):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, name, reason))
        sys.stdout.flush()


T = Tap()


def user_json(i, name=None, email=None):
    name = name if name is not None else "user-%d" % i
    email = email if email is not None else "user-%d@example.com" % i
    return json.dumps({"id": i, "name": name, "email": email}, separators=(",", ":"))


def list_json(ids, nxt):
    users = ",".join(user_json(i) for i in ids)
    return '{"users":[%s],"next":%s}' % (users, "null" if nxt is None else str(nxt))


# ---------------------------------------------------------------- raw HTTP client

class Resp:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case name -> value (last wins)
        self.body = body

    def h(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return "<%d %s %r %r>" % (self.status, self.reason, self.headers, self.body[:200])


class Conn:
    """A raw client socket that reads responses one at a time (Content-Length framed)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed by server")
        self.buf += chunk

    def read_response(self):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        version, status, reason, headers = parse_head(head)
        if version != "1.1":
            raise ValueError("status line says HTTP/%s, want HTTP/1.1" % version)
        n = int(headers.get("content-length", "0"))
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return Resp(status, reason, headers, body)

    def closed_by_peer(self):
        """True when the server closes (EOF) within the timeout, with no extra bytes."""
        if self.buf:
            return False
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def close(self):
        self.sock.close()


def raw_request(method, target, headers=None, body=b"", version="HTTP/1.1", host=True):
    lines = ["%s %s %s" % (method, target, version)]
    if host:
        lines.append("Host: 127.0.0.1")
    for k, v in (headers or {}).items():
        lines.append("%s: %s" % (k, v))
    if body or method == "POST":
        lines.append("Content-Length: %d" % len(body))
    if isinstance(body, str):
        body = body.encode()
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def one(port, data):
    """Sends raw bytes on a fresh connection, returns (response, closed_after)."""
    c = Conn(port)
    try:
        c.send(data)
        r = c.read_response()
        closed = c.closed_by_peer() if (r.h("connection") or "").lower() == "close" else None
        return r, closed
    finally:
        c.close()


@contextlib.contextmanager
def conn_check(port, name):
    """A fresh raw connection for one check: an I/O error or a malformed response inside
    the block fails the check `name` (the block reports its own success)."""
    c = Conn(port)
    try:
        yield c
    except (OSError, EOFError, ValueError) as e:
        T.ok(False, name, repr(e))
    finally:
        c.close()


def req(port, method, target, headers=None, body=None):
    """http.client for the ordinary cases."""
    hc = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT_S)
    try:
        hc.request(method, target, body=body, headers=headers or {})
        r = hc.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        return Resp(r.status, r.reason, hdrs, data)
    finally:
        hc.close()


# ---------------------------------------------------------------- server process

class Server:
    def __init__(self, store, tmpdir, seed=SEED, name=""):
        name = name or store
        self.db = os.path.join(tmpdir, "it-%s.db" % name)
        self.log = os.path.join(tmpdir, "access-%s.log" % name)
        self.err_path = os.path.join(tmpdir, "stderr-%s.txt" % name)
        for p in (self.db, self.db + "-wal", self.db + "-shm", self.log):
            if os.path.exists(p):
                os.unlink(p)
        args = [SERVER, "--port", "0", "--threads", THREADS, "--store=" + store, "--db", self.db,
                "--seed-users", str(seed), "--bearer", BEARER, "--access-log", self.log]
        args += EXTRA_ARGS
        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.err)
        self.port = None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            with open(self.err_path, "rb") as f:
                m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.02)

    def stderr_text(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


# ---------------------------------------------------------------- checks

def check_ping(port, tag):
    r = req(port, "GET", "/ping")
    T.eq((r.status, r.body, r.h("content-type")), (200, b"pong", "text/plain"),
         tag + "GET /ping -> 200 text/plain pong")
    T.ok(r.h("x-request-id") is None, tag + "GET /ping has no X-Request-Id (no middleware)",
         r.headers)
    T.ok(r.h("date") is not None and r.h("server") is not None, tag + "Date and Server headers",
         r.headers)


def check_get_user(port, tag):
    r = req(port, "GET", "/users/1", AUTH)
    T.eq((r.status, r.body.decode()), (200, '{"id":1,"name":"user-1","email":"user-1@example.com"}'),
         tag + "GET /users/1 -> 200 byte-exact user JSON")
    T.eq(r.h("content-type"), "application/json", tag + "user JSON content type")
    r = req(port, "GET", "/users/%d" % SEED, AUTH)
    T.eq((r.status, r.body.decode()), (200, user_json(SEED)), tag + "GET last seeded user")
    r = req(port, "GET", "/users/%31%32", AUTH)
    T.eq((r.status, r.body.decode()), (200, user_json(12)), tag + "GET /users/%31%32 is user 12")


def check_list(port, tag):
    cases = [
        ("/users", list(range(1, 11)), 10),
        ("/users?limit=2", [1, 2], 2),
        ("/users?limit=1&after=5", [6], 6),
        ("/users?after=%d&limit=10" % (SEED - 2), [SEED - 1, SEED], None),
        ("/users?after=%d" % SEED, [], None),
        ("/users?limit=100", list(range(1, 101)), 100),
        ("/users?limit=100&after=100", list(range(101, SEED + 1)), None),
    ]
    for target, ids, nxt in cases:
        r = req(port, "GET", target, AUTH)
        T.eq((r.status, r.body.decode()), (200, list_json(ids, nxt)),
             tag + "GET %s -> %d users, next %s" % (target, len(ids), nxt))
    # following next walks every seeded user exactly once
    seen, after, pages = [], 0, 0
    while after is not None and pages < 100:
        r = req(port, "GET", "/users?limit=40&after=%d" % after, AUTH)
        doc = json.loads(r.body)
        seen += [u["id"] for u in doc["users"]]
        after = doc["next"]
        pages += 1
    T.eq(seen[:SEED], list(range(1, SEED + 1)), tag + "paging with next visits 1..%d in order" % SEED)
    for bad in ("limit=0", "limit=101", "limit=abc", "after=abc", "after=-1"):
        r = req(port, "GET", "/users?" + bad, AUTH)
        T.eq(r.status, 400, tag + "GET /users?%s -> 400" % bad)


def max_user_id(port):
    after = 0
    while True:
        doc = json.loads(req(port, "GET", "/users?limit=100&after=%d" % after, AUTH).body)
        if doc["users"]:
            after = doc["users"][-1]["id"]
        if doc["next"] is None:
            return after


def check_create(port, tag):
    base = max_user_id(port)
    body = json.dumps({"name": "alice", "email": "alice@example.com"})
    h = dict(AUTH)
    h["Content-Type"] = "application/json"
    r = req(port, "POST", "/users", h, body)
    want = user_json(base + 1, "alice", "alice@example.com")
    T.eq((r.status, r.body.decode(), r.h("location")), (201, want, "/users/%d" % (base + 1)),
         tag + "POST /users -> 201, user JSON, Location")
    r2 = req(port, "GET", "/users/%d" % (base + 1), AUTH)
    T.eq((r2.status, r2.body.decode()), (200, want), tag + "created user readable afterwards")
    # escaping round trip and a charset parameter
    h2 = dict(AUTH)
    h2["Content-Type"] = "application/json; charset=utf-8"
    r = req(port, "POST", "/users", h2, json.dumps({"name": "q\"\\\u00e9", "email": "e@x"}))
    T.eq(r.status, 201, tag + "POST with charset parameter and escapes -> 201")
    if r.status == 201:
        doc = json.loads(r.body)
        T.eq((doc["name"], doc["email"]), ("q\"\\\u00e9", "e@x"), tag + "escaped fields round trip")
        r2 = req(port, "GET", r.h("location"), AUTH)
        T.eq(r2.body, r.body, tag + "GET Location returns the same bytes")
    # the list sees the new users at the end
    r = req(port, "GET", "/users?after=%d" % base, AUTH)
    ids = [u["id"] for u in json.loads(r.body)["users"]]
    T.eq(ids, [base + 1, base + 2], tag + "list after the old max shows the created users")


def check_create_errors(port, tag):
    h = dict(AUTH)
    h["Content-Type"] = "application/json"
    bad = [
        ("bad JSON", b"{\"name\":"),
        ("not an object", b"[1,2]"),
        ("missing name", b"{\"email\":\"a@b.c\"}"),
        ("empty name", b"{\"name\":\"\",\"email\":\"a@b.c\"}"),
        ("name of 65 bytes", json.dumps({"name": "n" * 65, "email": "a@b.c"}).encode()),
        ("name not a string", b"{\"name\":5,\"email\":\"a@b.c\"}"),
        ("missing email", b"{\"name\":\"x\"}"),
        ("email without @", b"{\"name\":\"x\",\"email\":\"abc\"}"),
        ("email too short", b"{\"name\":\"x\",\"email\":\"@b\"}"),
        ("email of 129 bytes", json.dumps({"name": "x", "email": "a@" + "b" * 127}).encode()),
        ("empty body", b""),
    ]
    for what, body in bad:
        r, _ = one(port, raw_request("POST", "/users", h, body))
        err = None
        try:
            err = json.loads(r.body).get("error")
        except ValueError:
            pass
        T.ok(r.status == 400 and isinstance(err, str) and err != "",
             tag + "POST /users %s -> 400 {\"error\":...}" % what, r)
    r = req(port, "POST", "/users", {"Content-Type": "application/json", **AUTH},
            json.dumps({"name": "x", "email": "a@b", "pad": "p" * 4200}))
    T.eq(r.status, 413, tag + "POST /users body > 4 KiB -> 413")
    r = req(port, "POST", "/users", {"Content-Type": "application/json", **AUTH},
            json.dumps({"name": "x", "email": "a@b", "pad": "p" * 3900}))
    T.eq(r.status, 201, tag + "POST /users body just under 4 KiB -> 201")
    for ct in ("text/plain", "application/x-www-form-urlencoded", None):
        hh = dict(AUTH)
        if ct:
            hh["Content-Type"] = ct
        r, _ = one(port, raw_request("POST", "/users", hh, b"{\"name\":\"x\",\"email\":\"a@b\"}"))
        T.eq(r.status, 415, tag + "POST /users Content-Type %s -> 415" % ct)


def check_auth(port, tag):
    for method, target in (("GET", "/users/1"), ("GET", "/users"), ("POST", "/users")):
        body = b"{\"name\":\"x\",\"email\":\"a@b\"}" if method == "POST" else b""
        ct = {"Content-Type": "application/json"} if method == "POST" else {}
        r, _ = one(port, raw_request(method, target, ct, body))
        T.eq(r.status, 401, tag + "%s %s without Authorization -> 401" % (method, target))
        hh = dict(ct)
        hh["Authorization"] = "Bearer " + BEARER + "x"
        r, _ = one(port, raw_request(method, target, hh, body))
        T.eq(r.status, 401, tag + "%s %s with a wrong bearer -> 401" % (method, target))
    r, _ = one(port, raw_request("GET", "/users/1", {"Authorization": "Basic dXNlcjpwYXNz"}))
    T.eq(r.status, 401, tag + "Basic auth -> 401")
    T.ok(r.h("x-request-id") is not None, tag + "401 still carries X-Request-Id", r.headers)
    T.ok(re.match(r"(?i)bearer(\s|$)", r.h("www-authenticate") or ""),
         tag + "401 carries a WWW-Authenticate Bearer challenge (RFC 9110 11.6.1)", r.headers)
    T.ok(json.loads(r.body).get("error"), tag + "401 body is {\"error\":...}", r.body)


def check_not_found_and_methods(port, tag):
    r = req(port, "GET", "/nope")
    T.eq((r.status, r.h("content-type")), (404, "application/json"), tag + "GET /nope -> 404 JSON")
    T.ok(json.loads(r.body).get("error"), tag + "404 body is {\"error\":...}", r.body)
    r = req(port, "GET", "/users/999999", AUTH)
    T.eq((r.status, r.body), (404, b'{"error":"user not found"}'), tag + "unknown user -> 404")
    r = req(port, "GET", "/users/abc", AUTH)
    T.eq(r.status, 400, tag + "GET /users/abc -> 400")
    r = req(port, "GET", "/users/0", AUTH)
    T.eq(r.status, 400, tag + "GET /users/0 -> 400")
    r = req(port, "GET", "/users/18446744073709551616", AUTH)
    T.eq(r.status, 400, tag + "GET /users/2^64 -> 400")
    for method, target, allow, hdrs in (("POST", "/ping", "GET, HEAD", {}),
                                        ("DELETE", "/metrics", "GET, HEAD", {}),
                                        ("PUT", "/users", "GET, HEAD, POST", AUTH),
                                        ("DELETE", "/users/1", "GET, HEAD", AUTH)):
        r, _ = one(port, raw_request(method, target, hdrs, b"" if method != "PUT" else b"{}"))
        T.eq((r.status, r.h("allow")), (405, allow),
             tag + "%s %s -> 405 Allow: %s" % (method, target, allow))


def check_request_id(port, tag):
    r = req(port, "GET", "/users/1", {**AUTH, "X-Request-Id": "my-id_1.2"})
    T.eq(r.h("x-request-id"), "my-id_1.2", tag + "valid X-Request-Id echoed")
    r = req(port, "GET", "/users/1", {**AUTH, "X-Request-Id": "x" * 64})
    T.eq(r.h("x-request-id"), "x" * 64, tag + "64-char X-Request-Id echoed")
    for what, val in (("65 chars", "x" * 65), ("a space", "a b"), ("a slash", "a/b")):
        r = req(port, "GET", "/users/1", {**AUTH, "X-Request-Id": val})
        rid = r.h("x-request-id") or ""
        T.ok(HEX16.match(rid) is not None, tag + "X-Request-Id with %s replaced by 16 hex" % what,
             rid)
    r = req(port, "GET", "/users/1", AUTH)
    a = r.h("x-request-id") or ""
    b = req(port, "GET", "/users/1", AUTH).h("x-request-id") or ""
    T.ok(HEX16.match(a) and HEX16.match(b) and a != b, tag + "absent X-Request-Id: fresh 16 hex each",
         (a, b))
    r = req(port, "POST", "/users", {**AUTH, "Content-Type": "application/json",
                                     "X-Request-Id": "post-1"},
            json.dumps({"name": "rid", "email": "r@x"}))
    T.eq((r.status, r.h("x-request-id")), (201, "post-1"), tag + "X-Request-Id echoed on 201")


def metric(text, name, labels=""):
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


def check_metrics(port, tag):
    r = req(port, "GET", "/metrics")
    T.eq(r.status, 200, tag + "GET /metrics -> 200")
    T.ok((r.h("content-type") or "").startswith("text/plain"), tag + "metrics content type",
         r.h("content-type"))
    text = r.body.decode()
    ping0 = metric(text, "http_requests_total", '{route="ping",status="200"}')
    users0 = metric(text, "store_users")
    count0 = metric(text, "http_handler_latency_seconds_count")
    T.ok(ping0 is not None and users0 is not None and count0 is not None,
         tag + "metrics expose requests, store size and latency histogram",
         text[:2000])
    T.ok("http_open_connections" in text, tag + "metrics expose open connections")
    T.ok(re.search(r'^http_handler_latency_seconds_bucket\{le="\+Inf"\} ', text, re.M) is not None,
         tag + "latency histogram has a +Inf bucket")
    for _ in range(3):
        req(port, "GET", "/ping")
    req(port, "POST", "/users", {**AUTH, "Content-Type": "application/json"},
        json.dumps({"name": "m", "email": "m@x"}))
    req(port, "GET", "/nope")
    text = req(port, "GET", "/metrics").body.decode()
    ping1 = metric(text, "http_requests_total", '{route="ping",status="200"}')
    T.ok(ping0 is not None and ping1 is not None and ping1 - ping0 >= 3,
         tag + "ping counter moved by 3", (ping0, ping1))
    users1 = metric(text, "store_users")
    T.ok(users0 is not None and users1 == users0 + 1, tag + "store_users moved by 1",
         (users0, users1))
    count1 = metric(text, "http_handler_latency_seconds_count")
    T.ok(count0 is not None and count1 is not None and count1 >= count0 + 5,
         tag + "latency histogram count moved", (count0, count1))
    n404 = metric(text, "http_requests_total", '{route="other",status="404"}')
    T.ok(n404 is not None and n404 >= 1, tag + "404 counted", n404)
    les = [float(v) for v in re.findall(r'^http_handler_latency_seconds_bucket\{le="([0-9.e+-]+)"\}',
                                        text, re.M)]
    T.ok(les and all(0 < le <= 60 for le in les) and les == sorted(les),
         tag + "latency buckets: ascending edges in seconds, within (0, 60]", les[:5])
    check_promtool(text, tag)


def check_promtool(text, tag):
    """`promtool check metrics` (Prometheus's linter) finds nothing to say."""
    exe = shutil.which("promtool")
    if exe is None:
        T.skip(tag + "promtool check metrics", "promtool not installed (Debian package prometheus)")
        return
    p = subprocess.run([exe, "check", "metrics"], input=text.encode(), capture_output=True,
                       timeout=30)
    out = (p.stdout + p.stderr).decode(errors="replace").strip()
    T.ok(p.returncode == 0 and out == "", tag + "promtool check metrics is clean",
         "exit %d:\n%s" % (p.returncode, out))


def check_keepalive(port, tag):
    with conn_check(port, tag + "keep-alive") as c:
        statuses = []
        for i in range(5):
            c.send(raw_request("GET", "/ping") if i % 2 == 0 else
                   raw_request("GET", "/users/%d" % i, AUTH))
            r = c.read_response()
            statuses.append((r.status, r.h("connection")))
        T.eq(statuses, [(200, None)] * 5, tag + "keep-alive: 5 requests on one socket")
        # HTTP/1.0 with keep-alive stays open too
        c.send(raw_request("GET", "/ping", {"Connection": "keep-alive"}, version="HTTP/1.0"))
        r = c.read_response()
        c.send(raw_request("GET", "/ping"))
        r2 = c.read_response()
        T.eq((r.status, r2.status), (200, 200), tag + "HTTP/1.0 keep-alive then more requests")


def check_pipelining(port, tag):
    nxt = max_user_id(port) + 1
    data = (raw_request("GET", "/ping")
            + raw_request("POST", "/users", {**AUTH, "Content-Type": "application/json"},
                          json.dumps({"name": "pipe", "email": "pipe@x"}))
            + raw_request("GET", "/users/%d" % nxt, AUTH)
            + raw_request("GET", "/nope")
            + raw_request("GET", "/users/2", {**AUTH, "X-Request-Id": "p5"})
            + raw_request("GET", "/users?limit=1&after=2", AUTH)
            + raw_request("GET", "/ping", {"Connection": "close"}))
    with conn_check(port, tag + "pipelining") as c:
        c.send(data)
        got = []
        for _ in range(7):
            r = c.read_response()
            got.append((r.status, r.body.decode()))
        want_user = user_json(nxt, "pipe", "pipe@x")
        want = [(200, "pong"), (201, want_user), (200, want_user),
                (404, got[3][1] if got[3][0] == 404 else "(404 body)"),
                (200, user_json(2)), (200, list_json([3], 3)), (200, "pong")]
        T.eq(got, want, tag + "7 pipelined requests answered in order (POST then GET of its id)")
        T.ok(r.h("x-request-id") is None and c.closed_by_peer(),
             tag + "pipeline ending in Connection: close is closed after the last answer")
    # 300 pipelined requests with ~6 KiB answers, sent before reading any (back-pressure)
    with conn_check(port, tag + "300 pipelined list requests") as c:
        n = 300
        c.send(b"".join(raw_request("GET", "/users?limit=100&after=%d" % (i % 50), AUTH)
                        for i in range(n)))
        good = 0
        for i in range(n):
            r = c.read_response()
            doc = json.loads(r.body)
            good += r.status == 200 and doc["users"][0]["id"] == i % 50 + 1
        T.eq(good, n, tag + "300 pipelined list requests sent before reading: all in order")
    # a request followed by a half-close is still answered
    with conn_check(port, tag + "request then half-close: answered") as c:
        c.send(raw_request("GET", "/ping"))
        c.sock.shutdown(socket.SHUT_WR)
        r = c.read_response()
        T.eq((r.status, r.body), (200, b"pong"), tag + "request then half-close: answered")
    # the same pipeline delivered one byte at a time
    with conn_check(port, tag + "byte-at-a-time pipelining") as c:
        small = raw_request("GET", "/ping") + raw_request("GET", "/users/3", AUTH)
        for i in range(len(small)):
            c.send(small[i:i + 1])
        r1, r2 = c.read_response(), c.read_response()
        T.eq((r1.status, r1.body, r2.status, r2.body.decode()), (200, b"pong", 200, user_json(3)),
             tag + "pipelined requests sent one byte at a time")


def check_close(port, tag):
    r, closed = one(port, raw_request("GET", "/ping", {"Connection": "close"}))
    T.eq((r.status, (r.h("connection") or "").lower(), closed), (200, "close", True),
         tag + "Connection: close honoured (header, then EOF)")
    r, closed = one(port, raw_request("GET", "/users/1", {**AUTH, "Connection": "close"}))
    T.eq((r.status, closed), (200, True), tag + "Connection: close on a /users route")
    with conn_check(port, tag + "HTTP/1.0 close") as c:
        c.send(raw_request("GET", "/ping", version="HTTP/1.0"))
        r = c.read_response()
        T.eq((r.status, c.closed_by_peer()), (200, True), tag + "HTTP/1.0 without keep-alive closes")


def expect_status_close(port, tag, what, data, status):
    """Sends data, expects `status` readable (no reset) and then the connection closed."""
    with conn_check(port, tag + "%s -> %d, readable, then closed" % (what, status)) as c:
        try:
            c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may stop reading after answering; the answer must still arrive
        r = c.read_response()
        T.eq((r.status, (r.h("connection") or "").lower(), c.closed_by_peer()),
             (status, "close", True), tag + "%s -> %d, readable, then closed" % (what, status))


def send_ignoring_errors(sock, data):
    try:
        sock.sendall(data)
    except OSError:
        pass


def check_limits(port, tag):
    big_headers = ("POST /users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Authorization: Bearer %s\r\nContent-Length: 70000\r\n\r\n" % BEARER).encode()
    expect_status_close(port, tag, "Content-Length 70000 > max-body (headers only)", big_headers,
                        413)
    expect_status_close(port, tag, "Content-Length 70000 > max-body (body sent)",
                        big_headers + b"x" * 70000, 413)
    # a client that keeps sending a 1 MiB body while reading: the 413 arrives intact
    with conn_check(port, tag + "1 MiB body streamed while reading -> 413") as c:
        writer = threading.Thread(target=send_ignoring_errors,
                                  args=(c.sock, big_headers.replace(b"70000", b"1048576")
                                        + b"y" * 1048576))
        writer.start()
        r = c.read_response()
        T.eq((r.status, c.closed_by_peer()), (413, True),
             tag + "1 MiB body streamed while reading -> 413 intact, then closed")
        writer.join(IO_TIMEOUT_S)
    chunked = ("POST /users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n").encode()
    chunked += b"".join(b"2000\r\n" + b"c" * 0x2000 + b"\r\n" for _ in range(9)) + b"0\r\n\r\n"
    expect_status_close(port, tag, "chunked body of 72 KiB", chunked, 413)
    expect_status_close(port, tag, "request target > 8 KiB",
                        raw_request("GET", "/" + "a" * 9000), 414)
    expect_status_close(port, tag, "header block > 16 KiB",
                        raw_request("GET", "/ping", {"X-Big": "v" * 17000}), 431)
    expect_status_close(port, tag, "more than 100 headers",
                        raw_request("GET", "/ping", {"X-H%d" % i: "v" for i in range(101)}), 431)
    expect_status_close(port, tag, "missing Host", raw_request("GET", "/ping", host=False), 400)
    expect_status_close(port, tag, "Content-Length + Transfer-Encoding",
                        b"POST /users HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
    expect_status_close(port, tag, "two differing Content-Lengths",
                        b"POST /users HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                        b"Content-Length: 3\r\n\r\nabc", 400)
    expect_status_close(port, tag, "obs-fold",
                        b"GET /ping HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400)
    expect_status_close(port, tag, "empty header name",
                        b"GET /ping HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", 400)
    expect_status_close(port, tag, "bare CR in a header",
                        b"GET /ping HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400)
    expect_status_close(port, tag, "garbage request line", b"HELLO\r\n\r\n", 400)
    # a good request before a malformed one is still answered first
    with conn_check(port, tag + "good then malformed") as c:
        c.send(raw_request("GET", "/ping") + b"GET /ping HTTP/1.1\r\nHost: x\r\n X: y\r\n\r\n")
        r1, r2 = c.read_response(), c.read_response()
        T.eq((r1.status, r2.status, c.closed_by_peer()), (200, 400, True),
             tag + "good request then a malformed one: 200, 400, close")
    # the server is still healthy afterwards
    r = req(port, "GET", "/ping")
    T.eq(r.status, 200, tag + "server healthy after the bad inputs")


def check_shutdown(srv, tag):
    idle = Conn(srv.port)  # an idle keep-alive connection must not hold shutdown up
    idle.send(raw_request("GET", "/ping"))
    idle.read_response()
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    try:
        rc = srv.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        rc = None
    secs = time.monotonic() - t0
    idle.close()
    T.ok(rc == 0 and secs < 2.0, tag + "SIGTERM -> exit 0 within 2 s",
         "rc %r after %.2f s; stderr:\n%s" % (rc, secs, srv.stderr_text()[-2000:]))
    with open(srv.log, "rb") as f:
        lines = f.read().decode("utf-8", "replace").splitlines()
    fmt = re.compile(r"^\d{13} (GET|POST|PUT|DELETE) /\S* \d{3} \d+us \S+$")
    T.ok(len(lines) > 50 and all(fmt.match(l) for l in lines),
         tag + "access log flushed on exit, one well-formed line per /users request",
         "%d lines; first bad: %r" % (len(lines), next((l for l in lines if not fmt.match(l)), None)))
    T.ok(any(" POST /users 201 " in l for l in lines) and any(" 401 " in l for l in lines),
         tag + "access log has the 201s and 401s")


def check_cli(tag):
    p = subprocess.run([SERVER, "--help"], capture_output=True, timeout=10)
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    T.ok(p.returncode == 0 and "usage" in out.lower() and "--store" in out,
         tag + "--help -> exit 0 with usage", "rc %d: %s" % (p.returncode, out[:500]))
    for bad in (["--bogus"], ["--store=redis"], ["--port", "notaport"], ["--threads", "0"],
                ["--port"]):
        p = subprocess.run([SERVER] + bad, capture_output=True, timeout=10)
        err = p.stderr.decode("utf-8", "replace")
        T.ok(p.returncode == 2 and "usage" in err.lower(),
             tag + "%s -> exit 2 with usage on stderr" % " ".join(bad),
             "rc %d: %s" % (p.returncode, err[:500]))
    # the first line says what was wrong: the flag and the value given, or the missing value
    for bad, want in ((["--port", "notaport"], ("--port", "'notaport'")),
                      (["--threads", "0"], ("--threads", "'0'")),
                      (["--store=redis"], ("--store", "'redis'")),
                      (["--port"], ("'--port'", "needs a value"))):
        p = subprocess.run([SERVER] + bad, capture_output=True, timeout=10)
        first = (p.stderr.decode("utf-8", "replace").splitlines() or [""])[0]
        T.ok(p.returncode == 2 and all(w in first for w in want),
             tag + "%s -> first stderr line names %s" % (" ".join(bad), " and ".join(want)),
             "rc %d: %r" % (p.returncode, first))


def check_max_conns_and_env_bearer(tmpdir):
    """A second server: --max-conns 2 (the third connection is closed or gets 503, and a
    freed slot is usable again), and the bearer taken from $BEARER when --bearer is absent."""
    tag = "[max-conns] "
    err_path = os.path.join(tmpdir, "stderr-maxconns.txt")
    env = dict(os.environ, BEARER="env-token-xyz")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([SERVER, "--port", "0", "--threads", "1", "--store=memory",
                                 "--seed-users", "3", "--max-conns", "2"] + EXTRA_ARGS,
                                stdout=subprocess.DEVNULL, stderr=err, env=env)
    port = None
    deadline = time.monotonic() + START_TIMEOUT_S
    while port is None and time.monotonic() < deadline and proc.poll() is None:
        with open(err_path, "rb") as f:
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", f.read())
        port = int(m.group(1)) if m else None
        time.sleep(0.02)
    conns = []
    try:
        if not T.ok(port is not None, tag + "server with --max-conns 2 starts"):
            return
        r = req(port, "GET", "/users/1", {"Authorization": "Bearer env-token-xyz"})
        T.eq(r.status, 200, tag + "bearer defaults to $BEARER")
        r = req(port, "GET", "/users/1", AUTH)
        T.eq(r.status, 401, tag + "other tokens refused when $BEARER is set")
        for _ in range(2):
            c = Conn(port)
            c.send(raw_request("GET", "/ping"))
            c.read_response()
            conns.append(c)
        third = Conn(port)
        outcome = None
        try:
            third.send(raw_request("GET", "/ping"))
            outcome = third.read_response().status
        except (EOFError, ConnectionResetError, BrokenPipeError):
            outcome = "closed"
        except socket.timeout:
            outcome = "timeout"
        third.close()
        T.ok(outcome in ("closed", 503), tag + "third connection closed or answered 503", outcome)
        conns.pop().close()
        status = None
        for _ in range(50):  # the server notices the freed slot asynchronously
            try:
                status = req(port, "GET", "/ping").status
                break
            except (OSError, http.client.HTTPException):
                time.sleep(0.02)
        T.eq(status, 200, tag + "a freed slot accepts a new connection")
        T.eq(proc.poll(), None, tag + "server still running")
    finally:
        for c in conns:
            c.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run_store(store, tmpdir):
    tag = "[%s] " % store
    srv = Server(store, tmpdir)
    if not T.ok(srv.port is not None, tag + "server starts and prints its port",
                srv.stderr_text()[-2000:]):
        srv.kill()
        return
    try:
        for check in (check_ping, check_get_user, check_list, check_create, check_create_errors,
                      check_auth, check_not_found_and_methods, check_request_id, check_metrics,
                      check_keepalive, check_pipelining, check_close, check_limits):
            try:
                check(srv.port, tag)
            except Exception as e:  # a crashed check is a failure, the others still run
                T.ok(False, tag + check.__name__ + " raised", repr(e))
            if srv.proc.poll() is not None:
                T.ok(False, tag + "server still running after " + check.__name__,
                     "exit %r; stderr:\n%s" % (srv.proc.returncode, srv.stderr_text()[-2000:]))
                return
        check_shutdown(srv, tag)
    finally:
        srv.kill()


# The scenarios of each store, as the built-in definitions list them (servers/*.toml).
VERIFY_SCENARIOS = {"memory": ("s1", "s2", "s3"), "sqlite": ("s4",)}
VERIFY_SEED = 10000  # the mix files' id range: a run's SEED_USERS


def run_verify(store, tmpdir):
    """runner.sh's verify stage (the same cases, verify.cases) against a fresh server seeded
    like a run's, for each scenario of the store: one TAP line per case."""
    srv = Server(store, tmpdir, seed=VERIFY_SEED, name="verify-" + store)
    try:
        if not T.ok(srv.port is not None, "[verify %s] server starts" % store, srv.stderr_text()[-2000:]):
            return
        for sc in VERIFY_SCENARIOS[store]:
            mix = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "loadgen-scripts",
                               server_defs.MIXES[sc])
            ctx = verify.Ctx("http://127.0.0.1:%d" % srv.port, mix, BEARER, VERIFY_SEED)
            rep = verify.run(ctx, lambda name, ok, why, sc=sc: T.ok(ok, "[verify %s %s] %s" % (sc, store, name), why))
            T.ok(rep["metrics"], "[verify %s %s] /metrics gives the handler figures" % (sc, store),
                 rep["metrics_note"])
    finally:
        srv.kill()


def main():
    if not os.access(SERVER, os.X_OK):
        print("1..0 # SKIP %s not built" % SERVER)
        return 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="it_contract.") as tmpdir:
        check_cli("[cli] ")
        check_max_conns_and_env_bearer(tmpdir)
        for store in STORES:
            run_store(store, tmpdir)
            run_verify(store, tmpdir)
    print("1..%d" % T.n)
    print("# %s: %d checks, %d failed, %.1f s" % (SERVER, T.n, T.failed, time.monotonic() - t0))
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
