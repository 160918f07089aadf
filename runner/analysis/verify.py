"""verify: the contract check (CONTRACT.md) a server must pass before it is measured, and the
one list of its cases: runner.sh's verify phase and the project's contract tests
(tests/it_contract.py) both run `cases()`. A few hundred requests over raw sockets, each
bounded in time; it measures nothing and changes the store only by the POSTs the mix sends.
Invariant: a case either passes or fails with a sentence saying what was sent, what was
expected and what came back.
"""
import json
import re
import socket
import sys
import time
import urllib.parse

IO_TIMEOUT_S = 5.0          # per request
BUDGET_S = 60.0             # the whole check; the cases left when it is spent fail
KEEPALIVE_REQUESTS = 100    # requests on one connection in the keep-alive case
SEED_SAMPLES = 10           # seeded ids checked, first and last included
MAX_BODY = 4 << 20          # a response body above this is a failure, not a read
PLACEHOLDER = re.compile(r"\{rand:(\d+):(\d+)\}|\{seq\}")
HANDLER_HISTOGRAMS = ("http_handler_latency_seconds_bucket", "http_handler_latency_us_bucket")


class Fail(Exception):
    """A case's failure; the message says what was wrong, in words."""


# ---------------------------------------------------------------- a raw HTTP/1.1 client

class Resp:
    def __init__(self, version, status, headers, body):
        self.version, self.status, self.headers, self.body = version, status, headers, body

    def h(self, name):
        return self.headers.get(name.lower())

    def media_type(self):
        return (self.h("content-type") or "").split(";")[0].strip().lower()

    def closes(self):
        return "close" in [t.strip().lower() for t in (self.h("connection") or "").split(",")]


class Conn:
    """One keep-alive connection; reads responses framed by Content-Length, chunked, or the
    end of the connection (which then counts as closed), each a request's final response
    after any interim (1xx) ones."""

    def __init__(self, host, port, deadline):
        self.deadline = deadline
        self.sock = socket.create_connection((host, port), timeout=self._left())
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False
        self.interim = 0  # 1xx interim responses read (and skipped)
        self.host = f"{host}:{port}"

    def _left(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Fail(f"verify's {BUDGET_S:.0f} s budget was spent before this case")
        return min(IO_TIMEOUT_S, left)

    def close(self):
        self.sock.close()

    def _fill(self):
        self.sock.settimeout(self._left())
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise Fail(f"no complete response within {IO_TIMEOUT_S:.0f} s") from None
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        if len(self.buf) > MAX_BODY:
            raise Fail(f"a response above {MAX_BODY} bytes")
        return True

    def _line(self):
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise Fail("the connection closed in the middle of a response")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise Fail("the connection closed before the body's Content-Length bytes came")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, method, target, headers=None, body=b""):
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if body or method in ("POST", "PUT"):
            lines.append(f"Content-Length: {len(body)}")
        self.sock.settimeout(self._left())
        try:
            self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        except OSError as err:
            raise Fail(f"sending failed: {err.strerror or err}") from None

    def read(self, head=False):
        """The next final response (HEAD: no body whatever its Content-Length says): interim
        responses before it (1xx but 101, RFC 9110 15.2: 100 Continue, 103 Early Hints, ...)
        are read and counted in self.interim; a 101 no request asked for is a failure."""
        while True:
            resp = self._read_one(head)
            if resp.status == 101:
                raise Fail("101 Switching Protocols, which no request asked for")
            if resp.status >= 200:
                return resp
            self.interim += 1

    def _read_one(self, head):
        """The next response, interim or final."""
        if not self.buf and self.eof:
            raise Fail("the server closed the connection instead of answering")
        try:
            status_line = self._line()
        except Fail:
            if not self.buf and self.eof:
                raise Fail("the server closed the connection instead of answering") from None
            raise
        m = re.match(rb"^HTTP/(\d\.\d) (\d{3})(?: .*)?$", status_line)
        if not m:
            raise Fail(f"not an HTTP status line: {status_line[:80]!r}")
        version, status = m.group(1).decode(), int(m.group(2))
        headers = {}
        while True:
            line = self._line()
            if not line:
                break
            name, sep, value = line.partition(b":")
            if not sep:
                raise Fail(f"a header line without ':': {line[:80]!r}")
            key = name.decode("latin-1").strip().lower()
            val = value.decode("latin-1").strip()
            headers[key] = headers[key] + ", " + val if key in headers else val
        resp = Resp(version, status, headers, b"")
        if head or status in (204, 304) or 100 <= status < 200:
            return resp
        te = (resp.h("transfer-encoding") or "").lower()
        if te:
            if not te.endswith("chunked"):
                raise Fail(f"Transfer-Encoding '{te}' is not chunked")
            body = b""
            while True:
                size_line = self._line().split(b";")[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError:
                    raise Fail(f"a bad chunk size line {size_line[:40]!r}") from None
                if size == 0:
                    while self._line():
                        pass
                    break
                body += self._take(size)
                if self._take(2) != b"\r\n":
                    raise Fail("a chunk not followed by CRLF")
            resp.body = body
        elif resp.h("content-length") is not None:
            try:
                n = int(resp.h("content-length"))
            except ValueError:
                raise Fail(f"Content-Length '{resp.h('content-length')}' is not a number") from None
            resp.body = self._take(n)
        else:
            while self._fill():
                pass
            resp.body, self.buf = self.buf, b""
            resp.headers["connection"] = "close"  # delimited by the end of the connection
        return resp


def describe(resp):
    body = resp.body[:120].decode("utf-8", "replace")
    return f"{resp.status} {resp.media_type() or 'without Content-Type'} {body!r}"


# ---------------------------------------------------------------- the scenario's mix

class MixLine:
    """One request line of a mix file: method, path and body templates, expected status."""

    def __init__(self, number, method, path, body, expect):
        self.number, self.method, self.path, self.body, self.expect = number, method, path, body, expect

    def kind(self):
        """ping, user, list, create or other: the contract route the line requests."""
        if self.method == "GET" and self.path == "/ping":
            return "ping"
        if self.method == "GET" and re.fullmatch(r"/users/(\d+|\{rand:\d+:\d+\})", self.path):
            return "user"
        if self.method == "GET" and re.fullmatch(r"/users(\?.*)?", self.path):
            return "list"
        if self.method == "POST" and self.path == "/users":
            return "create"
        return "other"

    def template(self):
        return f"{self.method} {self.path}" + ("" if self.body is None else f" {self.body}")


def parse_mix(path, bearer):
    """(headers {name: value}, [MixLine]) of the mix file PATH (loadgen-scripts/README.md's
    format) with ${BEARER} replaced. Raises Fail on a line it cannot read."""
    headers, lines = {}, []
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("header "):
                name, sep, value = line[len("header "):].partition(":")
                if not sep:
                    raise Fail(f"{path}: line {n}: a header line without ':'")
                headers[name.strip()] = value.strip().replace("${BEARER}", bearer)
                continue
            parts = line.split()
            if len(parts) < 4 or not parts[0].isdigit() or not parts[-1].isdigit():
                raise Fail(f"{path}: line {n}: not 'WEIGHT METHOD PATH [BODY] EXPECT'")
            body = line.split(None, 3)[3].rsplit(None, 1)[0].strip()
            lines.append(MixLine(n, parts[1], parts[2], None if body == "-" else body, int(parts[-1])))
    if not lines:
        raise Fail(f"{path}: no request line")
    return headers, lines


class Seq:
    """The {seq} values of one verify run: unique, and apart from the load generator's."""

    def __init__(self):
        self.n = int(time.time() * 1000) % 1000000000

    def next(self):
        self.n += 1
        return self.n


def instantiate(line, seq, which):
    """(path, body) of LINE with every {rand:LO:HI} set to LO (WHICH "lo") or HI ("hi") and
    {seq} to the next value of SEQ (one value per request)."""
    s = seq.next()

    def sub(m):
        if m.group(0) == "{seq}":
            return str(s)
        return m.group(1) if which == "lo" else m.group(2)
    body = None if line.body is None else PLACEHOLDER.sub(sub, line.body)
    return PLACEHOLDER.sub(sub, line.path), body


# ---------------------------------------------------------------- shape checks

def seeded(i):
    """The seeded user I, as the contract fixes it."""
    return {"id": i, "name": f"user-{i}", "email": f"user-{i}@example.com"}


def json_body(resp, what):
    if resp.media_type() != "application/json":
        raise Fail(f"{what}: Content-Type '{resp.h('content-type')}', want application/json")
    try:
        return json.loads(resp.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Fail(f"{what}: the body is not JSON: {resp.body[:120]!r}") from None


def check_user(doc, what, want_id=None, seed=0):
    if not isinstance(doc, dict) or set(doc) != {"id", "name", "email"}:
        raise Fail(f"{what}: want an object with exactly id, name and email, got {json.dumps(doc)[:160]}")
    if not isinstance(doc["id"], int) or isinstance(doc["id"], bool) or doc["id"] < 1:
        raise Fail(f"{what}: id {doc['id']!r} is not a whole number >= 1")
    if not isinstance(doc["name"], str) or not isinstance(doc["email"], str):
        raise Fail(f"{what}: name and email must be strings, got {json.dumps(doc)[:160]}")
    if want_id is not None and doc["id"] != want_id:
        raise Fail(f"{what}: id {doc['id']}, want {want_id}")
    if doc["id"] <= seed and doc != seeded(doc["id"]):
        raise Fail(f"{what}: seeded user {doc['id']} is {json.dumps(doc)}, want {json.dumps(seeded(doc['id']))}")


def expect_status(resp, want, what):
    if resp.version != "1.1":
        raise Fail(f"{what}: the status line says HTTP/{resp.version}, want HTTP/1.1")
    if resp.status != want:
        raise Fail(f"{what}: want {want}, got {describe(resp)}")


def check_shape(kind, path, body, resp, seed, what):
    """Raises Fail unless RESP (to a request of KIND) has the contract's Content-Type and
    JSON shape; returns the created user of a create."""
    if kind == "ping":
        if resp.media_type() != "text/plain" or resp.body != b"pong":
            raise Fail(f"{what}: want text/plain 'pong', got {describe(resp)}")
    elif kind == "user":
        want = int(path.rsplit("/", 1)[1])
        check_user(json_body(resp, what), what, want, seed)
    elif kind == "list":
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        limit, after = int(q.get("limit", ["10"])[0]), int(q.get("after", ["0"])[0])
        doc = json_body(resp, what)
        if not isinstance(doc, dict) or set(doc) != {"users", "next"} or not isinstance(doc["users"], list):
            raise Fail(f"{what}: want an object with exactly users (an array) and next, got {json.dumps(doc)[:160]}")
        for u in doc["users"]:
            check_user(u, f"{what}: a listed user", None, seed)
        ids = [u["id"] for u in doc["users"]]
        want_seeded = list(range(after + 1, min(after + limit, seed) + 1))
        if len(ids) > limit or ids[:len(want_seeded)] != want_seeded or ids != sorted(set(ids)) or \
                any(i <= after for i in ids):
            raise Fail(f"{what}: ids {ids[:12]}{'...' if len(ids) > 12 else ''}, want the next {limit} "
                       f"ids after {after} in order (seeded: {want_seeded[:3]}...)")
        nxt = doc["next"]
        more_seeded = ids and ids[-1] < seed
        if nxt is not None and (isinstance(nxt, bool) or nxt != (ids[-1] if ids else None)):
            raise Fail(f"{what}: next {nxt!r}, want the last id listed ({ids[-1] if ids else 'none'}) or null")
        if (len(ids) < limit and nxt is not None) or (more_seeded and nxt is None):
            raise Fail(f"{what}: next {nxt!r} with {len(ids)} of limit {limit} users "
                       f"({'more' if more_seeded else 'no more'} users follow)")
    elif kind == "create":
        doc = json_body(resp, what)
        check_user(doc, what)
        sent = json.loads(body)
        if doc["name"] != sent.get("name") or doc["email"] != sent.get("email"):
            raise Fail(f"{what}: created {json.dumps(doc)}, want the name and email sent ({body})")
        if doc["id"] <= seed:
            raise Fail(f"{what}: created id {doc['id']}, want a new id above the {seed} seeded users")
        loc = resp.h("location")
        if not loc or urllib.parse.urlsplit(urllib.parse.urljoin("http://h/", loc)).path != f"/users/{doc['id']}":
            raise Fail(f"{what}: Location {loc!r}, want /users/{doc['id']}")
        return doc
    return None


# ---------------------------------------------------------------- the cases

class Ctx:
    """One verify run: where the server is, the mix, the bearer, the seed and the budget."""

    def __init__(self, url, mix_path, bearer, seed_users, budget_s=BUDGET_S):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname or not u.port:
            raise ValueError(f"want http://HOST:PORT, got '{url}'")
        self.host, self.port = u.hostname, u.port
        self.bearer, self.seed = bearer, seed_users
        self.mix_headers, self.mix = parse_mix(mix_path, bearer)
        self.seq = Seq()
        self.deadline = time.monotonic() + budget_s
        self.metrics, self.metrics_note = False, "not probed"
        self.access_log = None   # False: the definition passes no {access_log} (same_work)

    def conn(self):
        try:
            return Conn(self.host, self.port, self.deadline)
        except OSError as err:
            raise Fail(f"cannot connect to {self.host}:{self.port}: {err.strerror or err}") from None

    def one(self, method, target, headers=None, body=None, head=False):
        """One request on a fresh connection."""
        c = self.conn()
        try:
            hdrs = dict(headers or {})
            if body is not None and not any(k.lower() == "content-type" for k in hdrs):
                hdrs["Content-Type"] = "application/json"
            c.send(method, target, hdrs, (body or "").encode())
            return c.read(head=head or method == "HEAD")
        finally:
            c.close()

    def auth_headers(self):
        return {k: v for k, v in self.mix_headers.items() if k.lower() == "authorization"} or \
            {"Authorization": f"Bearer {self.bearer}"}

    def wrong_token(self):
        b = self.bearer
        return b[:-1] + ("x" if b[-1:] != "x" else "y") if b else "x"

    def kinds(self):
        return {line.kind() for line in self.mix}


def _mix_case(ctx, line, which):
    def run():
        path, body = instantiate(line, ctx.seq, which)
        what = f"{line.method} {path}"
        resp = ctx.one(line.method, path, ctx.mix_headers, body)
        expect_status(resp, line.expect, what)
        created = check_shape(line.kind(), path, body, resp, ctx.seed, what)
        if created is not None:
            loc = urllib.parse.urlsplit(urllib.parse.urljoin("http://h/", resp.h("location"))).path
            again = ctx.one("GET", loc, ctx.mix_headers)
            expect_status(again, 200, f"GET {loc} (the Location of the 201)")
            doc = json_body(again, f"GET {loc}")
            if doc != created:
                raise Fail(f"GET {loc} (the Location of the 201): {json.dumps(doc)[:160]}, want {json.dumps(created)}")
    rands = PLACEHOLDER.findall(line.path + (line.body or ""))
    ranged = any(lo or hi for lo, hi in rands)
    shape = {"ping": ": text/plain pong", "user": ": JSON user", "list": ": JSON page of users",
             "create": ": JSON user, Location, then GET Location reads it", "other": ""}[line.kind()]
    name = (f"mix line {line.number} ({line.template()})" + (f", {which} end of its range" if ranged else "")
            + f" -> {line.expect}{shape}")
    return name, run


def _seeded_case(ctx):
    def run():
        n = ctx.seed
        ids = sorted({1, n} | {1 + (n - 1) * k // (SEED_SAMPLES - 1) for k in range(SEED_SAMPLES)})
        c = ctx.conn()
        try:
            for i in ids:
                c.send("GET", f"/users/{i}", ctx.auth_headers())
                resp = c.read()
                what = f"GET /users/{i} (seeded user {i} of {n})"
                expect_status(resp, 200, what)
                check_user(json_body(resp, what), what, i, n)
                if resp.closes():
                    c.close()
                    c = ctx.conn()
        finally:
            c.close()
    return f"seeded users: GET /users/ID for {min(SEED_SAMPLES, ctx.seed)} ids across 1..{ctx.seed} " \
           f"(first and last included) -> 200 with user-ID's name and email", run


def _unknown_case(ctx):
    i = ctx.seed + 1000000000

    def run():
        resp = ctx.one("GET", f"/users/{i}", ctx.auth_headers())
        expect_status(resp, 404, f"GET /users/{i} (no such user)")
    return f"unknown id: GET /users/{i} with the bearer -> 404", run


def _auth_cases(ctx, line):
    out = []
    for label, auth in (("without Authorization", None),
                        ("with a wrong token", f"Bearer {ctx.wrong_token()}")):
        def run(auth=auth, label=label):
            path, body = instantiate(line, ctx.seq, "lo")
            hdrs = {k: v for k, v in ctx.mix_headers.items() if k.lower() != "authorization"}
            if auth:
                hdrs["Authorization"] = auth
            resp = ctx.one(line.method, path, hdrs, body)
            expect_status(resp, 401, f"{line.method} {path} {label}")
        out.append((f"bearer: {line.method} {line.path.split('?')[0]}{'?...' if '?' in line.path else ''} "
                    f"{label} -> 401", run))
    return out


def _head_case(ctx, line):
    def run():
        path, _ = instantiate(line, ctx.seq, "lo")
        c = ctx.conn()
        try:
            c.send("HEAD", path, ctx.mix_headers)
            head = c.read(head=True)
            expect_status(head, line.expect, f"HEAD {path}")
            get_type = ctx.one("GET", path, ctx.mix_headers).media_type()
            if head.media_type() != get_type:
                raise Fail(f"HEAD {path}: Content-Type '{head.h('content-type')}', GET's is '{get_type}'")
            if head.closes():
                return
            # a body sent after the HEAD's headers would come before the next response
            c.send("GET", path, ctx.mix_headers)
            try:
                nxt = c.read()
            except Fail as err:
                raise Fail(f"HEAD {path} sent a body: the next response on the connection did not "
                           f"parse ({err}; it began {c.buf[:40]!r})") from None
            expect_status(nxt, line.expect, f"GET {path} after HEAD {path} on one connection")
        finally:
            c.close()
    return f"HEAD {line.path} -> {line.expect}, GET's Content-Type, no body", run


def _keepalive_case(ctx):
    def run():
        c = ctx.conn()
        try:
            for i in range(KEEPALIVE_REQUESTS):
                line = ctx.mix[i % len(ctx.mix)]
                path, body = instantiate(line, ctx.seq, "lo" if (i // len(ctx.mix)) % 2 == 0 else "hi")
                hdrs = dict(ctx.mix_headers)
                if body is not None:
                    hdrs.setdefault("Content-Type", "application/json")
                c.send(line.method, path, hdrs, (body or "").encode())
                what = f"request {i + 1} of {KEEPALIVE_REQUESTS} on one connection ({line.method} {path})"
                try:
                    resp = c.read()
                except Fail as err:
                    raise Fail(f"{what}: {err}") from None
                expect_status(resp, line.expect, what)
                if resp.closes():
                    raise Fail(f"{what}: the server closed the connection (Connection: close)")
        finally:
            c.close()
    return f"keep-alive: {KEEPALIVE_REQUESTS} requests of the mix on one connection, all answered, " \
           "none closes it", run


def cases(ctx):
    """[(name, run)] of the contract's cases for CTX's mix, in order: each request kind of the
    mix (both ends of its ranges; a POST's 201 then GET Location); the seeded users; an unknown
    id; no token and a wrong token on each route that needs the bearer; HEAD on each GET
    route; keep-alive. run() returns or raises Fail."""
    out = []
    for line in ctx.mix:
        ranged = any(lo or hi for lo, hi in PLACEHOLDER.findall(line.path + (line.body or "")))
        for which in (("lo", "hi") if ranged else ("lo",)):
            out.append(_mix_case(ctx, line, which))
    kinds = ctx.kinds()
    if kinds & {"user", "list", "create"}:
        out.append(_seeded_case(ctx))
        out.append(_unknown_case(ctx))
    if any(k.lower() == "authorization" for k in ctx.mix_headers):
        for line in ctx.mix:
            if line.kind() != "ping":   # /ping takes no bearer (a mix of one's own may mix both)
                out += _auth_cases(ctx, line)
    for line in ctx.mix:
        if line.method == "GET":
            out.append(_head_case(ctx, line))
    out.append(_keepalive_case(ctx))
    return out


def probe_metrics(ctx):
    """Sets ctx.metrics (True when GET /metrics serves a handler-latency histogram the runner
    can read) and ctx.metrics_note. Never fails: /metrics is optional (CONTRACT.md)."""
    try:
        resp = ctx.one("GET", "/metrics")
    except Fail as err:
        ctx.metrics, ctx.metrics_note = False, f"GET /metrics failed ({err}): no handler figures"
        return
    text = resp.body.decode("utf-8", "replace")
    inf = re.compile(r'^(%s)\{[^}]*le="\+Inf"[^}]*\}\s' % "|".join(HANDLER_HISTOGRAMS), re.M)
    if resp.status != 200:
        ctx.metrics, ctx.metrics_note = False, f"GET /metrics -> {resp.status}: no handler figures"
    elif not inf.search(text):
        ctx.metrics, ctx.metrics_note = False, \
            "GET /metrics -> 200 without an http_handler_latency_seconds histogram: no handler figures"
    else:
        ctx.metrics, ctx.metrics_note = True, "GET /metrics -> 200 with http_handler_latency_seconds"


# ---------------------------------------------------------------- same work (warnings)

REQUEST_ID = "verify-rid-0123456789"
# The /users routes: (kind, method, target, body) of a request to each, for the bearer check.
USERS_ROUTES = (("user", "GET", "/users/1", None), ("list", "GET", "/users?limit=1", None),
                ("create", "POST", "/users", '{"name":"verify-nobearer","email":"nobearer@example.com"}'))


def same_work(ctx):
    """CONTRACT.md section 7's items this check can see, as warnings (sentences; never a
    failure: a server may say in its description that it skips them): an X-Request-Id on a
    /users answer, our own echoed; the bearer asked on every /users route, also those the
    mix does not use (a 2xx without a token); and, when ctx.access_log is False (the
    definition passes no {access_log}), the access log. [] for a mix without /users."""
    kinds = ctx.kinds() & {"user", "list", "create"}
    if not kinds:
        return []
    warns = []
    line = next(ln for ln in ctx.mix if ln.kind() in kinds)
    path, body = instantiate(line, ctx.seq, "lo")
    what = f"{line.method} {path}"
    try:
        mine = ctx.one(line.method, path, dict(ctx.mix_headers, **{"X-Request-Id": REQUEST_ID}), body)
        path2, body2 = instantiate(line, ctx.seq, "lo")
        theirs = ctx.one(line.method, path2, dict(ctx.mix_headers), body2)
        if mine.h("x-request-id") != REQUEST_ID:
            got = mine.h("x-request-id")
            warns.append(f"{what} with X-Request-Id: {REQUEST_ID} was answered "
                         + (f"with X-Request-Id '{got}'" if got else "without X-Request-Id")
                         + " (want it echoed)")
        if not theirs.h("x-request-id"):
            warns.append(f"{what} without X-Request-Id was answered without one (want a fresh id)")
    except Fail as err:
        warns.append(f"the X-Request-Id check could not run: {err}")
    for kind, method, target, rbody in USERS_ROUTES:
        if kind in kinds:
            continue   # a case of the contract check already asks it
        try:
            resp = ctx.one(method, target, {}, rbody)
        except Fail as err:
            warns.append(f"{method} {target} without a token could not be checked: {err}")
            continue
        if 200 <= resp.status < 300:
            warns.append(f"{method} {target} without a token -> {resp.status} (want 401: the bearer on "
                         "every /users route)")
    if ctx.access_log is False:
        warns.append("its definition passes no {access_log}: no access-log line per /users request")
    return warns


def run(ctx, on_case=None):
    """Runs every case of CTX; calls ON_CASE(name, ok, why) after each. Returns the report:
    {passed, cases: [{name, ok, why}], failed: [names], metrics, metrics_note, warnings}
    (warnings: same_work's, when every case passed)."""
    results = []
    for name, fn in cases(ctx):
        try:
            fn()
            ok, why = True, None
        except Fail as err:
            ok, why = False, str(err)
        except (OSError, ValueError, KeyError) as err:  # a server's answer no check foresaw
            ok, why = False, f"{type(err).__name__}: {err}"
        results.append({"name": name, "ok": ok, "why": why})
        if on_case:
            on_case(name, ok, why)
    probe_metrics(ctx)
    failed = [r for r in results if not r["ok"]]
    return {"passed": not failed, "cases": results, "failed": [r["name"] for r in failed],
            "metrics": ctx.metrics, "metrics_note": ctx.metrics_note,
            "warnings": [] if failed else same_work(ctx)}


USAGE = """usage: python3 -m analysis verify URL MIX_FILE --bearer=TOKEN --seed-users=N [--json=FILE]
                                  [--budget-sec=S] [--access-log=yes|no|unknown]
Checks the server at URL (http://HOST:PORT) against CONTRACT.md for the scenario whose mix
is MIX_FILE; one line per case on stdout ("ok - CASE" or "FAIL - CASE: why"), then a summary;
--json writes the report ({passed, cases: [{name, ok, why}], failed, metrics, metrics_note,
warnings}). Warnings ("warning - ..." lines): CONTRACT.md section 7's same work, not checked
as cases; --access-log=no (the definition passes no {access_log}) adds one.
Each request waits at most 5 s, the whole check S seconds (60); the cases left then fail.
Exit: 0 every case passed, 1 a case failed, 2 usage."""


def main(args):
    opts, pos = {}, []
    for a in args:
        if a.startswith("--"):
            k, eq, v = a[2:].partition("=")
            if not eq or k not in ("bearer", "seed-users", "json", "budget-sec", "access-log"):
                print(f"analysis verify: unknown option '{a}'\n{USAGE}", file=sys.stderr)
                return 2
            opts[k] = v
        else:
            pos.append(a)
    if len(pos) != 2 or "bearer" not in opts or not opts.get("seed-users", "").isdigit() or \
            int(opts["seed-users"]) < 1:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        ctx = Ctx(pos[0], pos[1], opts["bearer"], int(opts["seed-users"]),
                  float(opts.get("budget-sec", BUDGET_S)))
    except (ValueError, OSError, Fail) as err:
        print(f"analysis verify: {err}", file=sys.stderr)
        return 2
    if opts.get("access-log") not in (None, "yes", "no", "unknown"):
        print(USAGE, file=sys.stderr)
        return 2
    ctx.access_log = {"yes": True, "no": False}.get(opts.get("access-log"))

    def show(name, ok, why):
        print(f"ok - {name}" if ok else f"FAIL - {name}: {why}", flush=True)
    rep = run(ctx, show)
    n, bad = len(rep["cases"]), len(rep["failed"])
    for wng in rep["warnings"]:
        print(f"warning - {wng}")
    print(f"{n - bad} of {n} cases passed; {rep['metrics_note']}")
    if "json" in opts:
        with open(opts["json"], "w", encoding="utf-8") as fh:
            json.dump(rep, fh, indent=1)
            fh.write("\n")
    return 0 if rep["passed"] else 1

